//===- tfmc.cpp - The tfm compiler driver -------------------------*- C++ -*-===//
//
//   tfmc import  MODEL_DIR [-o model.mlir] [--summary]
//   tfmc compile MODEL_DIR -o OUT_DIR [--embed-weights] [--target-cpu=CPU]
//                [--backend=llvm|onednn|auto] [--print-backends]
//   tfmc compile MODEL_DIR --compile-to=input|fused|llvm [-o out.mlir]
//                [--mlir-print-ir-after=PASS] [--tfm-pass-statistics] ...
//
// `import` reads a MarianMT-style checkpoint and prints the model as `tfm`
// IR in primitive form. `compile` runs the compiler's pipeline on it: to a
// translator (OUT_DIR/translator and its weights OUT_DIR/model.tfmw, plus
// the model's tokenizer files if it has them), or up to an IR phase; MLIR's
// pass-manager options (print the IR after any pass, timing) apply.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen.h"
#include "compiler/Importer.h"
#include "compiler/Safetensors.h"
#include "compiler/TokenizerFiles.h"
#include "compiler/WeightsFile.h"
#include "runtime/src/ModelInfo.h"
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
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <thread>

using namespace llvm;

namespace {
enum class Phase { Input, Fused, LLVM, Translator };
} // namespace

// tfmc's own options; --help shows only these (--help-hidden: all of
// LLVM's and MLIR's, which work as usual).
static cl::OptionCategory tfmcOptions("tfmc options");

static cl::opt<std::string> modelDir(cl::Positional, cl::Required,
                                     cl::desc("<model directory>"),
                                     cl::cat(tfmcOptions));
static cl::opt<std::string>
    outputFile("o",
               cl::desc("Output: a directory for a translator, else a file "
                        "(default: stdout)"),
               cl::value_desc("path"), cl::init("-"), cl::cat(tfmcOptions));
static cl::opt<bool>
    summary("summary", cl::desc("import: print an overview instead of the IR"),
            cl::cat(tfmcOptions));
static cl::opt<Phase> compileTo(
    "compile-to", cl::desc("compile: the phase to stop after"),
    cl::values(clEnumValN(Phase::Input, "input",
                          "the imported model, primitive tfm ops"),
               clEnumValN(Phase::Fused, "fused",
                          "after the fusion pipeline (tfm.attention, "
                          "tfm.layer_norm, tfm.fused_linear)"),
               clEnumValN(Phase::LLVM, "llvm", "the LLVM dialect"),
               clEnumValN(Phase::Translator, "translator",
                          "a translator binary and its weights (default)")),
    cl::init(Phase::Translator), cl::cat(tfmcOptions));
static cl::opt<bool> embedWeights(
    "embed-weights",
    cl::desc("Put the weights inside the translator: one file is all"),
    cl::cat(tfmcOptions));
static cl::opt<std::string>
    targetCpu("target-cpu",
              cl::desc("LLVM CPU to compile for (default: this host's)"),
              cl::cat(tfmcOptions));
static cl::opt<std::string> targetFeatures(
    "target-features",
    cl::desc("LLVM target features, e.g. +avx2,+fma (default: the CPU's)"),
    cl::cat(tfmcOptions));
static cl::opt<std::string> backend(
    "backend",
    cl::desc("compile: who runs the linears, layer norms, softmax and "
             "elementwise ops: llvm (our generated code), onednn (oneDNN "
             "primitives), auto (per op kind and shape, from measurements)"),
    cl::value_desc("llvm|onednn|auto"), cl::init("auto"), cl::cat(tfmcOptions));
static cl::opt<unsigned> codegenThreads(
    "codegen-threads",
    cl::desc("compile: LLVM optimizes and emits the model in this many "
             "parts in parallel (default: one per core)"),
    cl::init(0), cl::cat(tfmcOptions));
static cl::opt<bool> printBackends(
    "print-backends",
    cl::desc("compile: print which backend each op kind and shape got"),
    cl::cat(tfmcOptions));
static cl::opt<bool> passStatistics(
    "tfm-pass-statistics",
    cl::desc("Print what the tfm passes did (blocks fused, ...) to stderr"),
    cl::cat(tfmcOptions));

static const char *kUsage =
    "tfmc: ahead-of-time compiler for encoder-decoder Transformer "
    "translation models\n\n"
    "  tfmc import  MODEL_DIR [-o model.mlir] [--summary]\n"
    "  tfmc compile MODEL_DIR -o OUT_DIR [--embed-weights] "
    "[--backend=llvm|onednn|auto]\n"
    "  tfmc compile MODEL_DIR --compile-to=input|fused|llvm [-o out.mlir]\n\n"
    "MODEL_DIR holds config.json and model.safetensors (Hugging Face "
    "MarianMT layout),\nand for text in and out source.spm, target.spm and "
    "vocab.json.\n\n"
    "MLIR's options (--mlir-timing, --mlir-print-ir-after-all, ...) and "
    "LLVM's work too;\n--help-hidden lists them.\n";

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

/// Where the runtime libraries are: beside an installed tfmc (bin/../lib),
/// else in the build tree tfmc came from.
static std::string runtimeLibDir() {
  std::string self = sys::fs::getMainExecutable(nullptr, nullptr);
  SmallString<256> dir(sys::path::parent_path(sys::path::parent_path(self)));
  sys::path::append(dir, "lib");
  SmallString<256> probe(dir);
  sys::path::append(probe, "libtfm_runtime.a");
  if (sys::fs::exists(probe))
    return dir.str().str();
  return TFM_RUNTIME_LIB_DIR;
}

/// Whether the compiled module calls oneDNN kernels (convert-tfm-to-onednn).
static bool callsOneDnn(mlir::ModuleOp module) {
  bool calls = false;
  module.walk([&](mlir::SymbolOpInterface symbol) {
    calls |= symbol.getName().contains("tfm_onednn_");
  });
  return calls;
}

/// Links the model's objects with the runtime into OUT_DIR/translator.
static int linkTranslator(ArrayRef<std::string> objectPaths,
                          StringRef translatorPath, bool withOneDnn) {
  ErrorOr<std::string> linker = sys::findProgramByName("clang++-19");
  if (!linker)
    linker = sys::findProgramByName("c++");
  if (!linker)
    return reportError("no C++ linker driver (clang++-19 or c++) on PATH");
  std::string libs = runtimeLibDir();
  std::string mainLib = libs + "/libtfm_translator_main.a";
  std::string runtimeLib = libs + "/libtfm_runtime.a";
  // Parallel loops run on LLVM's OpenMP runtime (Debian's libomp5-19).
  std::string ompDir = std::string("-L") + TFM_LIBOMP_DIR;
  std::string ompRpath = std::string("-Wl,-rpath,") + TFM_LIBOMP_DIR;
  std::string oneDnnLib = libs + "/libtfm_onednn.a";
  SmallVector<StringRef> args = {*linker, "-o", translatorPath};
  args.append(objectPaths.begin(), objectPaths.end());
  args.append({mainLib, runtimeLib});
  if (withOneDnn)
    args.push_back(oneDnnLib);
  // libomp before libdnnl: oneDNN's OpenMP calls (GOMP_parallel, ...) then
  // bind to the one OpenMP runtime of the process, not to libgomp.
  args.append({ompDir, ompRpath, "-lomp"});
  if (withOneDnn)
    args.push_back("-ldnnl");
  // The runtime's text I/O needs SentencePiece (a shared library), its
  // search glibc's vector math (libmvec).
  args.append({"-lmvec", "-lm", "-lpthread", TFM_SENTENCEPIECE_LIB});
#ifdef TFM_SANITIZE_TRANSLATORS
  // The runtime libraries are instrumented (TFM_SANITIZE): link the
  // sanitizers' runtimes, as CMake does for tfmc itself.
  args.append({"-fsanitize=address,undefined", "-fno-sanitize-recover=all"});
#endif
  std::string errorMessage;
  int rc = sys::ExecuteAndWait(*linker, args, std::nullopt, {}, 0, 0,
                               &errorMessage);
  if (rc != 0)
    return reportError("linking " + translatorPath + " failed" +
                       (errorMessage.empty() ? "" : ": " + errorMessage));
  return 0;
}

/// Appends the weights to the translator, page-aligned, then the tokenizer
/// files, with a trailer that the runtime finds at the end of its own
/// executable.
static int embed(StringRef translatorPath, StringRef weightsPath,
                 ArrayRef<std::string> tokenizerFiles) {
  auto weights = MemoryBuffer::getFile(weightsPath, /*IsText=*/false,
                                       /*RequiresNullTerminator=*/false);
  if (!weights)
    return reportError(weightsPath + ": " + weights.getError().message());
  uint64_t size = 0;
  if (std::error_code ec = sys::fs::file_size(translatorPath, size))
    return reportError(translatorPath + ": " + ec.message());
  std::error_code ec;
  raw_fd_ostream out(translatorPath, ec, sys::fs::OF_Append);
  if (ec)
    return reportError(translatorPath + ": " + ec.message());
  uint64_t offset = (size + 4095) / 4096 * 4096;
  out.write_zeros(offset - size);
  out << (*weights)->getBuffer();
  if (Error err = mlir::tfm::appendEmbeddedFiles(
          out, offset + (*weights)->getBufferSize(), tokenizerFiles))
    return reportError(toString(std::move(err)));
  tfm_runtime::EmbedTrailer trailer{offset, (*weights)->getBufferSize(), {}};
  std::memcpy(trailer.magic, tfm_runtime::kEmbedMagic, 8);
  out.write(reinterpret_cast<const char *>(&trailer), sizeof trailer);
  out.close();
  if (out.has_error())
    return reportError(translatorPath + ": " + out.error().message());
  if (std::error_code removeError = sys::fs::remove(weightsPath))
    return reportError(weightsPath + ": " + removeError.message());
  return 0;
}

static int compileTranslator(mlir::ModuleOp module) {
  if (outputFile == "-")
    return reportError("a translator needs an output directory: -o OUT_DIR");
  if (std::error_code ec = sys::fs::create_directories(outputFile))
    return reportError(outputFile + ": " + ec.message());
  SmallString<256> object(outputFile), weights(outputFile),
      translator(outputFile), checkpointPath(modelDir);
  sys::path::append(object, "model");
  sys::path::append(weights, "model.tfmw");
  sys::path::append(translator, "translator");
  sys::path::append(checkpointPath, "model.safetensors");

  Expected<mlir::tfm::SafetensorsFile> checkpoint =
      mlir::tfm::SafetensorsFile::open(checkpointPath);
  if (!checkpoint)
    return reportError(toString(checkpoint.takeError()));
  Expected<SmallVector<std::string, 3>> tokenizerFiles =
      mlir::tfm::findTokenizerFiles(modelDir);
  if (!tokenizerFiles)
    return reportError(toString(tokenizerFiles.takeError()));
  if (Error err = mlir::tfm::writeWeightsFile(module, *checkpoint, weights))
    return reportError(toString(std::move(err)));
  mlir::tfm::CodegenOptions options;
  options.targetCpu = targetCpu;
  options.targetFeatures = targetFeatures;
  options.threads =
      codegenThreads ? codegenThreads.getValue()
                     : std::max(1u, std::thread::hardware_concurrency());
  Expected<std::vector<std::string>> objects =
      mlir::tfm::emitObjectFiles(module, object, options);
  if (!objects)
    return reportError(toString(objects.takeError()));
  if (int rc = linkTranslator(*objects, translator, callsOneDnn(module)))
    return rc;
  for (const std::string &path : *objects)
    sys::fs::remove(path);
  if (embedWeights)
    return embed(translator, weights, *tokenizerFiles);
  if (Error err = mlir::tfm::copyTokenizerFiles(*tokenizerFiles, outputFile))
    return reportError(toString(std::move(err)));
  return 0;
}

static int run(StringRef command) {
  mlir::DialectRegistry registry;
  mlir::tfm::registerCodegenDialects(registry);
  mlir::MLIRContext context(registry);
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      mlir::tfm::importModel(context, modelDir);
  if (!module)
    return reportError(toString(module.takeError()));

  if (command == "import" && summary)
    return writeOutput(
        [&](raw_ostream &os) { mlir::tfm::printModelSummary(**module, os); });

  if (command == "compile" && compileTo != Phase::Input) {
    // The timing manager outlives the pass manager that reports to it.
    mlir::DefaultTimingManager timing;
    mlir::applyDefaultTimingManagerCLOptions(timing);
    mlir::TimingScope timingScope = timing.getRootScope();
    mlir::PassManager pm(&context);
    if (failed(mlir::applyPassManagerCLOptions(pm)))
      return reportError("invalid pass manager options");
    pm.enableTiming(timingScope);
    mlir::tfm::buildFusionPipeline(pm);
    if (compileTo == Phase::LLVM || compileTo == Phase::Translator) {
      mlir::tfm::CodegenOptions target;
      target.targetCpu = targetCpu;
      target.targetFeatures = targetFeatures;
      Expected<int64_t> vectorWidth = mlir::tfm::targetVectorWidth(target);
      if (!vectorWidth)
        return reportError(toString(vectorWidth.takeError()));
      mlir::tfm::buildLoweringPipeline(pm, backend, printBackends,
                                       *vectorWidth);
    }
    if (failed(pm.run(**module)))
      return reportError("compiling " + modelDir + " failed");
  }
  if (passStatistics)
    mlir::tfm::printPassStatistics(errs());
  if (command == "compile" && compileTo == Phase::Translator)
    return compileTranslator(**module);
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
  cl::HideUnrelatedOptions(tfmcOptions);
  cl::ParseCommandLineOptions(args.size(), args.data(), kUsage);
  if (command == "compile" && summary)
    return reportError("--summary is an option of `tfmc import`");
  return run(command);
}
