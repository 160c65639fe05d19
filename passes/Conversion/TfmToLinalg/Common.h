//===- Common.h - Shared helpers of the tfm to linalg lowering --*- C++ -*-===//
//
// Builders that every op family's lowering uses (sizes, constants,
// elementwise and row-wise linalg.generic ops, reshapes of leading
// dimensions, activations), and the entry point of each family's patterns.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_CONVERSION_TFMTOLINALG_COMMON_H
#define TFM_PASSES_CONVERSION_TFMTOLINALG_COMMON_H

#include "passes/Conversion/TfmToLinalg/TfmToLinalg.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir {
namespace tfm {
namespace lowering {

using utils::IteratorType;
using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;

RankedTensorType tensorTypeOf(Value v);

OpFoldResult dimOf(OpBuilder &b, Location loc, Value tensor, int64_t dim);

SmallVector<OpFoldResult> sizesOf(OpBuilder &b, Location loc, Value tensor);

Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
                  Type elt);

/// A float constant of type `t`: a scalar, or a splat vector.
Value floatConstant(OpBuilder &b, Location loc, Type t, double v);

Value indexConstant(OpBuilder &b, Location loc, int64_t v);

/// The argument of `op`'s function that holds the rows its caller chose
/// for a tfm.caller_rows `from` `name` (memref<?xi8>, added by
/// convert-tfm-to-linalg), and how many elements of `elementBytes` bytes
/// each its bytes hold.
std::pair<Value, Value> callerArgument(OpBuilder &b, Location loc,
                                       Operation *op, StringRef name,
                                       int64_t elementBytes);

Value filled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes, Type elt,
             double v);

SmallVector<OpFoldResult> unitStrides(OpBuilder &b, int64_t rank);

SmallVector<IteratorType> parallel(int64_t n);

/// Sizes of a result that broadcasts `inputs` NumPy-style: each dimension
/// static, or read from an input whose aligned dimension is not a
/// broadcast 1. Dynamic dimensions are taken to be equal, not to broadcast.
SmallVector<OpFoldResult> broadcastSizes(OpBuilder &b, Location loc,
                                         RankedTensorType result,
                                         ValueRange inputs);

/// The map from the result's iteration space to a broadcast input: aligned
/// on the last dimension, size-1 dimensions pinned to 0.
AffineMap broadcastMap(RankedTensorType input, RankedTensorType result);

/// result[i] = body(inputs[i]...), inputs broadcast to the result.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType type,
                  ValueRange inputs, BodyFn body);

/// Reduces `input` over its last axis: result[..] = combine over j of
/// map(input[.., j]), starting from `init`.
Value reduceLastAxis(OpBuilder &b, Location loc, Value input, double init,
                     BodyFn combine);

/// result[.., j] = body(x[.., j], rowValue[..]): combines each element with
/// a value of its row (the tensor without its last axis).
Value withRowValue(OpBuilder &b, Location loc, Value x, Value rowValue,
                   BodyFn body);

Value expOfDifference(OpBuilder &b, Location l, ValueRange args);

Value product(OpBuilder &b, Location l, ValueRange args);

Value quotient(OpBuilder &b, Location l, ValueRange args);

/// Moves `axis` of `input` last (a transpose), or returns `input` if it is.
Value axisLast(OpBuilder &b, Location loc, Value input, int64_t axis,
               SmallVectorImpl<int64_t> &perm);

Value undoAxisLast(OpBuilder &b, Location loc, Value input,
                   ArrayRef<int64_t> perm);

/// Collapses all leading dimensions: [d0, ..., dn-1, k] -> [d0*...*dn-1, k].
Value collapseLeading(OpBuilder &b, Location loc, Value input, int64_t keep);

/// The inverse of collapseLeading, with the leading sizes of `like`.
Value expandLeading(OpBuilder &b, Location loc, Value input,
                    RankedTensorType resultType, Value like);

Value applyActivation(OpBuilder &b, Location loc, Activation act, Value x);

Value maxCombine(OpBuilder &b, Location l, ValueRange args);

/// a > other ? a : other, and a where either is NaN (so a NaN `a` carries
/// on): a compare and a blend on x86 (one vmaxps where `other` is a nonzero
/// constant), where arith.maximumf's IEEE semantics (NaN from either side,
/// -0 < +0) take a compare, an unordered compare, a mask or and a blend.
Value greaterOf(OpBuilder &b, Location loc, Value a, Value other);

Value addCombine(OpBuilder &b, Location l, ValueRange args);

/// The size of the last axis of `v`, as a float of `elt`.
Value lastDimAsFloat(OpBuilder &b, Location loc, Value v, Type elt);

//===----------------------------------------------------------------------===//
// The op families' patterns
//===----------------------------------------------------------------------===//

/// Elementwise ops and the causal and key-padding masks.
void populateElementwiseLoweringPatterns(RewritePatternSet &patterns);
/// Weights, embeddings, positions, heads (copied as vectors of
/// `config.vectorWidth` floats), caches and slices.
void populateDataMovementLoweringPatterns(RewritePatternSet &patterns,
                                          const KernelConfig &config);
/// tfm.matmul, and linears on the panel kernel of `config.panels`: bf16
/// panels through AVX512-BF16's dot product where it takes it, int8 ones
/// through AVX512-VNNI's.
void populateLinearLoweringPatterns(RewritePatternSet &patterns,
                                    const KernelConfig &config);
/// Softmax, mean, and layer norm on vectors of `config.vectorWidth` floats.
void populateNormalizationLoweringPatterns(RewritePatternSet &patterns,
                                           const KernelConfig &config);
/// tfm.attention as a FlashAttention loop nest of `config.attention`.
void populateAttentionLoweringPatterns(RewritePatternSet &patterns,
                                       const KernelConfig &config);

} // namespace lowering
} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_CONVERSION_TFMTOLINALG_COMMON_H
