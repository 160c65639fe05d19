//===- TfmDialect.cpp - tfm dialect registration ----------------*- C++ -*-===//

#include "dialects/Tfm/IR/TfmDialect.h"
#include "dialects/Tfm/IR/TfmLayers.h"
#include "dialects/Tfm/IR/TfmOps.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::tfm;

#include "dialects/Tfm/IR/TfmDialect.cpp.inc"

void TfmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/Tfm/IR/TfmOps.cpp.inc"
      >();
}

/// `tfm.layer` on private functions whose calls bind their weights;
/// `tfm.weights_prefix` and `tfm.weights_offset` on those calls. Layers
/// call no layers: a call's prefix is the whole checkpoint prefix. (The
/// conversion to the LLVM dialect carries them over to other function and
/// call ops, where they mean nothing more.)
static LogicalResult verifyLayer(func::FuncOp func) {
  if (!func.isPrivate())
    return func.emitError() << "a layer (" << kLayerAttr << ") must be private";
  WalkResult nested = func.walk([](func::CallOp call) {
    return weightsPrefix(call) ? WalkResult::interrupt()
                               : WalkResult::advance();
  });
  if (nested.wasInterrupted())
    return func.emitError() << "a layer must not call layers";
  return success();
}

static LogicalResult verifyLayerCall(func::CallOp call) {
  auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
      call, call.getCalleeAttr());
  if (callee && isLayer(callee))
    return success();
  return call.emitError() << "'" << kWeightsPrefixAttr
                          << "' binds the weights of a layer, but @"
                          << call.getCallee() << " is not one (" << kLayerAttr
                          << ")";
}

LogicalResult TfmDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == kLayerAttr) {
    if (!isa<FunctionOpInterface>(op) || !isa<UnitAttr>(attr.getValue()))
      return op->emitError()
             << "'" << name << "' must be a unit attribute of a function";
    auto func = dyn_cast<func::FuncOp>(op);
    return func ? verifyLayer(func) : success();
  }
  if (name == kWeightsPrefixAttr) {
    auto prefix = dyn_cast<StringAttr>(attr.getValue());
    if (!isa<CallOpInterface>(op) || !prefix || prefix.getValue().empty())
      return op->emitError()
             << "'" << name << "' must be a non-empty string on a call";
    auto call = dyn_cast<func::CallOp>(op);
    return call ? verifyLayerCall(call) : success();
  }
  if (name == kWeightsOffsetAttr) {
    auto offset = dyn_cast<IntegerAttr>(attr.getValue());
    if (!op->hasAttr(kWeightsPrefixAttr) || !offset || offset.getInt() < 0)
      return op->emitError() << "'" << name << "' must be a non-negative "
                             << "integer on a call of a layer";
  }
  return success();
}
