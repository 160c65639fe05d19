//===- VectorAttention.cpp - What the vector attention kernels share ------===//
//
// VectorKernel, the base of OneQueryKernel and TiledKernel: a block of
// queries, its sizes, and the constants both build with.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToLinalg/VectorAttention.h"
#include "passes/Conversion/TfmToLinalg/VectorMath.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using namespace mlir::tfm::lowering;

/// The end of the keys query `query` sees: end = min(len, query + Sk - Sq
/// + 1) with causality (shift = Sk - Sq), else len (`keyEnd`).
Value mlir::tfm::lowering::visibleEnd(OpBuilder &b, Location loc, Value query,
                                      Value keyEnd, Value shift, bool causal) {
  if (!causal)
    return keyEnd;
  Value zero = indexConstant(b, loc, 0), one = indexConstant(b, loc, 1);
  Value visible = b.create<arith::AddIOp>(
      loc, b.create<arith::AddIOp>(loc, query, shift), one);
  visible = b.create<arith::MaxSIOp>(loc, visible, zero);
  return b.create<arith::MinSIOp>(loc, keyEnd, visible);
}

VectorKernel::VectorKernel(OpBuilder &b, Location loc, const QueryBlock &block,
                           int64_t lanes)
    : b(b), loc(loc), block(block), lanes(lanes) {
  rank = tensorTypeOf(block.q).getRank();
  d = tensorTypeOf(block.q).getDimSize(rank - 1);
  dv = tensorTypeOf(block.v).getDimSize(rank - 1);
  elt = tensorTypeOf(block.q).getElementType();
  vecType = VectorType::get({lanes}, elt);
  i32Vec = VectorType::get({lanes}, b.getI32Type());
  chunks = llvm::divideCeil(d, lanes);
  outChunks = llvm::divideCeil(dv, lanes);
  fzero = floatConstant(b, loc, elt, 0.0);
  zero = indexConstant(b, loc, 0);
  one = indexConstant(b, loc, 1);
}

void VectorKernel::createLaneConstants() {
  laneIndex = laneIndices(b, loc, lanes);
  scaleVec = floatConstant(b, loc, vecType, block.scale);
  ninfVec = floatConstant(b, loc, vecType, -INFINITY);
  zeroVec = floatConstant(b, loc, vecType, 0.0);
}
