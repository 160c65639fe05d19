//===- TfmOps.h - tfm dialect operations ------------------------*- C++ -*-===//

#ifndef TFM_DIALECTS_TFM_IR_TFMOPS_H
#define TFM_DIALECTS_TFM_IR_TFMOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Tfm/IR/TfmDialect.h"
#include "dialects/Tfm/IR/TfmEnums.h.inc"

namespace mlir {
namespace tfm {

/// The type of `lhs op rhs` under NumPy broadcasting, or a null type when the
/// shapes do not broadcast.
RankedTensorType inferBroadcastType(Type lhs, Type rhs);

/// Verifies that `result` is the broadcast of `lhs` and `rhs`.
LogicalResult verifyBroadcastOp(Operation *op, Type lhs, Type rhs, Type result);

/// Formats a shape as `[?, ?, 512]` for diagnostics.
std::string formatShape(ArrayRef<int64_t> shape);

} // namespace tfm
} // namespace mlir

#define GET_OP_CLASSES
#include "dialects/Tfm/IR/TfmOps.h.inc"

#endif // TFM_DIALECTS_TFM_IR_TFMOPS_H
