//===- Synchronization.cpp - What forking the threads costs -----*- C++ -*-===//
//
// The compiled code runs each parallel loop as an OpenMP parallel region: a
// fork and a join of the threads around the loop. These probes time an
// empty such region, and, for comparison, a worksharing loop inside one
// region that stays open (what one region per step would cost per loop:
// the loop's closing barrier). Both with the compiled code's OpenMP
// runtime (LLVM's libomp).
//
//===----------------------------------------------------------------------===//

#include "bench/micro/Synchronization.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

namespace tfm_bench {
namespace {

volatile int sink[64 * 16];

/// Microseconds per repetition of `body(repetitions)`, best of 5 samples
/// after a warm-up.
template <typename Body> double microsecondsEach(Body body) {
  constexpr int kRepetitions = 20000;
  body(kRepetitions);
  double best = 1e30;
  for (int sample = 0; sample < 5; ++sample) {
    auto start = std::chrono::steady_clock::now();
    body(kRepetitions);
    std::chrono::duration<double, std::micro> took =
        std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / kRepetitions);
  }
  return best;
}

} // namespace

SynchronizationCosts synchronizationCosts(int threads) {
  omp_set_num_threads(threads);
  SynchronizationCosts costs;
  // One iteration per thread, each writing its own cache line.
  costs.forkJoinMicroseconds = microsecondsEach([&](int repetitions) {
    for (int r = 0; r < repetitions; ++r) {
#pragma omp parallel for schedule(static)
      for (int t = 0; t < threads; ++t)
        sink[16 * t] = r;
    }
  });
  costs.barrierMicroseconds = microsecondsEach([&](int repetitions) {
#pragma omp parallel
    for (int r = 0; r < repetitions; ++r) {
#pragma omp for schedule(static)
      for (int t = 0; t < threads; ++t)
        sink[16 * t] = r;
    }
  });
  return costs;
}

} // namespace tfm_bench
