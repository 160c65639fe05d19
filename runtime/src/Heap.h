//===- Heap.h - The heap policy of a process that runs models ---*- C++ -*-===//
//
// The compiled code allocates its temporaries and results with malloc afresh
// at every call; the policy here makes those allocations reuse the process's
// memory. The translator sets it when it opens a model, and tfm-bench before
// it times kernels, so that both run the kernels alike.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_HEAP_H
#define TFM_RUNTIME_HEAP_H

namespace tfm_runtime {

/// Keeps freed memory in the process (no mmap per large block, no
/// trimming), so that a call reuses what the one before freed instead of
/// faulting fresh zeroed pages in, and grows the heap once in transparent
/// huge pages. Idempotent.
void prepareHeap();

} // namespace tfm_runtime

#endif // TFM_RUNTIME_HEAP_H
