//===- Normalization.cpp - Lower softmax, mean and layer norm ---*- C++ -*-===//
//
// Reductions over the last axis and the normalizations built on them.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"
#include "passes/Conversion/TfmToLinalg/VectorMath.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Reductions and normalization
//===----------------------------------------------------------------------===//

/// softmax over the last axis: e = exp(x - max x); e / sum e
static Value softmaxLastAxis(OpBuilder &b, Location loc, Value x) {
  Value max = reduceLastAxis(b, loc, x, -INFINITY, maxCombine);
  Value exp = withRowValue(b, loc, x, max, expOfDifference);
  Value sum = reduceLastAxis(b, loc, exp, 0.0, addCombine);
  return withRowValue(b, loc, exp, sum, quotient);
}

struct SoftmaxLowering : public OpConversionPattern<SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SoftmaxOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<int64_t> perm;
    Value x = axisLast(rewriter, loc, adaptor.getInput(), op.getAxis(), perm);
    Value y =
        undoAxisLast(rewriter, loc, softmaxLastAxis(rewriter, loc, x), perm);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), y);
    return success();
  }
};

/// mean = sum / n over the axis, which stays with size 1.
struct MeanLowering : public OpConversionPattern<MeanOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MeanOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elt = op.getType().getElementType();
    SmallVector<int64_t> perm;
    Value x = axisLast(rewriter, loc, adaptor.getInput(), op.getAxis(), perm);
    Value sum = reduceLastAxis(rewriter, loc, x, 0.0, addCombine);
    Value n = lastDimAsFloat(rewriter, loc, x, elt);
    auto sumType = tensorTypeOf(sum);
    Value mean = elementwise(rewriter, loc, sumType, ValueRange{sum},
                             [&](OpBuilder &b, Location l, ValueRange args) {
                               return b.create<arith::DivFOp>(l, args[0], n);
                             });
    // Put the reduced axis back, with size 1, where it was: the last two
    // dimensions of the kept shape come from the last of the reduced one
    // (none for a reduction to a scalar).
    int64_t rank = op.getType().getRank();
    SmallVector<ReassociationIndices> groups;
    if (rank > 1) {
      for (int64_t d = 0; d < rank - 2; ++d)
        groups.push_back({d});
      groups.push_back({rank - 2, rank - 1});
    }
    SmallVector<OpFoldResult> shape = sizesOf(rewriter, loc, mean);
    shape.push_back(rewriter.getIndexAttr(1));
    SmallVector<int64_t> staticShape(sumType.getShape());
    staticShape.push_back(1);
    auto keptType = RankedTensorType::get(staticShape, elt);
    Value kept = rewriter.create<tensor::ExpandShapeOp>(loc, keptType, mean,
                                                        groups, shape);
    Value result = undoAxisLast(rewriter, loc, kept, perm);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), result);
    return success();
  }
};

/// The generic lowering (two linalg.generic ops), for a dynamic last axis or
/// elements other than f32. Over the last axis, with x = input (+ residual):
///   stats: S1 = sum(x - x0), S2 = sum((x - x0)^2) with x0 = x[.., 0]
///          (a shift that keeps the one-pass variance accurate)
///   mean = x0 + S1/n,  var = (S2 - S1²/n) / n
///   y = (x - mean) · rsqrt(var + eps) · γ + β
/// The RMS norm takes x0 = 0 and mean = 0: var = S2 / n.
class GenericLayerNorm {
public:
  GenericLayerNorm(OpBuilder &b, LayerNormOp op, Value input, Value residual,
                   Value gamma, Value beta);

  Value build() {
    auto [s1, s2] = statistics();
    return normalized(s1, s2);
  }

private:
  std::pair<Value, Value> statistics();
  Value normalized(Value s1, Value s2);

  OpBuilder &b;
  LayerNormOp op;
  Location loc;
  RankedTensorType type;
  Type elt;
  int64_t rank;
  Value input, residual, gamma, beta;
  /// [.., j], [..] and [.., 0] of the iteration space [.., j].
  AffineMap full, row, first;
  /// x (and r) at [.., j], then at [.., 0] (x0), and their maps.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> inputMaps;
};

GenericLayerNorm::GenericLayerNorm(OpBuilder &b, LayerNormOp op, Value input,
                                   Value residual, Value gamma, Value beta)
    : b(b), op(op), loc(op.getLoc()), type(op.getType()),
      elt(type.getElementType()), rank(type.getRank()), input(input),
      residual(residual), gamma(gamma), beta(beta) {
  MLIRContext *ctx = b.getContext();
  full = b.getMultiDimIdentityMap(rank);
  row = full.dropResult(rank - 1);
  SmallVector<AffineExpr> firstExprs(row.getResults());
  firstExprs.push_back(getAffineConstantExpr(0, ctx));
  first = AffineMap::get(rank, 0, firstExprs, ctx);
  SmallVector<Value> rowInputs = {input};
  if (residual)
    rowInputs.push_back(residual);
  inputs.append(rowInputs);
  inputs.append(rowInputs);
  inputMaps.append(rowInputs.size(), full);
  inputMaps.append(rowInputs.size(), first);
}

/// {S1, S2} = {sum(x - x0), sum((x - x0)^2)} over the last axis.
std::pair<Value, Value> GenericLayerNorm::statistics() {
  SmallVector<OpFoldResult> rowSizes = sizesOf(b, loc, input);
  rowSizes.pop_back();
  Value s1 = filled(b, loc, rowSizes, elt, 0.0);
  Value s2 = filled(b, loc, rowSizes, elt, 0.0);
  SmallVector<AffineMap> maps(inputMaps);
  maps.append({row, row});
  SmallVector<IteratorType> iters = parallel(rank);
  iters.back() = IteratorType::reduction;
  bool hasResidual = bool(residual), rms = op.getRms();
  auto stats = b.create<linalg::GenericOp>(
      loc, TypeRange{s1.getType(), s2.getType()}, inputs, ValueRange{s1, s2},
      maps, iters, [&](OpBuilder &nb, Location l, ValueRange args) {
        Value x = args[0], x0 = args[hasResidual ? 2 : 1];
        if (hasResidual) {
          x = nb.create<arith::AddFOp>(l, x, args[1]);
          x0 = nb.create<arith::AddFOp>(l, x0, args[3]);
        }
        Value d = rms ? x : nb.create<arith::SubFOp>(l, x, x0).getResult();
        unsigned acc = hasResidual ? 4 : 2;
        Value n1 = nb.create<arith::AddFOp>(l, args[acc], d);
        Value n2 = nb.create<arith::AddFOp>(l, args[acc + 1],
                                            nb.create<arith::MulFOp>(l, d, d));
        nb.create<linalg::YieldOp>(l, ValueRange{n1, n2});
      });
  return {stats.getResult(0), stats.getResult(1)};
}

/// y = (x - mean) · rsqrt(var + eps) · γ + β, elementwise, with
/// mean = x0 + S1/n and var = (S2 - S1·S1/n) / n.
Value GenericLayerNorm::normalized(Value s1, Value s2) {
  MLIRContext *ctx = b.getContext();
  Value n = lastDimAsFloat(b, loc, input, elt);
  Value eps = floatConstant(b, loc, elt, op.getEpsilon().convertToDouble());
  SmallVector<Value> normInputs(inputs);
  SmallVector<AffineMap> normMaps(inputMaps);
  normInputs.append({s1, s2});
  normMaps.append({row, row});
  AffineMap channel =
      AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
  for (Value param : {gamma, beta})
    if (param) {
      normInputs.push_back(param);
      normMaps.push_back(channel);
    }
  normMaps.push_back(full);
  Value init = emptyTensor(b, loc, sizesOf(b, loc, input), elt);
  bool hasResidual = bool(residual), hasGamma = bool(gamma),
       hasBeta = bool(beta), rms = op.getRms();
  auto norm = b.create<linalg::GenericOp>(
      loc, TypeRange{type}, normInputs, ValueRange{init}, normMaps,
      parallel(rank), [&](OpBuilder &nb, Location l, ValueRange args) {
        unsigned next = 0;
        Value x = args[next++];
        if (hasResidual)
          x = nb.create<arith::AddFOp>(l, x, args[next++]);
        Value x0 = args[next++];
        if (hasResidual)
          x0 = nb.create<arith::AddFOp>(l, x0, args[next++]);
        Value s1v = args[next++], s2v = args[next++];
        // mean = x0 + S1/n; var = (S2 - S1·S1/n) / n (rms: 0, S2 / n)
        Value s1n = nb.create<arith::DivFOp>(l, s1v, n);
        Value mean = rms ? floatConstant(nb, l, elt, 0.0)
                         : nb.create<arith::AddFOp>(l, x0, s1n).getResult();
        Value centeredS2 =
            rms ? s2v
                : nb.create<arith::SubFOp>(
                        l, s2v, nb.create<arith::MulFOp>(l, s1v, s1n))
                      .getResult();
        Value var = nb.create<arith::DivFOp>(l, centeredS2, n);
        Value inv =
            nb.create<math::RsqrtOp>(l, nb.create<arith::AddFOp>(l, var, eps));
        Value y = nb.create<arith::MulFOp>(
            l, nb.create<arith::SubFOp>(l, x, mean), inv);
        if (hasGamma)
          y = nb.create<arith::MulFOp>(l, y, args[next++]);
        if (hasBeta)
          y = nb.create<arith::AddFOp>(l, y, args[next++]);
        nb.create<linalg::YieldOp>(l, y);
      });
  return norm.getResult(0);
}

//===----------------------------------------------------------------------===//
// Layer norm on vectors
//===----------------------------------------------------------------------===//

/// Layer norm of x[M, C] (+ residual) for a static C, on vectors of `lanes`
/// floats, in parallel over blocks of `sizes.rowBlock` rows (1024 rows give
/// 2 threads 128 blocks of 8 to share). Per row, with s = x + r:
///   pass 1: mean = sum(s) / C (the RMS norm: 0)        (meanOf)
///   pass 2: var = sum((s - mean)²) / C                 (inverseDeviation)
///   pass 3: y = (s - mean) · rsqrt(var + eps) · γ + β  (writeNormalized)
/// Two passes for the statistics rather than one shifted pass: pass 1 leaves
/// the row in L1 (x and r of C = 512 are 4 KiB), so pass 2 costs no memory
/// traffic, and the centered sum has no cancellation, whereas sum(s²) -
/// sum(s)²/C in float loses about 2·log10(|mean - shift| / σ) of its ~7
/// digits and depends on the shift being a typical element. Each loop over
/// a row takes `sizes.unroll` vectors at a time, each summed into its own
/// accumulator so that the adds of a sum do not wait on each other.
class LayerNormKernel {
public:
  LayerNormKernel(OpBuilder &b, Location loc, Value x, Value residual,
                  Value gamma, Value beta, double epsilon, bool rms,
                  int64_t lanes, const LayerNormKernelConfig &sizes);

  /// y [M, C]: on the calling thread for few rows (up to
  /// sizes.serialElements elements: forking and joining costs more than
  /// they take), else in parallel.
  Value build();

private:
  Value readSum(OpBuilder &rb, Location rl, Value row, Value column, bool full,
                Value pad) const;
  Value readChannel(OpBuilder &rb, Location rl, Value param, Value column,
                    bool full) const;
  Value normalizeInParallel(OpBuilder &fb, Location fl);
  Value normalizeRows(OpBuilder &nb, Location nl, Value r0, Value rows,
                      Value tile);
  Value meanOf(OpBuilder &lb, Location ll, Value row);
  Value inverseDeviation(OpBuilder &lb, Location ll, Value row, Value mean,
                         Value meanVec);
  SmallVector<Value> writeNormalized(OpBuilder &lb, Location ll, Value row,
                                     Value i, Value meanVec, Value invVec,
                                     ValueRange tile);

  OpBuilder &b;
  Location loc;
  Value x, residual, gamma, beta;
  /// The RMS norm: the mean taken as 0.
  bool rms;
  int64_t lanes, width;
  LayerNormKernelConfig sizes;
  /// Accumulators in use: at most one per vector of the row.
  int64_t accumulators;
  Type elt;
  VectorType vecType;
  /// M, the rows of a forall iteration, y, and constants.
  Value m, rowBlock, out, fzero, vzero, count, eps;
};

LayerNormKernel::LayerNormKernel(OpBuilder &b, Location loc, Value x,
                                 Value residual, Value gamma, Value beta,
                                 double epsilon, bool rms, int64_t lanes,
                                 const LayerNormKernelConfig &sizes)
    : b(b), loc(loc), x(x), residual(residual), gamma(gamma), beta(beta),
      rms(rms), lanes(lanes), sizes(sizes) {
  RankedTensorType type = tensorTypeOf(x);
  width = type.getDimSize(1);
  elt = type.getElementType();
  vecType = VectorType::get({lanes}, elt);
  accumulators = std::clamp<int64_t>(width / lanes + (width % lanes ? 1 : 0), 1,
                                     sizes.unroll);
  m = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 0));
  rowBlock = indexConstant(b, loc, sizes.rowBlock);
  out = emptyTensor(b, loc, {m, b.getIndexAttr(width)}, elt);
  fzero = floatConstant(b, loc, elt, 0.0);
  vzero = floatConstant(b, loc, vecType, 0.0);
  count = floatConstant(b, loc, elt, double(width));
  eps = floatConstant(b, loc, elt, epsilon);
}

Value LayerNormKernel::build() {
  Value few = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::ule, m,
      indexConstant(b, loc,
                    std::max<int64_t>(1, sizes.serialElements / width)));
  auto choice = b.create<scf::IfOp>(
      loc, few,
      [&](OpBuilder &sb, Location sl) {
        sb.create<scf::YieldOp>(
            sl, normalizeRows(sb, sl, indexConstant(sb, sl, 0), m, out));
      },
      [&](OpBuilder &pb, Location pl) {
        pb.create<scf::YieldOp>(pl, normalizeInParallel(pb, pl));
      });
  return choice.getResult(0);
}

/// s = x + r at [row, column..column + L); lanes past the row read `pad`
/// from x and 0 from r.
Value LayerNormKernel::readSum(OpBuilder &rb, Location rl, Value row,
                               Value column, bool full, Value pad) const {
  Value s = readVector(rb, rl, vecType, x, ValueRange{row, column}, pad, full);
  if (residual)
    s = rb.create<arith::AddFOp>(rl, s,
                                 readVector(rb, rl, vecType, residual,
                                            ValueRange{row, column}, fzero,
                                            full));
  return s;
}

/// γ or β at [column..column + L), 0 past the row.
Value LayerNormKernel::readChannel(OpBuilder &rb, Location rl, Value param,
                                   Value column, bool full) const {
  return readVector(rb, rl, vecType, param, ValueRange{column}, fzero, full);
}

/// Blocks of rows on threads: the forall becomes an OpenMP loop.
Value LayerNormKernel::normalizeInParallel(OpBuilder &fb, Location fl) {
  Value blocks = fb.create<arith::CeilDivUIOp>(fl, m, rowBlock);
  auto forall = fb.create<scf::ForallOp>(fl, ArrayRef<OpFoldResult>{blocks},
                                         ValueRange{out}, std::nullopt);
  OpBuilder::InsertionGuard guard(fb);
  Block *body = forall.getBody();
  fb.setInsertionPointToStart(body);
  // Rows [r0, r0 + rows) of this block.
  Value r0 = fb.create<arith::MulIOp>(fl, body->getArgument(0), rowBlock);
  Value rows = fb.create<arith::MinUIOp>(fl, rowBlock,
                                         fb.create<arith::SubIOp>(fl, m, r0));
  SmallVector<OpFoldResult> tileOffsets = {r0, fb.getIndexAttr(0)};
  SmallVector<OpFoldResult> tileSizes = {rows, fb.getIndexAttr(width)};
  Value tile = fb.create<tensor::ExtractSliceOp>(
      fl, body->getArguments().back(), tileOffsets, tileSizes,
      unitStrides(fb, 2));
  Value normalized = normalizeRows(fb, fl, r0, rows, tile);
  fb.setInsertionPointToStart(forall.getTerminator().getBody());
  fb.create<tensor::ParallelInsertSliceOp>(
      fl, normalized, body->getArguments().back(), tileOffsets, tileSizes,
      unitStrides(fb, 2));
  return forall.getResult(0);
}

/// Rows [r0, r0 + rows) of x into `tile` (rows of y from r0).
Value LayerNormKernel::normalizeRows(OpBuilder &nb, Location nl, Value r0,
                                     Value rows, Value tile) {
  auto rowLoop = nb.create<scf::ForOp>(
      nl, indexConstant(nb, nl, 0), rows, indexConstant(nb, nl, 1),
      ValueRange{tile},
      [&](OpBuilder &lb, Location ll, Value i, ValueRange tileIter) {
        Value row = lb.create<arith::AddIOp>(ll, r0, i);
        Value mean = rms ? fzero : meanOf(lb, ll, row);
        Value meanVec = lb.create<vector::BroadcastOp>(ll, vecType, mean);
        Value inv = inverseDeviation(lb, ll, row, mean, meanVec);
        Value invVec = lb.create<vector::BroadcastOp>(ll, vecType, inv);
        lb.create<scf::YieldOp>(
            ll, writeNormalized(lb, ll, row, i, meanVec, invVec, tileIter));
      });
  return rowLoop.getResult(0);
}

/// Pass 1: mean = sum(s) / C; lanes past the row are 0.
Value LayerNormKernel::meanOf(OpBuilder &lb, Location ll, Value row) {
  SmallVector<Value> zeros(accumulators, vzero);
  SmallVector<Value> sums =
      visitRow(lb, ll, width, lanes, sizes.unroll, zeros,
               [&](OpBuilder &vb, Location vl, Value column, int64_t slot,
                   bool full, SmallVectorImpl<Value> &acc) {
                 acc[slot] = vb.create<arith::AddFOp>(
                     vl, acc[slot], readSum(vb, vl, row, column, full, fzero));
               });
  return lb.create<arith::DivFOp>(ll, sumOfLanes(lb, ll, sums), count);
}

/// Pass 2: inv = rsqrt(var + eps), var = sum((s - mean)²) / C; lanes past
/// the row read x = mean, so they add 0.
Value LayerNormKernel::inverseDeviation(OpBuilder &lb, Location ll, Value row,
                                        Value mean, Value meanVec) {
  SmallVector<Value> zeros(accumulators, vzero);
  SmallVector<Value> squares =
      visitRow(lb, ll, width, lanes, sizes.unroll, zeros,
               [&](OpBuilder &vb, Location vl, Value column, int64_t slot,
                   bool full, SmallVectorImpl<Value> &acc) {
                 Value d = vb.create<arith::SubFOp>(
                     vl, readSum(vb, vl, row, column, full, mean), meanVec);
                 acc[slot] = vb.create<vector::FMAOp>(vl, d, d, acc[slot]);
               });
  Value var = lb.create<arith::DivFOp>(ll, sumOfLanes(lb, ll, squares), count);
  return lb.create<math::RsqrtOp>(ll, lb.create<arith::AddFOp>(ll, var, eps));
}

/// Pass 3: tile[i] = (s - mean) · inv · γ + β, masked past the row.
SmallVector<Value> LayerNormKernel::writeNormalized(OpBuilder &lb, Location ll,
                                                    Value row, Value i,
                                                    Value meanVec, Value invVec,
                                                    ValueRange tile) {
  return visitRow(
      lb, ll, width, lanes, sizes.unroll, tile,
      [&](OpBuilder &vb, Location vl, Value column, int64_t, bool full,
          SmallVectorImpl<Value> &t) {
        Value y = vb.create<arith::MulFOp>(
            vl,
            vb.create<arith::SubFOp>(
                vl, readSum(vb, vl, row, column, full, fzero), meanVec),
            invVec);
        Value scale =
            gamma ? readChannel(vb, vl, gamma, column, full) : Value();
        Value bias = beta ? readChannel(vb, vl, beta, column, full) : Value();
        if (scale && bias)
          y = vb.create<vector::FMAOp>(vl, y, scale, bias);
        else if (scale)
          y = vb.create<arith::MulFOp>(vl, y, scale);
        else if (bias)
          y = vb.create<arith::AddFOp>(vl, y, bias);
        t[0] = writeVector(vb, vl, y, t[0], ValueRange{i, column}, full);
      });
}

/// tfm.layer_norm: the vector kernel when the last axis is static and the
/// elements are f32 (all the checkpoints' layer norms), else the generic
/// lowering.
struct LayerNormLowering : public OpConversionPattern<LayerNormOp> {
  LayerNormLowering(MLIRContext *ctx, const KernelConfig &config)
      : OpConversionPattern<LayerNormOp>(ctx), lanes(config.vectorWidth),
        sizes(config.layerNorm) {}
  int64_t lanes;
  LayerNormKernelConfig sizes;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Value input = adaptor.getInput(), residual = adaptor.getResidual();
    Value gamma = adaptor.getScale(), beta = adaptor.getBias();
    if (!hasVectorLayerNormKernel(op)) {
      rewriter.replaceOp(
          op,
          GenericLayerNorm(rewriter, op, input, residual, gamma, beta).build());
      return success();
    }
    Value x = collapseLeading(rewriter, loc, input, 1);
    Value flatResidual =
        residual ? collapseLeading(rewriter, loc, residual, 1) : Value();
    Value y = LayerNormKernel(rewriter, loc, x, flatResidual, gamma, beta,
                              op.getEpsilon().convertToDouble(), op.getRms(),
                              lanes, sizes)
                  .build();
    Value result = expandLeading(rewriter, loc, y, type, input);
    if (result.getType() != type)
      result = rewriter.create<tensor::CastOp>(loc, type, result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// tfm.logsumexp_blocks where no linear makes it with the logits (its
/// blocks are not the panels): x [.., C] padded with -inf to nb·B columns
/// (which change neither a block's max nor its sum), viewed as
/// [.., nb, B], then m = max, s = sum exp(x - m) over the last axis
/// (shifted by 0 where m is -inf: a block of -inf sums to 0), and the two
/// side by side as [.., nb, 2].
struct LogSumExpBlocksLowering : public OpConversionPattern<LogSumExpBlocksOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(LogSumExpBlocksOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    OpBuilder &b = rewriter;
    Location loc = op.getLoc();
    int64_t block = op.getBlock();
    Type elt = op.getType().getElementType();
    Value x = collapseLeading(b, loc, adaptor.getInput(), 1);
    Value columns =
        getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 1));
    Value blockSize = indexConstant(b, loc, block);
    Value blocks = b.create<arith::CeilDivUIOp>(loc, columns, blockSize);
    Value padding = b.create<arith::SubIOp>(
        loc, b.create<arith::MulIOp>(loc, blocks, blockSize), columns);
    OpFoldResult rows = dimOf(b, loc, x, 0);
    Value padded = b.create<tensor::PadOp>(
        loc,
        RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                              elt),
        x, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(0), padding},
        floatConstant(b, loc, elt, -INFINITY));
    Value grouped = b.create<tensor::ExpandShapeOp>(
        loc,
        RankedTensorType::get(
            {ShapedType::kDynamic, ShapedType::kDynamic, block}, elt),
        padded, ArrayRef<ReassociationIndices>{{0}, {1, 2}},
        ArrayRef<OpFoldResult>{rows, blocks, b.getIndexAttr(block)});
    Value max = reduceLastAxis(b, loc, grouped, -INFINITY, maxCombine);
    Value exps = withRowValue(
        b, loc, grouped, max, [&](OpBuilder &nb, Location nl, ValueRange v) {
          Value allNegInf =
              nb.create<arith::CmpFOp>(nl, arith::CmpFPredicate::OEQ, v[1],
                                       floatConstant(nb, nl, elt, -INFINITY));
          Value shift = nb.create<arith::SelectOp>(
              nl, allNegInf, floatConstant(nb, nl, elt, 0.0), v[1]);
          return expOfDifference(nb, nl, ValueRange{v[0], shift});
        });
    Value sum = reduceLastAxis(b, loc, exps, 0.0, addCombine);
    Value terms = emptyTensor(b, loc, {rows, blocks, b.getIndexAttr(2)}, elt);
    SmallVector<Value> parts = {max, sum};
    for (auto [i, part] : llvm::enumerate(parts))
      terms = b.create<tensor::InsertSliceOp>(
          loc, part, terms,
          ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0),
                                 b.getIndexAttr(i)},
          ArrayRef<OpFoldResult>{rows, blocks, b.getIndexAttr(1)},
          unitStrides(b, 3));
    Value result =
        expandLeading(b, loc, terms, op.getType(), adaptor.getInput());
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), result);
    return success();
  }
};

} // namespace

void mlir::tfm::lowering::populateNormalizationLoweringPatterns(
    RewritePatternSet &patterns, const KernelConfig &config) {
  patterns.add<SoftmaxLowering, MeanLowering, LogSumExpBlocksLowering>(
      patterns.getContext());
  patterns.add<LayerNormLowering>(patterns.getContext(), config);
}

bool mlir::tfm::hasVectorLayerNormKernel(LayerNormOp op) {
  RankedTensorType type = op.getType();
  return type.getRank() >= 2 && !type.isDynamicDim(type.getRank() - 1) &&
         type.getElementType().isF32();
}
