//===- Driver.h - What tfmc's commands share --------------------*- C++ -*-===//
//
// tfmc's commands (tfmc.cpp dispatches them) each live in a file of their
// own with the options that are theirs: Import.cpp, Compile.cpp,
// Graph.cpp, Shortlist.cpp. `import`, `compile` and `graph` parse one
// command line, so each takes the options of all three (and checks them
// alike); the options more than one file reads are declared here, those
// shared defined in Driver.cpp, the others beside their command. Here too:
// reading the model, the checks every command makes, and the output.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TFMC_DRIVER_H
#define TFM_TOOLS_TFMC_DRIVER_H

#include "tools/common/GuardedOutput.h"

#include "passes/LoweringChoices.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace tfmc {

/// tfmc's own options; --help shows only these (--help-hidden: all of
/// LLVM's and MLIR's, which work as usual).
llvm::cl::OptionCategory &tfmcCategory();
/// `tfmc shortlist` takes no model directory: a subcommand of its own, so
/// that the positional argument the others require does not apply.
llvm::cl::SubCommand &shortlistCommand();
llvm::cl::OptionCategory &shortlistCategory();

// Options of several commands (Driver.cpp).
extern llvm::cl::opt<std::string> modelDir;
extern llvm::cl::opt<std::string> graphWeights;
extern llvm::cl::opt<std::string> outputFile;
extern llvm::cl::opt<std::string> backend;
extern llvm::cl::opt<std::string> vmapFile;
extern llvm::cl::opt<bool> allowUnusedTensors;
extern llvm::cl::opt<bool> passStatistics;
// `import`'s, which `compile` refuses (Import.cpp).
extern llvm::cl::opt<bool> summary;
// `compile`'s, which the checks of every command read (Compile.cpp).
extern llvm::cl::opt<std::string> targetCpu;
extern llvm::cl::opt<std::string> precision;
extern llvm::cl::opt<std::string> sourceLang;
extern llvm::cl::opt<std::string> targetLang;

/// Prints "tfmc: error: `message`"; returns the exit code, 1.
int reportError(const llvm::Twine &message);

/// An option that names something (a file, a directory, a language, a
/// CPU, a backend) given as "" names nothing: an error naming the option,
/// never the option's default taken silently.
int refuseEmptyNames(llvm::ArrayRef<llvm::cl::opt<std::string> *> options);

/// What `import`, `compile` and `graph` check before reading the model:
/// no empty names, a known --backend and --precision (parsed here, once).
int checkModelOptions();

/// --backend and --precision as checkModelOptions parsed them.
mlir::tfm::Backend chosenBackend();
mlir::tfm::Precision chosenPrecision();

/// --vmap and the languages are stored with a translator: an error for a
/// command that makes none.
int refuseTranslatorOptions();

/// The checkpoint directory: the model's, or the graph's --weights.
llvm::StringRef checkpointDir();

/// Every file the command reads, which no output may overwrite.
tfm_tools::ReadFiles filesRead();

/// The dialects of the whole pipeline, to the LLVM dialect.
mlir::DialectRegistry codegenRegistry();

/// The model of `command`: a checkpoint directory imported, or (`compile`
/// only) a graph file parsed and checked against the checkpoint of
/// --weights.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
loadModel(mlir::MLIRContext &context, llvm::StringRef command);

/// Writes -o (a file, or stdout) through a temporary that replaces it once
/// complete; never over a file of `reads`.
int writeOutput(const tfm_tools::ReadFiles &reads,
                llvm::function_ref<void(llvm::raw_ostream &)> write);
/// The module as text to -o.
int writeModule(mlir::ModuleOp module);

} // namespace tfmc

#endif // TFM_TOOLS_TFMC_DRIVER_H
