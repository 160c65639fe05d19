//===- FuseSiblingLinears.cpp - One linear for siblings ---------*- C++ -*-===//
//
// Attention projects the same input several times: queries, keys and values
// of a layer, and the keys and values of every decoder layer's
// cross-attention from the encoder's output. Linears that read the same
// input become one, whose weight (and bias) stacks theirs along the output
// features: y = x·[W1; W2; ..]ᵀ + [b1; b2; ..], and each old result is a
// slice of y's last axis. Each output feature is computed as before (the
// same row of weights over the same input), with fewer, wider kernels: the
// input read and, at int8, quantized once; more panels to share among the
// threads.
//
// A gated feed-forward's halves, act(x·W0ᵀ + b0) · (x·W1ᵀ + b1) (T5's
// wi_0 and wi_1), become one tfm.fused_linear gated over [W0; W1], whose
// kernel computes both halves' tiles and the product between them.
//
//===----------------------------------------------------------------------===//

#include "passes/PassStatistics.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <optional>

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_TFMFUSESIBLINGLINEARSPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A weight that stacks `weights` along their first axis.
WeightOp stack(OpBuilder &b, Location loc, ArrayRef<WeightOp> weights) {
  WeightOp first = weights.front();
  SmallVector<StringRef> parts;
  SmallVector<int64_t> shape(first.getType().getShape());
  shape[0] = 0;
  for (WeightOp w : weights) {
    llvm::append_range(parts, w.getTensorNames());
    shape[0] += w.getType().getDimSize(0);
  }
  auto type = first.getType().clone(shape);
  return b.create<WeightOp>(loc, type, b.getStringAttr(llvm::join(parts, "+")),
                            b.getStrArrayAttr(parts), IntegerAttr());
}

/// A linear that can join its siblings: a static weight from the
/// checkpoint, and a bias from it or none.
bool isStackable(LinearOp linear) {
  auto weight = linear.getWeight().getDefiningOp<WeightOp>();
  if (!weight || weight.getType().getRank() != 2)
    return false;
  Value bias = linear.getBias();
  return !bias || bias.getDefiningOp<WeightOp>();
}

/// Features of a gated linear's half: whole panels of every target's
/// width (4 vectors of 16 lanes at most), so that the second half starts
/// at a panel.
constexpr int64_t kGatedFeatureMultiple = 64;

/// The stacked weights where the first of `weights` was (an imported graph
/// declares its weights first), so that tfm-decompose gives the graph back
/// as it was; else before `user`.
void setInsertionPointForStack(OpBuilder &b, ArrayRef<WeightOp> weights,
                               Operation *user) {
  Operation *first = user;
  for (WeightOp w : weights)
    if (w->getBlock() == user->getBlock() && w->isBeforeInBlock(first))
      first = w;
  b.setInsertionPoint(first);
}

/// The halves of a gated feed-forward's product.
struct GatedHalves {
  FusedLinearOp activated;
  LinearOp plain;
};

/// mul(act(x·W0ᵀ + b0), x·W1ᵀ + b1), in either order, whose halves can be
/// one gated linear: the activated half a fused linear without a residual,
/// the other a linear, each used only here, both stackable, alike in shape,
/// of a multiple of kGatedFeatureMultiple features.
std::optional<GatedHalves> gatedHalvesOf(MulOp mul) {
  Value lhs = mul.getLhs(), rhs = mul.getRhs();
  if (!lhs.getDefiningOp<FusedLinearOp>())
    std::swap(lhs, rhs);
  auto activated = lhs.getDefiningOp<FusedLinearOp>();
  auto plain = rhs.getDefiningOp<LinearOp>();
  if (!activated || !plain || activated.getGated() || activated.getResidual() ||
      activated.getActivation() == Activation::none ||
      !activated->hasOneUse() || !plain->hasOneUse() ||
      activated.getInput() != plain.getInput() ||
      activated->getBlock() != mul->getBlock() ||
      plain->getBlock() != mul->getBlock() || !isStackable(plain) ||
      !activated.getBias() != !plain.getBias() ||
      activated.getType() != plain.getType() ||
      activated.getType() != mul.getType())
    return std::nullopt;
  auto w0 = activated.getWeight().getDefiningOp<WeightOp>();
  Value bias0 = activated.getBias();
  if (!w0 || w0.getType() != plain.getWeight().getType() ||
      (bias0 && !bias0.getDefiningOp<WeightOp>()) ||
      w0.getType().getDimSize(0) % kGatedFeatureMultiple != 0)
    return std::nullopt;
  return GatedHalves{activated, plain};
}

/// The product of gatedHalvesOf -> fused_linear gated act over [W0; W1]
/// (and [b0; b1]); the halves' own weights go where nothing else reads
/// them.
bool fuseGatedHalves(MulOp mul) {
  std::optional<GatedHalves> halves = gatedHalvesOf(mul);
  if (!halves)
    return false;
  auto [activated, plain] = *halves;
  SmallVector<WeightOp> weights = {
      activated.getWeight().getDefiningOp<WeightOp>(),
      plain.getWeight().getDefiningOp<WeightOp>()};
  SmallVector<WeightOp> biases;
  if (activated.getBias())
    biases = {activated.getBias().getDefiningOp<WeightOp>(),
              plain.getBias().getDefiningOp<WeightOp>()};
  OpBuilder b(mul);
  Location loc = b.getFusedLoc({activated.getLoc(), plain.getLoc()});
  setInsertionPointForStack(
      b, llvm::to_vector(llvm::concat<WeightOp>(weights, biases)), activated);
  Value weight = stack(b, loc, weights);
  Value bias = biases.empty() ? Value() : stack(b, loc, biases);
  b.setInsertionPoint(mul);
  auto gated = b.create<FusedLinearOp>(
      loc, mul.getType(), activated.getActivation(), activated.getInput(),
      weight, bias, /*residual=*/Value(), /*gated=*/true);
  mul.replaceAllUsesWith(gated.getResult());
  mul.erase();
  activated.erase();
  plain.erase();
  for (WeightOp w : llvm::concat<WeightOp>(weights, biases))
    if (w->use_empty())
      w.erase();
  return true;
}

struct TfmFuseSiblingLinearsPass
    : public tfm::impl::TfmFuseSiblingLinearsPassBase<
          TfmFuseSiblingLinearsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<MulOp> products;
    getOperation()->walk([&](MulOp mul) { products.push_back(mul); });
    int64_t gatedPairs = llvm::count_if(products, fuseGatedHalves);
    recordPassStatistic(getName(), "gated-pairs-stacked",
                        "Gated feed-forward halves made one gated linear",
                        gatedPairs);
    // Stackable linears by input, bias (1) or not (0), and element type, in
    // order.
    using Key = std::tuple<Value, unsigned, Type>;
    llvm::MapVector<Key, SmallVector<LinearOp>> siblings;
    getOperation()->walk([&](LinearOp linear) {
      if (!isStackable(linear))
        return;
      siblings[{linear.getInput(), linear.getBias() ? 1u : 0u,
                linear.getType().getElementType()}]
          .push_back(linear);
    });
    int64_t fused = 0;
    for (auto &[key, linears] : siblings) {
      // In one block, the first of them can run for all: its input and the
      // new weights are defined before it.
      Block *block = linears.front()->getBlock();
      if (linears.size() < 2 || llvm::any_of(linears, [&](LinearOp l) {
            return l->getBlock() != block;
          }))
        continue;
      LinearOp first = *llvm::min_element(linears, [](LinearOp a, LinearOp b) {
        return a->isBeforeInBlock(b);
      });
      OpBuilder b(first);
      Location loc = b.getFusedLoc(
          llvm::map_to_vector(linears, [](LinearOp l) { return l.getLoc(); }));
      SmallVector<WeightOp> weights, biases;
      for (LinearOp l : linears) {
        weights.push_back(l.getWeight().getDefiningOp<WeightOp>());
        if (Value bias = l.getBias())
          biases.push_back(bias.getDefiningOp<WeightOp>());
      }
      setInsertionPointForStack(
          b, llvm::to_vector(llvm::concat<WeightOp>(weights, biases)), first);
      Value weight = stack(b, loc, weights);
      Value bias = biases.empty() ? Value() : stack(b, loc, biases);
      b.setInsertionPoint(first);
      RankedTensorType type = first.getType();
      SmallVector<int64_t> shape(type.getShape());
      int64_t features = cast<RankedTensorType>(weight.getType()).getDimSize(0);
      shape.back() = features;
      auto wide = b.create<LinearOp>(loc, type.clone(shape), first.getInput(),
                                     weight, bias);
      // Each linear's result: its features of y, in order.
      int64_t axis = type.getRank() - 1, offset = 0;
      b.setInsertionPointAfter(wide);
      DenseMap<int64_t, Value> constants;
      auto index = [&](int64_t v) {
        Value &c = constants[v];
        if (!c)
          c = b.create<arith::ConstantIndexOp>(loc, v);
        return c;
      };
      SmallVector<Value> slices;
      for (LinearOp l : linears) {
        int64_t n = l.getWeight().getType().getDimSize(0);
        Value start = index(offset), size = index(n);
        slices.push_back(b.create<SliceOp>(l.getLoc(), l.getType(), wide, start,
                                           size, b.getI64IntegerAttr(axis)));
        offset += n;
      }
      for (auto [l, slice] : llvm::zip(linears, slices)) {
        l.replaceAllUsesWith(slice);
        l.erase();
      }
      // The weights they read alone are no longer needed.
      for (WeightOp w : llvm::concat<WeightOp>(weights, biases))
        if (w->use_empty())
          w.erase();
      ++fused;
    }
    recordPassStatistic(getName(), "linears-stacked",
                        "Groups of linears of one input made one", fused);
  }
};

} // namespace
