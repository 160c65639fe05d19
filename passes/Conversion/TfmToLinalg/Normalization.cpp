//===- Normalization.cpp - Lower softmax, mean and layer norm ---*- C++ -*-===//
//
// Reductions over the last axis and the normalizations built on them.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

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
    Value y = undoAxisLast(rewriter, loc, softmaxLastAxis(rewriter, loc, x),
                           perm);
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
static Value genericLayerNorm(OpBuilder &rewriter, LayerNormOp op, Value input,
                              Value residual, Value gamma, Value beta) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  Type elt = type.getElementType();
  int64_t rank = type.getRank();
  MLIRContext *ctx = rewriter.getContext();

  AffineMap full = rewriter.getMultiDimIdentityMap(rank);
  AffineMap row = full.dropResult(rank - 1);
  SmallVector<AffineExpr> firstExprs(row.getResults());
  firstExprs.push_back(getAffineConstantExpr(0, ctx));
  AffineMap first = AffineMap::get(rank, 0, firstExprs, ctx);

  SmallVector<Value> rowInputs = {input};
  SmallVector<AffineMap> rowMaps = {full};
  if (residual) {
    rowInputs.push_back(residual);
    rowMaps.push_back(full);
  }
  // x0 = x[.., 0]
  SmallVector<Value> statInputs(rowInputs);
  SmallVector<AffineMap> statMaps(rowMaps);
  statInputs.append(rowInputs.begin(), rowInputs.end());
  for (size_t n = 0; n < rowInputs.size(); ++n)
    statMaps.push_back(first);
  SmallVector<OpFoldResult> rowSizes = sizesOf(rewriter, loc, input);
  rowSizes.pop_back();
  Value s1 = filled(rewriter, loc, rowSizes, elt, 0.0);
  Value s2 = filled(rewriter, loc, rowSizes, elt, 0.0);
  statMaps.append({row, row});
  SmallVector<IteratorType> iters = parallel(rank);
  iters.back() = IteratorType::reduction;
  bool hasResidual = bool(residual);
  auto stats = rewriter.create<linalg::GenericOp>(
      loc, TypeRange{s1.getType(), s2.getType()}, statInputs,
      ValueRange{s1, s2}, statMaps, iters,
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value x = args[0], x0 = args[hasResidual ? 2 : 1];
        if (hasResidual) {
          x = b.create<arith::AddFOp>(l, x, args[1]);
          x0 = b.create<arith::AddFOp>(l, x0, args[3]);
        }
        Value d = b.create<arith::SubFOp>(l, x, x0);
        unsigned acc = hasResidual ? 4 : 2;
        Value n1 = b.create<arith::AddFOp>(l, args[acc], d);
        Value n2 = b.create<arith::AddFOp>(l, args[acc + 1],
                                           b.create<arith::MulFOp>(l, d, d));
        b.create<linalg::YieldOp>(l, ValueRange{n1, n2});
      });

  Value n = lastDimAsFloat(rewriter, loc, input, elt);
  Value eps =
      floatConstant(rewriter, loc, elt, op.getEpsilon().convertToDouble());
  SmallVector<Value> normInputs(statInputs);
  SmallVector<AffineMap> normMaps(rowMaps);
  normMaps.append(rowInputs.size(), first);
  normInputs.append({stats.getResult(0), stats.getResult(1)});
  normMaps.append({row, row});
  AffineMap channel =
      AffineMap::get(rank, 0, {getAffineDimExpr(rank - 1, ctx)}, ctx);
  if (gamma) {
    normInputs.push_back(gamma);
    normMaps.push_back(channel);
  }
  if (beta) {
    normInputs.push_back(beta);
    normMaps.push_back(channel);
  }
  normMaps.push_back(full);
  Value init = emptyTensor(rewriter, loc, sizesOf(rewriter, loc, input), elt);
  bool hasGamma = bool(gamma), hasBeta = bool(beta);
  auto norm = rewriter.create<linalg::GenericOp>(
      loc, TypeRange{type}, normInputs, ValueRange{init}, normMaps,
      parallel(rank), [&](OpBuilder &b, Location l, ValueRange args) {
        unsigned next = 0;
        Value x = args[next++];
        if (hasResidual)
          x = b.create<arith::AddFOp>(l, x, args[next++]);
        Value x0 = args[next++];
        if (hasResidual)
          x0 = b.create<arith::AddFOp>(l, x0, args[next++]);
        Value s1v = args[next++], s2v = args[next++];
        // mean = x0 + S1/n; var = (S2 - S1·S1/n) / n
        Value s1n = b.create<arith::DivFOp>(l, s1v, n);
        Value mean = b.create<arith::AddFOp>(l, x0, s1n);
        Value var = b.create<arith::DivFOp>(
            l,
            b.create<arith::SubFOp>(l, s2v,
                                    b.create<arith::MulFOp>(l, s1v, s1n)),
            n);
        Value inv =
            b.create<math::RsqrtOp>(l, b.create<arith::AddFOp>(l, var, eps));
        Value y = b.create<arith::MulFOp>(
            l, b.create<arith::SubFOp>(l, x, mean), inv);
        if (hasGamma)
          y = b.create<arith::MulFOp>(l, y, args[next++]);
        if (hasBeta)
          y = b.create<arith::AddFOp>(l, y, args[next++]);
        b.create<linalg::YieldOp>(l, y);
      });
  return norm.getResult(0);
}

//===----------------------------------------------------------------------===//
// Layer norm on vectors
//===----------------------------------------------------------------------===//

/// Rows per iteration of the forall (the unit a thread takes); 1024 rows
/// give 2 threads 128 blocks to share.
constexpr int64_t kLayerNormRowBlock = 8;
/// The most elements (rows x C) normalized on the calling thread: forking
/// and joining the threads costs more than normalizing fewer takes
/// (`tfm-bench`, 2 threads, rows x 512 with a residual, on the calling
/// thread / through the forall: 1 row 0.3 / 3.6 us, 64 rows 4.7 / 5.9 us,
/// 128 rows 10.0 / 8.6 us).
constexpr int64_t kLayerNormSerialElements = 64 * 512;
/// Vectors per iteration of the loops over a row, each summed into its own
/// accumulator so that the adds of a sum do not wait on each other
/// (`tfm-bench`, 1 thread, AVX2, loaded machine, best of 2: 1024 x 512 at
/// 13, 16, 19 and 16 GB/s with 1, 2, 4 and 8; 32 x 512 at 15, 20, 22, 21).
constexpr int64_t kLayerNormUnroll = 4;

/// visit(b, loc, column, slot, full, values) updates the loop-carried
/// `values` with the vector of the row at `column`; `slot` (< the unroll)
/// numbers the vectors of an iteration so each can have its own
/// accumulator, `full` is false for the tail, whose transfers are masked.
using RowVisitor = function_ref<void(OpBuilder &, Location, Value, int64_t,
                                     bool, SmallVectorImpl<Value> &)>;

/// Visits a row of `width` floats in vectors of `lanes`: `unroll` vectors per
/// iteration of an scf.for, the whole vectors left over unrolled after it,
/// then the last width % lanes floats as one masked vector.
static SmallVector<Value> visitRow(OpBuilder &b, Location loc, int64_t width,
                                   int64_t lanes, int64_t unroll,
                                   ValueRange init, RowVisitor visit) {
  int64_t vectors = width / lanes, step = unroll * lanes;
  int64_t looped = vectors / unroll * step;
  SmallVector<Value> values(init);
  if (looped > 0) {
    auto loop = b.create<scf::ForOp>(
        loc, indexConstant(b, loc, 0), indexConstant(b, loc, looped),
        indexConstant(b, loc, step), values,
        [&](OpBuilder &lb, Location ll, Value j, ValueRange iters) {
          SmallVector<Value> next(iters);
          for (int64_t u = 0; u < unroll; ++u) {
            Value column = u == 0
                               ? j
                               : lb.create<arith::AddIOp>(
                                       ll, j, indexConstant(lb, ll, u * lanes))
                                     .getResult();
            visit(lb, ll, column, u, true, next);
          }
          lb.create<scf::YieldOp>(ll, next);
        });
    values.assign(loop.getResults().begin(), loop.getResults().end());
  }
  int64_t slot = 0;
  for (int64_t c = looped; c + lanes <= width; c += lanes)
    visit(b, loc, indexConstant(b, loc, c), slot++, true, values);
  if (width % lanes)
    visit(b, loc, indexConstant(b, loc, vectors * lanes), slot % unroll, false,
          values);
  return values;
}

/// The sum of all lanes of `partials`: a tree of vector adds, then one
/// horizontal reduction.
static Value sumOfLanes(OpBuilder &b, Location loc, ArrayRef<Value> partials) {
  SmallVector<Value> level(partials);
  while (level.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2)
      next.push_back(b.create<arith::AddFOp>(loc, level[i], level[i + 1]));
    if (level.size() % 2)
      next.push_back(level.back());
    level = std::move(next);
  }
  return b.create<vector::ReductionOp>(loc, vector::CombiningKind::ADD,
                                       level.front());
}

/// Layer norm of x[M, C] (+ residual) for a static C, on vectors of `lanes`
/// floats, in parallel over blocks of rows. Per row, with s = x + r:
///   pass 1: mean = sum(s) / C
///   pass 2: var = sum((s - mean)²) / C
///   pass 3: y = (s - mean) · rsqrt(var + eps) · γ + β
/// Two passes for the statistics rather than one shifted pass: pass 1 leaves
/// the row in L1 (x and r of C = 512 are 4 KiB), so pass 2 costs no memory
/// traffic, and the centered sum has no cancellation, whereas sum(s²) -
/// sum(s)²/C in float loses about 2·log10(|mean - shift| / σ) of its ~7
/// digits and depends on the shift being a typical element.
static Value vectorLayerNorm(OpBuilder &b, Location loc, Value x,
                             Value residual, Value gamma, Value beta,
                             double epsilon, int64_t lanes) {
  RankedTensorType type = tensorTypeOf(x);
  int64_t width = type.getDimSize(1);
  Type elt = type.getElementType();
  auto vecType = VectorType::get({lanes}, elt);
  const int64_t unroll = kLayerNormUnroll;
  // Accumulators in use: at most one per vector of the row.
  int64_t accumulators =
      std::clamp<int64_t>(width / lanes + (width % lanes ? 1 : 0), 1, unroll);

  Value m = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 0));
  Value rowBlock = indexConstant(b, loc, kLayerNormRowBlock);
  Value out = emptyTensor(b, loc, {m, b.getIndexAttr(width)}, elt);
  Value fzero = floatConstant(b, loc, elt, 0.0);
  Value vzero = floatConstant(b, loc, vecType, 0.0);
  Value count = floatConstant(b, loc, elt, double(width));
  Value eps = floatConstant(b, loc, elt, epsilon);

  // s = x + r at [row, column..column + L); lanes past the row read `pad`
  // from x and 0 from r.
  auto readSum = [&](OpBuilder &rb, Location rl, Value row, Value column,
                     bool full, Value pad) -> Value {
    Value s = rb.create<vector::TransferReadOp>(
        rl, vecType, x, ValueRange{row, column}, pad, ArrayRef<bool>{full});
    if (residual)
      s = rb.create<arith::AddFOp>(
          rl, s,
          rb.create<vector::TransferReadOp>(rl, vecType, residual,
                                            ValueRange{row, column}, fzero,
                                            ArrayRef<bool>{full}));
    return s;
  };
  auto readChannel = [&](OpBuilder &rb, Location rl, Value param, Value column,
                         bool full) -> Value {
    return rb.create<vector::TransferReadOp>(
        rl, vecType, param, ValueRange{column}, fzero, ArrayRef<bool>{full});
  };

  // Rows [r0, r0 + rows) of x into `tile` (rows of y from r0).
  auto normalizeRows = [&](OpBuilder &nb, Location nl, Value r0, Value rows,
                           Value tile) -> Value {
    auto rowLoop = nb.create<scf::ForOp>(
        nl, indexConstant(nb, nl, 0), rows, indexConstant(nb, nl, 1),
        ValueRange{tile},
        [&](OpBuilder &lb, Location ll, Value i, ValueRange tileIter) {
          Value row = lb.create<arith::AddIOp>(ll, r0, i);
          SmallVector<Value> zeros(accumulators, vzero);
          // Pass 1: sum(s); lanes past the row are 0.
          SmallVector<Value> sums = visitRow(
              lb, ll, width, lanes, unroll, zeros,
              [&](OpBuilder &vb, Location vl, Value column, int64_t slot,
                  bool full, SmallVectorImpl<Value> &acc) {
                acc[slot] = vb.create<arith::AddFOp>(
                    vl, acc[slot], readSum(vb, vl, row, column, full, fzero));
              });
          Value mean =
              lb.create<arith::DivFOp>(ll, sumOfLanes(lb, ll, sums), count);
          Value meanVec = lb.create<vector::BroadcastOp>(ll, vecType, mean);
          // Pass 2: sum((s - mean)²); lanes past the row read x = mean, so
          // they add 0.
          SmallVector<Value> squares = visitRow(
              lb, ll, width, lanes, unroll, zeros,
              [&](OpBuilder &vb, Location vl, Value column, int64_t slot,
                  bool full, SmallVectorImpl<Value> &acc) {
                Value d = vb.create<arith::SubFOp>(
                    vl, readSum(vb, vl, row, column, full, mean), meanVec);
                acc[slot] = vb.create<vector::FMAOp>(vl, d, d, acc[slot]);
              });
          // inv = rsqrt(var + eps), var = sum((s - mean)²) / C
          Value var =
              lb.create<arith::DivFOp>(ll, sumOfLanes(lb, ll, squares), count);
          Value inv = lb.create<math::RsqrtOp>(
              ll, lb.create<arith::AddFOp>(ll, var, eps));
          Value invVec = lb.create<vector::BroadcastOp>(ll, vecType, inv);
          // Pass 3: y = (s - mean) · inv · γ + β, masked past the row.
          SmallVector<Value> written = visitRow(
              lb, ll, width, lanes, unroll, tileIter,
              [&](OpBuilder &vb, Location vl, Value column, int64_t, bool full,
                  SmallVectorImpl<Value> &t) {
                Value y = vb.create<arith::MulFOp>(
                    vl,
                    vb.create<arith::SubFOp>(
                        vl, readSum(vb, vl, row, column, full, fzero), meanVec),
                    invVec);
                Value scale =
                    gamma ? readChannel(vb, vl, gamma, column, full) : Value();
                Value bias =
                    beta ? readChannel(vb, vl, beta, column, full) : Value();
                if (scale && bias)
                  y = vb.create<vector::FMAOp>(vl, y, scale, bias);
                else if (scale)
                  y = vb.create<arith::MulFOp>(vl, y, scale);
                else if (bias)
                  y = vb.create<arith::AddFOp>(vl, y, bias);
                t[0] = vb.create<vector::TransferWriteOp>(vl, y, t[0],
                                                          ValueRange{i, column},
                                                          ArrayRef<bool>{full})
                           .getResult();
              });
          lb.create<scf::YieldOp>(ll, written);
        });
    return rowLoop.getResult(0);
  };

  // Blocks of rows on threads: the forall becomes an OpenMP loop.
  auto normalizeInParallel = [&](OpBuilder &fb, Location fl) -> Value {
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
  };

  // With few rows, no threads: forking and joining costs more than they
  // take.
  Value few = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::ule, m,
      indexConstant(b, loc,
                    std::max<int64_t>(1, kLayerNormSerialElements / width)));
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

/// tfm.layer_norm: the vector kernel when the last axis is static and the
/// elements are f32 (all the checkpoints' layer norms), else the generic
/// lowering.
struct LayerNormLowering : public OpConversionPattern<LayerNormOp> {
  LayerNormLowering(MLIRContext *ctx, int64_t lanes)
      : OpConversionPattern<LayerNormOp>(ctx), lanes(lanes) {}
  int64_t lanes;

  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Value input = adaptor.getInput(), residual = adaptor.getResidual();
    Value gamma = adaptor.getScale(), beta = adaptor.getBias();
    if (!hasVectorLayerNormKernel(op)) {
      rewriter.replaceOp(
          op, genericLayerNorm(rewriter, op, input, residual, gamma, beta));
      return success();
    }
    Value x = collapseLeading(rewriter, loc, input, 1);
    Value flatResidual =
        residual ? collapseLeading(rewriter, loc, residual, 1) : Value();
    Value y = vectorLayerNorm(rewriter, loc, x, flatResidual, gamma, beta,
                              op.getEpsilon().convertToDouble(), lanes);
    Value result = expandLeading(rewriter, loc, y, type, input);
    if (result.getType() != type)
      result = rewriter.create<tensor::CastOp>(loc, type, result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::tfm::lowering::populateNormalizationLoweringPatterns(
    RewritePatternSet &patterns, int64_t vectorWidth) {
  patterns.add<SoftmaxLowering, MeanLowering>(patterns.getContext());
  patterns.add<LayerNormLowering>(patterns.getContext(), vectorWidth);
}

bool mlir::tfm::hasVectorLayerNormKernel(LayerNormOp op) {
  RankedTensorType type = op.getType();
  return type.getRank() >= 2 && !type.isDynamicDim(type.getRank() - 1) &&
         type.getElementType().isF32();
}
