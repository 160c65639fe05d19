//===- PatternUtils.h - Small matchers shared by the fusions ----*- C++ -*-===//

#ifndef TFM_PASSES_TRANSFORMS_PATTERNUTILS_H
#define TFM_PASSES_TRANSFORMS_PATTERNUTILS_H

#include "dialects/Tfm/IR/TfmOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <optional>

namespace mlir {
namespace tfm {

/// The value of a floating-point splat constant, of any shape.
inline std::optional<double> getSplatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// Every user of `v` is one of `ops`.
inline bool onlyUsedBy(Value v, const llvm::SmallPtrSetImpl<Operation *> &ops) {
  return llvm::all_of(v.getUsers(),
                      [&](Operation *user) { return ops.contains(user); });
}

/// The single user of `op`'s only result, or null.
inline Operation *soleUser(Operation *op) {
  if (op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return nullptr;
  return *op->getResult(0).user_begin();
}

/// In a binary elementwise op whose result has `operand`'s exact type, the
/// other operand: it broadcasts without changing the shape.
inline Value otherOperand(Operation *binary, Value operand) {
  if (binary->getNumOperands() != 2 ||
      binary->getResult(0).getType() != operand.getType())
    return {};
  if (binary->getOperand(0) == operand)
    return binary->getOperand(1);
  if (binary->getOperand(1) == operand)
    return binary->getOperand(0);
  return {};
}

/// How many `OpTy` ops under `root` satisfy `keep` (all when it is null);
/// the fusion passes count their fused ops before and after rewriting.
template <typename OpTy>
int64_t countOps(Operation *root,
                 llvm::function_ref<bool(OpTy)> keep = nullptr) {
  int64_t n = 0;
  root->walk([&](OpTy op) { n += !keep || keep(op); });
  return n;
}

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_TRANSFORMS_PATTERNUTILS_H
