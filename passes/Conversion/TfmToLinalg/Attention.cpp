//===- Attention.cpp - Lower tfm.attention ----------------------*- C++ -*-===//
//
// tfm.attention as a FlashAttention loop nest: the scores are never
// materialized whole, masks come from loop indices and lengths.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// source[row, offset : offset + size, 0 : width] as a 2-D tensor.
static Value rowTile(OpBuilder &b, Location loc, Value source, Value row,
                     Value offset, Value size, OpFoldResult width) {
  auto sourceType = tensorTypeOf(source);
  std::optional<int64_t> staticWidth = getConstantIntValue(width);
  auto type = RankedTensorType::get(
      {ShapedType::kDynamic, staticWidth ? *staticWidth : ShapedType::kDynamic},
      sourceType.getElementType());
  return b.create<tensor::ExtractSliceOp>(
      loc, type, source,
      ArrayRef<OpFoldResult>{row, offset, b.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1), size, width},
      unitStrides(b, 3));
}

/// FlashAttention on [N, Sq, D] x [N, Sk, D] x [N, Sk, Dv]: for each batch
/// row n and block of queries, visit key blocks [k0, k0 + bk) in turn:
///   S = scale · Q_blk·K_blkᵀ (causal: -inf where k0 + j > q0 + i + Sk - Sq)
///   m' = max(m, rowmax S);  P = exp(S - m');  c = exp(m - m')
///   l' = l·c + rowsum P;    O' = O·c + P·V_blk
/// and finally O / l. Key padding ends the key loop at lengths[b]; causal
/// attention ends it after the block's last visible key.
struct AttentionLowering : public OpConversionPattern<AttentionOp> {
  AttentionLowering(MLIRContext *ctx, int64_t queryBlock, int64_t keyBlock)
      : OpConversionPattern(ctx), queryBlock(queryBlock), keyBlock(keyBlock) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getMask()) {
      // An arbitrary additive mask has no loop-index form: spell the block
      // out and let the primitive patterns lower it.
      FailureOr<SmallVector<Value>> values =
          cast<linalg::AggregatedOpInterface>(op.getOperation())
              .decomposeOperation(rewriter);
      if (failed(values))
        return failure();
      rewriter.replaceOp(op, *values);
      return success();
    }
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type elt = type.getElementType();
    int64_t rank = type.getRank();
    Value q = collapseLeading(rewriter, loc, adaptor.getQuery(), 2);
    Value k = collapseLeading(rewriter, loc, adaptor.getKey(), 2);
    Value v = collapseLeading(rewriter, loc, adaptor.getValue(), 2);
    Value lengths = adaptor.getKeyLengths();
    bool causal = op.getCausal();
    double scale = op.getScale().convertToDouble();

    auto idx = [&](OpFoldResult r) {
      return getValueOrCreateConstantIndexOp(rewriter, loc, r);
    };
    Value n = idx(dimOf(rewriter, loc, q, 0));
    Value sq = idx(dimOf(rewriter, loc, q, 1));
    Value sk = idx(dimOf(rewriter, loc, k, 1));
    OpFoldResult d = dimOf(rewriter, loc, q, 2);
    OpFoldResult dv = dimOf(rewriter, loc, v, 2);
    // Rows of the flattened batch per row of the first batch dimension.
    Value rowsPerBatch = indexConstant(rewriter, loc, 1);
    for (int64_t dim = 1; dim < rank - 2; ++dim)
      rowsPerBatch = rewriter.create<arith::MulIOp>(
          loc, rowsPerBatch,
          idx(dimOf(rewriter, loc, adaptor.getQuery(), dim)));
    Value shift = rewriter.create<arith::SubIOp>(loc, sk, sq);
    Value bq = indexConstant(rewriter, loc, queryBlock);
    Value bk = indexConstant(rewriter, loc, keyBlock);
    Value zero = indexConstant(rewriter, loc, 0);
    Value queryBlocks = rewriter.create<arith::CeilDivUIOp>(loc, sq, bq);

    Value out = emptyTensor(rewriter, loc,
                            {n, sq, dv}, elt);
    auto forall = rewriter.create<scf::ForallOp>(
        loc, ArrayRef<OpFoldResult>{n, queryBlocks}, ValueRange{out},
        std::nullopt);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      Block *body = forall.getBody();
      rewriter.setInsertionPointToStart(body);
      Value row = body->getArgument(0), qb = body->getArgument(1);
      Value q0 = rewriter.create<arith::MulIOp>(loc, qb, bq);
      Value qs = rewriter.create<arith::MinUIOp>(
          loc, bq, rewriter.create<arith::SubIOp>(loc, sq, q0));
      // The key loop's end: padding and causality hide keys past it.
      Value kEnd = sk;
      if (lengths) {
        Value b = rewriter.create<arith::DivUIOp>(loc, row, rowsPerBatch);
        Value len = rewriter.create<arith::IndexCastOp>(
            loc, rewriter.getIndexType(),
            rewriter.create<tensor::ExtractOp>(loc, lengths, ValueRange{b}));
        kEnd = rewriter.create<arith::MinUIOp>(loc, kEnd, len);
      }
      if (causal) {
        // last query of the block sees keys up to q0 + qs - 1 + Sk - Sq
        Value lastVisible = rewriter.create<arith::AddIOp>(
            loc, rewriter.create<arith::AddIOp>(loc, q0, qs), shift);
        kEnd = rewriter.create<arith::MinUIOp>(loc, kEnd, lastVisible);
      }
      Value qTile = rowTile(rewriter, loc, q, row, q0, qs, d);
      Value m0 = filled(rewriter, loc, {qs}, elt, -INFINITY);
      Value l0 = filled(rewriter, loc, {qs}, elt, 0.0);
      Value acc0 = filled(rewriter, loc, {qs, dv}, elt, 0.0);
      auto loop = rewriter.create<scf::ForOp>(
          loc, zero, kEnd, bk, ValueRange{m0, l0, acc0},
          [&](OpBuilder &b, Location l, Value k0, ValueRange iter) {
            Value ks = b.create<arith::MinUIOp>(
                l, bk, b.create<arith::SubIOp>(l, kEnd, k0));
            Value kTile = rowTile(b, l, k, row, k0, ks, d);
            Value vTile = rowTile(b, l, v, row, k0, ks, dv);
            // S = Q·Kᵀ, then scale and the causal mask
            Value s0 = filled(b, l, {qs, ks}, elt, 0.0);
            Value s = b.create<linalg::MatmulTransposeBOp>(
                           l, ValueRange{qTile, kTile}, ValueRange{s0})
                          .getResult(0);
            Value scaleV = floatConstant(b, l, elt, scale);
            Value ninf = floatConstant(b, l, elt, -INFINITY);
            s = elementwise(
                b, l, cast<RankedTensorType>(s.getType()), ValueRange{s},
                [&](OpBuilder &nb, Location nl, ValueRange args) {
                  Value x = nb.create<arith::MulFOp>(nl, args[0], scaleV);
                  if (!causal)
                    return x;
                  Value i = nb.create<arith::AddIOp>(
                      nl, q0, nb.create<linalg::IndexOp>(nl, 0));
                  Value j = nb.create<arith::AddIOp>(
                      nl, k0, nb.create<linalg::IndexOp>(nl, 1));
                  Value hidden = nb.create<arith::CmpIOp>(
                      nl, arith::CmpIPredicate::sgt, j,
                      nb.create<arith::AddIOp>(nl, i, shift));
                  return nb.create<arith::SelectOp>(nl, hidden, ninf, x)
                      .getResult();
                });
            // m' = max(m, rowmax S)
            Value m = iter[0], lsum = iter[1], acc = iter[2];
            auto vecType = cast<RankedTensorType>(m.getType());
            Value rowMax = reduceLastAxis(b, l, s, -INFINITY, maxCombine);
            Value mNew = elementwise(b, l, vecType, ValueRange{m, rowMax},
                                     maxCombine);
            // P = exp(S - m')
            Value p = withRowValue(b, l, s, mNew, expOfDifference);
            // c = exp(m - m');  l' = l·c + rowsum P
            Value corr =
                elementwise(b, l, vecType, ValueRange{m, mNew}, expOfDifference);
            Value rowSum = reduceLastAxis(b, l, p, 0.0, addCombine);
            Value lNew = elementwise(
                b, l, vecType, ValueRange{lsum, corr, rowSum},
                [&](OpBuilder &nb, Location nl, ValueRange args) {
                  return nb.create<arith::AddFOp>(
                      nl, nb.create<arith::MulFOp>(nl, args[0], args[1]),
                      args[2]);
                });
            // O' = O·c + P·V
            Value scaled = withRowValue(b, l, acc, corr, product);
            Value accNew = b.create<linalg::MatmulOp>(
                                l, ValueRange{p, vTile}, ValueRange{scaled})
                               .getResult(0);
            b.create<scf::YieldOp>(l, ValueRange{mNew, lNew, accNew});
          });
      // O / l
      Value tile = withRowValue(rewriter, loc, loop.getResult(2),
                                loop.getResult(1), quotient);
      rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
      rewriter.create<tensor::ParallelInsertSliceOp>(
          loc, tile, body->getArguments().back(),
          ArrayRef<OpFoldResult>{row, q0, rewriter.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1), qs, dv},
          unitStrides(rewriter, 3));
    }
    Value result = expandLeading(rewriter, loc, forall.getResult(0),
                                 RankedTensorType::get(
                                     [&] {
                                       SmallVector<int64_t> s(
                                           type.getShape().drop_back(2));
                                       s.push_back(ShapedType::kDynamic);
                                       s.push_back(
                                           tensorTypeOf(v).getDimSize(2));
                                       return s;
                                     }(),
                                     elt),
                                 adaptor.getQuery());
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, type, result);
    return success();
  }

  int64_t queryBlock, keyBlock;
};

} // namespace

void mlir::tfm::lowering::populateAttentionLoweringPatterns(
    RewritePatternSet &patterns, int64_t queryBlock, int64_t keyBlock,
    int64_t vectorWidth) {
  patterns.add<AttentionLowering>(patterns.getContext(), queryBlock,
                                  keyBlock);
}
