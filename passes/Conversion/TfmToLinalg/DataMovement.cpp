//===- DataMovement.cpp - Lower weights, embeddings, heads, caches --------===//
//
// Ops that move data: weights as views of the weights file, embedding
// lookups, position encodings, head split/merge, cache updates, slices.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

namespace {

//===----------------------------------------------------------------------===//
// Weights, embeddings, positions
//===----------------------------------------------------------------------===//

/// tfm.weight -> a view of the function's weights argument at its offset.
struct WeightLowering : public OpConversionPattern<WeightOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WeightOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op.getOffset())
      return op.emitOpError("has no offset in the weights file; run "
                            "tfm-layout-weights first");
    auto func = op->getParentOfType<FunctionOpInterface>();
    Location loc = op.getLoc();
    Value weights = func.getArgument(0);
    RankedTensorType type = op.getType();
    Value offset = indexConstant(rewriter, loc, *op.getOffset());
    auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
    Value view = rewriter.create<memref::ViewOp>(loc, memrefType, weights,
                                                 offset, ValueRange{});
    rewriter.replaceOpWithNewOp<bufferization::ToTensorOp>(
        op, type, view, /*restrict=*/true, /*writable=*/false);
    return success();
  }
};

/// tfm.caller_rows of a weight stored plain (a bias) -> a view of the
/// caller's argument, f32 with the chosen count along the axis. (Those of
/// a weight in panels stay for the linears' lowering, which reads them.)
struct CallerRowsLowering : public OpConversionPattern<CallerRowsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CallerRowsOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    // The weight's shape with `?` along the axis: the result may leave other
    // dimensions `?` too (the verifier lets them agree), the weight's are
    // static.
    SmallVector<int64_t> shape(op.getInput().getType().getShape());
    shape[op.getAxis()] = ShapedType::kDynamic;
    int64_t otherElements = 1;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (d != int64_t(op.getAxis()))
        otherElements *= shape[d];
    auto [bytes, count] =
        callerArgument(rewriter, loc, op, op.getFrom(), 4 * otherElements);
    auto memrefType = MemRefType::get(shape, type.getElementType());
    Value view = rewriter.create<memref::ViewOp>(
        loc, memrefType, bytes, indexConstant(rewriter, loc, 0),
        ValueRange{count});
    Value rows = rewriter.create<bufferization::ToTensorOp>(
        loc, type.clone(shape), view, /*restrict=*/true, /*writable=*/false);
    if (rows.getType() != type)
      rows = rewriter.create<tensor::CastOp>(loc, type, rows);
    rewriter.replaceOp(op, rows);
    return success();
  }
};

/// result[.., d] = table[ids[..], d]
struct EmbeddingLowering : public OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    Value ids = adaptor.getIds(), table = adaptor.getTable();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, ids);
    sizes.push_back(dimOf(rewriter, loc, table, 1));
    Value init = emptyTensor(rewriter, loc, sizes, type.getElementType());
    AffineMap out = rewriter.getMultiDimIdentityMap(rank);
    AffineMap in = out.dropResult(rank - 1);
    rewriter.replaceOpWithNewOp<linalg::GenericOp>(
        op, TypeRange{type}, ValueRange{ids}, ValueRange{init},
        ArrayRef<AffineMap>{in, out}, parallel(rank),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value row =
              b.create<arith::IndexCastOp>(l, b.getIndexType(), args[0]);
          Value col = b.create<linalg::IndexOp>(l, rank - 1);
          b.create<linalg::YieldOp>(
              l, b.create<tensor::ExtractOp>(l, table, ValueRange{row, col})
                     .getResult());
        });
    return success();
  }
};

/// result[b, .., s, c] = PE(offset + s - starts[b], c) (starts: 0 without)
struct PositionEncodingLowering
    : public OpConversionPattern<PositionEncodingOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PositionEncodingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank(), dim = type.getShape().back();
    Value ids = adaptor.getIds(), offset = adaptor.getOffset();
    Value table = adaptor.getTable();
    PositionKind kind = op.getKind();
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, ids);
    sizes.push_back(rewriter.getIndexAttr(dim));
    Value init = emptyTensor(rewriter, loc, sizes, type.getElementType());
    Value starts = adaptor.getStarts();
    SmallVector<Value> inputs;
    SmallVector<AffineMap> maps;
    if (starts) {
      inputs.push_back(starts);
      maps.push_back(AffineMap::get(rank, 0, rewriter.getAffineDimExpr(0)));
    }
    maps.push_back(rewriter.getMultiDimIdentityMap(rank));
    rewriter.replaceOpWithNewOp<linalg::GenericOp>(
        op, TypeRange{type}, inputs, ValueRange{init}, maps, parallel(rank),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value pos = b.create<arith::AddIOp>(
              l, offset, b.create<linalg::IndexOp>(l, rank - 2));
          if (starts)
            pos = b.create<arith::SubIOp>(
                l, pos,
                b.create<arith::IndexCastOp>(l, b.getIndexType(), args[0]));
          Value c = b.create<linalg::IndexOp>(l, rank - 1);
          Value result;
          if (kind == PositionKind::learned) {
            result = b.create<tensor::ExtractOp>(l, table, ValueRange{pos, c});
          } else {
            result = sinusoid(b, l, kind, pos, c, dim, args.back().getType());
          }
          b.create<linalg::YieldOp>(l, result);
        });
    return success();
  }

  /// In f64, as reference implementations compute the table:
  /// angle = p / 10000^(i/n) for the channel pair i, with n = d/2 (the
  /// paper's 2i/d) or n = d/2 - 1 (sinusoidal_concat_half_minus_one); sin
  /// for the first of each pair (interleaved) or the first half of the
  /// channels (concatenated), cos for the other.
  static Value sinusoid(OpBuilder &b, Location l, PositionKind kind, Value pos,
                        Value c, int64_t dim, Type elt) {
    Type f64 = b.getF64Type();
    Value half = indexConstant(b, l, dim / 2);
    Value i, isSin;
    if (kind == PositionKind::sinusoidal_interleaved) {
      Value two = indexConstant(b, l, 2);
      i = b.create<arith::DivUIOp>(l, c, two);
      isSin = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq,
                                      b.create<arith::RemUIOp>(l, c, two),
                                      indexConstant(b, l, 0));
    } else {
      isSin = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ult, c, half);
      i = b.create<arith::SelectOp>(l, isSin, c,
                                    b.create<arith::SubIOp>(l, c, half));
    }
    int64_t n = kind == PositionKind::sinusoidal_concat_half_minus_one
                    ? dim / 2 - 1
                    : dim / 2;
    auto toF64 = [&](Value index) -> Value {
      Value i64 = b.create<arith::IndexCastOp>(l, b.getI64Type(), index);
      return b.create<arith::SIToFPOp>(l, f64, i64);
    };
    // 10000^(i/n)
    Value exponent = b.create<arith::DivFOp>(
        l, toF64(i), floatConstant(b, l, f64, double(n)));
    Value denom =
        b.create<math::PowFOp>(l, floatConstant(b, l, f64, 10000.0), exponent);
    Value angle = b.create<arith::DivFOp>(l, toF64(pos), denom);
    Value value =
        b.create<arith::SelectOp>(l, isSin, b.create<math::SinOp>(l, angle),
                                  b.create<math::CosOp>(l, angle));
    return b.create<arith::TruncFOp>(l, elt, value);
  }
};

/// result[0, h, i, j] = table[bucket(j - (offset + i)), h], the buckets of
/// the distances looked up in a constant the op computes.
struct RelativePositionBiasLowering
    : public OpConversionPattern<RelativePositionBiasOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(RelativePositionBiasOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    SmallVector<int32_t> distances = op.getDistanceBuckets();
    auto lutType = RankedTensorType::get({int64_t(distances.size())},
                                         rewriter.getI32Type());
    Value lut = rewriter.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(lutType, ArrayRef<int32_t>(distances)));
    Value table = adaptor.getTable(), offset = adaptor.getQueryOffset();
    int64_t rows = op.getTable().getType().getShape()[0];
    // Heads from the table (static, verified): the result may leave them `?`.
    int64_t heads = op.getTable().getType().getShape()[1];
    bool bidirectional = op.getBidirectional();
    SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(1),
                                       rewriter.getIndexAttr(heads),
                                       adaptor.getQueries(), adaptor.getKeys()};
    Value init = emptyTensor(rewriter, loc, sizes, type.getElementType());
    Value bias =
        rewriter
            .create<linalg::GenericOp>(
                loc, init.getType(), ValueRange{}, ValueRange{init},
                ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(4)},
                parallel(4),
                [&](OpBuilder &b, Location l, ValueRange) {
                  // rel = j - (offset + i)
                  Value query = b.create<arith::AddIOp>(
                      l, offset, b.create<linalg::IndexOp>(l, 2));
                  Value rel = b.create<arith::SubIOp>(
                      l, b.create<linalg::IndexOp>(l, 3), query);
                  Value bucket = bucketOf(b, l, rel, lut, distances.size(),
                                          bidirectional ? rows / 2 : 0);
                  Value h = b.create<linalg::IndexOp>(l, 1);
                  b.create<linalg::YieldOp>(
                      l, b.create<tensor::ExtractOp>(l, table,
                                                     ValueRange{bucket, h})
                             .getResult());
                })
            .getResult(0);
    if (bias.getType() != type)
      bias = rewriter.create<tensor::CastOp>(loc, type, bias);
    rewriter.replaceOp(op, bias);
    return success();
  }

  /// The bucket of `rel`: lut[min(r, size - 1)] for the distance r (|rel|
  /// if bidirectional, else max(-rel, 0)), plus `upper` for keys after the
  /// query when bidirectional.
  static Value bucketOf(OpBuilder &b, Location l, Value rel, Value lut,
                        int64_t size, int64_t upper) {
    Value zero = indexConstant(b, l, 0);
    Value negated = b.create<arith::SubIOp>(l, zero, rel);
    Value distance = b.create<arith::MaxSIOp>(l, negated, upper ? rel : zero);
    distance =
        b.create<arith::MinSIOp>(l, distance, indexConstant(b, l, size - 1));
    Value bucket = b.create<arith::IndexCastOp>(
        l, b.getIndexType(),
        b.create<tensor::ExtractOp>(l, lut, ValueRange{distance}));
    if (!upper)
      return bucket;
    Value after =
        b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sgt, rel, zero);
    return b.create<arith::SelectOp>(
        l, after,
        b.create<arith::AddIOp>(l, bucket, indexConstant(b, l, upper)), bucket);
  }
};

//===----------------------------------------------------------------------===//
// Heads and caches
//===----------------------------------------------------------------------===//

/// for i in [0, count): value = body(i, value); the last value.
static Value
loopCarrying(OpBuilder &b, Location loc, Value count, Value init,
             function_ref<Value(OpBuilder &, Location, Value, Value)> body) {
  auto loop = b.create<scf::ForOp>(
      loc, indexConstant(b, loc, 0), count, indexConstant(b, loc, 1),
      ValueRange{init},
      [&](OpBuilder &lb, Location ll, Value i, ValueRange iter) {
        lb.create<scf::YieldOp>(ll, body(lb, ll, i, iter[0]));
      });
  return loop.getResult(0);
}

/// Copies the heads between the rows layout [B, S, H·Dh] and the heads
/// layout [B, H, S, Dh], `toHeads` from the first to the second:
///   heads[b, h, s, :] = rows[b, s, h·Dh : (h + 1)·Dh]
/// Dh floats at a time, as vectors of `lanes` (Dh a multiple of `lanes`),
/// in parallel over b where there are more than `serialRows` rows (a
/// batch's encoder), else in one loop: a decoder step's few rows (2 KB each
/// at the base model's 512) take less time to copy than threads to fork and
/// join.
/// (linalg.transpose became a scalar loop on one thread: 3% of the
/// samples of greedy decoding at batch 32, twice that with the thread that
/// waited for it.)
static Value copyHeads(OpBuilder &b, Location loc, Value input,
                       RankedTensorType type, bool toHeads, int64_t heads,
                       int64_t headDim, int64_t lanes, int64_t serialRows) {
  Type elt = type.getElementType();
  auto vecType = VectorType::get({lanes}, elt);
  Value zero = floatConstant(b, loc, elt, 0.0);
  OpFoldResult batch = dimOf(b, loc, input, 0);
  OpFoldResult seq = dimOf(b, loc, input, toHeads ? 1 : 2);
  SmallVector<OpFoldResult> outSizes =
      toHeads ? SmallVector<OpFoldResult>{batch, b.getIndexAttr(heads), seq,
                                          b.getIndexAttr(headDim)}
              : SmallVector<OpFoldResult>{batch, seq,
                                          b.getIndexAttr(heads * headDim)};
  Value out = emptyTensor(b, loc, outSizes, elt);
  Value bSize = getValueOrCreateConstantIndexOp(b, loc, batch);
  Value sSize = getValueOrCreateConstantIndexOp(b, loc, seq);

  // Head h of row (bi, si) into `t`: Dh / lanes vector copies, unrolled.
  auto copyHead = [&](OpBuilder &hb, Location hl, Value bi, Value si, Value h,
                      Value t, ArrayRef<Value> prefix) {
    Value first =
        hb.create<arith::MulIOp>(hl, h, indexConstant(hb, hl, headDim));
    for (int64_t c = 0; c < headDim; c += lanes) {
      Value cC = indexConstant(hb, hl, c);
      Value rowColumn = hb.create<arith::AddIOp>(hl, first, cC);
      SmallVector<Value> from = toHeads ? SmallVector<Value>{bi, si, rowColumn}
                                        : SmallVector<Value>{bi, h, si, cC};
      SmallVector<Value> to(prefix);
      if (toHeads)
        to.append({h, si, cC});
      else
        to.append({si, rowColumn});
      Value v = hb.create<vector::TransferReadOp>(hl, vecType, input, from,
                                                  zero, ArrayRef<bool>{true});
      t = hb.create<vector::TransferWriteOp>(hl, v, t, to, ArrayRef<bool>{true})
              .getResult();
    }
    return t;
  };
  // Sentence `bi`'s heads into `dest`: `out` itself (prefix {bi}) or its
  // slice of sentence bi (no prefix). The heads are a loop, not unrolled:
  // one-shot bufferization's analysis walks each chain of writes into a
  // tensor once per write, so an unrolled chain of H·Dh / lanes writes
  // (128 at a width of 2048) costs its square.
  auto copySentence = [&](OpBuilder &sb, Location sl, Value bi, Value dest,
                          ArrayRef<Value> prefix) {
    return loopCarrying(
        sb, sl, sSize, dest,
        [&](OpBuilder &lb, Location ll, Value si, Value t) {
          return loopCarrying(
              lb, ll, indexConstant(lb, ll, heads), t,
              [&](OpBuilder &hb, Location hl, Value h, Value th) {
                return copyHead(hb, hl, bi, si, h, th, prefix);
              });
        });
  };

  Value rows = b.create<arith::MulIOp>(loc, bSize, sSize);
  Value few = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ule, rows,
                                      indexConstant(b, loc, serialRows));
  auto choice = b.create<scf::IfOp>(
      loc, few,
      [&](OpBuilder &sb, Location sl) {
        auto loop = sb.create<scf::ForOp>(
            sl, indexConstant(sb, sl, 0), bSize, indexConstant(sb, sl, 1),
            ValueRange{out},
            [&](OpBuilder &lb, Location ll, Value bi, ValueRange iter) {
              lb.create<scf::YieldOp>(ll,
                                      copySentence(lb, ll, bi, iter[0], {bi}));
            });
        sb.create<scf::YieldOp>(sl, loop.getResult(0));
      },
      [&](OpBuilder &pb, Location pl) {
        auto forall = pb.create<scf::ForallOp>(
            pl, ArrayRef<OpFoldResult>{batch}, ValueRange{out}, std::nullopt);
        pb.create<scf::YieldOp>(pl, forall.getResult(0));
        OpBuilder::InsertionGuard guard(pb);
        Block *body = forall.getBody();
        pb.setInsertionPointToStart(body);
        Value bi = body->getArgument(0);
        int64_t rank = type.getRank();
        SmallVector<OpFoldResult> offsets(rank, pb.getIndexAttr(0));
        offsets[0] = bi;
        SmallVector<OpFoldResult> sizes(outSizes);
        sizes[0] = pb.getIndexAttr(1);
        // The slice's shape is `out`'s, whose sizes come from the input:
        // the result type may know a size the input leaves `?`.
        auto outType = cast<RankedTensorType>(out.getType());
        SmallVector<int64_t> sliceShape(outType.getShape().drop_front());
        auto sliceType = RankedTensorType::get(sliceShape, elt);
        Value slice = pb.create<tensor::ExtractSliceOp>(
            pl, sliceType, body->getArguments().back(), offsets, sizes,
            unitStrides(pb, rank));
        Value copied = copySentence(pb, pl, bi, slice, {});
        pb.setInsertionPointToStart(forall.getTerminator().getBody());
        pb.create<tensor::ParallelInsertSliceOp>(
            pl, copied, body->getArguments().back(), offsets, sizes,
            unitStrides(pb, rank));
      });
  return choice.getResult(0);
}

/// [B, S, H·Dh] -> [B, H, S, Dh]: copyHeads where Dh is whole vectors, else
/// expand [B, S, H, Dh] -> transpose [B, H, S, Dh].
struct SplitHeadsLowering : public OpConversionPattern<SplitHeadsOp> {
  SplitHeadsLowering(MLIRContext *ctx, const KernelConfig &config)
      : OpConversionPattern<SplitHeadsOp>(ctx), lanes(config.vectorWidth),
        serialRows(config.serialHeadCopyRows) {}
  int64_t lanes, serialRows;

  LogicalResult
  matchAndRewrite(SplitHeadsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Value x = adaptor.getInput();
    // From the op's count and the input's width (static, verified): the
    // result may leave them `?`, which copyHeads's slices cannot take.
    int64_t heads = op.getNumHeads(),
            headDim = op.getInput().getType().getDimSize(2) / heads;
    if (!type.isDynamicDim(1) && !type.isDynamicDim(3) &&
        headDim % lanes == 0) {
      Value y = copyHeads(rewriter, loc, x, type, /*toHeads=*/true, heads,
                          headDim, lanes, serialRows);
      rewriter.replaceOpWithNewOp<tensor::CastOp>(op, type, y);
      return success();
    }
    auto expandedType =
        RankedTensorType::get({tensorTypeOf(x).getDimSize(0),
                               tensorTypeOf(x).getDimSize(1), heads, headDim},
                              type.getElementType());
    SmallVector<OpFoldResult> shape = {
        dimOf(rewriter, loc, x, 0), dimOf(rewriter, loc, x, 1),
        rewriter.getIndexAttr(heads), rewriter.getIndexAttr(headDim)};
    Value expanded = rewriter.create<tensor::ExpandShapeOp>(
        loc, expandedType, x, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}},
        shape);
    SmallVector<OpFoldResult> outSizes = {shape[0], shape[2], shape[1],
                                          shape[3]};
    Value init = emptyTensor(rewriter, loc, outSizes, type.getElementType());
    Value t = rewriter
                  .create<linalg::TransposeOp>(loc, expanded, init,
                                               ArrayRef<int64_t>{0, 2, 1, 3})
                  ->getResult(0);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, type, t);
    return success();
  }
};

/// [B, H, S, Dh] -> [B, S, H·Dh]: copyHeads where Dh is static and whole
/// vectors, else transpose [B, S, H, Dh] -> collapse [B, S, H·Dh].
struct MergeHeadsLowering : public OpConversionPattern<MergeHeadsOp> {
  MergeHeadsLowering(MLIRContext *ctx, const KernelConfig &config)
      : OpConversionPattern<MergeHeadsOp>(ctx), lanes(config.vectorWidth),
        serialRows(config.serialHeadCopyRows) {}
  int64_t lanes, serialRows;

  LogicalResult
  matchAndRewrite(MergeHeadsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    RankedTensorType inputType = tensorTypeOf(x);
    int64_t heads = inputType.getDimSize(1), headDim = inputType.getDimSize(3);
    if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(headDim) &&
        headDim % lanes == 0 && !op.getType().isDynamicDim(2)) {
      Value y = copyHeads(rewriter, loc, x, op.getType(), /*toHeads=*/false,
                          heads, headDim, lanes, serialRows);
      rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), y);
      return success();
    }
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, x);
    SmallVector<OpFoldResult> outSizes = {sizes[0], sizes[2], sizes[1],
                                          sizes[3]};
    Value init =
        emptyTensor(rewriter, loc, outSizes, op.getType().getElementType());
    Value t = rewriter
                  .create<linalg::TransposeOp>(loc, x, init,
                                               ArrayRef<int64_t>{0, 2, 1, 3})
                  ->getResult(0);
    Value merged = rewriter.create<tensor::CollapseShapeOp>(
        loc, t, ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), merged);
    return success();
  }
};

struct CacheUpdateLowering : public OpConversionPattern<CacheUpdateOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CacheUpdateOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value update = adaptor.getUpdate();
    int64_t rank = tensorTypeOf(update).getRank();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    offsets[op.getAxis()] = adaptor.getOffset();
    rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
        op, update, adaptor.getCache(), offsets, sizesOf(rewriter, loc, update),
        unitStrides(rewriter, rank));
    return success();
  }
};

struct SliceLowering : public OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    int64_t rank = tensorTypeOf(input).getRank();
    SmallVector<OpFoldResult> offsets(rank, rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes = sizesOf(rewriter, loc, input);
    offsets[op.getAxis()] = adaptor.getOffset();
    sizes[op.getAxis()] = adaptor.getSize();
    Value slice = rewriter.create<tensor::ExtractSliceOp>(
        loc, input, offsets, sizes, unitStrides(rewriter, rank));
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, op.getType(), slice);
    return success();
  }
};

/// result[b, .., p, ..] = input[rows[b, p], .., p, ..]: a gather, for the
/// cache_rows that attention did not take in (its key_rows read in place).
struct CacheRowsLowering : public OpConversionPattern<CacheRowsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(CacheRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput(), rows = adaptor.getRows();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    Value init = emptyTensor(rewriter, loc, sizesOf(rewriter, loc, input),
                             type.getElementType());
    rewriter.replaceOpWithNewOp<linalg::GenericOp>(
        op, TypeRange{type}, ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(rank)},
        parallel(rank), [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> at;
          for (int64_t dim = 0; dim < rank; ++dim)
            at.push_back(b.create<linalg::IndexOp>(l, dim));
          at[0] = b.create<arith::IndexCastOp>(
              l, b.getIndexType(),
              b.create<tensor::ExtractOp>(l, rows,
                                          ValueRange{at[0], at[axis]}));
          b.create<linalg::YieldOp>(
              l, b.create<tensor::ExtractOp>(l, input, at).getResult());
        });
    return success();
  }
};

} // namespace

void mlir::tfm::lowering::populateDataMovementLoweringPatterns(
    RewritePatternSet &patterns, const KernelConfig &config) {
  patterns.add<WeightLowering, CallerRowsLowering, EmbeddingLowering,
               PositionEncodingLowering, RelativePositionBiasLowering,
               CacheUpdateLowering, SliceLowering, CacheRowsLowering>(
      patterns.getContext());
  patterns.add<SplitHeadsLowering, MergeHeadsLowering>(patterns.getContext(),
                                                       config);
}
