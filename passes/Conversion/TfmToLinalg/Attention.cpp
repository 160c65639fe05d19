//===- Attention.cpp - Lower tfm.attention ----------------------*- C++ -*-===//
//
// tfm.attention as a FlashAttention loop nest: the scores are never
// materialized whole, masks come from loop indices and lengths.
// AttentionKernelBuilder builds the nest over batch rows and blocks of
// queries, and picks a kernel for each block; the kernels are builders
// whose methods build the steps of the online softmax:
//   OneQueryKernel  vectors along D, one query at a time (decoder steps;
//                   OneQueryKernel.cpp)
//   TiledKernel     queries along the lanes, Sᵀ = K·Qᵀ in register tiles
//                   (TiledKernel.cpp)
//   the linalg ops of AttentionKernelBuilder::linalgBlock, for head sizes
//   that are not static or elements that are not f32.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"
#include "passes/Conversion/TfmToLinalg/VectorAttention.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

/// source[row, offset : offset + size, 0 : width] as a 2-D tensor.
static Value rowTile(OpBuilder &b, Location loc, Value source, Value row,
                     Value offset, Value size, OpFoldResult width) {
  auto sourceType = tensorTypeOf(source);
  std::optional<int64_t> staticWidth = getConstantIntValue(width);
  auto type = RankedTensorType::get(
      {ShapedType::kDynamic, staticWidth ? *staticWidth : ShapedType::kDynamic},
      sourceType.getElementType());
  return b.create<tensor::ExtractSliceOp>(
      loc, type, source, ArrayRef<OpFoldResult>{row, offset, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), size, width},
      unitStrides(b, 3));
}

//===----------------------------------------------------------------------===//
// The loop nest
//===----------------------------------------------------------------------===//

/// FlashAttention on [N, Sq, D] x [N, Sk, D] x [N, Sk, Dv] (the leading
/// dimensions collapsed into N): a forall over batch rows n and blocks of
/// config.attention.queryBlock queries, each block one of the kernels. The
/// linalg kernel visits key blocks [k0, k0 + bk) in turn (bk =
/// config.attention.linalgKeyBlock):
///   S = scale · Q_blk·K_blkᵀ (causal: -inf where k0 + j > q0 + i + Sk - Sq)
///   m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m')
///   l' = l·c + rowsum P;    O' = O·c + P·V_blk
/// and finally O / l. Key padding ends the key loop at lengths[b] and key
/// starts begin it at starts[b]; causal attention ends it after the
/// block's last visible key.
class AttentionKernelBuilder {
public:
  AttentionKernelBuilder(OpBuilder &b, AttentionOp op, Value query, Value key,
                         Value value, Value lengths, Value starts,
                         Value keyRows, Value bias, const KernelConfig &config);

  /// The attention, of the op's shape up to static sizes.
  Value build();

private:
  Value idx(OpFoldResult r) const {
    return getValueOrCreateConstantIndexOp(b, loc, r);
  }
  SmallVector<Value> leadingIndices(Value row);
  Value keyEndOf(Value batch);
  Value keyStartOf(Value batch);
  Value vectorBlock(Value output, Value row, ArrayRef<Value> lead, Value q0,
                    Value qs, Value kStart, Value kEnd);
  Value linalgBlock(Value row, Value q0, Value qs, Value kStart, Value kEnd);
  Value linalgScores(OpBuilder &kb, Location kl, Value qTile, Value kTile,
                     Value q0, Value k0, Value qs, Value ks);
  SmallVector<Value> linalgSoftmaxAndValues(OpBuilder &kb, Location kl, Value s,
                                            Value vTile, ValueRange iter);
  Value expandResult(Value flat);

  OpBuilder &b;
  AttentionOp op;
  Location loc;
  RankedTensorType type;
  Type elt;
  int64_t rank;
  /// The operands as the op has them, and with the leading dimensions
  /// collapsed ([N, S, D]).
  Value query, key, value, q, k, v, lengths, starts, keyRows, bias;
  bool causal;
  double scale;
  const KernelConfig &config;
  Value n, sq, sk, shift, bq, bk, zero, queryBlocks;
  OpFoldResult d, dv;
  /// Static head sizes take the vector kernels; others the linalg tiles.
  bool vectorized;
};

AttentionKernelBuilder::AttentionKernelBuilder(OpBuilder &b, AttentionOp op,
                                               Value query, Value key,
                                               Value value, Value lengths,
                                               Value starts, Value keyRows,
                                               Value bias,
                                               const KernelConfig &config)
    : b(b), op(op), loc(op.getLoc()), type(op.getType()),
      elt(type.getElementType()), rank(type.getRank()), query(query), key(key),
      value(value), lengths(lengths), starts(starts), keyRows(keyRows),
      bias(bias), causal(op.getCausal()),
      scale(op.getScale().convertToDouble()), config(config) {
  q = collapseLeading(b, loc, query, 2);
  k = collapseLeading(b, loc, key, 2);
  v = collapseLeading(b, loc, value, 2);
  n = idx(dimOf(b, loc, q, 0));
  sq = idx(dimOf(b, loc, q, 1));
  sk = idx(dimOf(b, loc, k, 1));
  d = dimOf(b, loc, q, 2);
  dv = dimOf(b, loc, v, 2);
  shift = b.create<arith::SubIOp>(loc, sk, sq);
  bq = indexConstant(b, loc, config.attention.queryBlock);
  bk = indexConstant(b, loc, config.attention.linalgKeyBlock);
  zero = indexConstant(b, loc, 0);
  queryBlocks = b.create<arith::CeilDivUIOp>(loc, sq, bq);
  vectorized = config.vectorWidth > 1 && hasVectorAttentionKernel(op);
}

Value AttentionKernelBuilder::build() {
  Value out = emptyTensor(b, loc, {n, sq, dv}, elt);
  auto forall =
      b.create<scf::ForallOp>(loc, ArrayRef<OpFoldResult>{n, queryBlocks},
                              ValueRange{out}, std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = forall.getBody();
    b.setInsertionPointToStart(body);
    Value row = body->getArgument(0), qb = body->getArgument(1);
    Value output = body->getArguments().back();
    // Queries [q0, q0 + qs) of batch row `row`.
    Value q0 = b.create<arith::MulIOp>(loc, qb, bq);
    Value qs =
        b.create<arith::MinUIOp>(loc, bq, b.create<arith::SubIOp>(loc, sq, q0));
    SmallVector<Value> lead = leadingIndices(row);
    Value kStart = keyStartOf(lead[0]), kEnd = keyEndOf(lead[0]);
    Value tile = vectorized
                     ? vectorBlock(output, row, lead, q0, qs, kStart, kEnd)
                     : linalgBlock(row, q0, qs, kStart, kEnd);
    b.setInsertionPointToStart(forall.getTerminator().getBody());
    b.create<tensor::ParallelInsertSliceOp>(
        loc, tile, output, ArrayRef<OpFoldResult>{row, q0, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), qs, dv}, unitStrides(b, 3));
  }
  return expandResult(forall.getResult(0));
}

/// The flattened row's leading indices (batch, head, ..):
/// row = Σ lead[i]·Π_{j>i} size_j
SmallVector<Value> AttentionKernelBuilder::leadingIndices(Value row) {
  SmallVector<Value> lead(rank - 2);
  Value rest = row;
  for (int64_t dim = rank - 3; dim > 0; --dim) {
    Value size = idx(dimOf(b, loc, query, dim));
    lead[dim] = b.create<arith::RemUIOp>(loc, rest, size);
    rest = b.create<arith::DivUIOp>(loc, rest, size);
  }
  lead[0] = rest;
  return lead;
}

/// The key loop's end: len = min(Sk, lengths[batch]); padding hides the
/// keys past it.
Value AttentionKernelBuilder::keyEndOf(Value batch) {
  if (!lengths)
    return sk;
  Value len = b.create<arith::IndexCastOp>(
      loc, b.getIndexType(),
      b.create<tensor::ExtractOp>(loc, lengths, ValueRange{batch}));
  return b.create<arith::MinUIOp>(loc, sk, len);
}

/// The key loop's start: starts[batch], the keys before it hidden; 0
/// without starts.
Value AttentionKernelBuilder::keyStartOf(Value batch) {
  if (!starts)
    return zero;
  return b.create<arith::IndexCastOp>(
      loc, b.getIndexType(),
      b.create<tensor::ExtractOp>(loc, starts, ValueRange{batch}));
}

/// A block on vectors, written in place into the rows of the shared output:
/// blocks of many queries take the register-tiled kernel; decoder steps
/// (one query) and other small blocks the one-query kernel.
Value AttentionKernelBuilder::vectorBlock(Value output, Value row,
                                          ArrayRef<Value> lead, Value q0,
                                          Value qs, Value kStart, Value kEnd) {
  Value init = rowTile(b, loc, output, row, q0, qs, dv);
  QueryBlock block = {query,   key,   value, SmallVector<Value>(lead),
                      q0,      qs,    kEnd,  shift,
                      causal,  scale, init,  bias,
                      keyRows, kStart};
  auto oneQueryAtATime = [&](OpBuilder &ob, Location ol) {
    return oneQueryAttention(ob, ol, block, config);
  };
  // The tiled kernel's queries lie along the lanes, across the bias's rows,
  // and it reads its tiles of keys from one batch row of K: a bias or key
  // rows take the one-query kernel at any block size, as do key starts
  // (only a decoder step has them).
  int64_t staticQueries = type.getDimSize(rank - 2);
  if (bias || keyRows || starts ||
      (!ShapedType::isDynamic(staticQueries) &&
       staticQueries < config.attention.tiledMinQueries))
    return oneQueryAtATime(b, loc);
  Value many = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::uge, qs,
      indexConstant(b, loc, config.attention.tiledMinQueries));
  return b
      .create<scf::IfOp>(
          loc, many,
          [&](OpBuilder &tb, Location tl) {
            tb.create<scf::YieldOp>(tl, tiledAttention(tb, tl, block, config));
          },
          [&](OpBuilder &ob, Location ol) {
            ob.create<scf::YieldOp>(ol, oneQueryAtATime(ob, ol));
          })
      .getResult(0);
}

/// A block on linalg tiles: the key loop with O, m and l of the block's
/// queries as [qs, Dv] and [qs] tensors; O / l at the end.
Value AttentionKernelBuilder::linalgBlock(Value row, Value q0, Value qs,
                                          Value kStart, Value kEnd) {
  if (causal) {
    // last query of the block sees keys up to q0 + qs - 1 + Sk - Sq
    Value lastVisible = b.create<arith::AddIOp>(
        loc, b.create<arith::AddIOp>(loc, q0, qs), shift);
    kEnd = b.create<arith::MinUIOp>(loc, kEnd, lastVisible);
  }
  Value qTile = rowTile(b, loc, q, row, q0, qs, d);
  Value m0 = filled(b, loc, {qs}, elt, -INFINITY);
  Value l0 = filled(b, loc, {qs}, elt, 0.0);
  Value acc0 = filled(b, loc, {qs, dv}, elt, 0.0);
  auto loop = b.create<scf::ForOp>(
      loc, kStart, kEnd, bk, ValueRange{m0, l0, acc0},
      [&](OpBuilder &kb, Location kl, Value k0, ValueRange iter) {
        Value ks = kb.create<arith::MinUIOp>(
            kl, bk, kb.create<arith::SubIOp>(kl, kEnd, k0));
        Value kTile = rowTile(kb, kl, k, row, k0, ks, d);
        Value vTile = rowTile(kb, kl, v, row, k0, ks, dv);
        Value s = linalgScores(kb, kl, qTile, kTile, q0, k0, qs, ks);
        kb.create<scf::YieldOp>(kl,
                                linalgSoftmaxAndValues(kb, kl, s, vTile, iter));
      });
  // O / l
  return withRowValue(b, loc, loop.getResult(2), loop.getResult(1), quotient);
}

/// S = scale · Q_blk·K_blkᵀ, -inf where causality hides key k0 + j from
/// query q0 + i: k0 + j > q0 + i + Sk - Sq.
Value AttentionKernelBuilder::linalgScores(OpBuilder &kb, Location kl,
                                           Value qTile, Value kTile, Value q0,
                                           Value k0, Value qs, Value ks) {
  Value s0 = filled(kb, kl, {qs, ks}, elt, 0.0);
  Value s = kb.create<linalg::MatmulTransposeBOp>(kl, ValueRange{qTile, kTile},
                                                  ValueRange{s0})
                .getResult(0);
  Value scaleV = floatConstant(kb, kl, elt, scale);
  Value ninf = floatConstant(kb, kl, elt, -INFINITY);
  return elementwise(
      kb, kl, cast<RankedTensorType>(s.getType()), ValueRange{s},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value x = nb.create<arith::MulFOp>(nl, args[0], scaleV);
        if (!causal)
          return x;
        Value i =
            nb.create<arith::AddIOp>(nl, q0, nb.create<linalg::IndexOp>(nl, 0));
        Value j =
            nb.create<arith::AddIOp>(nl, k0, nb.create<linalg::IndexOp>(nl, 1));
        Value hidden =
            nb.create<arith::CmpIOp>(nl, arith::CmpIPredicate::sgt, j,
                                     nb.create<arith::AddIOp>(nl, i, shift));
        return nb.create<arith::SelectOp>(nl, hidden, ninf, x).getResult();
      });
}

/// The online softmax and P·V of one key block, `iter` {m, l, O}:
///   m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m')
///   l' = l·c + rowsum P;    O' = O·c + P·V_blk
SmallVector<Value> AttentionKernelBuilder::linalgSoftmaxAndValues(
    OpBuilder &kb, Location kl, Value s, Value vTile, ValueRange iter) {
  Value m = iter[0], lsum = iter[1], acc = iter[2];
  auto rowType = cast<RankedTensorType>(m.getType());
  // m' = max(m, rowmax S)
  Value rowMax = reduceLastAxis(kb, kl, s, -INFINITY, maxCombine);
  Value mNew = elementwise(kb, kl, rowType, ValueRange{m, rowMax}, maxCombine);
  // P = exp(S - m')
  Value p = withRowValue(kb, kl, s, mNew, expOfDifference);
  // c = exp(m - m');  l' = l·c + rowsum P
  Value corr =
      elementwise(kb, kl, rowType, ValueRange{m, mNew}, expOfDifference);
  Value rowSum = reduceLastAxis(kb, kl, p, 0.0, addCombine);
  Value lNew = elementwise(
      kb, kl, rowType, ValueRange{lsum, corr, rowSum},
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        return nb.create<arith::AddFOp>(
            nl, nb.create<arith::MulFOp>(nl, args[0], args[1]), args[2]);
      });
  // O' = O·c + P·V
  Value scaled = withRowValue(kb, kl, acc, corr, product);
  Value accNew =
      kb.create<linalg::MatmulOp>(kl, ValueRange{p, vTile}, ValueRange{scaled})
          .getResult(0);
  return {mNew, lNew, accNew};
}

/// [N, Sq, Dv] back to the op's leading dimensions.
Value AttentionKernelBuilder::expandResult(Value flat) {
  SmallVector<int64_t> shape(type.getShape().drop_back(2));
  shape.push_back(ShapedType::kDynamic);
  shape.push_back(tensorTypeOf(v).getDimSize(2));
  return expandLeading(b, loc, flat, RankedTensorType::get(shape, elt), query);
}

/// tfm.attention as AttentionKernelBuilder's loop nest, with a finite bias
/// and key rows in the vector kernel; with another mask, or a bias or key
/// rows and no vectors, decomposed.
struct AttentionLowering : public OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, const KernelConfig &config)
      : OpConversionPattern(ctx), config(config) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    bool vectorKernel = config.vectorWidth > 1 && hasVectorAttentionKernel(op);
    if ((op.getMask() || op.getKeyRows()) && !vectorKernel) {
      // An arbitrary additive mask has no loop-index form, and the linalg
      // tiles read K and V in blocks of rows: spell the block out (gathering
      // keys and values through their rows) and let the primitive patterns
      // lower it.
      FailureOr<SmallVector<Value>> values =
          cast<linalg::AggregatedOpInterface>(op.getOperation())
              .decomposeOperation(rewriter);
      if (failed(values))
        return failure();
      rewriter.replaceOp(op, *values);
      return success();
    }
    AttentionKernelBuilder builder(
        rewriter, op, adaptor.getQuery(), adaptor.getKey(), adaptor.getValue(),
        adaptor.getKeyLengths(), adaptor.getKeyStarts(), adaptor.getKeyRows(),
        adaptor.getMask(), config);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(),
                                                builder.build());
    return success();
  }

  KernelConfig config;
};

} // namespace

void mlir::tfm::lowering::populateAttentionLoweringPatterns(
    RewritePatternSet &patterns, const KernelConfig &config) {
  patterns.add<AttentionLowering>(patterns.getContext(), config);
}

/// A bias the vector kernel adds to the scores: finite by construction
/// (a -inf would need the online softmax's guards), of the scores' rank.
static bool isKernelBias(AttentionOp op) {
  Value mask = op.getMask();
  return mask && mask.getDefiningOp<RelativePositionBiasOp>() &&
         cast<RankedTensorType>(mask.getType()).getRank() ==
             cast<RankedTensorType>(op.getQuery().getType()).getRank();
}

bool mlir::tfm::hasVectorAttentionKernel(AttentionOp op) {
  auto query = cast<RankedTensorType>(op.getQuery().getType());
  auto value = cast<RankedTensorType>(op.getValue().getType());
  return (!op.getMask() || isKernelBias(op)) &&
         query.getElementType().isF32() &&
         !query.isDynamicDim(query.getRank() - 1) &&
         !value.isDynamicDim(value.getRank() - 1);
}
