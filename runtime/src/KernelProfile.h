//===- KernelProfile.h - The time of each compiled kernel -------*- C++ -*-===//
//
// A translator that tfmc compiled with --profile-kernels calls
// tfm_kernel_clock() before each kernel and tfm_kernel_ended(began, name)
// after it; the runtime adds the time to the kernel's entry for the phase
// (encode, decode step) the calling thread is in. Without that flag the
// compiled code calls neither, and the profile stays empty.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_KERNELPROFILE_H
#define TFM_RUNTIME_KERNELPROFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace tfm_runtime {

enum class KernelPhase : int32_t { Encode = 0, Decode = 1, Other = 2 };

/// The calling thread's kernels count to `phase` while this lives.
class KernelPhaseScope {
public:
  explicit KernelPhaseScope(KernelPhase phase);
  ~KernelPhaseScope();
  KernelPhaseScope(const KernelPhaseScope &) = delete;
  KernelPhaseScope &operator=(const KernelPhaseScope &) = delete;

private:
  KernelPhase outer;
};

struct KernelTime {
  const char *name; // stable for the process's life
  KernelPhase phase;
  int64_t calls;
  double seconds;
};

/// Every kernel's calls and time so far, by phase, in the order first
/// called.
std::vector<KernelTime> kernelTimes();

} // namespace tfm_runtime

#endif // TFM_RUNTIME_KERNELPROFILE_H
