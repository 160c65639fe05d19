//===- PanelKernel.cpp - The panel kernel of linears ------------*- C++ -*-===//
//
// PanelKernelBuilder builds y = act(x·Wᵀ + b) + r on a weight packed in
// panels (the math is at panelLinear in PanelKernel.h): the loop nest over
// panels, row counts, K blocks and row tiles, and each tile's steps (sums
// so far, weights, prefetch, products, epilogue, store).
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/PanelKernel.h"
#include "tfm/abi/Panels.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

Value mlir::tfm::lowering::linearEpilogue(OpBuilder &b, Location loc, Value y,
                                          Value bias, Activation act,
                                          Value residual) {
  if (bias)
    y = b.create<arith::AddFOp>(loc, y, bias);
  y = applyActivation(b, loc, act, y);
  if (residual)
    y = b.create<arith::AddFOp>(loc, y, residual);
  return y;
}

namespace {

/// What a tile of the panel kernel prefetches while it reads row k of its
/// panel: nothing, row k of the next panel, or row k + B of its own
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

/// int4 panel rows per group of K (eight k a row).
constexpr int64_t kInt4GroupRows = tfm_runtime::kInt4Group / 8;

/// Panels of each half per iteration of the gated forall: up to 4 (a
/// thread then streams 4 panels of one half, then 4 of the other, rather
/// than switching halves at every panel).
static int64_t gatedGroup(int64_t halfPanels) {
  for (int64_t group : {4, 2})
    if (halfPanels % group == 0)
      return group;
  return 1;
}

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

/// The K block [start, end) of a panel's rows that a pass of row tiles
/// covers; `first` and `last` (i1) say whether it is the first and the
/// last block.
struct KBlock {
  Value start, end, first, last;
};

/// The tile at rows m0 + r (r < rows), columns c0 + c·L (c < vectors) of
/// the panel: rowIndex[r] = m0 + r.
struct Tile {
  int64_t rows, vectors, c0;
  SmallVector<Value> rowIndex;
};

/// A tile's weights in one row kk of its panel: C vectors w of f32, of
/// bf16 pairs (as 2L bf16, or widened to two f32 vectors each: w[c] for
/// k = 2kk, wk1[c] for k = 2kk + 1), or of int8 quads (as L words, or as
/// four i32 vectors each: wq[h][c] for k = 4kk + h).
struct RowWeights {
  SmallVector<Value> w, wk1, wq[4];
};

/// Builds one panel kernel (panelLinear). The loop nest:
///   scf.forall p in [0, Np)                      build, buildPanel
///     scf.if on M (few rows, prefetch or not)    panelTiles, splitOnRows
///       scf.for K blocks                         kBlocks
///         per tile shape, scf.for row tiles      tileShapes, rowLoop
///           per column group, one tile           buildTile
/// and in a tile: the sums so far (startSums), the products over the K
/// block (productLoop: panelRow, prefetchAhead, accumulateRow), the
/// epilogue after the last block (finishSums) and the store (storeTile).
/// scf's body builders hand back `b` itself at the body's start, so every
/// method builds with `b` at its insertion point.
class PanelKernelBuilder {
public:
  PanelKernelBuilder(OpBuilder &b, Location loc, Value x, Value panels,
                     Value panelsMemref, int64_t n, Value bias, Activation act,
                     Value residual, bool dot, const KernelConfig &config,
                     const Int8Operands &int8Operands, bool blockTerms,
                     bool gated);

  /// y[M, N], all panels; with blockTerms, also each panel's log-sum-exp
  /// terms [M, Np, 2].
  std::pair<Value, Value> build();

private:
  // The loop nest.
  void buildPanel(scf::ForallOp forall);
  void buildGatedPanels(scf::ForallOp forall, int64_t group);
  Value groupPanels(Value t, Value p0, Value after, int64_t group);
  void choosePanel(Value panel, Value next);
  Value gate(Value first, Value second, Value column0, int64_t columns);
  Value panelTerms(Value tile, Value terms);
  Value panelTiles(Value tile);
  Value splitOnRows(int64_t bound, function_ref<Value()> below,
                    function_ref<Value()> above);
  Value kBlocks(Value t, int64_t block, ArrayRef<TileShape> shapes,
                Prefetch prefetch);
  Value tileShapes(Value t, const KBlock &block, ArrayRef<TileShape> shapes,
                   Prefetch prefetch);
  Value rowLoop(Value lo, Value hi, TileShape shape, Value init,
                const KBlock &block, Prefetch prefetch);

  // One tile.
  Value buildTile(Value m0, TileShape shape, int64_t c0, Value t,
                  const KBlock &block, Prefetch prefetch);
  SmallVector<Value> startSums(const Tile &tile, Value t, Value first);
  SmallVector<Value> zeroSums(const Tile &tile);
  SmallVector<Value> storedSums(const Tile &tile, Value t);
  scf::ForOp productLoop(const Tile &tile, const KBlock &block, ValueRange acc0,
                         Prefetch prefetch);
  scf::ForOp int4ProductLoop(const Tile &tile, const KBlock &block,
                             ValueRange acc0, Prefetch prefetch);
  SmallVector<Value> int4GroupWords(const Tile &tile, Value kk0);
  SmallVector<Value> scaleGroup(const Tile &tile, ArrayRef<Value> groupWords,
                                ValueRange acc, ArrayRef<Value> sums);

  // The weights of a panel row, and the prefetch beside their reads.
  RowWeights panelRow(const Tile &tile, Value kk);
  Value readPanelRow(const Tile &tile, Value kk, int64_t c, VectorType type);
  SmallVector<Value> int4Zeros(ArrayRef<Value> groupWords);
  std::pair<RowWeights, RowWeights> int4PanelRow(const Tile &tile, Value kk,
                                                 ArrayRef<Value> zeros);
  void widenPairs(Value words, RowWeights &weights);
  void widenQuads(Value words, RowWeights &weights);
  void prefetchAhead(const Tile &tile, Value kk, Prefetch prefetch);

  // The products of one row of the tile.
  void accumulateRow(const Tile &tile, int64_t r, Value kk,
                     const RowWeights &weights, SmallVector<Value> &acc);
  void fmaRow(const Tile &tile, int64_t r, Value column,
              ArrayRef<Value> weights, SmallVector<Value> &acc);
  Value broadcastWord(const Tile &tile, int64_t r, Value column);
  void bf16DotRow(const Tile &tile, int64_t r, Value even,
                  ArrayRef<Value> weights, SmallVector<Value> &acc);
  void int8Row(const Tile &tile, int64_t r, Value quad,
               const RowWeights &weights, SmallVector<Value> &acc);
  void int8WidenedRow(const Tile &tile, int64_t r, Value quad,
                      const RowWeights &weights, SmallVector<Value> &acc);
  void int8DotRow(const Tile &tile, int64_t r, Value quad,
                  ArrayRef<Value> weights, SmallVector<Value> &acc);

  // After the last K block.
  bool hasEpilogue() const {
    return bias || act != Activation::none || residual;
  }
  SmallVector<Value> finishSums(const Tile &tile, ValueRange sums, Value last);
  SmallVector<Value> allFinished(const Tile &tile, ValueRange sums);
  Value finished(const Tile &tile, int64_t r, int64_t c, Value y);
  Value dequantize(const Tile &tile, int64_t r, Value col, Value y);
  Value int4Dequantize(const Tile &tile, int64_t r, Value col, Value y);
  /// Sums kept in i32 between K blocks (int8; int4 scales each group's
  /// into f32).
  bool i32Sums() const { return int8 && !int4; }
  Value storeTile(const Tile &tile, ArrayRef<Value> ys, Value t);

  /// A vector of 32-bit words, each v.
  Value splat(uint32_t v);

  OpBuilder &b;
  Location loc;
  // The operands (panelLinear's).
  Value x, panels, panelsMemref;
  int64_t n;
  Value bias;
  Activation act;
  Value residual;
  bool dot;
  // The tiles, K blocks and row thresholds.
  PanelKernelConfig sizes;
  Int8Operands int8Operands;
  bool blockTerms;
  // Gated: the halves' tiles take no activation and no residual; the gate
  // (gateAct(first) · second + gateResidual) does.
  bool gated;
  Activation gateAct = Activation::none;
  Value gateResidual;
  // Of the panels' layout.
  Type stored;
  bool int8, pairK, int4;
  int64_t perFeature, numPanels, k, width, lanes, lineElements;
  bool whole;
  // Of the vectors.
  Type elt;
  VectorType vecType, wordType, accType;
  // Built once, before the panels' loop.
  Value storedZero, m, fzero, lastPanel;
  // Of the panel the forall's body computes: p, its first column n0 = p·P,
  // and p + 1 (p for the last) to prefetch.
  Value p, n0, nextPanel;
};

} // namespace

PanelKernelBuilder::PanelKernelBuilder(OpBuilder &b, Location loc, Value x,
                                       Value panels, Value panelsMemref,
                                       int64_t n, Value bias, Activation act,
                                       Value residual, bool dot,
                                       const KernelConfig &config,
                                       const Int8Operands &int8Operands,
                                       bool blockTerms, bool gated)
    : b(b), loc(loc), x(x), panels(panels), panelsMemref(panelsMemref), n(n),
      bias(bias), act(act), residual(residual), dot(dot), sizes(config.panels),
      int8Operands(int8Operands), blockTerms(blockTerms), gated(gated) {
  if (gated) {
    std::swap(gateAct, this->act);
    std::swap(gateResidual, this->residual);
  }
  RankedTensorType panelType = tensorTypeOf(panels);
  stored = panelType.getElementType();
  int8 = stored.isInteger(8);
  int4 = int8Operands.int4Groups > 0;
  if (int4) {
    sizes.fewRowTiles = sizes.int4FewRowTiles;
    sizes.manyRowTiles = sizes.int4ManyRowTiles;
  }
  pairK = stored.isBF16();
  // k per panel row and feature: 1 (f32), 2 (bf16 pairs) or 4 (int8 quads).
  perFeature = int8 ? 4 : pairK ? 2 : 1;
  // k: rows of a panel (K, K/2 pairs, K/4 quads or int4's K/8 words, its
  // groups' scales after them).
  numPanels = panelType.getDimSize(0);
  k = panelType.getDimSize(1) - int8Operands.int4Groups;
  assert((!int4 || (sizes.fewRowsKBlock % kInt4GroupRows == 0 &&
                    sizes.manyRowsKBlock % kInt4GroupRows == 0)) &&
         "int4: K blocks of whole groups");
  width = panelType.getDimSize(2) / perFeature;
  lanes = config.vectorWidth;
  assert(width == config.panelWidth() && "panels of the kernels' width");
  // Elements of a panel row per 64-byte line, which one prefetch fetches.
  lineElements = 512 / stored.getIntOrFloatBitWidth();
  // Columns past N (the last panel's zero rows) are computed and dropped;
  // reads of the bias and residual there are padded. A dynamic N is every
  // column of a dynamic count of panels (tfm.caller_rows).
  whole = n == ShapedType::kDynamic || numPanels * width == n;
  // The sums, the epilogue and y are f32 (tfm-layout-weights packs only
  // f32 weights).
  elt = b.getF32Type();
  vecType = VectorType::get({lanes}, elt);
  // A vector of 32-bit words: L pairs of bf16, L quads of bytes, or the
  // i32 sums of int8.
  wordType = VectorType::get({lanes}, b.getI32Type());
  accType = i32Sums() ? wordType : vecType;
}

Value PanelKernelBuilder::splat(uint32_t v) {
  return b.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(wordType, b.getI32IntegerAttr(v)));
}

//===----------------------------------------------------------------------===//
// The loop nest
//===----------------------------------------------------------------------===//

/// y[:, p·P : (p + 1)·P] = the panel kernel on panel p, for all p in
/// parallel; y[:, :N] where the last panel is padding in part. With
/// blockTerms, terms[:, p, :] as well (panelTerms).
std::pair<Value, Value> PanelKernelBuilder::build() {
  storedZero =
      b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(stored)));
  m = getValueOrCreateConstantIndexOp(b, loc, dimOf(b, loc, x, 0));
  fzero = floatConstant(b, loc, elt, 0.0);
  OpFoldResult panelCount = dimOf(b, loc, panels, 0);
  lastPanel = b.create<arith::SubIOp>(
      loc, getValueOrCreateConstantIndexOp(b, loc, panelCount),
      indexConstant(b, loc, 1));
  int64_t group = 1;
  if (gated) {
    assert(numPanels != ShapedType::kDynamic && whole && numPanels % 2 == 0 &&
           !blockTerms && "gated: two halves of whole panels");
    group = gatedGroup(numPanels / 2);
    panelCount = b.getIndexAttr(numPanels / 2 / group);
  }
  // numPanels is kDynamic (INT64_MIN) where the count is only known at run
  // time: multiplying it would overflow, so that case builds the product.
  OpFoldResult columns =
      numPanels == ShapedType::kDynamic
          ? OpFoldResult(
                b.create<arith::MulIOp>(
                     loc, getValueOrCreateConstantIndexOp(b, loc, panelCount),
                     indexConstant(b, loc, width))
                    .getResult())
          : OpFoldResult(b.getIndexAttr(numPanels * width / (gated ? 2 : 1)));
  SmallVector<Value> outs = {emptyTensor(b, loc, {m, columns}, elt)};
  if (blockTerms)
    outs.push_back(
        emptyTensor(b, loc, {m, panelCount, b.getIndexAttr(2)}, elt));

  auto forall = b.create<scf::ForallOp>(loc, ArrayRef<OpFoldResult>{panelCount},
                                        outs, std::nullopt);
  if (gated)
    buildGatedPanels(forall, group);
  else
    buildPanel(forall);
  Value y = forall.getResult(0);
  if (!whole)
    y = b.create<tensor::ExtractSliceOp>(
        loc, y, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{m, b.getIndexAttr(n)}, unitStrides(b, 2));
  return {y, blockTerms ? forall.getResult(1) : Value()};
}

/// The body of the panels' forall: tile = y[:, n0 : n0 + P] with
/// n0 = p·P, computed by panelTiles and inserted back.
void PanelKernelBuilder::buildPanel(scf::ForallOp forall) {
  OpBuilder::InsertionGuard guard(b);
  Block *body = forall.getBody();
  b.setInsertionPointToStart(body);
  Value panel = body->getArgument(0), sharedY = body->getArgument(1);
  // The panel the prefetches read ahead into: p + 1, or p for the last.
  // (Panels packed here are not prefetched.)
  Value next;
  if (panelsMemref)
    next = b.create<arith::MinUIOp>(
        loc, b.create<arith::AddIOp>(loc, panel, indexConstant(b, loc, 1)),
        lastPanel);
  choosePanel(panel, next);
  SmallVector<OpFoldResult> tileOffsets = {b.getIndexAttr(0), n0};
  SmallVector<OpFoldResult> tileSizes = {m, b.getIndexAttr(width)};
  Value tile = b.create<tensor::ExtractSliceOp>(loc, sharedY, tileOffsets,
                                                tileSizes, unitStrides(b, 2));
  tile = panelTiles(tile);
  // The panel's terms are written where they go, as its tile is.
  SmallVector<OpFoldResult> termsOffsets = {b.getIndexAttr(0), p,
                                            b.getIndexAttr(0)};
  SmallVector<OpFoldResult> termsSizes = {m, b.getIndexAttr(1),
                                          b.getIndexAttr(2)};
  Value terms;
  if (blockTerms)
    terms = panelTerms(tile, b.create<tensor::ExtractSliceOp>(
                                 loc, body->getArgument(2), termsOffsets,
                                 termsSizes, unitStrides(b, 3)));

  b.setInsertionPointToStart(forall.getTerminator().getBody());
  b.create<tensor::ParallelInsertSliceOp>(loc, tile, sharedY, tileOffsets,
                                          tileSizes, unitStrides(b, 2));
  if (terms)
    b.create<tensor::ParallelInsertSliceOp>(loc, terms, body->getArgument(2),
                                            termsOffsets, termsSizes,
                                            unitStrides(b, 3));
}

/// p = `panel`, its first column n0 = p·P, and the panel its prefetches
/// read ahead into.
void PanelKernelBuilder::choosePanel(Value panel, Value next) {
  p = panel;
  n0 = b.create<arith::MulIOp>(loc, p, indexConstant(b, loc, width));
  if (panelsMemref)
    nextPanel = next;
}

/// The body of the gated forall, j in [0, Np/2/G) for groups of G panels:
/// panels jG .. jG + G − 1 of the first half into the result's columns
/// (h0), the same panels of the second half into a tile of their own (h1),
/// each prefetching the panel after it (after the groups: the other half's
/// first, then the next group's), then
///   y[:, jG·P : (j + 1)G·P] = gate(h0, h1)
/// while both are in cache: the halves share x (read and, at int8,
/// quantized once) and one fork of the threads.
void PanelKernelBuilder::buildGatedPanels(scf::ForallOp forall, int64_t group) {
  OpBuilder::InsertionGuard guard(b);
  Block *body = forall.getBody();
  b.setInsertionPointToStart(body);
  Value j = body->getArgument(0), sharedY = body->getArgument(1);
  int64_t half = numPanels / 2;
  Value first = b.create<arith::MulIOp>(loc, j, indexConstant(b, loc, group));
  Value column0 =
      b.create<arith::MulIOp>(loc, first, indexConstant(b, loc, width));
  SmallVector<OpFoldResult> groupOffsets = {b.getIndexAttr(0), column0};
  SmallVector<OpFoldResult> groupSizes = {m, b.getIndexAttr(group * width)};
  Value h0 = b.create<tensor::ExtractSliceOp>(loc, sharedY, groupOffsets,
                                              groupSizes, unitStrides(b, 2));
  Value h1 = emptyTensor(b, loc, groupSizes, elt);
  Value secondFirst =
      b.create<arith::AddIOp>(loc, first, indexConstant(b, loc, half));
  Value nextGroup = b.create<arith::MinUIOp>(
      loc, b.create<arith::AddIOp>(loc, first, indexConstant(b, loc, group)),
      indexConstant(b, loc, half - 1));
  h0 = groupPanels(h0, first, secondFirst, group);
  h1 = groupPanels(h1, secondFirst, nextGroup, group);
  Value tile = gate(h0, h1, column0, group * width);
  b.setInsertionPointToStart(forall.getTerminator().getBody());
  b.create<tensor::ParallelInsertSliceOp>(loc, tile, sharedY, groupOffsets,
                                          groupSizes, unitStrides(b, 2));
}

/// t[:, g·P : (g + 1)·P] = the panel kernel on panel p0 + g, for g in
/// [0, G) in a loop (one copy of the kernel's code); each prefetches the
/// panel after it, the last `after`.
Value PanelKernelBuilder::groupPanels(Value t, Value p0, Value after,
                                      int64_t group) {
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  Value last = indexConstant(b, loc, group - 1);
  auto panels = b.create<scf::ForOp>(
      loc, zero, indexConstant(b, loc, group), one, ValueRange{t},
      [&](OpBuilder &, Location, Value g, ValueRange iter) {
        Value panel = b.create<arith::AddIOp>(loc, p0, g);
        Value isLast =
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, g, last);
        choosePanel(panel, b.create<arith::SelectOp>(
                               loc, isLast, after,
                               b.create<arith::AddIOp>(loc, panel, one)));
        SmallVector<OpFoldResult> offsets = {
            b.getIndexAttr(0),
            b.create<arith::MulIOp>(loc, g, indexConstant(b, loc, width))
                .getResult()};
        SmallVector<OpFoldResult> sizes = {m, b.getIndexAttr(width)};
        Value tile = b.create<tensor::ExtractSliceOp>(loc, iter[0], offsets,
                                                      sizes, unitStrides(b, 2));
        b.create<scf::YieldOp>(loc, b.create<tensor::InsertSliceOp>(
                                         loc, panelTiles(tile), iter[0],
                                         offsets, sizes, unitStrides(b, 2))
                                        .getResult());
      });
  return panels.getResult(0);
}

/// first[r, c] = act(first[r, c]) · second[r, c] + residual[r, column0 + c]
/// over the tiles [M, columns], a row at a time in vectors.
Value PanelKernelBuilder::gate(Value first, Value second, Value column0,
                               int64_t columns) {
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  auto rows = b.create<scf::ForOp>(
      loc, zero, m, one, ValueRange{first},
      [&](OpBuilder &, Location, Value row, ValueRange iter) {
        Value t = iter[0];
        for (int64_t c = 0; c < columns; c += lanes) {
          Value column = indexConstant(b, loc, c);
          auto read = [&](Value from) {
            return b.create<vector::TransferReadOp>(
                loc, vecType, from, ValueRange{row, column}, fzero,
                ArrayRef<bool>{true});
          };
          Value y = b.create<arith::MulFOp>(
              loc, linearEpilogue(b, loc, read(t), Value(), gateAct, Value()),
              read(second));
          if (gateResidual)
            y = b.create<arith::AddFOp>(
                loc, y,
                b.create<vector::TransferReadOp>(
                    loc, vecType, gateResidual,
                    ValueRange{row,
                               b.create<arith::AddIOp>(loc, column0, column)},
                    fzero, ArrayRef<bool>{true}));
          t = b.create<vector::TransferWriteOp>(
                   loc, y, t, ValueRange{row, column}, ArrayRef<bool>{true})
                  .getResult();
        }
        b.create<scf::YieldOp>(loc, t);
      });
  return rows.getResult(0);
}

/// The log-sum-exp terms of the panel's finished tile [M, P], while it is
/// in L1 (tfm.logsumexp_blocks with blocks of P): per row,
///   m = max_j y[row, j], s = sum_j exp(y[row, j] - m)
/// shifted by 0 where the row is all -inf (exp(-inf) = 0), and m = NaN
/// where the row holds a NaN (the search then refuses it). Lane-wise over
/// the P/L vectors, then across the lanes; into `terms`, the panel's
/// [M, 1, 2] slice of the result. The maxima are compares and selects (one
/// vmaxps each) and the NaN a separate unordered compare: IEEE maximum,
/// which carries NaNs itself, expands to several instructions a vector,
/// and the terms of a many-row step cost more than the search they save.
Value PanelKernelBuilder::panelTerms(Value tile, Value terms) {
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  auto rows = b.create<scf::ForOp>(
      loc, zero, m, one, ValueRange{terms},
      [&](OpBuilder &, Location, Value row, ValueRange iter) {
        SmallVector<Value> ys;
        for (int64_t c = 0; c < width; c += lanes)
          ys.push_back(b.create<vector::TransferReadOp>(
              loc, vecType, tile, ValueRange{row, indexConstant(b, loc, c)},
              fzero, ArrayRef<bool>{true}));
        Value lanesMax = ys[0], nanLanes;
        for (Value y : ArrayRef(ys).drop_front())
          lanesMax = greaterOf(b, loc, y, lanesMax);
        for (size_t i = 0; i + 1 < ys.size(); i += 2) {
          Value pair = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNO,
                                               ys[i], ys[i + 1]);
          nanLanes =
              nanLanes ? b.create<arith::OrIOp>(loc, nanLanes, pair) : pair;
        }
        Value anyNaN = b.create<vector::ReductionOp>(
            loc, vector::CombiningKind::OR, nanLanes);
        // No NaN reaches a lane max that is kept: where one is, m is NaN.
        Value max = b.create<vector::ReductionOp>(
            loc, vector::CombiningKind::MAXNUMF, lanesMax, Value(),
            arith::FastMathFlags::nnan);
        max = b.create<arith::SelectOp>(loc, anyNaN,
                                        floatConstant(b, loc, elt, NAN), max);
        Value allNegInf =
            b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, max,
                                    floatConstant(b, loc, elt, -INFINITY));
        Value shift = b.create<vector::BroadcastOp>(
            loc, vecType,
            b.create<arith::SelectOp>(loc, allNegInf, fzero, max));
        Value lanesSum;
        for (Value y : ys) {
          Value e = b.create<math::ExpOp>(
              loc, b.create<arith::SubFOp>(loc, y, shift));
          lanesSum = lanesSum ? b.create<arith::AddFOp>(loc, lanesSum, e) : e;
        }
        Value sum = b.create<vector::ReductionOp>(
            loc, vector::CombiningKind::ADD, lanesSum, Value(),
            arith::FastMathFlags::reassoc);
        Value t = b.create<tensor::InsertOp>(loc, max, iter[0],
                                             ValueRange{row, zero, zero});
        t = b.create<tensor::InsertOp>(loc, sum, t, ValueRange{row, zero, one});
        b.create<scf::YieldOp>(loc, t);
      });
  return rows.getResult(0);
}

/// The panel's tiles, chosen by the number of rows M (the sizes are
/// config.panels'):
///   M <= fewRows (decoding): blocks of fewRowsKBlock rows of the panel,
///     few-row tiles, each prefetching a block ahead;
///   M <= prefetchRows: blocks of manyRowsKBlock, many-row tiles, the
///     first tile prefetching the next panel;
///   more: as above without prefetches.
/// With few rows (decoding), blocks of K: a block of the panel (64 rows
/// of P floats: 8 KiB with AVX2, 16 KiB with AVX-512, in L1; a row of
/// bf16 pairs holds as many bytes as one of f32) is read from memory by
/// the first row tile and from L1 by the others, so the stream of weights
/// pauses only briefly; tiles over the whole panel, whose reads are
/// contiguous. With many, larger blocks (128 rows: 32 KiB with AVX-512,
/// 16 KiB with AVX2), for the same reason: the row tiles after the first
/// read the block from L1 rather than L2.
/// With 9 to 64 rows (a decoder step of a batch), the first row tile
/// reads panel p from memory and the others from cache; the memory would
/// idle while they run, so the first tile of each K block prefetches the
/// lines of the next panel that match the lines it reads, into L2 (into
/// L1 they evicted the block the other tiles re-read): the next panel
/// streams in while this one is computed. With fewer rows it cost more
/// in cache than it gained from DRAM, and with 1024 rows too.
/// With at most 8 rows (fewRows) the row tiles of a K block take turns
/// on the same rows of the panel, and the memory would idle while the
/// tiles after the first run from L1; every tile prefetches the row a
/// block ahead, so the next block streams in meanwhile. Warm in cache this
/// loses, which a decoder step, whose weights stream from DRAM, does not see.
Value PanelKernelBuilder::panelTiles(Value tile) {
  return splitOnRows(
      sizes.fewRows,
      [&] {
        return kBlocks(tile, sizes.fewRowsKBlock, sizes.fewRowTiles,
                       panelsMemref ? Prefetch::nextBlock : Prefetch::none);
      },
      [&] {
        if (!panelsMemref)
          return kBlocks(tile, sizes.manyRowsKBlock, sizes.manyRowTiles,
                         Prefetch::none);
        // Up to prefetchRows rows the next panel is prefetched; with
        // more, the tiles are compute-bound and the prefetches cost more
        // than they hide (and the next K=2048 panel's 256 KB evict this
        // one's from L2).
        return splitOnRows(
            sizes.prefetchRows,
            [&] {
              return kBlocks(tile, sizes.manyRowsKBlock, sizes.manyRowTiles,
                             Prefetch::nextPanel);
            },
            [&] {
              return kBlocks(tile, sizes.manyRowsKBlock, sizes.manyRowTiles,
                             Prefetch::none);
            });
      });
}

/// scf.if (M <= bound) { below } else { above }: the tile's rows done one
/// way or the other.
Value PanelKernelBuilder::splitOnRows(int64_t bound,
                                      function_ref<Value()> below,
                                      function_ref<Value()> above) {
  Value within = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ule, m,
                                         indexConstant(b, loc, bound));
  return b
      .create<scf::IfOp>(
          loc, within,
          [&](OpBuilder &, Location) { b.create<scf::YieldOp>(loc, below()); },
          [&](OpBuilder &, Location) { b.create<scf::YieldOp>(loc, above()); })
      .getResult(0);
}

/// All rows over K in blocks of `block` rows of the panel:
///   for kStart in [0, K) step block:
///     kEnd = min(kStart + block, K)
///     first = (kStart == 0), last = (kEnd == K)
///     t = tileShapes(t, [kStart, kEnd))
/// and where one block holds all of K, the shapes once with first and last
/// the constant true: the sums start at zero and end in the epilogue.
Value PanelKernelBuilder::kBlocks(Value t, int64_t block,
                                  ArrayRef<TileShape> shapes,
                                  Prefetch prefetch) {
  Value kTotal = indexConstant(b, loc, k);
  if (block >= k) {
    Value yes = b.create<arith::ConstantIntOp>(loc, 1, 1);
    return tileShapes(t, KBlock{indexConstant(b, loc, 0), kTotal, yes, yes},
                      shapes, prefetch);
  }
  auto blocks = b.create<scf::ForOp>(
      loc, indexConstant(b, loc, 0), kTotal, indexConstant(b, loc, block),
      ValueRange{t}, [&](OpBuilder &, Location, Value kStart, ValueRange iter) {
        Value kEnd = b.create<arith::MinUIOp>(
            loc,
            b.create<arith::AddIOp>(loc, kStart, indexConstant(b, loc, block)),
            kTotal);
        Value first = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                              kStart, indexConstant(b, loc, 0));
        Value last = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                             kEnd, kTotal);
        b.create<scf::YieldOp>(
            loc, tileShapes(iter[0], KBlock{kStart, kEnd, first, last}, shapes,
                            prefetch));
      });
  return blocks.getResult(0);
}

/// All rows of one K block, in tiles of the first shape (R x C), the rows
/// left in tiles of the next, ...; the last shape has one row. Shape R
/// takes rows [start, end) with end = start + R·floor((M − start) / R).
/// Where the tiles prefetch the next panel, only the first row tile does
/// (a loop of its own): the others would fetch the same lines again.
Value PanelKernelBuilder::tileShapes(Value t, const KBlock &block,
                                     ArrayRef<TileShape> shapes,
                                     Prefetch prefetch) {
  Value start = indexConstant(b, loc, 0);
  Prefetch tilePrefetch = prefetch;
  for (TileShape shape : shapes) {
    int64_t rows = shape.first;
    Value end = m;
    if (rows > 1) {
      Value r = indexConstant(b, loc, rows);
      Value count = b.create<arith::DivUIOp>(
          loc, b.create<arith::SubIOp>(loc, m, start), r);
      end = b.create<arith::AddIOp>(loc, start,
                                    b.create<arith::MulIOp>(loc, count, r));
    }
    if (tilePrefetch == Prefetch::nextPanel) {
      Value firstEnd =
          b.create<arith::MinUIOp>(loc, end, indexConstant(b, loc, rows));
      t = rowLoop(start, firstEnd, shape, t, block, tilePrefetch);
      start = firstEnd;
      tilePrefetch = Prefetch::none;
    }
    t = rowLoop(start, end, shape, t, block, tilePrefetch);
    start = end;
  }
  return t;
}

/// Rows [lo, hi) in tiles of `shape`: for m0 in [lo, hi) step R, the tiles
/// at m0 of each column group c0 = 0, C·L, ... of the panel.
Value PanelKernelBuilder::rowLoop(Value lo, Value hi, TileShape shape,
                                  Value init, const KBlock &block,
                                  Prefetch prefetch) {
  int64_t rows = shape.first, vectors = shape.second;
  auto loop = b.create<scf::ForOp>(
      loc, lo, hi, indexConstant(b, loc, rows), ValueRange{init},
      [&](OpBuilder &, Location, Value m0, ValueRange tileIter) {
        Value t = tileIter[0];
        for (int64_t c0 = 0; c0 < width; c0 += vectors * lanes)
          t = buildTile(m0, shape, c0, t, block, prefetch);
        b.create<scf::YieldOp>(loc, t);
      });
  return loop.getResult(0);
}

//===----------------------------------------------------------------------===//
// One tile
//===----------------------------------------------------------------------===//

/// The R x C tile at rows m0.., columns c0.. of the panel over a K block:
/// its accumulators start from the tile's sums so far, take the block's
/// products, and after the last block get the epilogue; then one store per
/// vector into t.
Value PanelKernelBuilder::buildTile(Value m0, TileShape shape, int64_t c0,
                                    Value t, const KBlock &block,
                                    Prefetch prefetch) {
  Tile tile{shape.first, shape.second, c0, {}};
  for (int64_t r = 0; r < tile.rows; ++r)
    tile.rowIndex.push_back(
        b.create<arith::AddIOp>(loc, m0, indexConstant(b, loc, r)));
  SmallVector<Value> acc0 = startSums(tile, t, block.first);
  scf::ForOp kLoop = int4 ? int4ProductLoop(tile, block, acc0, prefetch)
                          : productLoop(tile, block, acc0, prefetch);
  SmallVector<Value> ys = finishSums(tile, kLoop.getResults(), block.last);
  return storeTile(tile, ys, t);
}

/// The sums so far: zero in the first K block (the tile holds nothing
/// yet), else what the block before stored. The branches (here and at
/// the epilogue) replace a fill of the tile and an epilogue computed in
/// every block and then selected: Zen 5, 2 threads, ratio to oneDNN's
/// matmul, median of 4 runs, 1024 x 512->2048 0.94 -> 0.98, 32 x
/// 512->2048 0.96 -> 1.01.
SmallVector<Value> PanelKernelBuilder::startSums(const Tile &tile, Value t,
                                                 Value first) {
  if (isConstantTrue(first))
    return zeroSums(tile);
  auto sums = b.create<scf::IfOp>(
      loc, first,
      [&](OpBuilder &, Location) {
        b.create<scf::YieldOp>(loc, zeroSums(tile));
      },
      [&](OpBuilder &, Location) {
        b.create<scf::YieldOp>(loc, storedSums(tile, t));
      });
  return llvm::to_vector_of<Value>(sums.getResults());
}

/// acc[r][c] = 0 (f32, or i32 for int8).
SmallVector<Value> PanelKernelBuilder::zeroSums(const Tile &tile) {
  Value zero =
      b.create<arith::ConstantOp>(loc, cast<TypedAttr>(b.getZeroAttr(accType)));
  return SmallVector<Value>(tile.rows * tile.vectors, zero);
}

/// acc[r][c] = t[m0 + r, c0 + c·L : ... + L] (for int8, the i32 sums kept
/// as the bits of f32).
SmallVector<Value> PanelKernelBuilder::storedSums(const Tile &tile, Value t) {
  SmallVector<Value> sums;
  for (int64_t r = 0; r < tile.rows; ++r)
    for (int64_t c = 0; c < tile.vectors; ++c) {
      Value v = b.create<vector::TransferReadOp>(
          loc, vecType, t,
          ValueRange{tile.rowIndex[r],
                     indexConstant(b, loc, tile.c0 + c * lanes)},
          fzero, ArrayRef<bool>{true});
      sums.push_back(i32Sums() ? b.create<vector::BitCastOp>(loc, accType, v)
                               : v);
    }
  return sums;
}

/// acc[r][c] += x[m0 + r, k] · Wp[p, k, c0 + c·L ...] over the block:
///   for kk in [kStart, kEnd): the panel row's weights, the prefetch
///   beside them, then each row's products.
scf::ForOp PanelKernelBuilder::productLoop(const Tile &tile,
                                           const KBlock &block, ValueRange acc0,
                                           Prefetch prefetch) {
  return b.create<scf::ForOp>(
      loc, block.start, block.end, indexConstant(b, loc, 1), acc0,
      [&](OpBuilder &, Location, Value kk, ValueRange acc) {
        RowWeights weights = panelRow(tile, kk);
        prefetchAhead(tile, kk, prefetch);
        SmallVector<Value> next(acc.begin(), acc.end());
        for (int64_t r = 0; r < tile.rows; ++r)
          accumulateRow(tile, r, kk, weights, next);
        b.create<scf::YieldOp>(loc, next);
      });
}

/// int4: acc[r][c] += f32(Σ_{k in g} u·q) · s_W[g, ...] for each group g
/// of the block, in order: a group's rows (unrolled) sum in i32 from zero,
/// each row's low and high quads as int8 rows less the group's zero
/// points, then scaleGroup.
scf::ForOp PanelKernelBuilder::int4ProductLoop(const Tile &tile,
                                               const KBlock &block,
                                               ValueRange acc0,
                                               Prefetch prefetch) {
  return b.create<scf::ForOp>(
      loc, block.start, block.end, indexConstant(b, loc, kInt4GroupRows), acc0,
      [&](OpBuilder &, Location, Value kk0, ValueRange acc) {
        Value zero = b.create<arith::ConstantOp>(
            loc, cast<TypedAttr>(b.getZeroAttr(wordType)));
        SmallVector<Value> sums(tile.rows * tile.vectors, zero);
        SmallVector<Value> groupWords = int4GroupWords(tile, kk0);
        SmallVector<Value> zeros = int4Zeros(groupWords);
        for (int64_t i = 0; i < kInt4GroupRows; ++i) {
          Value kk =
              b.create<arith::AddIOp>(loc, kk0, indexConstant(b, loc, i));
          auto [low, high] = int4PanelRow(tile, kk, zeros);
          prefetchAhead(tile, kk, prefetch);
          Value quad =
              b.create<arith::MulIOp>(loc, kk, indexConstant(b, loc, 8));
          Value nextQuad =
              b.create<arith::AddIOp>(loc, quad, indexConstant(b, loc, 4));
          for (int64_t r = 0; r < tile.rows; ++r) {
            int8Row(tile, r, quad, low, sums);
            int8Row(tile, r, nextQuad, high, sums);
          }
        }
        b.create<scf::YieldOp>(loc, scaleGroup(tile, groupWords, acc, sums));
      });
}

/// The words of group g = kk0 / its rows (row K + g of the panel) for the
/// tile's features, c0 + c·L : ... + L: each feature's scale (a bfloat16,
/// the high half) and zero point (each low byte; Panels.h, Int4Group).
SmallVector<Value> PanelKernelBuilder::int4GroupWords(const Tile &tile,
                                                      Value kk0) {
  Value groupRow = b.create<arith::AddIOp>(
      loc, indexConstant(b, loc, k),
      b.create<arith::DivUIOp>(loc, kk0,
                               indexConstant(b, loc, kInt4GroupRows)));
  SmallVector<Value> words;
  for (int64_t c = 0; c < tile.vectors; ++c)
    words.push_back(b.create<vector::BitCastOp>(
        loc, wordType,
        b.create<vector::TransferReadOp>(
            loc, vecType, int8Operands.groupWords,
            ValueRange{p, groupRow, indexConstant(b, loc, tile.c0 + c * lanes)},
            fzero, ArrayRef<bool>{true})));
  return words;
}

/// acc[r][c] + f32(sums[r][c]) · s_W[g, c0 + c·L : ... + L], the scales
/// the high halves of the group's words: s = f32(u & 0xffff0000).
SmallVector<Value> PanelKernelBuilder::scaleGroup(const Tile &tile,
                                                  ArrayRef<Value> groupWords,
                                                  ValueRange acc,
                                                  ArrayRef<Value> sums) {
  SmallVector<Value> scales;
  for (Value words : groupWords)
    scales.push_back(b.create<vector::BitCastOp>(
        loc, vecType, b.create<arith::AndIOp>(loc, words, splat(0xffff0000u))));
  SmallVector<Value> next;
  for (int64_t r = 0; r < tile.rows; ++r)
    for (int64_t c = 0; c < tile.vectors; ++c) {
      int64_t i = r * tile.vectors + c;
      Value scaled = b.create<arith::MulFOp>(
          loc, b.create<arith::SIToFPOp>(loc, vecType, sums[i]), scales[c]);
      next.push_back(b.create<arith::AddFOp>(loc, acc[i], scaled));
    }
  return next;
}

//===----------------------------------------------------------------------===//
// The weights of a panel row, and prefetches
//===----------------------------------------------------------------------===//

/// The tile's weights of panel row kk: C reads of Wp[p, kk, (c0 + c·L)·g
/// : ... + g·L] (g = perFeature), f32 and the dot products' operands as
/// they are, the widening kernels' words widened.
RowWeights PanelKernelBuilder::panelRow(const Tile &tile, Value kk) {
  RowWeights weights;
  VectorType readType =
      perFeature == 1 ? vecType : VectorType::get({perFeature * lanes}, stored);
  for (int64_t c = 0; c < tile.vectors; ++c) {
    Value read = readPanelRow(tile, kk, c, readType);
    if (perFeature == 1 || (pairK && dot)) {
      weights.w.push_back(read);
      continue;
    }
    Value words = b.create<vector::BitCastOp>(loc, wordType, read);
    if (int8)
      widenQuads(words, weights);
    else
      widenPairs(words, weights);
  }
  return weights;
}

/// Wp[p, kk, (c0 + c·L)·g : ... + g·L] (g = perFeature) as `type`.
Value PanelKernelBuilder::readPanelRow(const Tile &tile, Value kk, int64_t c,
                                       VectorType type) {
  return b.create<vector::TransferReadOp>(
      loc, type, panels,
      ValueRange{p, kk,
                 indexConstant(b, loc, (tile.c0 + c * lanes) * perFeature)},
      storedZero, ArrayRef<bool>{true});
}

/// The zero point z of each feature in every byte of its word, from the
/// group's word g: (g & 0xffff) | (g << 16).
SmallVector<Value> PanelKernelBuilder::int4Zeros(ArrayRef<Value> groupWords) {
  SmallVector<Value> zeros;
  for (Value words : groupWords) {
    Value low = b.create<arith::AndIOp>(loc, words, splat(0xffffu));
    zeros.push_back(b.create<arith::OrIOp>(
        loc, low, b.create<arith::ShLIOp>(loc, words, splat(16))));
  }
  return zeros;
}

/// Panel row kk of int4 words u as the two int8 rows it holds, the low
/// nibbles and the high ones, each less the feature's zero point byte by
/// byte (vpsubb):
///   low = (u & 0x0f0f0f0f) − z,  high = ((u >> 4) & 0x0f0f0f0f) − z
std::pair<RowWeights, RowWeights>
PanelKernelBuilder::int4PanelRow(const Tile &tile, Value kk,
                                 ArrayRef<Value> zeros) {
  VectorType bytesType = VectorType::get({4 * lanes}, stored);
  RowWeights low, high;
  for (int64_t c = 0; c < tile.vectors; ++c) {
    auto lessZero = [&](Value nibbles) {
      auto asBytes = [&](Value v) {
        return b.create<vector::BitCastOp>(loc, bytesType, v);
      };
      return b.create<vector::BitCastOp>(
          loc, wordType,
          b.create<arith::SubIOp>(loc, asBytes(nibbles), asBytes(zeros[c])));
    };
    Value words = b.create<vector::BitCastOp>(
        loc, wordType, readPanelRow(tile, kk, c, bytesType));
    Value lowNibbles = b.create<arith::AndIOp>(loc, words, splat(0x0f0f0f0fu));
    Value highNibbles = b.create<arith::AndIOp>(
        loc, b.create<arith::ShRUIOp>(loc, words, splat(4)),
        splat(0x0f0f0f0fu));
    widenQuads(lessZero(lowNibbles), low);
    widenQuads(lessZero(highNibbles), high);
  }
  return {low, high};
}

/// A word u of bf16 pairs as two f32 (a bf16 is the top half of an f32):
///   w = f32(u << 16) (k = 2kk), wk1 = f32(u & 0xffff0000) (k = 2kk + 1)
void PanelKernelBuilder::widenPairs(Value words, RowWeights &weights) {
  weights.w.push_back(b.create<vector::BitCastOp>(
      loc, vecType, b.create<arith::ShLIOp>(loc, words, splat(16))));
  weights.wk1.push_back(b.create<vector::BitCastOp>(
      loc, vecType, b.create<arith::AndIOp>(loc, words, splat(0xffff0000u))));
}

/// A word u of int8 quads: w = u for the dot product, else byte h of each
/// word as a signed i32: wq[h] = (u << 24 − 8h) >> 24 (arithmetic).
void PanelKernelBuilder::widenQuads(Value words, RowWeights &weights) {
  weights.w.push_back(words);
  for (int64_t h = 0; h < 4 && !dot; ++h)
    weights.wq[h].push_back(b.create<arith::ShRSIOp>(
        loc, b.create<arith::ShLIOp>(loc, words, splat(24 - 8 * h)),
        splat(24)));
}

/// One prefetch per 64-byte line the tile reads of a panel row: of row kk
/// of the next panel (into L2), or of row kk + B of this panel, past
/// its end row kk + B − K of the next (into L1), B the few rows' K block:
///   ahead = kk + B < K ? (p, kk + B)
///                      : (p + 1, min(kk + B − K, K − 1))
void PanelKernelBuilder::prefetchAhead(const Tile &tile, Value kk,
                                       Prefetch prefetch) {
  Value aheadPanel = nextPanel, aheadRow = kk;
  if (prefetch == Prefetch::nextBlock) {
    Value row = b.create<arith::AddIOp>(
        loc, kk, indexConstant(b, loc, sizes.fewRowsKBlock));
    Value kTotal = indexConstant(b, loc, k);
    Value inPanel =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, row, kTotal);
    aheadPanel = b.create<arith::SelectOp>(loc, inPanel, p, nextPanel);
    aheadRow = b.create<arith::SelectOp>(
        loc, inPanel, row,
        b.create<arith::MinUIOp>(loc, b.create<arith::SubIOp>(loc, row, kTotal),
                                 indexConstant(b, loc, k - 1)));
  }
  if (prefetch == Prefetch::none)
    return;
  for (int64_t c = 0; c < tile.vectors * lanes * perFeature; c += lineElements)
    b.create<memref::PrefetchOp>(
        loc, panelsMemref,
        ValueRange{aheadPanel, aheadRow,
                   indexConstant(b, loc, tile.c0 * perFeature + c)},
        /*isWrite=*/false,
        /*localityHint=*/prefetch == Prefetch::nextPanel ? 2 : 3,
        /*isDataCache=*/true);
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// Row r of the tile times panel row kk, into acc[r][:]: f32 one k, bf16
/// the pair 2kk, 2kk + 1 (the odd k first, as vdpbf16ps), int8 the quad
/// 4kk .. 4kk + 3.
void PanelKernelBuilder::accumulateRow(const Tile &tile, int64_t r, Value kk,
                                       const RowWeights &weights,
                                       SmallVector<Value> &acc) {
  if (perFeature == 1) {
    fmaRow(tile, r, kk, weights.w, acc);
    return;
  }
  if (int8) {
    int8Row(tile, r, b.create<arith::MulIOp>(loc, kk, indexConstant(b, loc, 4)),
            weights, acc);
    return;
  }
  Value even = b.create<arith::MulIOp>(loc, kk, indexConstant(b, loc, 2));
  if (dot) {
    bf16DotRow(tile, r, even, weights.w, acc);
    return;
  }
  fmaRow(tile, r, b.create<arith::AddIOp>(loc, even, indexConstant(b, loc, 1)),
         weights.wk1, acc);
  fmaRow(tile, r, even, weights.w, acc);
}

/// Row r of the tile times an int8 panel row (the quad from u's column
/// `quad`), by the dot product where the configuration takes it.
void PanelKernelBuilder::int8Row(const Tile &tile, int64_t r, Value quad,
                                 const RowWeights &weights,
                                 SmallVector<Value> &acc) {
  if (dot)
    int8DotRow(tile, r, quad, weights.w, acc);
  else
    int8WidenedRow(tile, r, quad, weights, acc);
}

/// acc[r][c] = fma(broadcast(x[m0 + r, column]), weights[c], acc[r][c])
void PanelKernelBuilder::fmaRow(const Tile &tile, int64_t r, Value column,
                                ArrayRef<Value> weights,
                                SmallVector<Value> &acc) {
  Value xs =
      b.create<tensor::ExtractOp>(loc, x, ValueRange{tile.rowIndex[r], column});
  Value xb = b.create<vector::BroadcastOp>(loc, vecType, xs);
  for (int64_t c = 0; c < tile.vectors; ++c)
    acc[r * tile.vectors + c] =
        b.create<vector::FMAOp>(loc, xb, weights[c], acc[r * tile.vectors + c]);
}

/// x[m0 + r, column : column + perFeature] (a pair of bf16, a quad of
/// bytes) as one 32-bit word, in every lane.
Value PanelKernelBuilder::broadcastWord(const Tile &tile, int64_t r,
                                        Value column) {
  Value group = b.create<vector::TransferReadOp>(
      loc, VectorType::get({perFeature}, stored), x,
      ValueRange{tile.rowIndex[r], column}, storedZero, ArrayRef<bool>{true});
  Value word = b.create<vector::ExtractOp>(
      loc,
      b.create<vector::BitCastOp>(loc, VectorType::get({1}, b.getI32Type()),
                                  group),
      ArrayRef<int64_t>{0});
  return b.create<vector::BroadcastOp>(loc, wordType, word);
}

/// acc[r][c] = vdpbf16ps(acc[r][c], broadcast(x[m0 + r, even : even + 2]),
///                       weights[c])
void PanelKernelBuilder::bf16DotRow(const Tile &tile, int64_t r, Value even,
                                    ArrayRef<Value> weights,
                                    SmallVector<Value> &acc) {
  Value xb = b.create<vector::BitCastOp>(
      loc, VectorType::get({2 * lanes}, stored), broadcastWord(tile, r, even));
  for (int64_t c = 0; c < tile.vectors; ++c)
    acc[r * tile.vectors + c] = dotProduct(
        b, loc, kBf16PairDot, acc[r * tile.vectors + c], xb, weights[c]);
}

/// acc[r][c] += i32(u[m0 + r, quad + h]) · wq[h][c], h = 0..3: exact i32
/// sums, as vpdpbusd's.
void PanelKernelBuilder::int8WidenedRow(const Tile &tile, int64_t r, Value quad,
                                        const RowWeights &weights,
                                        SmallVector<Value> &acc) {
  for (int64_t h = 0; h < 4; ++h) {
    Value u = b.create<tensor::ExtractOp>(
        loc, x,
        ValueRange{tile.rowIndex[r], b.create<arith::AddIOp>(
                                         loc, quad, indexConstant(b, loc, h))});
    Value ub = b.create<vector::BroadcastOp>(
        loc, wordType, b.create<arith::ExtUIOp>(loc, b.getI32Type(), u));
    for (int64_t c = 0; c < tile.vectors; ++c)
      acc[r * tile.vectors + c] = b.create<arith::AddIOp>(
          loc, acc[r * tile.vectors + c],
          b.create<arith::MulIOp>(loc, ub, weights.wq[h][c]));
  }
}

/// acc[r][c] = vpdpbusd(acc[r][c], broadcast(u[m0 + r, quad : quad + 4]),
///                      weights[c])
void PanelKernelBuilder::int8DotRow(const Tile &tile, int64_t r, Value quad,
                                    ArrayRef<Value> weights,
                                    SmallVector<Value> &acc) {
  Value ub = broadcastWord(tile, r, quad);
  for (int64_t c = 0; c < tile.vectors; ++c)
    acc[r * tile.vectors + c] = dotProduct(
        b, loc, kInt8QuadDot, acc[r * tile.vectors + c], ub, weights[c]);
}

//===----------------------------------------------------------------------===//
// Epilogue and store
//===----------------------------------------------------------------------===//

/// After the last block, the epilogue on the registers; one store per
/// vector. Blocks before it store the sums as they are (for int8, the
/// i32 sums as the bits of f32): scf.if (last) { epilogue } else { sums },
/// or no branch where last is known, or nothing is to be done to f32 sums.
SmallVector<Value> PanelKernelBuilder::finishSums(const Tile &tile,
                                                  ValueRange sums, Value last) {
  if (isConstantTrue(last))
    return allFinished(tile, sums);
  if (!hasEpilogue() && !int8)
    return llvm::to_vector(sums);
  auto ys = b.create<scf::IfOp>(
      loc, last,
      [&](OpBuilder &, Location) {
        b.create<scf::YieldOp>(loc, allFinished(tile, sums));
      },
      [&](OpBuilder &, Location) {
        SmallVector<Value> partial;
        for (Value acc : sums)
          partial.push_back(
              i32Sums() ? b.create<vector::BitCastOp>(loc, vecType, acc) : acc);
        b.create<scf::YieldOp>(loc, partial);
      });
  return llvm::to_vector_of<Value>(ys.getResults());
}

/// y[r][c] = finished(acc[r][c]) for the whole tile.
SmallVector<Value> PanelKernelBuilder::allFinished(const Tile &tile,
                                                   ValueRange sums) {
  SmallVector<Value> ys;
  for (int64_t r = 0; r < tile.rows; ++r)
    for (int64_t c = 0; c < tile.vectors; ++c)
      ys.push_back(finished(tile, r, c, sums[r * tile.vectors + c]));
  return ys;
}

/// One vector of y at column col = n0 + c0 + c·L:
///   y = act(dequantize(acc) + b[col]) + r[m0 + r, col]
/// (dequantize for int8 only; bias and residual padded past N).
Value PanelKernelBuilder::finished(const Tile &tile, int64_t r, int64_t c,
                                   Value y) {
  Value col = b.create<arith::AddIOp>(
      loc, n0, indexConstant(b, loc, tile.c0 + c * lanes));
  if (int4)
    y = int4Dequantize(tile, r, col, y);
  else if (int8)
    y = dequantize(tile, r, col, y);
  if (!hasEpilogue())
    return y;
  Value biasVec, residualVec;
  if (bias)
    biasVec = b.create<vector::TransferReadOp>(
        loc, vecType, bias, ValueRange{col}, fzero, ArrayRef<bool>{whole});
  if (residual)
    residualVec = b.create<vector::TransferReadOp>(
        loc, vecType, residual, ValueRange{tile.rowIndex[r], col}, fzero,
        ArrayRef<bool>{whole});
  return linearEpilogue(b, loc, y, biasVec, act, residualVec);
}

/// The int8 sums back to f32:
///   y = (f32(acc − z[m] · Σ_k q_W[n, k]) · s_x[m]) · s_W[n]
Value PanelKernelBuilder::dequantize(const Tile &tile, int64_t r, Value col,
                                     Value y) {
  Value sums = b.create<vector::TransferReadOp>(
      loc, wordType, int8Operands.sums, ValueRange{col},
      b.create<arith::ConstantIntOp>(loc, 0, 32).getResult(),
      ArrayRef<bool>{true});
  Value scale = b.create<vector::TransferReadOp>(
      loc, vecType, int8Operands.scales, ValueRange{col}, fzero,
      ArrayRef<bool>{true});
  auto rowValue = [&](Value perRow) {
    return b.create<tensor::ExtractOp>(loc, perRow, tile.rowIndex[r]);
  };
  Value xScale = b.create<vector::BroadcastOp>(loc, vecType,
                                               rowValue(int8Operands.xScales));
  Value xZero = b.create<vector::BroadcastOp>(
      loc, wordType,
      b.create<arith::FPToSIOp>(loc, b.getI32Type(),
                                rowValue(int8Operands.xZeros)));
  Value correction = b.create<arith::MulIOp>(loc, xZero, sums);
  y = b.create<arith::SIToFPOp>(loc, vecType,
                                b.create<arith::SubIOp>(loc, y, correction));
  return b.create<arith::MulFOp>(loc, b.create<arith::MulFOp>(loc, y, xScale),
                                 scale);
}

/// The int4 sums, scaled group by group into f32, less the zero point:
///   y = (acc − z[m] · c[n]) · s_x[m]
Value PanelKernelBuilder::int4Dequantize(const Tile &tile, int64_t r, Value col,
                                         Value y) {
  Value corrections = b.create<vector::TransferReadOp>(
      loc, vecType, int8Operands.corrections, ValueRange{col}, fzero,
      ArrayRef<bool>{true});
  auto rowVector = [&](Value perRow) {
    return b.create<vector::BroadcastOp>(
        loc, vecType,
        b.create<tensor::ExtractOp>(loc, perRow, tile.rowIndex[r]));
  };
  Value zeroTerms =
      b.create<arith::MulFOp>(loc, rowVector(int8Operands.xZeros), corrections);
  return b.create<arith::MulFOp>(loc,
                                 b.create<arith::SubFOp>(loc, y, zeroTerms),
                                 rowVector(int8Operands.xScales));
}

/// t[m0 + r, c0 + c·L : ... + L] = ys[r][c]
Value PanelKernelBuilder::storeTile(const Tile &tile, ArrayRef<Value> ys,
                                    Value t) {
  for (int64_t r = 0; r < tile.rows; ++r)
    for (int64_t c = 0; c < tile.vectors; ++c)
      t = b.create<vector::TransferWriteOp>(
               loc, ys[r * tile.vectors + c], t,
               ValueRange{tile.rowIndex[r],
                          indexConstant(b, loc, tile.c0 + c * lanes)},
               ArrayRef<bool>{true})
              .getResult();
  return t;
}

Value mlir::tfm::lowering::panelLinear(OpBuilder &b, Location loc, Value x,
                                       Value panels, Value panelsMemref,
                                       int64_t n, Value bias, Activation act,
                                       Value residual, bool dot,
                                       const KernelConfig &config,
                                       const Int8Operands &int8Operands,
                                       Value *blockTerms, bool gated) {
  auto [y, terms] = PanelKernelBuilder(b, loc, x, panels, panelsMemref, n, bias,
                                       act, residual, dot, config, int8Operands,
                                       blockTerms != nullptr, gated)
                        .build();
  if (blockTerms)
    *blockTerms = terms;
  return y;
}
