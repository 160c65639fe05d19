//===- Driver.cpp - What tfmc's commands share ------------------*- C++ -*-===//

#include "tools/tfmc/Driver.h"

#include "compiler/GraphFile.h"
#include "compiler/Importer.h"
#include "passes/Pipelines.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;

cl::OptionCategory &tfmc::tfmcCategory() {
  static cl::OptionCategory category("tfmc options");
  return category;
}

cl::SubCommand &tfmc::shortlistCommand() {
  static cl::SubCommand command(
      "shortlist", "build a vocabulary map (vmap) from a tokenized parallel "
                   "corpus, or measure one's shortlists");
  return command;
}

cl::OptionCategory &tfmc::shortlistCategory() {
  static cl::OptionCategory category("tfmc shortlist options");
  return category;
}

namespace tfmc {

cl::opt<std::string>
    modelDir(cl::Positional, cl::Required,
             cl::desc("<model directory, or for compile a graph.mlir>"),
             cl::cat(tfmcCategory()));
cl::opt<std::string> graphWeights(
    "weights",
    cl::desc("compile GRAPH.mlir: the checkpoint directory whose tensors "
             "the graph's tfm.weight ops name (and whose tokenizer files "
             "the translator gets)"),
    cl::value_desc("model directory"), cl::cat(tfmcCategory()));
cl::opt<std::string>
    outputFile("o",
               cl::desc("Output: a directory for a translator, else a file "
                        "(default: stdout)"),
               cl::value_desc("path"), cl::init("-"), cl::cat(tfmcCategory()),
               cl::sub(cl::SubCommand::getTopLevel()),
               cl::sub(shortlistCommand()));
cl::opt<std::string> backend(
    "backend",
    cl::desc("compile: who runs the linears, layer norms, softmax and "
             "elementwise ops: llvm (our generated code), onednn (oneDNN "
             "primitives), auto (per op kind and shape, from measurements)"),
    cl::value_desc("llvm|onednn|auto"), cl::init("auto"),
    cl::cat(tfmcCategory()));
cl::opt<std::string> vmapFile(
    "vmap",
    cl::desc("compile: a vocabulary map (CTranslate2's vmap: 'SOURCE "
             "PIECES<TAB>TARGET PIECES' a line) to store with the model for "
             "the translator's shortlist, checked against the model's "
             "vocabulary; shortlist --measure: the map to measure"),
    cl::value_desc("file"), cl::cat(tfmcCategory()),
    cl::sub(cl::SubCommand::getTopLevel()), cl::sub(shortlistCommand()));
cl::opt<bool> allowUnusedTensors(
    "allow-unused-tensors",
    cl::desc("import, compile, graph: compile although the checkpoint holds "
             "tensors the model does not read (listed as a warning); "
             "without it they are an error, since they mean the config does "
             "not describe the checkpoint"),
    cl::cat(tfmcCategory()));
cl::opt<bool> passStatistics(
    "tfm-pass-statistics",
    cl::desc("Print what the tfm passes did (blocks fused, ...) to stderr"),
    cl::cat(tfmcCategory()));

} // namespace tfmc

using namespace tfmc;

namespace {
/// --backend and --precision, parsed by checkModelOptions.
mlir::tfm::Backend parsedBackend = mlir::tfm::Backend::Auto;
mlir::tfm::Precision parsedPrecision = mlir::tfm::Precision::Fp32;
} // namespace

int tfmc::reportError(const Twine &message) {
  WithColor::error(errs(), "tfmc") << message << "\n";
  return 1;
}

int tfmc::refuseEmptyNames(ArrayRef<cl::opt<std::string> *> options) {
  for (cl::opt<std::string> *option : options)
    if (option->getNumOccurrences() && option->empty())
      return reportError((option->ArgStr.size() == 1 ? "-" : "--") +
                         option->ArgStr + " is empty: give it a value (" +
                         option->ValueStr + ")");
  return 0;
}

int tfmc::checkModelOptions() {
  if (modelDir.getNumOccurrences() && modelDir.empty())
    return reportError("the model directory (or graph) argument is empty");
  if (int rc =
          refuseEmptyNames({&outputFile, &graphWeights, &targetCpu, &backend,
                            &precision, &sourceLang, &targetLang, &vmapFile}))
    return rc;
  Expected<mlir::tfm::Backend> backendChoice =
      mlir::tfm::parseBackend(backend, "--backend");
  if (!backendChoice)
    return reportError(toString(backendChoice.takeError()));
  Expected<mlir::tfm::Precision> precisionChoice =
      mlir::tfm::parsePrecision(precision, "--precision");
  if (!precisionChoice)
    return reportError(toString(precisionChoice.takeError()));
  parsedBackend = *backendChoice;
  parsedPrecision = *precisionChoice;
  return 0;
}

mlir::tfm::Backend tfmc::chosenBackend() { return parsedBackend; }

mlir::tfm::Precision tfmc::chosenPrecision() { return parsedPrecision; }

int tfmc::refuseTranslatorOptions() {
  if (!vmapFile.empty())
    return reportError("--vmap is stored with a translator: `tfmc compile "
                       "MODEL_DIR -o OUT_DIR --vmap FILE`");
  if (!sourceLang.empty() || !targetLang.empty())
    return reportError("--source-lang and --target-lang are recorded in a "
                       "translator: `tfmc compile MODEL_DIR -o OUT_DIR`");
  return 0;
}

StringRef tfmc::checkpointDir() {
  return graphWeights.empty() ? StringRef(modelDir) : StringRef(graphWeights);
}

tfm_tools::ReadFiles tfmc::filesRead() {
  tfm_tools::ReadFiles reads;
  if (!graphWeights.empty())
    reads.addFile(modelDir, "the graph");
  reads.addDirectory(checkpointDir().str(), "the checkpoint directory");
  reads.addFile(vmapFile, "--vmap");
  return reads;
}

mlir::DialectRegistry tfmc::codegenRegistry() {
  mlir::DialectRegistry registry;
  mlir::tfm::registerCodegenDialects(registry);
  return registry;
}

static Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message.str());
}

Expected<mlir::OwningOpRef<mlir::ModuleOp>>
tfmc::loadModel(mlir::MLIRContext &context, StringRef command) {
  bool graph = !sys::fs::is_directory(modelDir) && sys::fs::exists(modelDir);
  if (graph && command != "compile")
    return fail(command + " reads a checkpoint directory; " + modelDir +
                " is a file (`tfmc compile " + modelDir +
                " --weights MODEL_DIR` compiles a graph)");
  if (graph && graphWeights.empty())
    return fail("compiling the graph " + modelDir +
                " needs --weights MODEL_DIR: the checkpoint whose "
                "tensors it names");
  if (!graph && !graphWeights.empty())
    return fail("--weights is for compiling a graph file; " + modelDir +
                " is a model directory");
  if (graph)
    return mlir::tfm::loadGraph(context, modelDir, graphWeights);
  return mlir::tfm::importModel(context, modelDir,
                                {allowUnusedTensors.getValue()});
}

int tfmc::writeOutput(const tfm_tools::ReadFiles &reads,
                      function_ref<void(raw_ostream &)> write) {
  tfm_tools::ReplacementFile output;
  std::string error = output.open(outputFile, reads);
  if (!error.empty())
    return reportError(error);
  {
    raw_fd_ostream os(output.fd(), /*shouldClose=*/outputFile != "-");
    write(os);
    os.flush();
    if (outputFile != "-")
      os.close();
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      return reportError(outputFile + ": cannot write: " + message);
    }
  }
  error = output.commit();
  return error.empty() ? 0 : reportError(error);
}

int tfmc::writeModule(mlir::ModuleOp module) {
  return writeOutput(filesRead(), [&](raw_ostream &os) {
    module->print(os, mlir::OpPrintingFlags());
    os << "\n";
  });
}
