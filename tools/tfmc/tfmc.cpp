//===- tfmc.cpp - The tfm compiler driver -------------------------*- C++ -*-===//
//
//   tfmc import  MODEL_DIR [-o model.mlir] [--summary]
//   tfmc compile MODEL_DIR [-o out.mlir] [--compile-to=input|fused]
//                [--mlir-print-ir-after=PASS] [--tfm-pass-statistics] ...
//
// `import` reads a MarianMT-style checkpoint and prints the model as `tfm`
// IR in primitive form. `compile` runs the compiler's pipeline on it up to
// the phase asked for; MLIR's pass-manager options (print the IR after any
// pass, timing) apply.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer.h"
#include "passes/PassStatistics.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

namespace {
enum class Phase { Input, Fused };
} // namespace

static cl::opt<std::string> modelDir(cl::Positional, cl::Required,
                                     cl::desc("<model directory>"));
static cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"));
static cl::opt<bool> summary("summary",
                             cl::desc("import: print an overview instead of the IR"));
static cl::opt<Phase> compileTo(
    "compile-to", cl::desc("compile: the phase to stop after"),
    cl::values(clEnumValN(Phase::Input, "input",
                          "the imported model, primitive tfm ops"),
               clEnumValN(Phase::Fused, "fused",
                          "after the fusion pipeline (tfm.attention, "
                          "tfm.layer_norm, tfm.fused_linear)")),
    cl::init(Phase::Fused));
static cl::opt<bool> passStatistics(
    "tfm-pass-statistics",
    cl::desc("Print what the tfm passes did (blocks fused, ...) to stderr"));

static const char *kUsage =
    "tfmc: ahead-of-time compiler for encoder-decoder Transformer "
    "translation models\n\n"
    "  tfmc import  MODEL_DIR [-o model.mlir] [--summary]\n"
    "  tfmc compile MODEL_DIR [-o out.mlir] [--compile-to=input|fused]\n\n"
    "MODEL_DIR holds config.json and model.safetensors (Hugging Face "
    "MarianMT layout).\n";

static int reportError(const Twine &message) {
  WithColor::error(errs(), "tfmc") << message << "\n";
  return 1;
}

static int writeOutput(
    function_ref<void(raw_ostream &)> write) {
  std::string errorMessage;
  std::unique_ptr<ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &errorMessage);
  if (!output)
    return reportError(errorMessage);
  write(output->os());
  output->keep();
  return 0;
}

static int run(StringRef command) {
  mlir::MLIRContext context;
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      mlir::tfm::importModel(context, modelDir);
  if (!module)
    return reportError(toString(module.takeError()));

  if (command == "import" && summary)
    return writeOutput(
        [&](raw_ostream &os) { mlir::tfm::printModelSummary(**module, os); });

  if (command == "compile" && compileTo != Phase::Input) {
    mlir::PassManager pm(&context);
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      return reportError("invalid pass manager options");
    mlir::DefaultTimingManager timing;
    mlir::applyDefaultTimingManagerCLOptions(timing);
    mlir::TimingScope timingScope = timing.getRootScope();
    pm.enableTiming(timingScope);
    mlir::tfm::buildFusionPipeline(pm);
    if (failed(pm.run(**module)))
      return reportError("the fusion pipeline failed on " + modelDir);
  }
  if (passStatistics)
    mlir::tfm::printPassStatistics(errs());
  return writeOutput([&](raw_ostream &os) {
    (*module)->print(os, mlir::OpPrintingFlags());
    os << "\n";
  });
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // Passes first: --mlir-print-ir-after=<pass> looks names up in the
  // registry as the option is created.
  mlir::registerTransformsPasses();
  mlir::tfm::registerAllTfmPasses();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();

  StringRef command = argc > 1 ? argv[1] : "";
  if (command != "import" && command != "compile") {
    if (command == "--help" || command == "-h" || command == "help") {
      outs() << kUsage << "\nRun `tfmc import --help` or `tfmc compile "
                          "--help` for the options.\n";
      return 0;
    }
    errs() << kUsage;
    return reportError(command.empty()
                           ? Twine("no command given")
                           : "unknown command '" + command + "'");
  }
  // Parse the rest as if "tfmc <command>" were the program name.
  std::string program = (Twine("tfmc ") + command).str();
  SmallVector<const char *> args = {program.c_str()};
  args.append(argv + 2, argv + argc);
  cl::ParseCommandLineOptions(args.size(), args.data(), kUsage);
  if (command == "compile" && summary)
    return reportError("--summary is an option of `tfmc import`");
  return run(command);
}
