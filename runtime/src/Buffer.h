//===- Buffer.h - An aligned float buffer -----------------------*- C++ -*-===//
//
// What the runtime hands the compiled code to write into: encoder outputs,
// logits, key/value caches.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_BUFFER_H
#define TFM_RUNTIME_BUFFER_H

#include <cstddef>
#include <cstdlib>

namespace tfm_runtime {

/// A 64-byte-aligned float buffer.
struct Buffer {
  float *data = nullptr;
  size_t size = 0;
  explicit Buffer(size_t n = 0) { resize(n); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { std::free(data); }
  /// n floats, their values undefined; throws std::bad_alloc.
  void resize(size_t n);
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_BUFFER_H
