//===- tfmc.cpp - The tfm compiler driver -----------------------*- C++ -*-===//
//
//   tfmc import    MODEL_DIR [-o model.mlir] [--summary]          Import.cpp
//   tfmc compile   MODEL_DIR -o OUT_DIR | --compile-to=PHASE ...  Compile.cpp
//   tfmc graph     MODEL_DIR [--stage=STAGE] -o model.svg         Graph.cpp
//   tfmc shortlist --source SRC --target TGT -o vmap.txt ...      Shortlist.cpp
//
// The command line parsed as the command's, and the command run; what the
// commands share is in Driver.h.
//
//===----------------------------------------------------------------------===//

#include "tools/tfmc/Commands.h"
#include "tools/tfmc/Driver.h"

#include "passes/Passes.h"
#include "tools/Version.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

using namespace llvm;

static const char *kUsage =
    "tfmc: ahead-of-time compiler for encoder-decoder Transformer "
    "translation models\n\n"
    "  tfmc import  MODEL_DIR [-o model.mlir] [--summary]\n"
    "  tfmc compile MODEL_DIR -o OUT_DIR [--embed-weights] "
    "[--backend=llvm|onednn|auto]\n"
    "               [--precision=fp32|bf16|int8] [--source-lang=L "
    "--target-lang=L]\n"
    "  tfmc compile MODEL_DIR --compile-to=input|fused|llvm [-o out.mlir]\n"
    "  tfmc compile GRAPH.mlir --weights MODEL_DIR [the options above]\n"
    "  tfmc graph   MODEL_DIR [--stage=imported|fused|backends] -o "
    "model.svg\n"
    "  tfmc compile MODEL_DIR -o OUT_DIR --vmap vmap.txt   (a vocabulary "
    "shortlist)\n"
    "  tfmc shortlist --source SRC.pieces --target TGT.pieces -o vmap.txt "
    "[--top-k K]\n"
    "               [--frequent M] [--min-probability P] [--ngrams 1|2]\n"
    "  tfmc shortlist --measure --vmap vmap.txt --vocab vocab.json --source "
    "TEST.pieces\n\n"
    "MODEL_DIR holds a Hugging Face checkpoint (config.json, model.safetensors "
    "or\npytorch_model.bin; model_type marian, bart, mbart, m2m_100, t5, mt5) "
    "or a Marian\n.npz release, and for text in and out the family's "
    "tokenizer files.\nGRAPH.mlir is a tfm graph (as `tfmc import` writes it, "
    "edited or "
    "fused) whose\ntfm.weight ops name tensors of MODEL_DIR.\n\n"
    "MLIR's options (--mlir-timing, --mlir-print-ir-after-all, ...) and "
    "LLVM's work too;\n--help-hidden lists them.\n";

static void printVersion(raw_ostream &os) {
  os << "tfmc " << TFM_VERSION << " (commit " << TFM_COMMIT << ")\n"
     << "built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
}

/// Registers the passes and MLIR's options: passes first, since
/// --mlir-print-ir-after=<pass> looks names up in the registry as the
/// option is created.
static void registerMlirOptions() {
  mlir::registerTransformsPasses();
  mlir::tfm::registerAllTfmPasses();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
}

/// `tfmc shortlist ...`: the subcommand selects its options.
static int shortlist(int argc, char **argv) {
  cl::HideUnrelatedOptions({&tfmc::shortlistCategory(), &tfmc::tfmcCategory()},
                           tfmc::shortlistCommand());
  cl::ParseCommandLineOptions(argc, argv, kUsage);
  return tfmc::runShortlist();
}

/// `import`, `compile` and `graph` share one set of options: the rest of
/// the command line is parsed as if "tfmc <command>" were the program name.
static int modelCommand(StringRef command, int argc, char **argv) {
  std::string program = (Twine("tfmc ") + command).str();
  SmallVector<const char *> args = {program.c_str()};
  args.append(argv + 2, argv + argc);
  cl::HideUnrelatedOptions(tfmc::tfmcCategory());
  cl::ParseCommandLineOptions(args.size(), args.data(), kUsage);
  if (command == "import")
    return tfmc::runImport();
  if (command == "compile")
    return tfmc::runCompile();
  return tfmc::runGraph();
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  registerMlirOptions();
  cl::SetVersionPrinter(printVersion);
  StringRef command = argc > 1 ? argv[1] : "";
  if (command == "--version" || command == "version") {
    printVersion(outs());
    return 0;
  }
  if (command == "shortlist")
    return shortlist(argc, argv);
  if (command == "import" || command == "compile" || command == "graph")
    return modelCommand(command, argc, argv);
  if (command == "--help" || command == "-h" || command == "help") {
    outs() << kUsage
           << "\nRun `tfmc import --help` or `tfmc compile "
              "--help` for the options.\n";
    return 0;
  }
  errs() << kUsage;
  return tfmc::reportError(command.empty()
                               ? Twine("no command given")
                               : "unknown command '" + command + "'");
}
