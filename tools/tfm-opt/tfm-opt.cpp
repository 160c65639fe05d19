//===- tfm-opt.cpp - The tfm pass driver ------------------------*- C++ -*-===//
//
// mlir-opt for tfm: parses IR, runs passes given as flags, prints the result.
// Every tfm pass is registered here so lit tests can reach it.
//
//===----------------------------------------------------------------------===//

#include "dialects/Tfm/IR/TfmDialect.h"
#include "passes/PassStatistics.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Dialect/Transform/Transforms/Passes.h"

static llvm::cl::opt<bool> printTfmStatistics(
    "tfm-pass-statistics",
    llvm::cl::desc("Print what the tfm passes did (blocks fused, ...) to "
                   "stderr; works with release builds of LLVM, unlike "
                   "-mlir-pass-statistics"));

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::tfm::registerCodegenDialects(registry);
  // Upstream cleanups the tfm pipelines use (canonicalize, cse, ...).
  mlir::registerTransformsPasses();
  mlir::transform::registerInterpreterPass();
  mlir::transform::registerPreloadLibraryPass();
  mlir::tfm::registerAllTfmPasses();
  mlir::LogicalResult result =
      mlir::MlirOptMain(argc, argv, "tfm optimizer driver\n", registry);
  if (printTfmStatistics)
    mlir::tfm::printPassStatistics(llvm::errs());
  return mlir::asMainReturnCode(result);
}
