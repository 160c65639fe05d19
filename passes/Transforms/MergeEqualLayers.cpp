//===- MergeEqualLayers.cpp - One function per distinct layer -------------===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"

#include "dialects/Tfm/IR/TfmLayers.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMMERGEEQUALLAYERSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;

namespace {
struct TfmMergeEqualLayersPass
    : public tfm::impl::TfmMergeEqualLayersPassBase<TfmMergeEqualLayersPass> {
  void runOnOperation() override {
    int64_t merged = tfm::mergeEqualLayers(getOperation());
    tfm::recordPassStatistic(getName(), "layers-merged",
                             "Layers that an equal earlier layer replaced",
                             merged);
  }
};
} // namespace
