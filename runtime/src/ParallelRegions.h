//===- ParallelRegions.h - Counting the OpenMP regions begun ----*- C++ -*-===//
//
// How many parallel regions (forks and joins of the threads) the compiled
// code begins: what one compiled decoder step costs in synchronization.
// Counted through OpenMP's tool interface (OMPT), only when asked for
// before the OpenMP runtime starts, so that a translator that does not ask
// runs without a tool.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_PARALLELREGIONS_H
#define TFM_RUNTIME_PARALLELREGIONS_H

#include <cstdint>
#include <optional>

namespace tfm_runtime {

/// Asks for the count; it starts if the OpenMP runtime has not started
/// yet (it starts at the first parallel region or thread-count call).
void countParallelRegions();

/// The parallel regions begun so far in this process, if counted.
std::optional<uint64_t> parallelRegionsBegun();

} // namespace tfm_runtime

#endif // TFM_RUNTIME_PARALLELREGIONS_H
