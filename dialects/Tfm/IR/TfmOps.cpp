//===- TfmOps.cpp - tfm ops: builders, verifiers, folders -------*- C++ -*-===//
//
// Verifiers check every static dimension and say in words what was expected
// and what was found. Dynamic dimensions (`?`) agree with anything; the
// runtime checks those on its inputs.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tfm/IR/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

#include "dialects/Tfm/IR/TfmEnums.cpp.inc"

static constexpr int64_t kDynamic = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

static std::string formatDim(int64_t dim) {
  return dim == kDynamic ? "?" : std::to_string(dim);
}

std::string mlir::tfm::formatShape(ArrayRef<int64_t> shape) {
  std::string out = "[";
  llvm::interleave(
      shape, [&](int64_t d) { out += formatDim(d); }, [&] { out += ", "; });
  return out + "]";
}

/// Two dimensions agree when equal or when either is dynamic.
static bool dimsAgree(int64_t a, int64_t b) {
  return a == kDynamic || b == kDynamic || a == b;
}

/// The more precise of two agreeing dimensions.
static int64_t mergeDims(int64_t a, int64_t b) { return a == kDynamic ? b : a; }

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Same rank, and every dimension agrees.
static bool shapesAgree(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() && llvm::all_of(llvm::zip(a, b), [](auto pair) {
           return dimsAgree(std::get<0>(pair), std::get<1>(pair));
         });
}

/// Checks `found` against `expected` dimension by dimension; `what` names the
/// value and `why` says where the expectation comes from.
static LogicalResult verifyShape(Operation *op, StringRef what, Type found,
                                 ArrayRef<int64_t> expected,
                                 StringRef why = "") {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(found).getShape();
  if (shapesAgree(shape, expected))
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << "expected " << what << " of shape "
                            << formatShape(expected);
  if (!why.empty())
    diag << " (" << why << ")";
  return diag << ", found " << formatShape(shape);
}

/// Every floating-point tensor an op touches has one element type.
static LogicalResult verifyOneElementType(Operation *op) {
  Type expected;
  auto check = [&](Type type, StringRef role, unsigned index) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !isa<FloatType>(tensor.getElementType()))
      return success();
    if (!expected) {
      expected = tensor.getElementType();
      return success();
    }
    if (tensor.getElementType() == expected)
      return success();
    return op->emitOpError()
           << "expected all floating-point tensors to have "
           << "element type " << expected << ", found "
           << tensor.getElementType() << " for " << role << " #" << index;
  };
  for (auto [i, operand] : llvm::enumerate(op->getOperandTypes()))
    if (failed(check(operand, "operand", i)))
      return failure();
  for (auto [i, result] : llvm::enumerate(op->getResultTypes()))
    if (failed(check(result, "result", i)))
      return failure();
  return success();
}

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis >= 0 && axis < rank)
    return success();
  return op->emitOpError() << "expected axis in [0, " << rank
                           << ") for a tensor of rank " << rank << ", found "
                           << axis;
}

static LogicalResult verifyMinRank(Operation *op, StringRef what, Value value,
                                   int64_t minRank) {
  int64_t rank = tensorType(value).getRank();
  if (rank >= minRank)
    return success();
  return op->emitOpError() << "expected " << what << " of rank " << minRank
                           << " or more, found rank " << rank;
}

/// NumPy broadcasting: align on the last dimension; a 1 stretches.
static bool broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                            SmallVectorImpl<int64_t> &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t &d = out[rank - 1 - i];
    if (da == 1)
      d = db;
    else if (db == 1)
      d = da;
    else if (dimsAgree(da, db))
      d = mergeDims(da, db);
    else
      return false;
  }
  return true;
}

RankedTensorType mlir::tfm::inferBroadcastType(Type lhs, Type rhs) {
  auto l = cast<RankedTensorType>(lhs), r = cast<RankedTensorType>(rhs);
  SmallVector<int64_t> shape;
  if (!broadcastShapes(l.getShape(), r.getShape(), shape))
    return {};
  return RankedTensorType::get(shape, l.getElementType());
}

LogicalResult mlir::tfm::verifyBroadcastOp(Operation *op, Type lhs, Type rhs,
                                           Type result) {
  if (failed(verifyOneElementType(op)))
    return failure();
  ArrayRef<int64_t> l = cast<RankedTensorType>(lhs).getShape();
  ArrayRef<int64_t> r = cast<RankedTensorType>(rhs).getShape();
  SmallVector<int64_t> shape;
  if (!broadcastShapes(l, r, shape))
    return op->emitOpError() << "operand shapes " << formatShape(l) << " and "
                             << formatShape(r) << " do not broadcast";
  return verifyShape(op, "result", result, shape,
                     "the broadcast of the operand shapes");
}

//===----------------------------------------------------------------------===//
// SelectOp
//===----------------------------------------------------------------------===//

static bool broadcast3(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                       ArrayRef<int64_t> c, SmallVectorImpl<int64_t> &out) {
  SmallVector<int64_t> ab;
  return broadcastShapes(a, b, ab) && broadcastShapes(ab, c, out);
}

void SelectOp::build(OpBuilder &builder, OperationState &state, Value condition,
                     Value trueValue, Value falseValue) {
  SmallVector<int64_t> shape;
  bool ok = broadcast3(tensorType(condition).getShape(),
                       tensorType(trueValue).getShape(),
                       tensorType(falseValue).getShape(), shape);
  assert(ok && "select operands do not broadcast");
  (void)ok;
  build(builder, state,
        RankedTensorType::get(shape, tensorType(trueValue).getElementType()),
        condition, trueValue, falseValue);
}

LogicalResult SelectOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  ArrayRef<int64_t> c = getCondition().getType().getShape(),
                    t = getTrueValue().getType().getShape(),
                    f = getFalseValue().getType().getShape();
  SmallVector<int64_t> shape;
  if (!broadcast3(c, t, f, shape))
    return emitOpError() << "operand shapes " << formatShape(c) << ", "
                         << formatShape(t) << " and " << formatShape(f)
                         << " do not broadcast";
  return verifyShape(*this, "result", getType(), shape,
                     "the broadcast of the operand shapes");
}

//===----------------------------------------------------------------------===//
// WeightOp
//===----------------------------------------------------------------------===//

SmallVector<StringRef> WeightOp::getTensorNames() {
  std::optional<ArrayAttr> parts = getParts();
  if (!parts)
    return {getName()};
  return llvm::map_to_vector(
      *parts, [](Attribute part) { return cast<StringAttr>(part).getValue(); });
}

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError() << "expected a non-empty checkpoint tensor name";
  if (!getType().hasStaticShape())
    return emitOpError() << "expected a static shape for weight '" << getName()
                         << "', found " << formatShape(getType().getShape());
  if (std::optional<ArrayAttr> parts = getParts()) {
    if (parts->empty())
      return emitOpError() << "expected at least one part for weight '"
                           << getName() << "'";
    if (getType().getRank() == 0)
      return emitOpError() << "weight '" << getName()
                           << "' stacks parts along its first axis, so it "
                              "cannot be a scalar";
    for (Attribute part : *parts)
      if (cast<StringAttr>(part).getValue().empty())
        return emitOpError() << "expected non-empty part names for weight '"
                             << getName() << "'";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CallerRowsOp
//===----------------------------------------------------------------------===//

LogicalResult CallerRowsOp::verify() {
  if (getFrom().empty())
    return emitOpError() << "expected the name of the argument that holds "
                            "the rows";
  if (!getInput().getDefiningOp<WeightOp>())
    return emitOpError() << "expected a tfm.weight as input: the caller "
                            "chooses among the weights file's rows";
  RankedTensorType in = tensorType(getInput());
  int64_t axis = getAxis();
  if (failed(verifyOneElementType(*this)) ||
      failed(verifyAxis(*this, axis, in.getRank())))
    return failure();
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] = kDynamic;
  if (getType().getDimSize(axis) != kDynamic)
    return emitOpError() << "expected a dynamic dimension " << axis
                         << " (the caller chooses how many rows), found "
                         << formatShape(getType().getShape());
  return verifyShape(*this, "result", getType(), shape,
                     "the input's shape with `?` along the axis");
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

void EmbeddingOp::build(OpBuilder &builder, OperationState &state, Value table,
                        Value ids) {
  RankedTensorType tableType = tensorType(table);
  SmallVector<int64_t> shape(tensorType(ids).getShape());
  shape.push_back(tableType.getDimSize(1));
  build(builder, state,
        RankedTensorType::get(shape, tableType.getElementType()), table, ids);
}

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  RankedTensorType table = getTable().getType();
  if (table.getRank() != 2)
    return emitOpError() << "expected a table of rank 2 [vocabulary, "
                            "dimension], found rank "
                         << table.getRank();
  SmallVector<int64_t> shape(getIds().getType().getShape());
  shape.push_back(table.getDimSize(1));
  return verifyShape(*this, "result", getType(), shape,
                     "the ids' shape followed by the table's row size");
}

//===----------------------------------------------------------------------===//
// PositionEncodingOp
//===----------------------------------------------------------------------===//

LogicalResult PositionEncodingOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  RankedTensorType result = getType();
  if (result.getRank() != getIds().getType().getRank() + 1)
    return emitOpError() << "expected a result of rank "
                         << getIds().getType().getRank() + 1
                         << " (the ids' rank plus one), found rank "
                         << result.getRank();
  int64_t dim = result.getShape().back();
  if (dim == kDynamic)
    return emitOpError() << "expected a static encoding size (the result's "
                            "last dimension), found ?";
  SmallVector<int64_t> shape(getIds().getType().getShape());
  shape.push_back(dim);
  if (failed(verifyShape(*this, "result", result, shape,
                         "the ids' shape followed by the encoding size")))
    return failure();
  if (getStarts() && failed(verifyShape(*this, "starts", getStarts().getType(),
                                        {getIds().getType().getDimSize(0)},
                                        "one per batch row of the ids")))
    return failure();

  if (getKind() == PositionKind::learned) {
    if (!getTable())
      return emitOpError() << "expected a table operand for learned positions";
    return verifyShape(*this, "position table", getTable().getType(),
                       {kDynamic, dim}, "[positions, encoding size]");
  }
  if (getTable())
    return emitOpError() << "expected no table for "
                         << stringifyPositionKind(getKind()) << " positions";
  if (dim % 2 != 0)
    return emitOpError() << "expected an even encoding size for sinusoidal "
                            "positions, found "
                         << dim;
  // 10000^(-i/(d/2 - 1)) needs a second pair of channels.
  if (getKind() == PositionKind::sinusoidal_concat_half_minus_one && dim < 4)
    return emitOpError() << "expected an encoding size of at least 4 for "
                            "sinusoidal_concat_half_minus_one positions "
                            "(frequencies 10000^(-i/(d/2 - 1))), found "
                         << dim;
  return success();
}

//===----------------------------------------------------------------------===//
// RelativePositionBiasOp
//===----------------------------------------------------------------------===//

LogicalResult RelativePositionBiasOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  ArrayRef<int64_t> table = getTable().getType().getShape();
  if (table.size() != 2 || ShapedType::isDynamic(table[0]) ||
      ShapedType::isDynamic(table[1]))
    return emitOpError() << "expected a static table of shape [buckets, "
                            "heads], found "
                         << formatShape(table);
  if (failed(verifyShape(*this, "result", getType(),
                         {1, table[1], kDynamic, kDynamic},
                         "[1, heads, queries, keys]")))
    return failure();
  // Each half needs exact buckets (n/2 >= 1) below the logarithmic ones.
  int64_t buckets = getBidirectional() ? table[0] / 2 : table[0];
  int64_t exact = buckets / 2;
  if (exact < 1)
    return emitOpError() << "expected at least " << (getBidirectional() ? 4 : 2)
                         << " buckets, found " << table[0];
  if (int64_t(getMaxDistance()) <= exact)
    return emitOpError() << "expected max_distance above " << exact
                         << " (half the buckets), found " << getMaxDistance();
  return success();
}

SmallVector<int32_t> RelativePositionBiasOp::getDistanceBuckets() {
  int64_t rows = getTable().getType().getShape()[0];
  int64_t buckets = getBidirectional() ? rows / 2 : rows;
  int64_t exact = buckets / 2, maxDistance = int64_t(getMaxDistance());
  // As Hugging Face's T5 computes it: the quotient of logs in f32, the
  // constant log(max_distance / exact) in f64 rounded to f32, truncated.
  float logRange = float(std::log(double(maxDistance) / double(exact)));
  SmallVector<int32_t> out;
  for (int64_t r = 0; r <= maxDistance; ++r) {
    if (r < exact) {
      out.push_back(int32_t(r));
      continue;
    }
    float scaled =
        std::log(float(r) / float(exact)) / logRange * float(buckets - exact);
    out.push_back(
        int32_t(std::min<int64_t>(exact + int64_t(scaled), buckets - 1)));
  }
  return out;
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// The result shape of a batched matmul, or failure with a diagnostic (when
/// `op` is given) naming the disagreement.
static FailureOr<SmallVector<int64_t>>
matmulShape(Operation *op, RankedTensorType lhs, RankedTensorType rhs,
            bool transposeLhs, bool transposeRhs) {
  auto fail = [&](auto &&...parts) -> FailureOr<SmallVector<int64_t>> {
    if (op)
      (op->emitOpError() << ... << parts);
    return failure();
  };
  if (lhs.getRank() < 2 || lhs.getRank() != rhs.getRank())
    return fail("expected operands of the same rank, 2 or more, found ranks ",
                lhs.getRank(), " and ", rhs.getRank());
  int64_t rank = lhs.getRank();
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank - 2; ++i) {
    int64_t a = lhs.getDimSize(i), b = rhs.getDimSize(i);
    if (!dimsAgree(a, b))
      return fail("expected equal batch dimensions, found ",
                  formatShape(lhs.getShape()), " and ",
                  formatShape(rhs.getShape()));
    shape.push_back(mergeDims(a, b));
  }
  int64_t m = lhs.getDimSize(rank - (transposeLhs ? 1 : 2));
  int64_t kl = lhs.getDimSize(rank - (transposeLhs ? 2 : 1));
  int64_t kr = rhs.getDimSize(rank - (transposeRhs ? 1 : 2));
  int64_t n = rhs.getDimSize(rank - (transposeRhs ? 2 : 1));
  if (!dimsAgree(kl, kr))
    return fail("expected the contracted dimensions to agree, found ",
                formatDim(kl), " in the lhs and ", formatDim(kr),
                " in the rhs");
  shape.push_back(m);
  shape.push_back(n);
  return shape;
}

void MatmulOp::build(OpBuilder &builder, OperationState &state, Value lhs,
                     Value rhs, bool transposeLhs, bool transposeRhs) {
  FailureOr<SmallVector<int64_t>> shape = matmulShape(
      nullptr, tensorType(lhs), tensorType(rhs), transposeLhs, transposeRhs);
  assert(succeeded(shape) && "matmul operands do not agree");
  build(builder, state,
        RankedTensorType::get(*shape, tensorType(lhs).getElementType()), lhs,
        rhs, transposeLhs, transposeRhs);
}

LogicalResult MatmulOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      matmulShape(*this, getLhs().getType(), getRhs().getType(),
                  getTransposeLhs(), getTransposeRhs());
  if (failed(shape))
    return failure();
  return verifyShape(*this, "result", getType(), *shape,
                     "the batched product of the operands");
}

//===----------------------------------------------------------------------===//
// LinearOp and FusedLinearOp
//===----------------------------------------------------------------------===//

/// Checks x·Wᵀ + b shapes and returns the result shape [..., N].
static FailureOr<SmallVector<int64_t>>
verifyLinearShapes(Operation *op, Value input, Value weight, Value bias) {
  if (failed(verifyOneElementType(op)) ||
      failed(verifyMinRank(op, "an input", input, 1)))
    return failure();
  RankedTensorType in = tensorType(input), w = tensorType(weight);
  if (w.getRank() != 2) {
    op->emitOpError() << "expected a weight of rank 2 [out_features, "
                         "in_features], found rank "
                      << w.getRank();
    return failure();
  }
  int64_t k = in.getShape().back(), n = w.getDimSize(0);
  if (failed(verifyShape(op, "weight", w, {kDynamic, k},
                         "in_features = the input's last dimension")))
    return failure();
  if (bias &&
      failed(verifyShape(op, "bias", bias.getType(), {n}, "[out_features]")))
    return failure();
  SmallVector<int64_t> shape(in.getShape().drop_back());
  shape.push_back(n);
  return shape;
}

void LinearOp::build(OpBuilder &builder, OperationState &state, Value input,
                     Value weight, Value bias) {
  SmallVector<int64_t> shape(tensorType(input).getShape().drop_back());
  shape.push_back(tensorType(weight).getDimSize(0));
  build(builder, state,
        RankedTensorType::get(shape, tensorType(input).getElementType()), input,
        weight, bias);
}

LogicalResult LinearOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      verifyLinearShapes(*this, getInput(), getWeight(), getBias());
  if (failed(shape))
    return failure();
  return verifyShape(*this, "result", getType(), *shape,
                     "the input's shape with out_features last");
}

LogicalResult FusedLinearOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      verifyLinearShapes(*this, getInput(), getWeight(), getBias());
  // Gated: h = x·Wᵀ + b has the two halves' 2F features, the result F.
  if (succeeded(shape) && getGated()) {
    int64_t rows = shape->back();
    if (rows == kDynamic || rows % 2 != 0) {
      InFlightDiagnostic error = emitOpError()
                                 << "gated: expected a weight of 2F rows (the "
                                    "two halves stacked), found ";
      if (rows == kDynamic)
        error << "a dynamic count";
      else
        error << rows;
      return error;
    }
    shape->back() = rows / 2;
  }
  if (failed(shape) ||
      failed(verifyShape(*this, "result", getType(), *shape,
                         getGated() ? "the input's shape with half of "
                                      "out_features last"
                                    : "the input's shape with out_features "
                                      "last")))
    return failure();
  if (getResidual())
    return verifyShape(*this, "residual", getResidual().getType(), *shape,
                       "the result's shape");
  return success();
}

//===----------------------------------------------------------------------===//
// ScaleOp
//===----------------------------------------------------------------------===//

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  // x * 1 = x
  if (getFactor().convertToDouble() == 1.0)
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// SoftmaxOp and MeanOp
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

//===----------------------------------------------------------------------===//
// LogSumExpBlocksOp
//===----------------------------------------------------------------------===//

/// [..., C] -> [..., ceil(C / block), 2].
static SmallVector<int64_t> logSumExpBlocksShape(RankedTensorType input,
                                                 int64_t block) {
  SmallVector<int64_t> shape(input.getShape());
  int64_t columns = shape.back();
  shape.back() =
      columns == kDynamic ? kDynamic : llvm::divideCeil(columns, block);
  shape.push_back(2);
  return shape;
}

void LogSumExpBlocksOp::build(OpBuilder &builder, OperationState &state,
                              Value input, int64_t block) {
  RankedTensorType type = tensorType(input);
  build(builder, state,
        RankedTensorType::get(logSumExpBlocksShape(type, block),
                              type.getElementType()),
        input, builder.getI64IntegerAttr(block));
}

LogicalResult LogSumExpBlocksOp::verify() {
  if (failed(verifyOneElementType(*this)) ||
      failed(verifyMinRank(*this, "input", getInput(), 1)))
    return failure();
  if (!getType().getElementType().isF32())
    return emitOpError() << "expected f32 tensors, found "
                         << getType().getElementType();
  return verifyShape(*this, "result", getType(),
                     logSumExpBlocksShape(getInput().getType(), getBlock()),
                     "the input's with its last axis as ceil(size / block) "
                     "blocks of (max, sum of exp(x - max))");
}

void MeanOp::build(OpBuilder &builder, OperationState &state, Value input,
                   int64_t axis) {
  RankedTensorType type = tensorType(input);
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = 1;
  build(builder, state, RankedTensorType::get(shape, type.getElementType()),
        input, axis);
}

LogicalResult MeanOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  RankedTensorType input = getInput().getType();
  if (failed(verifyAxis(*this, getAxis(), input.getRank())))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  shape[getAxis()] = 1;
  return verifyShape(*this, "result", getType(), shape,
                     "the input's shape with the reduced axis of size 1");
}

//===----------------------------------------------------------------------===//
// Masks
//===----------------------------------------------------------------------===//

LogicalResult CausalMaskOp::verify() {
  return verifyMinRank(*this, "scores", getScores(), 2);
}

LogicalResult KeyPaddingMaskOp::verify() {
  if (failed(verifyMinRank(*this, "scores", getScores(), 2)))
    return failure();
  return verifyShape(*this, "lengths", getLengths().getType(),
                     {getScores().getType().getDimSize(0)},
                     "one per batch row of the scores");
}

LogicalResult KeyStartMaskOp::verify() {
  if (failed(verifyMinRank(*this, "scores", getScores(), 2)))
    return failure();
  return verifyShape(*this, "starts", getStarts().getType(),
                     {getScores().getType().getDimSize(0)},
                     "one per batch row of the scores");
}

//===----------------------------------------------------------------------===//
// SplitHeadsOp and MergeHeadsOp
//===----------------------------------------------------------------------===//

void SplitHeadsOp::build(OpBuilder &builder, OperationState &state, Value input,
                         int64_t numHeads) {
  RankedTensorType type = tensorType(input);
  SmallVector<int64_t> shape = {type.getDimSize(0), numHeads,
                                type.getDimSize(1),
                                type.getDimSize(2) / numHeads};
  build(builder, state, RankedTensorType::get(shape, type.getElementType()),
        input, numHeads);
}

LogicalResult SplitHeadsOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  RankedTensorType input = getInput().getType();
  if (input.getRank() != 3)
    return emitOpError() << "expected an input of rank 3 [batch, sequence, "
                            "heads * head_dim], found rank "
                         << input.getRank();
  int64_t heads = getNumHeads(), dim = input.getDimSize(2);
  if (heads <= 0)
    return emitOpError() << "expected a positive number of heads, found "
                         << heads;
  if (dim == kDynamic || dim % heads != 0)
    return emitOpError() << "expected the input's last dimension to be a "
                            "multiple of "
                         << heads << " heads, found " << formatDim(dim);
  return verifyShape(
      *this, "result", getType(),
      {input.getDimSize(0), heads, input.getDimSize(1), dim / heads},
      "[batch, heads, sequence, head_dim]");
}

void MergeHeadsOp::build(OpBuilder &builder, OperationState &state,
                         Value input) {
  RankedTensorType type = tensorType(input);
  SmallVector<int64_t> shape = {type.getDimSize(0), type.getDimSize(2),
                                type.getDimSize(1) * type.getDimSize(3)};
  build(builder, state, RankedTensorType::get(shape, type.getElementType()),
        input);
}

LogicalResult MergeHeadsOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  RankedTensorType input = getInput().getType();
  if (input.getRank() != 4)
    return emitOpError() << "expected an input of rank 4 [batch, heads, "
                            "sequence, head_dim], found rank "
                         << input.getRank();
  if (input.getDimSize(1) == kDynamic || input.getDimSize(3) == kDynamic)
    return emitOpError() << "expected static heads and head_dim, found "
                         << formatShape(input.getShape());
  return verifyShape(*this, "result", getType(),
                     {input.getDimSize(0), input.getDimSize(2),
                      input.getDimSize(1) * input.getDimSize(3)},
                     "[batch, sequence, heads * head_dim]");
}

OpFoldResult MergeHeadsOp::fold(FoldAdaptor) {
  // merge_heads(split_heads(x)) = x
  if (auto split = getInput().getDefiningOp<SplitHeadsOp>())
    if (split.getInput().getType() == getType())
      return split.getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// CacheUpdateOp and SliceOp
//===----------------------------------------------------------------------===//

/// `a` and `b` agree on every dimension but `axis`, where `a` is no longer.
static LogicalResult verifyAlongAxis(Operation *op, int64_t axis,
                                     StringRef aName, RankedTensorType a,
                                     StringRef bName, RankedTensorType b) {
  if (a.getRank() != b.getRank())
    return op->emitOpError() << "expected " << aName << " and " << bName
                             << " of the same rank, found ranks " << a.getRank()
                             << " and " << b.getRank();
  if (failed(verifyAxis(op, axis, a.getRank())))
    return failure();
  SmallVector<int64_t> expected(b.getShape());
  expected[axis] = a.getDimSize(axis);
  if (failed(verifyShape(op, aName, a, expected,
                         ("the " + bName + "'s shape off the axis").str())))
    return failure();
  int64_t inner = a.getDimSize(axis), outer = b.getDimSize(axis);
  if (inner != kDynamic && outer != kDynamic && inner > outer)
    return op->emitOpError()
           << "expected " << aName << " to be no longer than the " << bName
           << " along axis " << axis << ", found " << inner << " > " << outer;
  return success();
}

LogicalResult CacheUpdateOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  return verifyAlongAxis(*this, getAxis(), "update", getUpdate().getType(),
                         "cache", getCache().getType());
}

LogicalResult SliceOp::verify() {
  if (failed(verifyOneElementType(*this)))
    return failure();
  return verifyAlongAxis(*this, getAxis(), "result", getType(), "input",
                         getInput().getType());
}

//===----------------------------------------------------------------------===//
// CacheRowsOp
//===----------------------------------------------------------------------===//

/// `rows` ([B, P]) names a row of `input` for each of its first dimension's
/// B rows and each of the `positions` positions read.
static LogicalResult verifyCacheRows(Operation *op, StringRef what,
                                     RankedTensorType rows, int64_t batch,
                                     int64_t positions) {
  if (failed(
          verifyShape(op, what, rows, {batch, kDynamic}, "[batch, positions]")))
    return failure();
  int64_t columns = rows.getDimSize(1);
  if (columns != kDynamic && positions != kDynamic && columns < positions)
    return op->emitOpError()
           << "expected " << what << " for each of the " << positions
           << " positions read, found " << columns;
  return success();
}

LogicalResult CacheRowsOp::verify() {
  RankedTensorType input = getInput().getType();
  int64_t axis = getAxis();
  if (failed(verifyAxis(*this, axis, input.getRank())))
    return failure();
  if (axis == 0)
    return emitOpError() << "expected the positions' axis after the rows' "
                            "(axis 0), found axis 0";
  return verifyCacheRows(*this, "rows", getRows().getType(),
                         input.getDimSize(0), input.getDimSize(axis));
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  if (failed(verifyOneElementType(*this)) ||
      failed(verifyMinRank(*this, "a query", getQuery(), 3)))
    return failure();
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   v = getValue().getType();
  int64_t rank = q.getRank();
  if (k.getRank() != rank || v.getRank() != rank)
    return emitOpError() << "expected query, key and value of the same rank, "
                            "found ranks "
                         << rank << ", " << k.getRank() << " and "
                         << v.getRank();
  // Leading dims shared; K is [..., Sk, D]; V is [..., Sk, Dv].
  SmallVector<int64_t> keyShape(q.getShape());
  keyShape[rank - 2] = k.getDimSize(rank - 2);
  if (failed(verifyShape(*this, "key", k, keyShape,
                         "the query's batch dimensions and head_dim")))
    return failure();
  SmallVector<int64_t> valueShape(keyShape);
  valueShape[rank - 1] = v.getDimSize(rank - 1);
  if (failed(verifyShape(*this, "value", v, valueShape,
                         "the key's batch dimensions and length")))
    return failure();
  SmallVector<int64_t> resultShape(q.getShape());
  resultShape[rank - 1] = v.getDimSize(rank - 1);
  if (failed(verifyShape(*this, "result", getType(), resultShape,
                         "the query's shape with the value's head_dim")))
    return failure();
  if (getKeyLengths() &&
      failed(verifyShape(*this, "key lengths", getKeyLengths().getType(),
                         {q.getDimSize(0)}, "one per batch row")))
    return failure();
  if (getKeyStarts() &&
      failed(verifyShape(*this, "key starts", getKeyStarts().getType(),
                         {q.getDimSize(0)}, "one per batch row")))
    return failure();
  if (getKeyRows() &&
      failed(verifyCacheRows(*this, "key rows", getKeyRows().getType(),
                             q.getDimSize(0), k.getDimSize(rank - 2))))
    return failure();
  if (Value mask = getMask()) {
    // The mask may broadcast up to the scores, never change their shape.
    SmallVector<int64_t> scores = getScoresShape(), shape;
    ArrayRef<int64_t> maskShape = tensorType(mask).getShape();
    if (maskShape.size() > scores.size() ||
        !broadcastShapes(scores, maskShape, shape) ||
        !shapesAgree(shape, scores))
      return emitOpError() << "expected a mask that broadcasts to the scores "
                           << formatShape(scores) << ", found "
                           << formatShape(maskShape);
  }
  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale) || scale == 0.0)
    return emitOpError() << "expected a finite non-zero scale, found " << scale;
  return success();
}

SmallVector<int64_t> AttentionOp::getScoresShape() {
  SmallVector<int64_t> shape(getQuery().getType().getShape());
  shape.back() = getKey().getType().getShape().drop_back().back();
  return shape;
}

//===----------------------------------------------------------------------===//
// LayerNormOp
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  if (failed(verifyOneElementType(*this)) ||
      failed(verifyMinRank(*this, "an input", getInput(), 1)))
    return failure();
  RankedTensorType input = getInput().getType();
  if (getResidual() &&
      failed(verifyShape(*this, "residual", getResidual().getType(),
                         input.getShape(), "the input's shape")))
    return failure();
  int64_t dim = input.getShape().back();
  for (auto [name, param] :
       {std::pair<StringRef, Value>{"scale", getScale()}, {"bias", getBias()}})
    if (param && failed(verifyShape(*this, name, param.getType(), {dim},
                                    "the input's last dimension")))
      return failure();
  double epsilon = getEpsilon().convertToDouble();
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return emitOpError() << "expected a positive finite epsilon, found "
                         << epsilon;
  return success();
}

#define GET_OP_CLASSES
#include "dialects/Tfm/IR/TfmOps.cpp.inc"
