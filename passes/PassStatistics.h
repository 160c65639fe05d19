//===- PassStatistics.h - What the tfm passes did ---------------*- C++ -*-===//
//
// MLIR's Pass::Statistic is llvm::Statistic, a no-op in release builds of
// LLVM such as Debian's: -mlir-pass-statistics prints no values there. tfm
// passes therefore also record their counts here, and tfm-opt and tfmc print
// them with --tfm-pass-statistics.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_PASSSTATISTICS_H
#define TFM_PASSES_PASSSTATISTICS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace mlir {
namespace tfm {

/// Adds `value` to the statistic `name` of `pass` (thread-safe).
void recordPassStatistic(llvm::StringRef pass, llvm::StringRef name,
                         llvm::StringRef description, int64_t value);

/// Prints every recorded statistic, grouped by pass in the order the passes
/// first recorded one, in the layout of -mlir-pass-statistics.
void printPassStatistics(llvm::raw_ostream &os);

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_PASSSTATISTICS_H
