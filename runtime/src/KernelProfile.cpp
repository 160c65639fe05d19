//===- KernelProfile.cpp - The time of each compiled kernel -----*- C++ -*-===//

#include "runtime/src/KernelProfile.h"

#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <utility>

namespace tfm_runtime {
namespace {

thread_local KernelPhase currentPhase = KernelPhase::Other;

struct Entry {
  std::string name;
  KernelPhase phase;
  int64_t calls = 0, nanoseconds = 0;
};

/// Entries by (name global's address, phase); a deque keeps each name's
/// address for the process's life. Several model threads (tfm-serve) may
/// call kernels at once: one lock, taken only by profiled translators.
struct Profile {
  std::mutex mutex;
  std::map<std::pair<const char *, KernelPhase>, Entry *> byKey;
  std::deque<Entry> entries;
};

Profile &profile() {
  static Profile instance;
  return instance;
}

} // namespace

KernelPhaseScope::KernelPhaseScope(KernelPhase phase) : outer(currentPhase) {
  currentPhase = phase;
}

KernelPhaseScope::~KernelPhaseScope() { currentPhase = outer; }

std::vector<KernelTime> kernelTimes() {
  Profile &p = profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  std::vector<KernelTime> times;
  for (const Entry &e : p.entries)
    times.push_back({e.name.c_str(), e.phase, e.calls, e.nanoseconds * 1e-9});
  return times;
}

} // namespace tfm_runtime

using tfm_runtime::Entry;

extern "C" int64_t tfm_kernel_clock() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The compiled code passes the name as the expanded descriptor of a
/// memref<?xi8> (allocated and aligned pointers, offset, size, stride).
extern "C" void tfm_kernel_ended(int64_t began, const char *, const char *name,
                                 int64_t offset, int64_t size, int64_t) {
  int64_t elapsed = tfm_kernel_clock() - began;
  const char *key = name + offset;
  tfm_runtime::Profile &p = tfm_runtime::profile();
  std::lock_guard<std::mutex> lock(p.mutex);
  Entry *&entry = p.byKey[{key, tfm_runtime::currentPhase}];
  if (!entry)
    entry = &p.entries.emplace_back(
        Entry{std::string(key, size_t(size)), tfm_runtime::currentPhase});
  ++entry->calls;
  entry->nanoseconds += elapsed;
}
