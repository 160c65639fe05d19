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
#include "tools/common/GuardedOutput.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/WithColor.h"

#include <unistd.h>

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
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "tfm optimizer driver\n", registry);
  // -o never replaces the input, and is replaced only once complete.
  tfm_tools::ReadFiles reads;
  reads.addFile(input, "the input file");
  tfm_tools::ReplacementFile outputFile;
  std::string error = outputFile.open(output, reads);
  if (!error.empty()) {
    llvm::WithColor::error(llvm::errs(), "tfm-opt") << error << "\n";
    return 1;
  }
  if (output != "-")
    close(outputFile.fd());
  mlir::LogicalResult result = mlir::MlirOptMain(
      argc, argv, input, output == "-" ? output : outputFile.writePath(),
      registry);
  if (succeeded(result)) {
    error = outputFile.commit();
    if (!error.empty()) {
      llvm::WithColor::error(llvm::errs(), "tfm-opt") << error << "\n";
      return 1;
    }
  }
  if (printTfmStatistics)
    mlir::tfm::printPassStatistics(llvm::errs());
  return mlir::asMainReturnCode(result);
}
