//===- Linear.cpp - Lower tfm.matmul and linears ----------------*- C++ -*-===//
//
// tfm.matmul as one linalg.generic; linears as the panel kernel (scf +
// vector ops over weights packed in panels, epilogue in registers).
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/Common.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

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
    sizes.push_back(dimOf(rewriter, loc, lhs, op.getTransposeLhs() ? rank - 1
                                                                   : rank - 2));
    sizes.push_back(dimOf(rewriter, loc, rhs, op.getTransposeRhs() ? rank - 2
                                                                   : rank - 1));
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
/// the panels.
struct PanelViews {
  Value panels, scales, sums;
};

static PanelViews panelsOf(OpBuilder &b, WeightOp op) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  int64_t width = op->getAttrOfType<IntegerAttr>(kPanelWidthAttr).getInt();
  int64_t panels = llvm::divideCeil(type.getDimSize(0), width);
  int64_t rows = type.getDimSize(1);
  Type elt = type.getElementType();
  if (auto stored = op->getAttrOfType<TypeAttr>(kPanelElementTypeAttr)) {
    elt = stored.getValue();
    int64_t group = elt.isInteger(8) ? 4 : 2;
    rows = llvm::divideCeil(rows, group);
    width *= group;
  }
  Value weights = op->getParentOfType<FunctionOpInterface>().getArgument(0);
  auto viewAt = [&](int64_t offset, MemRefType viewType) {
    return b.create<memref::ViewOp>(
        loc, viewType, weights, indexConstant(b, loc, offset), ValueRange{});
  };
  PanelViews views;
  views.panels =
      viewAt(*op.getOffset(), MemRefType::get({panels, rows, width}, elt));
  if (elt.isInteger(8)) {
    int64_t features = panels * width / 4;
    int64_t scalesOffset = *op.getOffset() + panels * rows * width;
    views.scales =
        viewAt(scalesOffset, MemRefType::get({features}, b.getF32Type()));
    views.sums = viewAt(scalesOffset + 4 * features,
                        MemRefType::get({features}, b.getI32Type()));
  }
  return views;
}

/// y = act(x + b) + r, the epilogue of a linear, on scalars or vectors.
static Value linearEpilogue(OpBuilder &b, Location loc, Value y, Value bias,
                            Activation act, Value residual) {
  if (bias)
    y = b.create<arith::AddFOp>(loc, y, bias);
  y = applyActivation(b, loc, act, y);
  if (residual)
    y = b.create<arith::AddFOp>(loc, y, residual);
  return y;
}

/// act(x·Wᵀ + b) + r for a weight of dynamic shape: matmul_transpose_b and
/// one epilogue generic over [M, N] (not vectorized; the checkpoints' linears
/// all have static weights and take the panel kernel below).
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
                nl, nb.create<arith::MulIOp>(nl, p, indexConstant(nb, nl, panel)),
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

/// What a tile of the panel kernel prefetches while it reads row k of its
/// panel: nothing, row k of the next panel, or row k + kBlock of its own
/// panel (where the panel ends, of the next).
enum class Prefetch { none, nextPanel, nextBlock };

/// The dot products the panel kernel takes where the target has them,
/// which MLIR 19's x86vector dialect does not:
/// AVX512-BF16's vdpbf16ps, acc + a[2i]·b[2i] + a[2i + 1]·b[2i + 1] in each
/// f32 lane i, from 32 bf16 a and b;
constexpr llvm::StringLiteral kBf16PairDot = "llvm.x86.avx512bf16.dpbf16ps.512";
/// AVX512-VNNI's vpdpbusd, acc + Σ_h a[4i + h]·b[4i + h] in each i32 lane i,
/// from 64 unsigned bytes a and 64 signed bytes b (as 16 words each); the
/// sums here never leave i32 (|Σ| ≤ 255·127·K), so it does not saturate.
constexpr llvm::StringLiteral kInt8QuadDot = "llvm.x86.avx512.vpdpbusd.512";

/// Whether `flag` is the constant true (a condition known when lowering).
static bool isConstantTrue(Value flag) { return matchPattern(flag, m_One()); }

/// `intrinsic`(acc, a, b), one of the dot products above.
static Value dotProduct(OpBuilder &b, Location loc, StringRef intrinsic,
                        Value acc, Value a, Value bOperand) {
  return b
      .create<LLVM::CallIntrinsicOp>(loc, TypeRange{acc.getType()}, intrinsic,
                                     ValueRange{acc, a, bOperand})
      .getResults();
}

/// y[M, N] = act(x·Wᵀ + b) + r with W as panels (P = 4 vectors of L lanes):
/// Wp[Np, K, P] of f32, or Wp[Np, K/2, 2P] of bf16 with K in pairs (each
/// 32-bit word holds W[j, 2q] and W[j, 2q + 1], tfm/abi/Panels.h) times x
/// rounded to bf16. In parallel over panels p; in a panel, for each tile
/// of R rows and C vectors of columns (C·L floats from column c0), R·C
/// vector accumulators stay in registers over all of K:
///   acc[r][c] += broadcast(x[m0 + r, k]) · Wp[p, k, c0 + c·L : ... + L]
/// and the epilogue (bias, activation, residual) is applied to them before
/// the one store of y[m0 + r, p·P + c0 + c·L : ...]. Each panel is a
/// contiguous stream; the column groups of a tile read disjoint cache lines
/// of it, and later row tiles re-read it from cache.
/// bf16: x is bf16 [M, K2] (K2 = K rounded up to even) where `dot`
/// (AVX512-BF16), whose dot product takes a pair of k at once:
///   acc[r][c] = vdpbf16ps(acc[r][c], broadcast(x[m0 + r, 2q : 2q + 2]),
///                         Wp[p, q, 2(c0 + c·L) : ... + 2L])
/// and else f32(bf16(x)) [M, K2], each word of the panel widened exactly
/// (a bf16 is the top half of an f32) by a mask and a shift:
///   acc = fma(x[.., 2q + 1], f32(u & 0xffff0000), acc)
///   acc = fma(x[.., 2q],     f32(u << 16),        acc)
/// in the order of vdpbf16ps's definition (the odd k first), so that both
/// round the same sums.
/// int8: Wp[Np, K/4, 4P] holds each feature's integers q_W with K in quads
/// (tfm/abi/Panels.h), x is u[M, K4] = q_x + z (unsigned bytes, see
/// quantizeActivations) and the accumulators are i32, where `dot`
/// (AVX512-VNNI) four k at once:
///   acc[r][c] = vpdpbusd(acc[r][c], broadcast(u[m0 + r, 4q : 4q + 4]),
///                        Wp[p, q, 4(c0 + c·L) : ... + 4L])
/// and else each byte of the panel's words sign-extended (a shift left,
/// then right) times u[.., 4q + h]: the same exact integer sums. The
/// epilogue takes out the zero point with the features' sums and scales
/// back:
///   y = (f32(acc − z[m] · Σ_k q_W[n, k]) · s_x[m]) · s_W[n]
/// before bias, activation and residual. Between K blocks the i32 sums
/// wait in the f32 tile as their bits.
struct Int8Operands {
  Value xZeros, xScales; // [M] f32: z and s_x of the input's rows
  Value scales, sums;    // [Np·P]: s_W (f32) and Σ_k q_W (i32)
};
static Value panelLinear(OpBuilder &b, Location loc, Value x, Value panels,
                         Value panelsMemref, int64_t n, Value bias,
                         Activation act, Value residual, bool dot,
                         const Int8Operands &int8Operands = {}) {
  RankedTensorType panelType = tensorTypeOf(panels);
  Type stored = panelType.getElementType();
  bool int8 = stored.isInteger(8), pairK = stored.isBF16();
  // k per panel row and feature: 1 (f32), 2 (bf16 pairs) or 4 (int8 quads).
  int64_t perFeature = int8 ? 4 : pairK ? 2 : 1;
  // k: rows of a panel (K, K/2 pairs or K/4 quads).
  int64_t numPanels = panelType.getDimSize(0), k = panelType.getDimSize(1);
  int64_t width = panelType.getDimSize(2) / perFeature, lanes = width / 4;
  // Tiles of R rows by C vectors, then the rows left in smaller tiles. The
  // accumulators, a broadcast and the weight vectors fit the registers:
  // of 32 zmm with AVX-512, 4 x 4 for few rows (a beam of 4 reads each
  // weight once) and 6 x 4 for many: 24 accumulators, 4 weight loads and 6
  // broadcasts per 24 FMAs, where 4 x 4 had 8 loads per 16 (Zen 5, 2
  // threads, best of 3 runs, GFLOP/s 4 x 4 -> 6 x 4: 32 x 2048->512 293 ->
  // 329, 32 x 512->2048 314 -> 323, 32 x 512->512 293 -> 309, 1024 x
  // 512->2048 340 -> 351; 7 x 4 spills and loses a third). With
  // 16 ymm (AVX2), 2 x 4 for few rows, whose reads of the panel are
  // contiguous, and 6 x 2 (two column groups) for many: 12 accumulators
  // hide the FMA latency (8 in flight needed), 2 weight loads and 6
  // broadcasts per 12 FMAs. (Zen 3, 2 threads: 4 rows x 512->32000 from
  // DRAM 4.7 ms with 2 x 4, 6.9 ms with 4 x 2; 1024 rows x 512->2048 at
  // 116-123 GFLOP/s with 6 x 2, 91-98 with 4 x 2, 1.0x and 0.8x oneDNN in
  // the same runs.)
  using TileShape = std::pair<int64_t, int64_t>;
  const TileShape fewTiles[] = {{lanes >= 16 ? 4 : 2, 4}, {1, 4}};
  const TileShape manyTiles[] = {
      lanes >= 16 ? TileShape{6, 4} : TileShape{6, 2}, {2, 4}, {1, 4}};
  // Rows of a panel per K block when there are at most kFewRows rows: 8 KiB
  // (AVX2) or 16 KiB (AVX-512), in L1. (4 rows from DRAM, Zen 3: 4 x
  // 512->2048 in 333 us with blocks against 386 without, 4 x 512->32000
  // in 5.0 ms against 5.5.)
  // (A row of bf16 pairs holds as many bytes as one of f32.)
  const int64_t kBlock = 64, kFewRows = 8, kPrefetchRows = 64;
  // Rows of a panel per K block when there are more: 32 KiB (AVX-512) or
  // 16 KiB (AVX2), which every row tile then re-reads from L1 rather than
  // L2. (Zen 5, 2 threads, best
  // of 4 runs, GFLOP/s one block -> blocks of 128: 32 x 2048->512 283-288
  // -> 351-359, 1024 x 2048->512 384-405 -> 406-418; with K = 512 within
  // noise; blocks of 256 lost.)
  const int64_t kManyBlock = 128;
  // The sums, the epilogue and y are f32 (tfm-layout-weights packs only
  // f32 weights).
  Type elt = b.getF32Type();
  auto vecType = VectorType::get({lanes}, elt);
  // A vector of 32-bit words: L pairs of bf16, L quads of bytes, or the
  // i32 sums of int8.
  auto wordType = VectorType::get({lanes}, b.getI32Type());
  VectorType accType = int8 ? wordType : vecType;
  Value storedZero =
      b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(stored)));
  // Elements of a panel row per 64-byte line, which one prefetch fetches.
  int64_t lineElements = 512 / stored.getIntOrFloatBitWidth();
  auto splat = [&](OpBuilder &sb, Location sl, uint32_t v) {
    return sb.create<arith::ConstantOp>(
        sl, DenseElementsAttr::get(wordType, sb.getI32IntegerAttr(v)));
  };
  // Columns past N (the last panel's zero rows) are computed and dropped;
  // reads of the bias and residual there are padded.
  bool whole = numPanels * width == n;
  Value m = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 0));
  Value fzero = floatConstant(b, loc, elt, 0.0);
  Value out = emptyTensor(b, loc, {m, b.getIndexAttr(numPanels * width)}, elt);

  auto forall = b.create<scf::ForallOp>(
      loc, ArrayRef<OpFoldResult>{b.getIndexAttr(numPanels)}, ValueRange{out},
      std::nullopt);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *body = forall.getBody();
    b.setInsertionPointToStart(body);
    Value p = body->getArgument(0);
    Value n0 = b.create<arith::MulIOp>(loc, p, indexConstant(b, loc, width));
    SmallVector<OpFoldResult> tileOffsets = {b.getIndexAttr(0), n0};
    SmallVector<OpFoldResult> tileSizes = {m, b.getIndexAttr(width)};
    Value tile = b.create<tensor::ExtractSliceOp>(
        loc, body->getArguments().back(), tileOffsets, tileSizes,
        unitStrides(b, 2));

    // The R x C tile at rows m0.., columns c0.. of the panel over the K
    // block [kStart, kEnd): its accumulators start from the tile's sums so
    // far, and after the last block (`last`) get the epilogue.
    // With 9 to 64 rows (a decoder step of a batch), the first row tile
    // reads panel p from memory and the others from cache; the memory would
    // idle while they run, so the first tile of each K block prefetches the
    // lines of the next panel that match the lines it reads, into L2 (into
    // L1 they evicted the block the other tiles re-read): the next panel
    // streams in while this one is computed. (Zen 5, 2 threads, ratio to
    // oneDNN's matmul, median of 4 runs, 32 x 512->2048 0.90 -> 0.96,
    // 32 x 2048->512 0.87 -> 0.94 for L2 instead of L1; first tile only
    // within noise, fewer instructions. Zen 3, 2 threads, 32 rows,
    // weights from DRAM, GFLOP/s without -> with: 512->512 60-70 -> 83-89,
    // 512->2048 64-78 -> 74-93, 2048->512 64-68 -> 79-85, 512->32000
    // 62-72 -> 87-94; greedy batch 32 on the base model 8% faster. With
    // fewer rows it cost more in cache than it gained from DRAM; with 1024
    // rows, 2048->512 fell from 0.93x to 0.70x oneDNN's matmul.)
    // With at most 8 rows (kFewRows) the row tiles of a K block take turns
    // on the same kBlock rows of the panel, and the memory would idle while
    // the tiles after the first run from L1; every tile prefetches the row
    // kBlock ahead, so the next block streams in meanwhile. (Zen 3, 2
    // threads, weights from DRAM, GFLOP/s without -> with: 4 x 512->2048
    // 27.6 -> 32.3, 4 x 2048->512 27.6 -> 34.3, 4 x 512->32000 26.5 ->
    // 32.4, one row unchanged; 128 or 256 rows ahead gained less. Warm in
    // cache, 4 x 512->2048 fell from 104 to 80, which a decoder step, whose
    // 154 MB of weights stream from DRAM, does not see.)
    Value nextPanel; // p + 1, or p for the last
    if (panelsMemref)
      nextPanel = b.create<arith::MinUIOp>(
          loc, b.create<arith::AddIOp>(loc, p, indexConstant(b, loc, 1)),
          indexConstant(b, loc, numPanels - 1));
    auto emitTile = [&](OpBuilder &lb, Location ll, Value m0, int64_t rows,
                        int64_t c0, int64_t vectors, Value t, Value kStart,
                        Value kEnd, Value first, Value last,
                        Prefetch prefetch) {
      SmallVector<Value> rowIndex;
      for (int64_t r = 0; r < rows; ++r)
        rowIndex.push_back(
            lb.create<arith::AddIOp>(ll, m0, indexConstant(lb, ll, r)));
      // The sums so far: zero in the first K block (the tile holds nothing
      // yet), else what the block before stored. The branches (here and at
      // the epilogue) replace a fill of the tile and an epilogue computed in
      // every block and then selected: Zen 5, 2 threads, ratio to oneDNN's
      // matmul, median of 4 runs, 1024 x 512->2048 0.94 -> 0.98, 32 x
      // 512->2048 0.96 -> 1.01.
      auto zeroSums = [&](OpBuilder &zb, Location zl) {
        Value zero = zb.create<arith::ConstantOp>(
            zl, cast<TypedAttr>(zb.getZeroAttr(accType)));
        return SmallVector<Value>(rows * vectors, zero);
      };
      auto storedSums = [&](OpBuilder &sb, Location sl) {
        SmallVector<Value> sums;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < vectors; ++c) {
            Value v = sb.create<vector::TransferReadOp>(
                sl, vecType, t,
                ValueRange{rowIndex[r], indexConstant(sb, sl, c0 + c * lanes)},
                fzero, ArrayRef<bool>{true});
            sums.push_back(int8 ? sb.create<vector::BitCastOp>(sl, accType, v)
                                : v);
          }
        return sums;
      };
      SmallVector<Value> acc0;
      if (isConstantTrue(first))
        acc0 = zeroSums(lb, ll);
      else
        acc0 = lb.create<scf::IfOp>(
                     ll, first,
                     [&](OpBuilder &tb, Location tl) {
                       tb.create<scf::YieldOp>(tl, zeroSums(tb, tl));
                     },
                     [&](OpBuilder &eb, Location el) {
                       eb.create<scf::YieldOp>(el, storedSums(eb, el));
                     })
                   .getResults();
      // acc[r][c] += x[m0 + r, k] · Wp[p, k, c0 + c·L ...] over the block
      auto kLoop = lb.create<scf::ForOp>(
          ll, kStart, kEnd, indexConstant(lb, ll, 1), acc0,
          [&](OpBuilder &kb, Location kl, Value kk, ValueRange acc) {
            // The tile's weights of panel row kk: C vectors of f32, of
            // bf16 pairs (as 2L bf16, or widened to two f32 vectors each:
            // wk[c] for k = 2kk, wk1[c] for k = 2kk + 1), or of int8 quads
            // (as L words, or as four i32 vectors each: wq[h][c] for
            // k = 4kk + h).
            SmallVector<Value> w, wk1, wq[4];
            for (int64_t c = 0; c < vectors; ++c) {
              VectorType readType =
                  perFeature == 1
                      ? vecType
                      : VectorType::get({perFeature * lanes}, stored);
              Value read = kb.create<vector::TransferReadOp>(
                  kl, readType, panels,
                  ValueRange{p, kk,
                             indexConstant(kb, kl,
                                           (c0 + c * lanes) * perFeature)},
                  storedZero, ArrayRef<bool>{true});
              if (perFeature == 1 || (pairK && dot)) {
                w.push_back(read);
                continue;
              }
              Value words = kb.create<vector::BitCastOp>(kl, wordType, read);
              if (int8) {
                w.push_back(words);
                // Byte h of each word as a signed i32: (u << 24 − 8h) >> 24.
                for (int64_t h = 0; h < 4 && !dot; ++h)
                  wq[h].push_back(kb.create<arith::ShRSIOp>(
                      kl,
                      kb.create<arith::ShLIOp>(kl, words,
                                               splat(kb, kl, 24 - 8 * h)),
                      splat(kb, kl, 24)));
                continue;
              }
              w.push_back(kb.create<vector::BitCastOp>(
                  kl, vecType,
                  kb.create<arith::ShLIOp>(kl, words, splat(kb, kl, 16))));
              wk1.push_back(kb.create<vector::BitCastOp>(
                  kl, vecType,
                  kb.create<arith::AndIOp>(kl, words,
                                           splat(kb, kl, 0xffff0000u))));
            }
            // One prefetch per 64-byte line the tile reads of a panel row.
            Value aheadPanel = nextPanel, aheadRow = kk;
            if (prefetch == Prefetch::nextBlock) {
              // Row kk + kBlock of panel p, or row kk + kBlock - K of p + 1.
              Value row = kb.create<arith::AddIOp>(
                  kl, kk, indexConstant(kb, kl, kBlock));
              Value kTotal = indexConstant(kb, kl, k);
              Value inPanel = kb.create<arith::CmpIOp>(
                  kl, arith::CmpIPredicate::ult, row, kTotal);
              aheadPanel =
                  kb.create<arith::SelectOp>(kl, inPanel, p, nextPanel);
              aheadRow = kb.create<arith::SelectOp>(
                  kl, inPanel, row,
                  kb.create<arith::MinUIOp>(
                      kl, kb.create<arith::SubIOp>(kl, row, kTotal),
                      indexConstant(kb, kl, k - 1)));
            }
            if (prefetch != Prefetch::none)
              for (int64_t c = 0; c < vectors * lanes * perFeature;
                   c += lineElements)
                kb.create<memref::PrefetchOp>(
                    kl, panelsMemref,
                    ValueRange{aheadPanel, aheadRow,
                               indexConstant(kb, kl, c0 * perFeature + c)},
                    /*isWrite=*/false,
                    /*localityHint=*/prefetch == Prefetch::nextPanel ? 2 : 3,
                    /*isDataCache=*/true);
            SmallVector<Value> next(acc.begin(), acc.end());
            // acc[r][c] = fma(broadcast(x[m0 + r, column]), weights[c], ..)
            auto fmaRow = [&](int64_t r, Value column, ArrayRef<Value> weights) {
              Value xs = kb.create<tensor::ExtractOp>(
                  kl, x, ValueRange{rowIndex[r], column});
              Value xb = kb.create<vector::BroadcastOp>(kl, vecType, xs);
              for (int64_t c = 0; c < vectors; ++c)
                next[r * vectors + c] = kb.create<vector::FMAOp>(
                    kl, xb, weights[c], next[r * vectors + c]);
            };
            // x[m0 + r, column : column + perFeature] (a pair of bf16, a
            // quad of bytes) as one 32-bit word, in every lane.
            auto broadcastWord = [&](int64_t r, Value column) -> Value {
              Value group = kb.create<vector::TransferReadOp>(
                  kl, VectorType::get({perFeature}, stored), x,
                  ValueRange{rowIndex[r], column}, storedZero,
                  ArrayRef<bool>{true});
              Value word = kb.create<vector::ExtractOp>(
                  kl,
                  kb.create<vector::BitCastOp>(
                      kl, VectorType::get({1}, kb.getI32Type()), group),
                  ArrayRef<int64_t>{0});
              return kb.create<vector::BroadcastOp>(kl, wordType, word);
            };
            for (int64_t r = 0; r < rows; ++r) {
              if (perFeature == 1) {
                fmaRow(r, kk, w);
                continue;
              }
              if (int8) {
                Value quad =
                    kb.create<arith::MulIOp>(kl, kk, indexConstant(kb, kl, 4));
                if (!dot) {
                  // acc += i32(u[m0 + r, 4kk + h]) · wq[h], h = 0..3
                  for (int64_t h = 0; h < 4; ++h) {
                    Value u = kb.create<tensor::ExtractOp>(
                        kl, x,
                        ValueRange{rowIndex[r],
                                   kb.create<arith::AddIOp>(
                                       kl, quad, indexConstant(kb, kl, h))});
                    Value ub = kb.create<vector::BroadcastOp>(
                        kl, wordType,
                        kb.create<arith::ExtUIOp>(kl, kb.getI32Type(), u));
                    for (int64_t c = 0; c < vectors; ++c)
                      next[r * vectors + c] = kb.create<arith::AddIOp>(
                          kl, next[r * vectors + c],
                          kb.create<arith::MulIOp>(kl, ub, wq[h][c]));
                  }
                  continue;
                }
                Value ub = broadcastWord(r, quad);
                for (int64_t c = 0; c < vectors; ++c)
                  next[r * vectors + c] = dotProduct(
                      kb, kl, kInt8QuadDot, next[r * vectors + c], ub, w[c]);
                continue;
              }
              Value even = kb.create<arith::MulIOp>(
                  kl, kk, indexConstant(kb, kl, 2));
              if (!dot) {
                fmaRow(r, kb.create<arith::AddIOp>(kl, even,
                                                   indexConstant(kb, kl, 1)),
                       wk1);
                fmaRow(r, even, w);
                continue;
              }
              Value xb = kb.create<vector::BitCastOp>(
                  kl, VectorType::get({2 * lanes}, stored),
                  broadcastWord(r, even));
              for (int64_t c = 0; c < vectors; ++c)
                next[r * vectors + c] = dotProduct(
                    kb, kl, kBf16PairDot, next[r * vectors + c], xb, w[c]);
            }
            kb.create<scf::YieldOp>(kl, next);
          });
      // After the last block, the epilogue on the registers; one store per
      // vector. Blocks before it store the sums as they are (for int8, the
      // i32 sums as the bits of f32).
      bool epilogue = bias || act != Activation::none || residual;
      auto finished = [&](OpBuilder &fb, Location fl, int64_t r, int64_t c,
                          Value y) -> Value {
        Value col = fb.create<arith::AddIOp>(
            fl, n0, indexConstant(fb, fl, c0 + c * lanes));
        if (int8) {
          // y = (f32(acc − z[m] · Σ q_W) · s_x[m]) · s_W[n]
          Value sums = fb.create<vector::TransferReadOp>(
              fl, wordType, int8Operands.sums, ValueRange{col},
              fb.create<arith::ConstantIntOp>(fl, 0, 32).getResult(),
              ArrayRef<bool>{true});
          Value scale = fb.create<vector::TransferReadOp>(
              fl, vecType, int8Operands.scales, ValueRange{col}, fzero,
              ArrayRef<bool>{true});
          auto rowValue = [&](Value perRow) {
            return fb.create<tensor::ExtractOp>(fl, perRow, rowIndex[r]);
          };
          Value xScale = fb.create<vector::BroadcastOp>(
              fl, vecType, rowValue(int8Operands.xScales));
          Value xZero = fb.create<vector::BroadcastOp>(
              fl, wordType,
              fb.create<arith::FPToSIOp>(fl, fb.getI32Type(),
                                         rowValue(int8Operands.xZeros)));
          Value correction = fb.create<arith::MulIOp>(fl, xZero, sums);
          y = fb.create<arith::SIToFPOp>(
              fl, vecType, fb.create<arith::SubIOp>(fl, y, correction));
          y = fb.create<arith::MulFOp>(
              fl, fb.create<arith::MulFOp>(fl, y, xScale), scale);
        }
        if (!epilogue)
          return y;
        Value biasVec, residualVec;
        if (bias)
          biasVec = fb.create<vector::TransferReadOp>(
              fl, vecType, bias, ValueRange{col}, fzero, ArrayRef<bool>{whole});
        if (residual)
          residualVec = fb.create<vector::TransferReadOp>(
              fl, vecType, residual, ValueRange{rowIndex[r], col}, fzero,
              ArrayRef<bool>{whole});
        return linearEpilogue(fb, fl, y, biasVec, act, residualVec);
      };
      auto allFinished = [&](OpBuilder &fb, Location fl) {
        SmallVector<Value> ys;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < vectors; ++c)
            ys.push_back(
                finished(fb, fl, r, c, kLoop.getResult(r * vectors + c)));
        return ys;
      };
      SmallVector<Value> ys(kLoop.getResults());
      if (isConstantTrue(last))
        ys = allFinished(lb, ll);
      else if (epilogue || int8)
        ys = lb.create<scf::IfOp>(
                   ll, last,
                   [&](OpBuilder &tb, Location tl) {
                     tb.create<scf::YieldOp>(tl, allFinished(tb, tl));
                   },
                   [&](OpBuilder &eb, Location el) {
                     SmallVector<Value> partial;
                     for (Value acc : kLoop.getResults())
                       partial.push_back(
                           int8 ? eb.create<vector::BitCastOp>(el, vecType, acc)
                                : acc);
                     eb.create<scf::YieldOp>(el, partial);
                   })
                 .getResults();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < vectors; ++c)
          t = lb.create<vector::TransferWriteOp>(
                    ll, ys[r * vectors + c], t,
                    ValueRange{rowIndex[r],
                               indexConstant(lb, ll, c0 + c * lanes)},
                    ArrayRef<bool>{true})
                  .getResult();
      return t;
    };
    // Rows [lo, hi) in tiles of `rows` rows and `vectors` vectors.
    auto rowLoop = [&](OpBuilder &bb, Location bl, Value lo, Value hi,
                       int64_t rows, int64_t vectors, Value init, Value kStart,
                       Value kEnd, Value first, Value last, Prefetch prefetch) {
      auto loop = bb.create<scf::ForOp>(
          bl, lo, hi, indexConstant(bb, bl, rows), ValueRange{init},
          [&](OpBuilder &lb, Location ll, Value m0, ValueRange tileIter) {
            Value t = tileIter[0];
            for (int64_t c0 = 0; c0 < width; c0 += vectors * lanes)
              t = emitTile(lb, ll, m0, rows, c0, vectors, t, kStart, kEnd,
                           first, last, prefetch);
            lb.create<scf::YieldOp>(ll, t);
          });
      return loop.getResult(0);
    };
    // All rows, in tiles of the first shape (rows x vectors), the rows left
    // in tiles of the next, ..., over K in blocks of `block` rows of the
    // panel. The last shape has one row.
    auto allRows = [&](OpBuilder &bb, Location bl, Value t, int64_t block,
                       ArrayRef<TileShape> shapes, Prefetch prefetch) {
      Value kTotal = indexConstant(bb, bl, k);
      // Rows [start, start + R·floor((m - start) / R)) for each shape R x C.
      auto eachShape = [&](OpBuilder &sb, Location sl, Value u, Value kStart,
                           Value kEnd, Value first, Value last) {
        Value start = indexConstant(sb, sl, 0);
        Prefetch tilePrefetch = prefetch;
        for (auto [rows, vectors] : shapes) {
          Value end = m;
          if (rows > 1) {
            Value r = indexConstant(sb, sl, rows);
            Value count = sb.create<arith::DivUIOp>(
                sl, sb.create<arith::SubIOp>(sl, m, start), r);
            end = sb.create<arith::AddIOp>(
                sl, start, sb.create<arith::MulIOp>(sl, count, r));
          }
          if (tilePrefetch == Prefetch::nextPanel) {
            // Only the first row tile prefetches the next panel: the others
            // would fetch the same lines again.
            Value firstEnd =
                sb.create<arith::MinUIOp>(sl, end, indexConstant(sb, sl, rows));
            u = rowLoop(sb, sl, start, firstEnd, rows, vectors, u, kStart, kEnd,
                        first, last, tilePrefetch);
            start = firstEnd;
            tilePrefetch = Prefetch::none;
          }
          u = rowLoop(sb, sl, start, end, rows, vectors, u, kStart, kEnd, first,
                      last, tilePrefetch);
          start = end;
        }
        return u;
      };
      if (block >= k) {
        // One block: the sums start at zero and end in the epilogue.
        Value yes = bb.create<arith::ConstantIntOp>(bl, 1, 1);
        return eachShape(bb, bl, t, indexConstant(bb, bl, 0), kTotal, yes, yes);
      }
      auto blocks = bb.create<scf::ForOp>(
          bl, indexConstant(bb, bl, 0), kTotal, indexConstant(bb, bl, block),
          ValueRange{t},
          [&](OpBuilder &kb, Location kl, Value kStart, ValueRange iter) {
            Value kEnd = kb.create<arith::MinUIOp>(
                kl,
                kb.create<arith::AddIOp>(kl, kStart,
                                         indexConstant(kb, kl, block)),
                kTotal);
            Value first = kb.create<arith::CmpIOp>(
                kl, arith::CmpIPredicate::eq, kStart, indexConstant(kb, kl, 0));
            Value last = kb.create<arith::CmpIOp>(kl, arith::CmpIPredicate::eq,
                                                  kEnd, kTotal);
            kb.create<scf::YieldOp>(
                kl, eachShape(kb, kl, iter[0], kStart, kEnd, first, last));
          });
      return blocks.getResult(0);
    };
    // With few rows (decoding), blocks of K: a block of the panel (kBlock
    // rows of P floats) is read from memory by the first row tile and from
    // L1 by the others, so the stream of weights pauses only briefly; tiles
    // over the whole panel, whose reads are contiguous. With many, larger
    // blocks (kManyBlock), for the same reason: the row tiles after the
    // first read the block from L1.
    // scf.if (m <= bound) { below } else { above }: the tile's rows done
    // one way or the other.
    auto splitOnRows = [&](OpBuilder &ob, Location ol, int64_t bound,
                           function_ref<Value(OpBuilder &, Location)> below,
                           function_ref<Value(OpBuilder &, Location)> above) {
      Value within = ob.create<arith::CmpIOp>(
          ol, arith::CmpIPredicate::ule, m, indexConstant(ob, ol, bound));
      return ob
          .create<scf::IfOp>(
              ol, within,
              [&](OpBuilder &tb, Location tl) {
                tb.create<scf::YieldOp>(tl, below(tb, tl));
              },
              [&](OpBuilder &eb, Location el) {
                eb.create<scf::YieldOp>(el, above(eb, el));
              })
          .getResult(0);
    };
    tile = splitOnRows(
        b, loc, kFewRows,
        [&](OpBuilder &bb, Location bl) {
          return allRows(bb, bl, tile, kBlock, fewTiles,
                         panelsMemref ? Prefetch::nextBlock : Prefetch::none);
        },
        [&](OpBuilder &bb, Location bl) {
          if (!panelsMemref)
            return allRows(bb, bl, tile, kManyBlock, manyTiles,
                           Prefetch::none);
          // Up to kPrefetchRows rows the next panel is prefetched; with
          // more, the tiles are compute-bound and the prefetches cost more
          // than they hide (and the next K=2048 panel's 256 KB evict this
          // one's from L2).
          return splitOnRows(
              bb, bl, kPrefetchRows,
              [&](OpBuilder &ib, Location il) {
                return allRows(ib, il, tile, kManyBlock, manyTiles,
                               Prefetch::nextPanel);
              },
              [&](OpBuilder &ib, Location il) {
                return allRows(ib, il, tile, kManyBlock, manyTiles,
                               Prefetch::none);
              });
        });

    b.setInsertionPointToStart(forall.getTerminator().getBody());
    b.create<tensor::ParallelInsertSliceOp>(loc, tile,
                                            body->getArguments().back(),
                                            tileOffsets, tileSizes,
                                            unitStrides(b, 2));
  }
  Value y = forall.getResult(0);
  if (!whole)
    y = b.create<tensor::ExtractSliceOp>(
        loc, y, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{m, b.getIndexAttr(n)}, unitStrides(b, 2));
  return y;
}

/// Elements of x (rows times K) up to which its quantization runs on one
/// thread: 32 rows of 512 take about as long as forking and joining.
constexpr int64_t kQuantizeSerialElements = 32 * 512;

/// The int8 form of a linear's input x [M, K] (reference.py,
/// quantize_activations): each row as unsigned bytes u over the row's
/// range extended to 0, with a zero point z and a scale s_x, K padded to
/// whole quads:
///   lo = min(x[m, :], 0), hi = max(x[m, :], 0), r = hi − lo (255 if 0)
///   inverse = (1 / r) · 255, s_x[m] = r / 255
///   z[m] = round_even(−lo · inverse)
///   u[m, k] = clamp(round_even(x[m, k] · inverse) + z[m], 0, 255)
/// so that x[m, k] ≈ (u[m, k] − z[m]) · s_x[m] with all 256 levels in use.
/// Per row, one pass of vectors of `lanes` for lo and hi, one for u; the
/// lanes past K read 0, which changes neither lo nor hi, and give u = z
/// (the panels' padding is 0). Returns u, z (as f32) and s_x.
static std::tuple<Value, Value, Value>
quantizeActivations(OpBuilder &b, Location loc, Value x, int64_t lanes) {
  Type f32 = b.getF32Type(), i8 = b.getI8Type(), i32 = b.getI32Type();
  auto vecType = VectorType::get({lanes}, f32);
  auto constant = [&](OpBuilder &nb, Location nl, Type type, double v) {
    return floatConstant(nb, nl, type, v);
  };
  int64_t k = tensorTypeOf(x).getDimSize(1), paddedK = llvm::alignTo(k, 4);
  Value m = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 0));
  Value u0 = emptyTensor(b, loc, {m, b.getIndexAttr(paddedK)}, i8);
  Value zeros0 = emptyTensor(b, loc, {m}, f32);
  Value scales0 = emptyTensor(b, loc, {m}, f32);
  Value fzero = constant(b, loc, f32, 0);
  // Columns [0, end) in vectors: full ones in a loop, a partial last one
  // (in_bounds false) after it. `body(column, full, values)` -> values.
  using ColumnFn = function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                                   bool, ValueRange)>;
  auto columns = [&](OpBuilder &cb, Location cl, int64_t end, ValueRange init,
                     ColumnFn body) {
    int64_t whole = end / lanes * lanes;
    SmallVector<Value> values(init);
    if (whole)
      values =
          cb.create<scf::ForOp>(
                cl, indexConstant(cb, cl, 0), indexConstant(cb, cl, whole),
                indexConstant(cb, cl, lanes), values,
                [&](OpBuilder &lb, Location ll, Value column, ValueRange iter) {
                  lb.create<scf::YieldOp>(ll, body(lb, ll, column, true, iter));
                })
              .getResults();
    if (whole < end)
      values = body(cb, cl, indexConstant(cb, cl, whole), false, values);
    return values;
  };
  // Row `row` of x: u's row written into `dest` at row `at` (u itself, or
  // a one-row slice of it), and the row's zero point and scale.
  auto quantizeRow = [&](OpBuilder &rb, Location rl, Value row, Value dest,
                         Value at) -> std::tuple<Value, Value, Value> {
    auto read = [&](OpBuilder &vb, Location vl, Value column, bool full) {
      return vb.create<vector::TransferReadOp>(
          vl, vecType, x, ValueRange{row, column}, fzero, ArrayRef<bool>{full});
    };
    // lo and hi of the row, from 0, as v < lo ? v : lo and v > hi ?
    // v : hi, which are vminps / vmaxps (a NaN input, which has no
    // quantization, is skipped). arith.minimumf / maximumf, expanded
    // for NaNs and signed zeros, put a compare, a mask and a blend on
    // each accumulator's dependency chain: ~15% of a 32 x 2048->512
    // int8 linear (perf, Zen 5).
    auto pick = [](OpBuilder &pb, Location pl, arith::CmpFPredicate p, Value v,
                   Value acc) -> Value {
      return pb.create<arith::SelectOp>(
          pl, pb.create<arith::CmpFOp>(pl, p, v, acc), v, acc);
    };
    Value vzero = constant(rb, rl, vecType, 0);
    SmallVector<Value> bounds =
        columns(rb, rl, k, ValueRange{vzero, vzero},
                [&](OpBuilder &vb, Location vl, Value column, bool full,
                    ValueRange acc) -> SmallVector<Value> {
                  Value v = read(vb, vl, column, full);
                  return {pick(vb, vl, arith::CmpFPredicate::OLT, v, acc[0]),
                          pick(vb, vl, arith::CmpFPredicate::OGT, v, acc[1])};
                });
    Value lo = rb.create<vector::ReductionOp>(
        rl, vector::CombiningKind::MINIMUMF, bounds[0]);
    Value hi = rb.create<vector::ReductionOp>(
        rl, vector::CombiningKind::MAXIMUMF, bounds[1]);
    Value r = rb.create<arith::SubFOp>(rl, hi, lo);
    r = rb.create<arith::SelectOp>(
        rl, rb.create<arith::CmpFOp>(rl, arith::CmpFPredicate::OGT, r, fzero),
        r, constant(rb, rl, f32, 255));
    Value scale = rb.create<arith::DivFOp>(rl, r, constant(rb, rl, f32, 255));
    Value inverse = rb.create<arith::MulFOp>(
        rl, rb.create<arith::DivFOp>(rl, constant(rb, rl, f32, 1), r),
        constant(rb, rl, f32, 255));
    Value zero = rb.create<math::RoundEvenOp>(
        rl, rb.create<arith::MulFOp>(rl, rb.create<arith::NegFOp>(rl, lo),
                                     inverse));
    Value inverseVec = rb.create<vector::BroadcastOp>(rl, vecType, inverse);
    Value zeroVec = rb.create<vector::BroadcastOp>(rl, vecType, zero);
    // u over the padded row; its whole vectors may pass K (K = 15 and
    // 16 lanes), and then their reads of x are masked too.
    bool wholeInK = paddedK / lanes * lanes <= k;
    Value u = columns(
        rb, rl, paddedK, ValueRange{dest},
        [&](OpBuilder &vb, Location vl, Value column, bool full,
            ValueRange acc) -> SmallVector<Value> {
          Value q = vb.create<math::RoundEvenOp>(
              vl, vb.create<arith::MulFOp>(
                      vl, read(vb, vl, column, full && wholeInK), inverseVec));
          q = vb.create<arith::AddFOp>(vl, q, zeroVec);
          // clamp(q, 0, 255) by vmaxps / vminps, as above.
          q = pick(vb, vl, arith::CmpFPredicate::OGT, q,
                   constant(vb, vl, vecType, 0));
          q = pick(vb, vl, arith::CmpFPredicate::OLT, q,
                   constant(vb, vl, vecType, 255));
          Value bytes = vb.create<arith::TruncIOp>(
              vl, VectorType::get({lanes}, i8),
              vb.create<arith::FPToSIOp>(vl, VectorType::get({lanes}, i32), q));
          return {vb.create<vector::TransferWriteOp>(vl, bytes, acc[0],
                                                     ValueRange{at, column},
                                                     ArrayRef<bool>{full})
                      .getResult()};
        })[0];
    return {u, zero, scale};
  };
  // In parallel over rows where there are many (an encoder's batch: the
  // serial loop was 4% of the samples of int8 encoding with the other
  // thread idle), else in one loop (a decoder step's few rows take less
  // time than threads to fork and join).
  Value many = b.create<arith::CmpIOp>(
      loc, arith::CmpIPredicate::ugt,
      b.create<arith::MulIOp>(loc, m, indexConstant(b, loc, k)),
      indexConstant(b, loc, kQuantizeSerialElements));
  auto choice = b.create<scf::IfOp>(
      loc, many,
      [&](OpBuilder &pb, Location pl) {
        auto forall = pb.create<scf::ForallOp>(pl, ArrayRef<OpFoldResult>{m},
                                               ValueRange{u0, zeros0, scales0},
                                               std::nullopt);
        pb.create<scf::YieldOp>(pl, forall.getResults());
        OpBuilder::InsertionGuard guard(pb);
        Block *body = forall.getBody();
        pb.setInsertionPointToStart(body);
        Value row = body->getArgument(0);
        Value sharedU = body->getArgument(1);
        SmallVector<OpFoldResult> rowOffsets = {row, pb.getIndexAttr(0)};
        SmallVector<OpFoldResult> rowSizes = {pb.getIndexAttr(1),
                                              pb.getIndexAttr(paddedK)};
        Value rowSlice = pb.create<tensor::ExtractSliceOp>(
            pl, RankedTensorType::get({1, paddedK}, i8), sharedU, rowOffsets,
            rowSizes, unitStrides(pb, 2));
        auto [u, zero, scale] =
            quantizeRow(pb, pl, row, rowSlice, indexConstant(pb, pl, 0));
        auto one = [&](Value v) {
          return pb.create<tensor::FromElementsOp>(
              pl, RankedTensorType::get({1}, f32), ValueRange{v});
        };
        Value zeroSlice = one(zero), scaleSlice = one(scale);
        pb.setInsertionPointToStart(forall.getTerminator().getBody());
        pb.create<tensor::ParallelInsertSliceOp>(pl, u, sharedU, rowOffsets,
                                                 rowSizes, unitStrides(pb, 2));
        for (auto [slice, shared] :
             {std::pair{zeroSlice, body->getArgument(2)},
              std::pair{scaleSlice, body->getArgument(3)}})
          pb.create<tensor::ParallelInsertSliceOp>(
              pl, slice, shared, ArrayRef<OpFoldResult>{row},
              ArrayRef<OpFoldResult>{pb.getIndexAttr(1)}, unitStrides(pb, 1));
      },
      [&](OpBuilder &sb, Location sl) {
        auto rowLoop = sb.create<scf::ForOp>(
            sl, indexConstant(sb, sl, 0), m, indexConstant(sb, sl, 1),
            ValueRange{u0, zeros0, scales0},
            [&](OpBuilder &rb, Location rl, Value row, ValueRange outs) {
              auto [u, zero, scale] = quantizeRow(rb, rl, row, outs[0], row);
              Value zeros = rb.create<tensor::InsertOp>(rl, zero, outs[1], row);
              Value scales =
                  rb.create<tensor::InsertOp>(rl, scale, outs[2], row);
              rb.create<scf::YieldOp>(rl, ValueRange{u, zeros, scales});
            });
        sb.create<scf::YieldOp>(sl, rowLoop.getResults());
      });
  return {choice.getResult(0), choice.getResult(1), choice.getResult(2)};
}

/// A read-only tensor of the weights file's `view`.
static Value viewTensor(OpBuilder &b, Location loc, Value view) {
  auto viewType = cast<MemRefType>(view.getType());
  return b.create<bufferization::ToTensorOp>(
      loc,
      RankedTensorType::get(viewType.getShape(), viewType.getElementType()),
      view, /*restrict=*/true, /*writable=*/false);
}

/// act(x·Wᵀ + b) + r: [.., K] collapses to [M, K], the product runs on the
/// weight's panels (packed in the weights file, or here), expand back.
static Value lowerLinear(OpBuilder &b, Location loc, RankedTensorType type,
                         Value input, Value weight, Value bias, Activation act,
                         Value residual, int64_t lanes, bool bf16Dot,
                         bool int8Dot) {
  Value x = collapseLeading(b, loc, input, 1);
  Value flatResidual =
      residual ? collapseLeading(b, loc, residual, 1) : Value();
  RankedTensorType weightType = tensorTypeOf(weight);
  Value y;
  // A weight stored in panels: the tfm.weight stays (legal) until here.
  auto packed = weight.getDefiningOp<WeightOp>();
  if (packed && packed->hasAttr(kPanelWidthAttr)) {
    PanelViews views = panelsOf(b, packed);
    Value view = views.panels;
    Type stored = cast<MemRefType>(view.getType()).getElementType();
    if (stored.isInteger(8)) {
      // int8: integer products of the quantized input and weights, summed
      // exactly and scaled back in the epilogue.
      auto [u, xZeros, xScales] = quantizeActivations(b, loc, x, lanes);
      y = panelLinear(
          b, loc, u, viewTensor(b, loc, view), view, weightType.getDimSize(0),
          bias, act, flatResidual, int8Dot && lanes == 16,
          Int8Operands{xZeros, xScales, viewTensor(b, loc, views.scales),
                       viewTensor(b, loc, views.sums)});
      Value result = expandLeading(b, loc, y, type, input);
      return result.getType() == type
                 ? result
                 : b.create<tensor::CastOp>(loc, type, result);
    }
    // bf16 weights multiply bf16 activations, as AVX512-BF16's dot product
    // and oneDNN's bf16 matmul do: x rounded to nearest even, then every
    // product is exact in f32 and only the sums round. The dot product
    // reads x' = bf16(x) in pairs; without it, the kernel reads
    // x' = f32(bf16(x)). An odd K gets a zero column, as the panels a zero
    // row.
    bool dotPairs = false;
    if (stored.isBF16()) {
      dotPairs = bf16Dot && lanes == 16;
      RankedTensorType xType = tensorTypeOf(x);
      x = elementwise(
          b, loc,
          dotPairs ? xType.clone(b.getBF16Type()) : xType, ValueRange{x},
          [&](OpBuilder &nb, Location nl, ValueRange args) {
            Value narrow =
                nb.create<arith::TruncFOp>(nl, nb.getBF16Type(), args[0]);
            if (dotPairs)
              return narrow;
            return nb.create<arith::ExtFOp>(nl, args[0].getType(), narrow)
                .getResult();
          });
      if (xType.getDimSize(1) % 2) {
        Type xElt = tensorTypeOf(x).getElementType();
        x = b.create<tensor::PadOp>(
            loc,
            RankedTensorType::get(
                {xType.getDimSize(0), xType.getDimSize(1) + 1}, xElt),
            x, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
            ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(1)},
            floatConstant(b, loc, xElt, 0.0));
      }
    }
    y = panelLinear(b, loc, x, viewTensor(b, loc, view), view,
                    weightType.getDimSize(0), bias, act, flatResidual,
                    dotPairs);
  } else if (weightType.hasStaticShape()) {
    Value panels = packPanels(b, loc, weight, 4 * lanes);
    y = panelLinear(b, loc, x, panels, Value(), weightType.getDimSize(0), bias,
                    act, flatResidual, /*dot=*/false);
  } else {
    y = linearOfDynamicWeight(b, loc, x, weight, bias, act, flatResidual);
  }
  Value result = expandLeading(b, loc, y, type, input);
  return result.getType() == type ? result
                                  : b.create<tensor::CastOp>(loc, type, result);
}

/// Linears and fused linears; `lanes`: floats per vector of the target, so
/// weights packed here get panels of 4 vectors; `bf16Dot`, `int8Dot`:
/// whether it has AVX512-BF16's and AVX512-VNNI's dot products.
template <typename OpTy>
struct LinearLoweringBase : public OpConversionPattern<OpTy> {
  LinearLoweringBase(MLIRContext *ctx, int64_t lanes, bool bf16Dot,
                     bool int8Dot)
      : OpConversionPattern<OpTy>(ctx), lanes(lanes), bf16Dot(bf16Dot),
        int8Dot(int8Dot) {}
  int64_t lanes;
  bool bf16Dot, int8Dot;
};

struct LinearLowering : public LinearLoweringBase<LinearOp> {
  using LinearLoweringBase::LinearLoweringBase;

  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowerLinear(rewriter, op.getLoc(), op.getType(),
                                       adaptor.getInput(), adaptor.getWeight(),
                                       adaptor.getBias(), Activation::none,
                                       Value(), lanes, bf16Dot, int8Dot));
    return success();
  }
};

struct FusedLinearLowering : public LinearLoweringBase<FusedLinearOp> {
  using LinearLoweringBase::LinearLoweringBase;

  LogicalResult
  matchAndRewrite(FusedLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowerLinear(rewriter, op.getLoc(), op.getType(),
                                       adaptor.getInput(), adaptor.getWeight(),
                                       adaptor.getBias(), op.getActivation(),
                                       adaptor.getResidual(), lanes, bf16Dot,
                                       int8Dot));
    return success();
  }
};

} // namespace

void mlir::tfm::lowering::populateLinearLoweringPatterns(
    RewritePatternSet &patterns, int64_t vectorWidth, bool bf16Dot,
    bool int8Dot) {
  patterns.add<MatmulLowering>(patterns.getContext());
  patterns.add<LinearLowering, FusedLinearLowering>(
      patterns.getContext(), vectorWidth, bf16Dot, int8Dot);
}
