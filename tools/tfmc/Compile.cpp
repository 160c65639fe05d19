//===- Compile.cpp - tfmc compile: a translator, or IR ----------*- C++ -*-===//
//
//   tfmc compile MODEL_DIR -o OUT_DIR [--embed-weights] [--target-cpu=CPU]
//                [--backend=llvm|onednn|auto] [--precision=fp32|bf16|int8|int4]
//                [--print-backends] [--vmap vmap.txt]
//   tfmc compile MODEL_DIR --compile-to=input|fused|llvm [-o out.mlir]
//                [--mlir-print-ir-after=PASS] [--tfm-pass-statistics] ...
//   tfmc compile GRAPH.mlir --weights MODEL_DIR [the options above]
//
// Runs the compiler's pipeline on a model: to a translator (OUT_DIR/
// translator and its weights OUT_DIR/model.tfmw, plus the model's
// tokenizer files if it has them, and a vmap the translator's shortlist
// reads), or up to an IR phase; MLIR's pass-manager options (print the IR
// after any pass, timing) apply. Given a `tfm` graph instead (imported,
// edited, fused), it takes the graph with the tensors it names from
// MODEL_DIR.
//
//===----------------------------------------------------------------------===//

#include "tools/tfmc/Commands.h"
#include "tools/tfmc/Driver.h"
#include "tools/tfmc/Vmap.h"

#include "compiler/Checkpoint.h"
#include "compiler/Codegen.h"
#include "compiler/Embed.h"
#include "compiler/Link.h"
#include "compiler/TokenizerFiles.h"
#include "compiler/WeightsFile.h"
#include "passes/PassStatistics.h"
#include "passes/Pipelines.h"
#include "tfm/abi/Vmap.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <thread>

using namespace llvm;
using namespace tfmc;

namespace {
enum class Phase { Input, Fused, LLVM, Translator };
} // namespace

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
    cl::init(Phase::Translator), cl::cat(tfmcCategory()));
static cl::opt<bool> embedWeights(
    "embed-weights",
    cl::desc("Put the weights inside the translator: one file is all"),
    cl::cat(tfmcCategory()));
cl::opt<std::string>
    tfmc::targetCpu("target-cpu",
                    cl::desc("LLVM CPU to compile for (default: this host's)"),
                    cl::value_desc("cpu"), cl::cat(tfmcCategory()));
static cl::opt<std::string> targetFeatures(
    "target-features",
    cl::desc("LLVM target features, e.g. +avx2,+fma (default: the CPU's)"),
    cl::cat(tfmcCategory()));
cl::opt<std::string> tfmc::precision(
    "precision",
    cl::desc("compile: the linears' arithmetic: fp32, or bf16 (weights "
             "rounded to bfloat16 at compile time, activations rounded to "
             "bf16 for the products, sums in f32: half the bytes a decoder "
             "step reads; layer norm, softmax, attention and the residual "
             "stream stay f32), or int8 (weights as integers per output "
             "channel, activations quantized per row, integer sums scaled "
             "back: a quarter of the bytes; the rest f32 as with bf16), or "
             "int4 (weights as 4-bit integers in groups of 64 along K with "
             "a scale each, activations as with int8: about 0.14 of the "
             "bytes; not with --backend onednn)"),
    cl::value_desc("fp32|bf16|int8|int4"), cl::init("fp32"),
    cl::cat(tfmcCategory()));
static cl::opt<unsigned> codegenThreads(
    "codegen-threads",
    cl::desc("compile: LLVM optimizes and emits the model in this many "
             "parts in parallel (default: one per core)"),
    cl::init(0), cl::cat(tfmcCategory()));
static cl::opt<bool> printBackends(
    "print-backends",
    cl::desc("compile: print which backend each op kind and shape got"),
    cl::cat(tfmcCategory()));
static cl::opt<bool> profileKernels(
    "profile-kernels",
    cl::desc("compile: time every kernel call; the translator's --timing "
             "then lists each kernel's share of encode and decode"),
    cl::cat(tfmcCategory()));
cl::opt<std::string> tfmc::sourceLang(
    "source-lang",
    cl::desc("compile: the source language of a model of one pair (Marian, "
             "BART), e.g. en, recorded for --model-info and the translator's "
             "--source-lang; with --target-lang"),
    cl::value_desc("language code"), cl::cat(tfmcCategory()));
cl::opt<std::string> tfmc::targetLang(
    "target-lang",
    cl::desc("compile: the target language of a model of one pair, e.g. de; "
             "with --source-lang"),
    cl::value_desc("language code"), cl::cat(tfmcCategory()));

static Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message.str());
}

/// The integer `key` of the module's `tfm.model`, or -1.
static int64_t modelInt(mlir::ModuleOp module, StringRef key) {
  auto model = module->getAttrOfType<mlir::DictionaryAttr>("tfm.model");
  auto value = model ? model.getAs<mlir::IntegerAttr>(key) : nullptr;
  return value ? value.getInt() : int64_t(-1);
}

/// A language code as tfmc records it: letters, then optional parts after
/// '-' or '_' (en, ast, pt_BR, zh-Hant); no spaces, which the runtime's
/// description of the tokenizer separates fields by.
static bool isLanguageCode(StringRef code) {
  SmallVector<StringRef> parts;
  std::string dashes = code.str();
  std::replace(dashes.begin(), dashes.end(), '-', '_');
  StringRef(dashes).split(parts, '_');
  if (parts[0].size() < 2 || parts[0].size() > 8 || !all_of(parts[0], isAlpha))
    return false;
  return all_of(parts, [](StringRef part) {
    return !part.empty() && part.size() <= 8 && all_of(part, isAlnum);
  });
}

/// --source-lang and --target-lang: both or neither, language codes.
static Error checkLanguages() {
  if (sourceLang.empty() != targetLang.empty())
    return fail("--source-lang and --target-lang name a model's language "
                "pair: give both");
  for (cl::opt<std::string> *code : {&sourceLang, &targetLang})
    if (!code->empty() && !isLanguageCode(*code))
      return fail("--" + code->ArgStr + " '" + *code +
                  "' is not a language code (ISO 639-1 such as en, or with a "
                  "region or script: pt_BR, zh-Hant)");
  return Error::success();
}

/// The tokenizer's files, checked against the model being compiled, with
/// the languages of --source-lang / --target-lang; the files tfmc makes
/// (tokenizer.tfm, a vocab.json from Marian's vocab.yml) go to `outDir`.
static Expected<mlir::tfm::TokenizerFiles> findTokenizer(mlir::ModuleOp module,
                                                         StringRef outDir) {
  if (Error err = checkLanguages())
    return std::move(err);
  auto model = module->getAttrOfType<mlir::DictionaryAttr>("tfm.model");
  auto modelType =
      model ? model.getAs<mlir::StringAttr>("model_type") : nullptr;
  mlir::tfm::TokenizerTarget target;
  if (modelType)
    target.modelType = modelType.getValue().str();
  target.vocabSize = modelInt(module, "source_vocab_size");
  target.eosTokenId = modelInt(module, "eos_token_id");
  target.padTokenId = modelInt(module, "pad_token_id");
  target.sourceLang = sourceLang;
  target.targetLang = targetLang;
  return mlir::tfm::findTokenizerFiles(checkpointDir(), target, outDir);
}

/// The output directory, begun beside -o (which it replaces when
/// complete), with the tokenizer's files checked: before the long
/// compilation, which a bad tokenizer would only waste.
static Expected<mlir::tfm::TokenizerFiles>
prepareOutput(mlir::ModuleOp module, tfm_tools::ReplacementDirectory &out) {
  if (outputFile == "-")
    return fail("a translator needs an output directory: -o OUT_DIR");
  std::string error = out.open(outputFile, filesRead(), "translator");
  if (!error.empty())
    return fail(error);
  Expected<mlir::tfm::TokenizerFiles> tokenizer =
      findTokenizer(module, out.buildPath());
  if (tokenizer && !tokenizer->warning.empty())
    WithColor::warning(errs(), "tfmc") << tokenizer->warning << "\n";
  return tokenizer;
}

/// A model whose ids come from a SentencePiece model alone (T5, NLLB,
/// mBART-50) gets the vmap's text, checked line by line, as
/// OUT_DIR/vmap.txt, which the runtime reads with the tokenizer.
static Error storeVmapText(mlir::tfm::TokenizerFiles &tokenizer,
                           StringRef outDir) {
  if (tokenizer.files.empty())
    return fail("--vmap " + vmapFile + ": a vmap names pieces, and " +
                checkpointDir() + " has no tokenizer to give them ids");
  SmallString<256> textPath(outDir);
  sys::path::append(textPath, tfm_runtime::kVmapTextFileName);
  if (Error err = tfm_tools::storeVmapText(vmapFile, textPath))
    return err;
  tokenizer.files.push_back(textPath.str().str());
  return Error::success();
}

/// `compile --vmap`: the map read with the model's vocabulary and stored
/// as OUT_DIR/vmap.bin, which joins the files copied or embedded. The
/// special tokens are always included. The vocabulary is vocab.json (the
/// Marian layout's, M2M-100's); without one, the text (storeVmapText).
static Error storeVmap(mlir::ModuleOp module,
                       mlir::tfm::TokenizerFiles &tokenizer, StringRef outDir) {
  auto vocabPath = llvm::find_if(tokenizer.files, [](const std::string &file) {
    return sys::path::filename(file) == "vocab.json";
  });
  if (vocabPath == tokenizer.files.end())
    return storeVmapText(tokenizer, outDir);
  Expected<tfm_tools::Vocabulary> vocabulary =
      tfm_tools::readVocabulary(*vocabPath);
  if (!vocabulary)
    return vocabulary.takeError();
  std::vector<int32_t> specials;
  for (StringRef key : {"eos_token_id", "pad_token_id",
                        "decoder_start_token_id", "forced_bos_token_id"})
    specials.push_back(int32_t(modelInt(module, key)));
  if (vocabulary->count("<unk>"))
    specials.push_back(vocabulary->lookup("<unk>"));
  llvm::erase_if(specials, [](int32_t id) { return id < 0; });
  SmallString<256> outPath(outDir);
  sys::path::append(outPath, tfm_runtime::kVmapFileName);
  std::string warning;
  if (Error err = tfm_tools::storeVmap(
          vmapFile, *vocabulary, int32_t(modelInt(module, "target_vocab_size")),
          specials, outPath, warning))
    return err;
  if (!warning.empty())
    WithColor::warning(errs(), "tfmc") << warning << "\n";
  tokenizer.files.push_back(outPath.str().str());
  return Error::success();
}

/// The code generator's options: the target, and its threads.
static mlir::tfm::CodegenOptions codegenOptions() {
  mlir::tfm::CodegenOptions options;
  options.targetCpu = targetCpu;
  options.targetFeatures = targetFeatures;
  options.threads = codegenThreads
                        ? codegenThreads.getValue()
                        : std::max(1u, std::thread::hardware_concurrency());
  return options;
}

/// The model's object files linked into OUT_DIR/translator and
/// OUT_DIR/libtranslator.so, then removed.
static Error linkOutputs(mlir::ModuleOp module, ArrayRef<std::string> objects,
                         StringRef outDir) {
  SmallString<256> translator(outDir), library(outDir);
  sys::path::append(translator, "translator");
  sys::path::append(library, "libtranslator.so");
  bool withOneDnn = mlir::tfm::callsOneDnn(module);
  if (Error err = mlir::tfm::linkTranslator(
          objects, translator, withOneDnn, mlir::tfm::LinkedOutput::Translator))
    return err;
  if (Error err = mlir::tfm::linkTranslator(
          objects, library, withOneDnn, mlir::tfm::LinkedOutput::SharedLibrary))
    return err;
  for (const std::string &path : objects)
    sys::fs::remove(path);
  return Error::success();
}

/// The translator, its weights and its files, in `outDir`.
static Error compileTranslator(mlir::ModuleOp module,
                               ArrayRef<std::string> tokenizerFiles,
                               StringRef outDir) {
  SmallString<256> object(outDir), weights(outDir), translator(outDir);
  sys::path::append(object, "model");
  sys::path::append(weights, "model.tfmw");
  sys::path::append(translator, "translator");
  Expected<mlir::tfm::Checkpoint> checkpoint =
      mlir::tfm::Checkpoint::open(checkpointDir());
  if (!checkpoint)
    return checkpoint.takeError();
  if (Error err = mlir::tfm::writeWeightsFile(module, *checkpoint, weights))
    return err;
  Expected<std::vector<std::string>> objects =
      mlir::tfm::emitObjectFiles(module, object, codegenOptions());
  if (!objects)
    return objects.takeError();
  if (Error err = linkOutputs(module, *objects, outDir))
    return err;
  if (embedWeights)
    return mlir::tfm::embedInTranslator(translator, weights, tokenizerFiles);
  return mlir::tfm::copyTokenizerFiles(tokenizerFiles, outDir);
}

/// The fusion pipeline, and the lowering to the LLVM dialect unless
/// --compile-to stops before it; MLIR's pass-manager options and timing
/// apply.
static int runPipeline(mlir::ModuleOp module) {
  // The timing manager outlives the pass manager that reports to it.
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope timingScope = timing.getRootScope();
  mlir::PassManager pm(module->getContext());
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return reportError("invalid pass manager options");
  pm.enableTiming(timingScope);
  mlir::tfm::buildFusionPipeline(pm);
  if (compileTo == Phase::LLVM || compileTo == Phase::Translator) {
    Expected<mlir::tfm::VectorTarget> vectorUnit =
        mlir::tfm::targetVectorUnit(codegenOptions());
    if (!vectorUnit)
      return reportError(toString(vectorUnit.takeError()));
    mlir::tfm::KernelConfig kernels =
        mlir::tfm::KernelConfig::forTarget(*vectorUnit);
    mlir::tfm::buildLoweringPipeline(pm, chosenBackend(), printBackends,
                                     kernels, chosenPrecision(),
                                     profileKernels);
  }
  if (failed(pm.run(module)))
    return reportError("compiling " + modelDir + " failed");
  return 0;
}

/// The output directory prepared (tokenizer, vmap), the pipeline run, the
/// translator made in it, and the directory put in -o's place.
static int compileToTranslator(mlir::ModuleOp module) {
  tfm_tools::ReplacementDirectory outDir;
  Expected<mlir::tfm::TokenizerFiles> tokenizer = prepareOutput(module, outDir);
  if (!tokenizer)
    return reportError(toString(tokenizer.takeError()));
  if (!vmapFile.empty())
    if (Error err = storeVmap(module, *tokenizer, outDir.buildPath()))
      return reportError(toString(std::move(err)));
  if (int rc = runPipeline(module))
    return rc;
  if (passStatistics)
    mlir::tfm::printPassStatistics(errs());
  if (Error err =
          compileTranslator(module, tokenizer->files, outDir.buildPath()))
    return reportError(toString(std::move(err)));
  std::string error = outDir.commit();
  return error.empty() ? 0 : reportError(error);
}

int tfmc::runCompile() {
  if (summary)
    return reportError("--summary is an option of `tfmc import`");
  if (int rc = checkModelOptions())
    return rc;
  mlir::MLIRContext context(codegenRegistry());
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      loadModel(context, "compile");
  if (!module)
    return reportError(toString(module.takeError()));
  if (compileTo == Phase::Translator)
    return compileToTranslator(**module);
  if (int rc = refuseTranslatorOptions())
    return rc;
  if (compileTo != Phase::Input)
    if (int rc = runPipeline(**module))
      return rc;
  if (passStatistics)
    mlir::tfm::printPassStatistics(errs());
  return writeModule(**module);
}
