//===- Synchronization.h - What forking the threads costs -------*- C++ -*-===//

#ifndef TFM_BENCH_SYNCHRONIZATION_H
#define TFM_BENCH_SYNCHRONIZATION_H

namespace tfm_bench {

struct SynchronizationCosts {
  /// An empty parallel loop of `threads` threads: a fork and a join.
  double forkJoinMicroseconds = 0;
  /// The same loop inside a parallel region that stays open: its barrier.
  double barrierMicroseconds = 0;
};

SynchronizationCosts synchronizationCosts(int threads);

} // namespace tfm_bench

#endif // TFM_BENCH_SYNCHRONIZATION_H
