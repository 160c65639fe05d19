//===- Linear.cpp - Lower tfm.matmul and linears ----------------*- C++ -*-===//
//
// tfm.matmul as one linalg.generic; linears as the panel kernel (scf +
// vector ops over weights packed in panels, epilogue in registers; built in
// PanelKernel.cpp) on the weights file's panels or panels packed here.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/PanelKernel.h"
#include "tfm/abi/Panels.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// C[.., i, j] = sum_k A[.., i, k] B[.., k, j] as one linalg.generic; the
/// transposes only permute the indexing maps.
struct MatmulLowering : public OpConversionPattern<MatmulOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MatmulOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    Value lhs = adaptor.getLhs(), rhs = adaptor.getRhs();
    MLIRContext *ctx = rewriter.getContext();
    // Iteration space: batch dims, i, j, k.
    auto d = [&](int64_t n) { return getAffineDimExpr(n, ctx); };
    SmallVector<AffineExpr> batch, a, bm, c;
    for (int64_t n = 0; n < rank - 2; ++n)
      batch.push_back(d(n));
    AffineExpr i = d(rank - 2), j = d(rank - 1), k = d(rank);
    a = batch;
    a.append(op.getTransposeLhs() ? SmallVector<AffineExpr>{k, i}
                                  : SmallVector<AffineExpr>{i, k});
    bm = batch;
    bm.append(op.getTransposeRhs() ? SmallVector<AffineExpr>{j, k}
                                   : SmallVector<AffineExpr>{k, j});
    c = batch;
    c.append({i, j});
    SmallVector<OpFoldResult> sizes;
    for (int64_t n = 0; n < rank - 2; ++n)
      sizes.push_back(dimOf(rewriter, loc, lhs, n));
    sizes.push_back(
        dimOf(rewriter, loc, lhs, op.getTransposeLhs() ? rank - 1 : rank - 2));
    sizes.push_back(
        dimOf(rewriter, loc, rhs, op.getTransposeRhs() ? rank - 2 : rank - 1));
    Value init = filled(rewriter, loc, sizes, type.getElementType(), 0.0);
    SmallVector<IteratorType> iters = parallel(rank + 1);
    iters.back() = IteratorType::reduction;
    SmallVector<AffineMap> maps = {AffineMap::get(rank + 1, 0, a, ctx),
                                   AffineMap::get(rank + 1, 0, bm, ctx),
                                   AffineMap::get(rank + 1, 0, c, ctx)};
    Value result =
        rewriter
            .create<linalg::GenericOp>(
                loc, TypeRange{init.getType()}, ValueRange{lhs, rhs},
                ValueRange{init}, maps, iters,
                [&](OpBuilder &b, Location l, ValueRange args) {
                  Value p = b.create<arith::MulFOp>(l, args[0], args[1]);
                  b.create<linalg::YieldOp>(
                      l, b.create<arith::AddFOp>(l, args[2], p).getResult());
                })
            .getResult(0);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, type, result);
    return success();
  }
};

/// A weight stored packed for linears (tfm-layout-weights) as views of the
/// weights argument (tfm/abi/Panels.h): its panels, [Np, K, P] of f32, or
/// where the layout gave them bf16 [Np, ceil(K / 2), 2P] (K in pairs), or
/// int8 [Np, ceil(K / 4), 4P] (K in quads); for int8 also the features'
/// scales [Np·P] (f32) and the sums of their integers [Np·P] (i32) after
/// the panels. int4 panels are bytes [Np, rows + groups, 4P] (eight k a
/// word, then the groups' words of scale and zero point, which
/// `groupWords` views as f32 [Np, rows + groups, P]), then the features'
/// corrections [Np·P] (f32).
struct PanelViews {
  Value panels, scales, sums;
  Value groupWords, corrections;
  int64_t int4Groups = 0;
};

/// Of a weight's panels: the element type viewed, rows per panel (K, or
/// K in pairs or quads, or int4's words and its groups' scales) and
/// elements per panel row.
struct PanelShape {
  Type elt;
  int64_t features, rows, width;
  int64_t int4Groups = 0;

  explicit PanelShape(WeightOp op) {
    RankedTensorType type = op.getType();
    features = op->getAttrOfType<IntegerAttr>(kPanelWidthAttr).getInt();
    width = features;
    rows = type.getDimSize(1);
    elt = type.getElementType();
    if (auto stored = op->getAttrOfType<TypeAttr>(kPanelElementTypeAttr)) {
      elt = stored.getValue();
      if (elt.isInteger(4)) {
        int4Groups = tfm_runtime::int4Groups(rows);
        rows = tfm_runtime::int4PanelRows(rows) + int4Groups;
        width *= 4;
        elt = IntegerType::get(op.getContext(), 8);
        return;
      }
      int64_t group = elt.isInteger(8) ? 4 : 2;
      rows = llvm::divideCeil(rows, group);
      width *= group;
    }
  }
  /// Bytes of a panel, and with its share of what follows all panels:
  /// int8's scales and sums, int4's corrections.
  int64_t panelBytes() const {
    return rows * width * elt.getIntOrFloatBitWidth() / 8;
  }
  int64_t bytesPerPanel() const {
    int64_t tails = int4Groups ? 1 : elt.isInteger(8) ? 2 : 0;
    return panelBytes() + 4 * tails * features;
  }
};

/// The views of `panels` panels of `shape` in `bytes` from `offset`
/// (static or dynamic counts and offsets alike; static ones stay
/// constants).
static PanelViews viewPanels(OpBuilder &b, Location loc, Value bytes,
                             OpFoldResult offset, OpFoldResult panels,
                             const PanelShape &shape) {
  auto index = [&](OpFoldResult v) {
    return getValueOrCreateConstantIndexOp(b, loc, v);
  };
  auto mul = [&](OpFoldResult v, int64_t c) -> OpFoldResult {
    if (std::optional<int64_t> k = getConstantIntValue(v))
      return b.getIndexAttr(*k * c);
    return b.create<arith::MulIOp>(loc, index(v), indexConstant(b, loc, c))
        .getResult();
  };
  auto add = [&](OpFoldResult x, OpFoldResult y) -> OpFoldResult {
    std::optional<int64_t> kx = getConstantIntValue(x),
                           ky = getConstantIntValue(y);
    if (kx && ky)
      return b.getIndexAttr(*kx + *ky);
    return b.create<arith::AddIOp>(loc, index(x), index(y)).getResult();
  };
  // A view of `count` items of `elt` (and the fixed `inner` dimensions).
  auto viewAt = [&](OpFoldResult at, OpFoldResult count, Type elt,
                    ArrayRef<int64_t> inner) {
    std::optional<int64_t> n = getConstantIntValue(count);
    SmallVector<int64_t> dims = {n ? *n : ShapedType::kDynamic};
    dims.append(inner.begin(), inner.end());
    SmallVector<Value> sizes;
    if (!n)
      sizes.push_back(index(count));
    return b.create<memref::ViewOp>(loc, MemRefType::get(dims, elt), bytes,
                                    index(at), sizes);
  };
  PanelViews views;
  views.panels = viewAt(offset, panels, shape.elt, {shape.rows, shape.width});
  if (shape.int4Groups) {
    views.int4Groups = shape.int4Groups;
    views.groupWords =
        viewAt(offset, panels, b.getF32Type(), {shape.rows, shape.features});
    OpFoldResult correctionsAt = add(offset, mul(panels, shape.panelBytes()));
    views.corrections =
        viewAt(correctionsAt, mul(panels, shape.features), b.getF32Type(), {});
    return views;
  }
  if (!shape.elt.isInteger(8))
    return views;
  // After the panels, per feature: f32 scales, then i32 sums.
  OpFoldResult features = mul(panels, shape.features);
  OpFoldResult scalesAt = add(offset, mul(panels, shape.panelBytes()));
  OpFoldResult sumsAt = add(scalesAt, mul(features, 4));
  views.scales = viewAt(scalesAt, features, b.getF32Type(), {});
  views.sums = viewAt(sumsAt, features, b.getI32Type(), {});
  return views;
}

static PanelViews panelsOf(OpBuilder &b, WeightOp op) {
  PanelShape shape(op);
  int64_t panels = llvm::divideCeil(op.getType().getDimSize(0), shape.features);
  Value weights = op->getParentOfType<FunctionOpInterface>().getArgument(0);
  return viewPanels(b, op.getLoc(), weights, b.getIndexAttr(*op.getOffset()),
                    b.getIndexAttr(panels), shape);
}

/// The panels of the rows a caller chose (tfm.caller_rows of a weight in
/// panels): as many whole panels as its argument holds.
static PanelViews panelsOf(OpBuilder &b, CallerRowsOp op) {
  Location loc = op.getLoc();
  PanelShape shape(op.getInput().getDefiningOp<WeightOp>());
  auto [bytes, panels] =
      callerArgument(b, loc, op, op.getFrom(), shape.bytesPerPanel());
  return viewPanels(b, loc, bytes, b.getIndexAttr(0), panels, shape);
}

/// act(x·Wᵀ + b) + r for a weight of dynamic shape: matmul_transpose_b and
/// one epilogue generic over [M, N] (not vectorized; the checkpoints' linears
/// all have static weights and take the panel kernel).
static Value linearOfDynamicWeight(OpBuilder &b, Location loc, Value x,
                                   Value weight, Value bias, Activation act,
                                   Value residual) {
  Type elt = tensorTypeOf(x).getElementType();
  SmallVector<OpFoldResult> sizes = {dimOf(b, loc, x, 0),
                                     dimOf(b, loc, weight, 0)};
  Value acc = filled(b, loc, sizes, elt, 0.0);
  Value y = b.create<linalg::MatmulTransposeBOp>(loc, ValueRange{x, weight},
                                                 ValueRange{acc})
                .getResult(0);
  if (!bias && act == Activation::none && !residual)
    return y;
  SmallVector<Value> inputs = {y};
  if (bias)
    inputs.push_back(bias);
  if (residual)
    inputs.push_back(residual);
  return elementwise(b, loc, tensorTypeOf(y), inputs,
                     [&](OpBuilder &nb, Location nl, ValueRange args) {
                       unsigned next = 1;
                       Value biasValue = bias ? args[next++] : Value();
                       Value residualValue = residual ? args[next++] : Value();
                       return linearEpilogue(nb, nl, args[0], biasValue, act,
                                             residualValue);
                     });
}

/// Wp[p, k, j] = W[p·P + j, k], and 0 where p·P + j >= N: the panels of a
/// weight that is not in the weights file (an argument, a constant), packed
/// in the function. tfm-layout-weights packs the checkpoint's weights alike
/// at compile time.
static Value packPanels(OpBuilder &b, Location loc, Value weight,
                        int64_t panel) {
  RankedTensorType type = tensorTypeOf(weight);
  int64_t n = type.getDimSize(0), k = type.getDimSize(1);
  int64_t panels = llvm::divideCeil(n, panel);
  Type elt = type.getElementType();
  Value init = emptyTensor(
      b, loc,
      {b.getIndexAttr(panels), b.getIndexAttr(k), b.getIndexAttr(panel)}, elt);
  MLIRContext *ctx = b.getContext();
  return b
      .create<linalg::GenericOp>(
          loc, init.getType(), ValueRange{}, ValueRange{init},
          ArrayRef<AffineMap>{AffineMap::getMultiDimIdentityMap(3, ctx)},
          parallel(3),
          [&](OpBuilder &nb, Location nl, ValueRange) {
            Value p = nb.create<linalg::IndexOp>(nl, 0);
            Value kk = nb.create<linalg::IndexOp>(nl, 1);
            Value j = nb.create<linalg::IndexOp>(nl, 2);
            Value row = nb.create<arith::AddIOp>(
                nl,
                nb.create<arith::MulIOp>(nl, p, indexConstant(nb, nl, panel)),
                j);
            Value last = indexConstant(nb, nl, n - 1);
            Value inside = nb.create<arith::CmpIOp>(
                nl, arith::CmpIPredicate::ule, row, last);
            Value clamped = nb.create<arith::MinUIOp>(nl, row, last);
            Value w = nb.create<tensor::ExtractOp>(nl, weight,
                                                   ValueRange{clamped, kk});
            nb.create<linalg::YieldOp>(
                nl, ValueRange{nb.create<arith::SelectOp>(
                        nl, inside, w, floatConstant(nb, nl, elt, 0.0))});
          })
      .getResult(0);
}

/// A read-only tensor of the weights file's `view`.
static Value viewTensor(OpBuilder &b, Location loc, Value view) {
  auto viewType = cast<MemRefType>(view.getType());
  return b.create<bufferization::ToTensorOp>(
      loc,
      RankedTensorType::get(viewType.getShape(), viewType.getElementType()),
      view, /*restrict=*/true, /*writable=*/false);
}

/// act(x·Wᵀ + b) + r for x [M, K] and a weight stored in panels in the
/// weights file (`packed`, N features): f32 panels times x; bf16 ones times
/// x rounded to bf16 (roundActivationsToBf16: as AVX512-BF16's dot product
/// and oneDNN's bf16 matmul, every product exact in f32 and only the sums
/// rounded); int8 ones times x quantized (quantizeActivations), integer
/// products summed exactly and scaled back in the epilogue. The dot products
/// where the configuration takes them.
static Value linearOfPackedWeight(OpBuilder &b, Location loc, Value x,
                                  const PanelViews &views, int64_t n,
                                  Value bias, Activation act, Value residual,
                                  const KernelConfig &config, Value *blockTerms,
                                  bool gated = false) {
  Value view = views.panels;
  Type stored = cast<MemRefType>(view.getType()).getElementType();
  if (stored.isInteger(8)) {
    auto [u, xZeros, xScales] = quantizeActivations(
        b, loc, x, config.vectorWidth, config.serialActivationElements,
        views.int4Groups ? tfm_runtime::kInt4Group : 4);
    Int8Operands operands;
    operands.xZeros = xZeros;
    operands.xScales = xScales;
    if (views.int4Groups) {
      operands.int4Groups = views.int4Groups;
      operands.groupWords = viewTensor(b, loc, views.groupWords);
      operands.corrections = viewTensor(b, loc, views.corrections);
    } else {
      operands.scales = viewTensor(b, loc, views.scales);
      operands.sums = viewTensor(b, loc, views.sums);
    }
    return panelLinear(b, loc, u, viewTensor(b, loc, view), view, n, bias, act,
                       residual, config.panels.int8Dot, config, operands,
                       blockTerms, gated);
  }
  bool dotPairs = false;
  if (stored.isBF16()) {
    dotPairs = config.panels.bf16Dot;
    x = roundActivationsToBf16(b, loc, x, dotPairs,
                               config.serialActivationElements);
  }
  return panelLinear(b, loc, x, viewTensor(b, loc, view), view, n, bias, act,
                     residual, dotPairs, config, {}, blockTerms, gated);
}

/// The weight in panels in the weights file that a linear reads, itself
/// or through the rows its caller chose; null for another weight.
static WeightOp weightInPanels(Value weight) {
  if (auto chosen = weight.getDefiningOp<CallerRowsOp>())
    weight = chosen.getInput();
  auto packed = weight.getDefiningOp<WeightOp>();
  return packed && packed->hasAttr(kPanelWidthAttr) ? packed : WeightOp();
}

/// x [M, K] with the K of `packed` (static) where x leaves it `?` (the
/// verifier lets them agree) and the panels are bf16 or int8: x's rounded
/// or quantized form is sized by K. Else x as it is.
static Value withPanelsK(OpBuilder &b, Location loc, Value x, WeightOp packed) {
  RankedTensorType type = tensorTypeOf(x);
  if (!packed || !packed->hasAttr(kPanelElementTypeAttr) ||
      !type.isDynamicDim(1))
    return x;
  return b.create<tensor::CastOp>(
      loc,
      RankedTensorType::get(
          {type.getDimSize(0), packed.getType().getDimSize(1)},
          type.getElementType()),
      x);
}

/// The tfm.logsumexp_blocks of a linear's result that the panel kernel can
/// make with it: blocks of the panels' width, over whole panels.
static LogSumExpBlocksOp termsOfPanels(Operation *linear) {
  WeightOp packed = weightInPanels(linear->getOperand(1));
  if (!packed)
    return {};
  int64_t width = packed->getAttrOfType<IntegerAttr>(kPanelWidthAttr).getInt();
  int64_t n = tensorTypeOf(linear->getOperand(1)).getDimSize(0);
  if (n != ShapedType::kDynamic && n % width != 0)
    return {};
  for (Operation *user : linear->getResult(0).getUsers())
    if (auto terms = dyn_cast<LogSumExpBlocksOp>(user);
        terms && int64_t(terms.getBlock()) == width)
      return terms;
  return {};
}

/// act(x·Wᵀ + b) + r: [.., K] collapses to [M, K], the product runs on the
/// weight's panels (packed in the weights file, or here), expand back.
/// Where `terms` is given (termsOfPanels), the kernel makes them too and
/// *termsValue is set to them.
static Value lowerLinear(OpBuilder &b, Location loc, RankedTensorType type,
                         Value input, Value weight, Value bias, Activation act,
                         Value residual, const KernelConfig &config,
                         LogSumExpBlocksOp terms = {},
                         Value *termsValue = nullptr) {
  Value flatTerms;
  Value *blockTerms = terms ? &flatTerms : nullptr;
  Value x = withPanelsK(b, loc, collapseLeading(b, loc, input, 1),
                        weightInPanels(weight));
  Value flatResidual =
      residual ? collapseLeading(b, loc, residual, 1) : Value();
  RankedTensorType weightType = tensorTypeOf(weight);
  Value y;
  // A weight stored in panels: the tfm.weight stays (legal) until here.
  auto packed = weight.getDefiningOp<WeightOp>();
  if (packed && packed->hasAttr(kPanelWidthAttr)) {
    y = linearOfPackedWeight(b, loc, x, panelsOf(b, packed),
                             weightType.getDimSize(0), bias, act, flatResidual,
                             config, blockTerms);
  } else if (auto chosen = weight.getDefiningOp<CallerRowsOp>()) {
    // Whole panels, padding included: the caller knows which columns are
    // rows it chose.
    y = linearOfPackedWeight(b, loc, x, panelsOf(b, chosen),
                             ShapedType::kDynamic, bias, act, flatResidual,
                             config, blockTerms);
  } else if (weightType.hasStaticShape()) {
    Value panels = packPanels(b, loc, weight, config.panelWidth());
    y = panelLinear(b, loc, x, panels, Value(), weightType.getDimSize(0), bias,
                    act, flatResidual, /*dot=*/false, config);
  } else {
    y = linearOfDynamicWeight(b, loc, x, weight, bias, act, flatResidual);
  }
  auto cast = [&](Value v, RankedTensorType t) {
    return v.getType() == t ? v : b.create<tensor::CastOp>(loc, t, v);
  };
  if (flatTerms)
    *termsValue = cast(expandLeading(b, loc, flatTerms, terms.getType(), input),
                       terms.getType());
  return cast(expandLeading(b, loc, y, type, input), type);
}

/// y[:, n] = act(h[:, n]) · h[:, F + n] + r[:, n] over h [M, 2F], a pass of
/// its own: the gate of a gated linear whose halves are not whole panels.
static Value gateHalves(OpBuilder &b, Location loc, Value h, int64_t features,
                        Activation act, Value residual) {
  Value rows = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, h, 0));
  auto half = [&](int64_t offset) {
    return b.create<tensor::ExtractSliceOp>(
        loc, h,
        ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{rows, b.getIndexAttr(features)},
        unitStrides(b, 2));
  };
  SmallVector<Value> inputs = {half(0), half(features)};
  if (residual)
    inputs.push_back(residual);
  return elementwise(
      b, loc, tensorTypeOf(inputs[0]), inputs,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value gated = nb.create<arith::MulFOp>(
            nl, linearEpilogue(nb, nl, args[0], Value(), act, Value()),
            args[1]);
        return residual ? nb.create<arith::AddFOp>(nl, gated, args[2]) : gated;
      });
}

/// act(h[:, :F]) · h[:, F:] + r with h = x·Wᵀ + b, W [2F, K] the two
/// halves stacked (tfm.fused_linear gated): in the panel kernel, both
/// halves' panels in one loop and the gate on their tiles, where each half
/// is whole panels (in the weights file, or packed here from a static
/// weight); else h whole, then gateHalves.
static Value lowerGatedLinear(OpBuilder &b, Location loc, RankedTensorType type,
                              Value input, Value weight, Value bias,
                              Activation act, Value residual,
                              const KernelConfig &config) {
  Value x = withPanelsK(b, loc, collapseLeading(b, loc, input, 1),
                        weightInPanels(weight));
  Value flatResidual =
      residual ? collapseLeading(b, loc, residual, 1) : Value();
  RankedTensorType weightType = tensorTypeOf(weight);
  int64_t n = weightType.getDimSize(0), features = n / 2;
  auto packed = weight.getDefiningOp<WeightOp>();
  if (packed && !packed->hasAttr(kPanelWidthAttr))
    packed = {};
  int64_t width = config.panelWidth();
  Value y;
  if (features % width == 0 && packed) {
    y = linearOfPackedWeight(b, loc, x, panelsOf(b, packed), n, bias, act,
                             flatResidual, config,
                             /*blockTerms=*/nullptr, /*gated=*/true);
  } else if (features % width == 0 && weightType.hasStaticShape()) {
    y = panelLinear(b, loc, x, packPanels(b, loc, weight, width), Value(), n,
                    bias, act, flatResidual, /*dot=*/false, config, {}, nullptr,
                    /*gated=*/true);
  } else {
    auto hType = RankedTensorType::get({tensorTypeOf(x).getDimSize(0), n},
                                       type.getElementType());
    Value h = lowerLinear(b, loc, hType, x, weight, bias, Activation::none,
                          Value(), config);
    y = gateHalves(b, loc, h, features, act, flatResidual);
  }
  Value result = expandLeading(b, loc, y, type, input);
  return result.getType() == type ? result
                                  : b.create<tensor::CastOp>(loc, type, result);
}

/// Linears and fused linears on the panel kernel of `config` (weights
/// packed here get its panel width).
template <typename OpTy>
struct LinearLoweringBase : public OpConversionPattern<OpTy> {
  LinearLoweringBase(MLIRContext *ctx, const KernelConfig &config)
      : OpConversionPattern<OpTy>(ctx), config(config) {}
  KernelConfig config;
};

struct LinearLowering : public LinearLoweringBase<LinearOp> {
  using LinearLoweringBase::LinearLoweringBase;

  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    LogSumExpBlocksOp terms = termsOfPanels(op);
    Value termsValue;
    rewriter.replaceOp(op, lowerLinear(rewriter, op.getLoc(), op.getType(),
                                       adaptor.getInput(), adaptor.getWeight(),
                                       adaptor.getBias(), Activation::none,
                                       Value(), config, terms, &termsValue));
    if (termsValue)
      rewriter.replaceOp(terms, termsValue);
    return success();
  }
};

struct FusedLinearLowering : public LinearLoweringBase<FusedLinearOp> {
  using LinearLoweringBase::LinearLoweringBase;

  LogicalResult
  matchAndRewrite(FusedLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getGated()) {
      rewriter.replaceOp(
          op, lowerGatedLinear(rewriter, op.getLoc(), op.getType(),
                               adaptor.getInput(), adaptor.getWeight(),
                               adaptor.getBias(), op.getActivation(),
                               adaptor.getResidual(), config));
      return success();
    }
    LogSumExpBlocksOp terms = termsOfPanels(op);
    Value termsValue;
    rewriter.replaceOp(op, lowerLinear(rewriter, op.getLoc(), op.getType(),
                                       adaptor.getInput(), adaptor.getWeight(),
                                       adaptor.getBias(), op.getActivation(),
                                       adaptor.getResidual(), config, terms,
                                       &termsValue));
    if (termsValue)
      rewriter.replaceOp(terms, termsValue);
    return success();
  }
};

} // namespace

void mlir::tfm::lowering::populateLinearLoweringPatterns(
    RewritePatternSet &patterns, const KernelConfig &config) {
  patterns.add<MatmulLowering>(patterns.getContext());
  patterns.add<LinearLowering, FusedLinearLowering>(patterns.getContext(),
                                                    config);
}
