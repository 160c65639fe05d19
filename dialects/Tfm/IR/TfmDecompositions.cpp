//===- TfmDecompositions.cpp - Fused ops back to primitive ops --*- C++ -*-===//
//
// Each fused op spelled out in the primitive ops whose meaning defines it
// (AggregatedOpInterface). `tfm-decompose` uses these, and fuse -> decompose
// round-trip tests check that fusion kept the meaning.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tfm/IR/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace mlir::tfm;

/// `value` with exactly `type`: the fused op's result may know more static
/// dimensions than the primitive ops infer.
static Value withType(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return b.create<tensor::CastOp>(loc, type, value);
}

static Value applyActivation(OpBuilder &b, Location loc, Activation act,
                             Value x) {
  switch (act) {
  case Activation::none:
    return x;
  case Activation::relu:
    return b.create<ReluOp>(loc, x);
  case Activation::gelu:
    return b.create<GeluOp>(loc, x);
  case Activation::silu:
    return b.create<SiluOp>(loc, x);
  case Activation::gelu_tanh:
    return b.create<GeluTanhOp>(loc, x);
  }
  llvm_unreachable("unknown activation");
}

FailureOr<SmallVector<Value>> AttentionOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  // Keys and values read from the rows that hold them.
  Value key = getKey(), value = getValue();
  if (Value rows = getKeyRows()) {
    int64_t positions = getType().getRank() - 2;
    key = b.create<CacheRowsOp>(loc, key, rows, positions);
    value = b.create<CacheRowsOp>(loc, value, rows, positions);
  }
  // S = scale · Q·Kᵀ + M;  P = softmax(S) over keys;  O = P·V
  Value scores = b.create<MatmulOp>(loc, getQuery(), key,
                                    /*transposeLhs=*/false,
                                    /*transposeRhs=*/true);
  if (getScale().convertToDouble() != 1.0)
    scores = b.create<ScaleOp>(loc, scores, getScaleAttr());
  if (getMask())
    scores = b.create<AddOp>(loc, scores, getMask());
  if (getKeyLengths())
    scores = b.create<KeyPaddingMaskOp>(loc, scores, getKeyLengths());
  if (getKeyStarts())
    scores = b.create<KeyStartMaskOp>(loc, scores, getKeyStarts());
  if (getCausal())
    scores = b.create<CausalMaskOp>(loc, scores);
  int64_t keyAxis = cast<RankedTensorType>(scores.getType()).getRank() - 1;
  Value probs = b.create<SoftmaxOp>(loc, scores, keyAxis);
  Value out = b.create<MatmulOp>(loc, probs, value, false, false);
  return SmallVector<Value>{withType(b, loc, out, getType())};
}

FailureOr<SmallVector<Value>> LayerNormOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  RankedTensorType type = getType();
  int64_t axis = type.getRank() - 1;
  Value x = getInput();
  if (getResidual())
    x = b.create<AddOp>(loc, x, getResidual());
  // mean = E[x]; var = E[(x - mean)^2]; y = (x - mean) · rsqrt(var + eps)
  // (rms: no mean)
  Value centered = x;
  if (!getRms())
    centered = b.create<SubOp>(loc, x, b.create<MeanOp>(loc, x, axis));
  Value variance =
      b.create<MeanOp>(loc, b.create<MulOp>(loc, centered, centered), axis);
  Type elt = type.getElementType();
  Value eps = b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(
               RankedTensorType::get({}, elt),
               b.getFloatAttr(elt, getEpsilon().convertToDouble())));
  Value invStd = b.create<RsqrtOp>(loc, b.create<AddOp>(loc, variance, eps));
  Value y = b.create<MulOp>(loc, centered, invStd);
  // result = y · γ + β
  if (getScale())
    y = b.create<MulOp>(loc, y, getScale());
  if (getBias())
    y = b.create<AddOp>(loc, y, getBias());
  return SmallVector<Value>{withType(b, loc, y, type)};
}

FailureOr<SmallVector<Value>> FusedLinearOp::decomposeOperation(OpBuilder &b) {
  Location loc = getLoc();
  // residual + act(x·Wᵀ + b), the paper's x + Sublayer(x)
  Value y = b.create<LinearOp>(loc, getInput(), getWeight(), getBias());
  if (getGated()) {
    // act(h[.., :F]) · h[.., F:], the halves as the stacking's slices
    int64_t axis = getType().getRank() - 1;
    // F from the weight's 2F rows (static, verified): the result may leave
    // its last dimension `?`.
    int64_t features = getWeight().getType().getDimSize(0) / 2;
    Value f = b.create<arith::ConstantIndexOp>(loc, features);
    Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
    auto half = [&](Value offset) {
      return b.create<SliceOp>(loc, getType(), y, offset, f,
                               b.getI64IntegerAttr(axis));
    };
    Value first = half(zero), second = half(f);
    y = b.create<MulOp>(loc, applyActivation(b, loc, getActivation(), first),
                        second);
  } else {
    y = applyActivation(b, loc, getActivation(), y);
  }
  if (getResidual())
    y = b.create<AddOp>(loc, getResidual(), y);
  return SmallVector<Value>{withType(b, loc, y, getType())};
}
