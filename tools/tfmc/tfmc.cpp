//===- tfmc.cpp - The tfm compiler driver -------------------------*- C++ -*-===//
//
//   tfmc import MODEL_DIR [-o model.mlir] [--summary]
//
// `import` reads a MarianMT-style checkpoint and prints the model as `tfm`
// IR in primitive form (or, with --summary, an overview of it).
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "mlir/Support/FileUtilities.h"

using namespace llvm;

static cl::SubCommand importCommand(
    "import", "Import a checkpoint directory as tfm IR (primitive form)");

static cl::opt<std::string> modelDir(cl::Positional, cl::Required,
                                     cl::desc("<model directory>"),
                                     cl::sub(importCommand));
static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::sub(importCommand));
static cl::opt<bool> summary("summary",
                             cl::desc("Print an overview instead of the IR"),
                             cl::sub(importCommand));
static cl::opt<bool> debugInfo("mlir-print-debuginfo",
                               cl::desc("Print locations (tensor-name scopes)"),
                               cl::sub(importCommand));

static int reportError(const Twine &message) {
  WithColor::error(errs(), "tfmc") << message << "\n";
  return 1;
}

static int runImport() {
  mlir::MLIRContext context;
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      mlir::tfm::importModel(context, modelDir);
  if (!module)
    return reportError(toString(module.takeError()));

  std::string errorMessage;
  std::unique_ptr<ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &errorMessage);
  if (!output)
    return reportError(errorMessage);
  if (summary) {
    mlir::tfm::printModelSummary(**module, output->os());
  } else {
    mlir::OpPrintingFlags flags;
    if (debugInfo)
      flags.enableDebugInfo();
    (*module)->print(output->os(), flags);
    output->os() << "\n";
  }
  output->keep();
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tfmc: ahead-of-time compiler for encoder-decoder Transformer "
      "translation models\n");
  if (importCommand)
    return runImport();
  errs() << "tfmc: no command given; see `tfmc --help`\n";
  return 1;
}
