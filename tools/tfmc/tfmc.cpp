//===- tfmc.cpp - The tfm compiler driver -----------------------*- C++ -*-===//
//
//   tfmc import  MODEL_DIR [-o model.mlir] [--summary]
//   tfmc compile MODEL_DIR -o OUT_DIR [--embed-weights] [--target-cpu=CPU]
//                [--backend=llvm|onednn|auto] [--precision=fp32|bf16|int8]
//                [--print-backends]
//   tfmc compile MODEL_DIR --compile-to=input|fused|llvm [-o out.mlir]
//                [--mlir-print-ir-after=PASS] [--tfm-pass-statistics] ...
//   tfmc compile GRAPH.mlir --weights MODEL_DIR [the options above]
//   tfmc graph   MODEL_DIR [--stage=imported|fused|backends] -o model.svg
//   tfmc shortlist --source SRC.pieces --target TGT.pieces -o vmap.txt
//   tfmc shortlist --measure --vmap vmap.txt --vocab vocab.json
//                  --source TEST.pieces [--target REF.pieces]
//
// `import` reads a checkpoint of one of the families and prints it as `tfm`
// IR in primitive form. `compile` runs the compiler's pipeline on it: to a
// translator (OUT_DIR/translator and its weights OUT_DIR/model.tfmw, plus
// the model's tokenizer files if it has them), or up to an IR phase; MLIR's
// pass-manager options (print the IR after any pass, timing) apply. Given a
// `tfm` graph instead (imported, edited, fused), `compile` takes it with the
// tensors it names from MODEL_DIR. `graph` draws the model at a stage of
// the pipeline with Graphviz. `shortlist` builds a vocabulary map from a
// tokenized parallel corpus (ShortlistBuilder.h), which `compile --vmap`
// stores with the model (Vmap.h), or measures a map's shortlists on a test
// set.
//
//===----------------------------------------------------------------------===//

#include "compiler/Checkpoint.h"
#include "compiler/Codegen.h"
#include "compiler/GraphFile.h"
#include "compiler/GraphPicture.h"
#include "compiler/Importer.h"
#include "compiler/TokenizerFiles.h"
#include "compiler/WeightsFile.h"
#include "passes/PassStatistics.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/abi/Vmap.h"
#include "tools/Version.h"
#include "tools/common/GuardedOutput.h"
#include "tools/tfmc/ShortlistBuilder.h"
#include "tools/tfmc/Vmap.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"

#include <optional>
#include <thread>
#include <unistd.h>

using namespace llvm;

namespace {
enum class Phase { Input, Fused, LLVM, Translator };
enum class Stage { Imported, Fused, Backends };
} // namespace

// tfmc's own options; --help shows only these (--help-hidden: all of
// LLVM's and MLIR's, which work as usual).
static cl::OptionCategory tfmcOptions("tfmc options");
// `tfmc shortlist` takes no model directory: a subcommand of its own, so
// that the positional argument the others require does not apply.
static cl::SubCommand
    shortlistCommand("shortlist",
                     "build a vocabulary map (vmap) from a tokenized parallel "
                     "corpus, or measure one's shortlists");
static cl::OptionCategory shortlistOptions("tfmc shortlist options");

static cl::opt<std::string>
    modelDir(cl::Positional, cl::Required,
             cl::desc("<model directory, or for compile a graph.mlir>"),
             cl::cat(tfmcOptions));
static cl::opt<std::string> graphWeights(
    "weights",
    cl::desc("compile GRAPH.mlir: the checkpoint directory whose tensors "
             "the graph's tfm.weight ops name (and whose tokenizer files "
             "the translator gets)"),
    cl::value_desc("model directory"), cl::cat(tfmcOptions));
static cl::opt<std::string>
    outputFile("o",
               cl::desc("Output: a directory for a translator, else a file "
                        "(default: stdout)"),
               cl::value_desc("path"), cl::init("-"), cl::cat(tfmcOptions),
               cl::sub(cl::SubCommand::getTopLevel()),
               cl::sub(shortlistCommand));
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
static cl::opt<Stage> graphStage(
    "stage", cl::desc("graph: the model to draw"),
    cl::values(clEnumValN(Stage::Imported, "imported",
                          "as imported, primitive tfm ops"),
               clEnumValN(Stage::Fused, "fused",
                          "after the fusion pipeline (default)"),
               clEnumValN(Stage::Backends, "backends",
                          "fused, each op coloured by the backend that runs "
                          "it (--backend)")),
    cl::init(Stage::Fused), cl::cat(tfmcOptions));
static cl::opt<bool> embedWeights(
    "embed-weights",
    cl::desc("Put the weights inside the translator: one file is all"),
    cl::cat(tfmcOptions));
static cl::opt<std::string>
    targetCpu("target-cpu",
              cl::desc("LLVM CPU to compile for (default: this host's)"),
              cl::value_desc("cpu"), cl::cat(tfmcOptions));
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
static cl::opt<std::string> precision(
    "precision",
    cl::desc("compile: the linears' arithmetic: fp32, or bf16 (weights "
             "rounded to bfloat16 at compile time, activations rounded to "
             "bf16 for the products, sums in f32: half the bytes a decoder "
             "step reads; layer norm, softmax, attention and the residual "
             "stream stay f32), or int8 (weights as integers per output "
             "channel, activations quantized per row, integer sums scaled "
             "back: a quarter of the bytes; the rest f32 as with bf16)"),
    cl::value_desc("fp32|bf16|int8"), cl::init("fp32"), cl::cat(tfmcOptions));
static cl::opt<unsigned> codegenThreads(
    "codegen-threads",
    cl::desc("compile: LLVM optimizes and emits the model in this many "
             "parts in parallel (default: one per core)"),
    cl::init(0), cl::cat(tfmcOptions));
static cl::opt<bool> allowUnusedTensors(
    "allow-unused-tensors",
    cl::desc("import, compile, graph: compile although the checkpoint holds "
             "tensors the model does not read (listed as a warning); "
             "without it they are an error, since they mean the config does "
             "not describe the checkpoint"),
    cl::cat(tfmcOptions));
static cl::opt<bool> printBackends(
    "print-backends",
    cl::desc("compile: print which backend each op kind and shape got"),
    cl::cat(tfmcOptions));
static cl::opt<std::string> sourceLang(
    "source-lang",
    cl::desc("compile: the source language of a model of one pair (Marian, "
             "BART), e.g. en, recorded for --model-info and the translator's "
             "--source-lang; with --target-lang"),
    cl::value_desc("language code"), cl::cat(tfmcOptions));
static cl::opt<std::string> targetLang(
    "target-lang",
    cl::desc("compile: the target language of a model of one pair, e.g. de; "
             "with --source-lang"),
    cl::value_desc("language code"), cl::cat(tfmcOptions));
static cl::opt<std::string> vmapFile(
    "vmap",
    cl::desc("compile: a vocabulary map (CTranslate2's vmap: 'SOURCE "
             "PIECES<TAB>TARGET PIECES' a line) to store with the model for "
             "the translator's shortlist, checked against the model's "
             "vocabulary; shortlist --measure: the map to measure"),
    cl::value_desc("file"), cl::cat(tfmcOptions),
    cl::sub(cl::SubCommand::getTopLevel()), cl::sub(shortlistCommand));
static cl::opt<std::string> corpusSource(
    "source",
    cl::desc("The source side of the parallel corpus: SentencePiece pieces "
             "separated by spaces, a sentence a line (spm_encode "
             "--model=source.spm writes them)"),
    cl::value_desc("file"), cl::cat(shortlistOptions),
    cl::sub(shortlistCommand));
static cl::opt<std::string> corpusTarget(
    "target",
    cl::desc("The target side, as many lines (with --measure: the "
             "references, for the share of their pieces the shortlist holds)"),
    cl::value_desc("file"), cl::cat(shortlistOptions),
    cl::sub(shortlistCommand));
static cl::opt<unsigned> shortlistTopK(
    "top-k",
    cl::desc("Target pieces kept per source n-gram: those of highest "
             "p(t|s) = pairs(s,t) / pairs(s), besides the frequent ones"),
    cl::init(100), cl::cat(shortlistOptions), cl::sub(shortlistCommand));
static cl::opt<unsigned> shortlistFrequent(
    "frequent",
    cl::desc("Target pieces always included: those in the most sentence "
             "pairs"),
    cl::init(100), cl::cat(shortlistOptions), cl::sub(shortlistCommand));
static cl::opt<double> shortlistMinProbability(
    "min-probability",
    cl::desc("Keep a target piece for a source n-gram only if p(t|s) is at "
             "least this"),
    cl::init(0.0), cl::cat(shortlistOptions), cl::sub(shortlistCommand));
static cl::opt<unsigned> shortlistMinCount(
    "min-count",
    cl::desc("Source pieces seen in fewer sentence pairs get no line"),
    cl::init(1), cl::cat(shortlistOptions), cl::sub(shortlistCommand));
static cl::opt<unsigned> shortlistNgrams(
    "ngrams",
    cl::desc("1: source pieces; 2: source bigrams too, seen in at least "
             "--min-ngram-count pairs, with the targets their pieces' lines "
             "lack"),
    cl::init(1), cl::cat(shortlistOptions), cl::sub(shortlistCommand));
static cl::opt<unsigned> shortlistMinNgramCount(
    "min-ngram-count",
    cl::desc("Source bigrams seen in fewer sentence pairs get no line"),
    cl::init(5), cl::cat(shortlistOptions), cl::sub(shortlistCommand));
static cl::opt<bool> shortlistMeasure(
    "measure",
    cl::desc("Measure --vmap instead: the median size of the shortlist of "
             "the batches of --source (pieces), with --vocab"),
    cl::cat(shortlistOptions), cl::sub(shortlistCommand));
static cl::opt<std::string>
    shortlistVocab("vocab", cl::desc("--measure: the model's vocab.json"),
                   cl::value_desc("file"), cl::cat(shortlistOptions),
                   cl::sub(shortlistCommand));
static cl::list<unsigned> shortlistBatchSizes(
    "batch-sizes", cl::desc("--measure: the batch sizes (default 1,32)"),
    cl::CommaSeparated, cl::cat(shortlistOptions), cl::sub(shortlistCommand));
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

static int reportError(const Twine &message) {
  WithColor::error(errs(), "tfmc") << message << "\n";
  return 1;
}

/// The checkpoint directory: the model's, or the graph's --weights.
static StringRef checkpointDir() {
  return graphWeights.empty() ? StringRef(modelDir) : StringRef(graphWeights);
}

/// Every file the command reads, which no output may overwrite.
static tfm_tools::ReadFiles filesRead() {
  tfm_tools::ReadFiles reads;
  if (!graphWeights.empty())
    reads.addFile(modelDir, "the graph");
  reads.addDirectory(checkpointDir().str(), "the checkpoint directory");
  reads.addFile(vmapFile, "--vmap");
  reads.addFile(corpusSource, "--source");
  reads.addFile(corpusTarget, "--target");
  reads.addFile(shortlistVocab, "--vocab");
  return reads;
}

/// Writes -o (a file, or stdout) through a temporary that replaces it once
/// complete; never over a file the command reads.
static int writeOutput(function_ref<void(raw_ostream &)> write) {
  tfm_tools::ReplacementFile output;
  std::string error = output.open(outputFile, filesRead());
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

/// Links the model's objects with the runtime into OUT_DIR/translator, or,
/// with `sharedLibrary`, into a shared library exporting the runtime's C
/// API (tfm/runtime.h) for programs that load a model, such as the Python
/// module.
static int linkTranslator(ArrayRef<std::string> objectPaths,
                          StringRef translatorPath, bool withOneDnn,
                          bool sharedLibrary = false) {
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
  if (sharedLibrary)
    // All of the runtime, bound to itself: two models loaded in one process
    // keep their own code.
    args.append({"-shared", "-Wl,-Bsymbolic", "-Wl,--whole-archive", runtimeLib,
                 "-Wl,--no-whole-archive"});
  else
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
  int rc =
      sys::ExecuteAndWait(*linker, args, std::nullopt, {}, 0, 0, &errorMessage);
  if (rc != 0)
    return reportError("linking " + translatorPath + " failed" +
                       (errorMessage.empty() ? "" : ": " + errorMessage));
  return 0;
}

/// Appends the file at `path` to `out` a chunk at a time: a weights file
/// of gigabytes is never held (nor mapped and touched) whole. Returns its
/// size.
static Expected<uint64_t> appendFile(raw_ostream &out, StringRef path) {
  Expected<sys::fs::file_t> file = sys::fs::openNativeFileForRead(path);
  if (!file)
    return file.takeError();
  std::vector<char> chunk(8 << 20);
  uint64_t size = 0;
  while (true) {
    Expected<size_t> read = sys::fs::readNativeFile(*file, chunk);
    if (!read || *read == 0) {
      sys::fs::closeFile(*file);
      if (!read)
        return read.takeError();
      return size;
    }
    out.write(chunk.data(), *read);
    size += *read;
  }
}

/// Appends the weights to the translator, page-aligned, then the tokenizer
/// files, with a trailer that the runtime finds at the end of its own
/// executable.
static int embed(StringRef translatorPath, StringRef weightsPath,
                 ArrayRef<std::string> tokenizerFiles) {
  uint64_t size = 0;
  if (std::error_code ec = sys::fs::file_size(translatorPath, size))
    return reportError(translatorPath + ": " + ec.message());
  std::error_code ec;
  raw_fd_ostream out(translatorPath, ec, sys::fs::OF_Append);
  if (ec)
    return reportError(translatorPath + ": " + ec.message());
  uint64_t offset = (size + 4095) / 4096 * 4096;
  out.write_zeros(offset - size);
  Expected<uint64_t> weightsSize = appendFile(out, weightsPath);
  if (!weightsSize)
    return reportError(weightsPath + ": " + toString(weightsSize.takeError()));
  if (Error err = mlir::tfm::appendEmbeddedFiles(out, offset + *weightsSize,
                                                 tokenizerFiles))
    return reportError(toString(std::move(err)));
  tfm_runtime::EmbedTrailer trailer{offset, *weightsSize, {}};
  std::memcpy(trailer.magic, tfm_runtime::kEmbedMagic, 8);
  out.write(reinterpret_cast<const char *>(&trailer), sizeof trailer);
  out.close();
  if (out.has_error())
    return reportError(translatorPath + ": " + out.error().message());
  if (std::error_code removeError = sys::fs::remove(weightsPath))
    return reportError(weightsPath + ": " + removeError.message());
  return 0;
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

/// The tokenizer's files, checked against the model being compiled, with
/// the languages of --source-lang / --target-lang; the files tfmc makes
/// (tokenizer.tfm, a vocab.json from Marian's vocab.yml) go to `outDir`.
static Expected<mlir::tfm::TokenizerFiles> findTokenizer(mlir::ModuleOp module,
                                                         StringRef outDir) {
  if (sourceLang.empty() != targetLang.empty())
    return createStringError(
        inconvertibleErrorCode(),
        "--source-lang and --target-lang name a model's language pair: "
        "give both");
  for (cl::opt<std::string> *code : {&sourceLang, &targetLang})
    if (!code->empty() && !isLanguageCode(*code))
      return createStringError(
          inconvertibleErrorCode(),
          "--" + code->ArgStr + " '" + *code +
              "' is not a language code (ISO 639-1 such as en, or with a "
              "region or script: pt_BR, zh-Hant)");
  auto model = module->getAttrOfType<mlir::DictionaryAttr>("tfm.model");
  auto modelInt = [&](StringRef key) {
    auto value = model ? model.getAs<mlir::IntegerAttr>(key) : nullptr;
    return value ? value.getInt() : int64_t(-1);
  };
  auto modelType =
      model ? model.getAs<mlir::StringAttr>("model_type") : nullptr;
  mlir::tfm::TokenizerTarget target;
  if (modelType)
    target.modelType = modelType.getValue().str();
  target.vocabSize = modelInt("source_vocab_size");
  target.eosTokenId = modelInt("eos_token_id");
  target.padTokenId = modelInt("pad_token_id");
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
    return createStringError(
        inconvertibleErrorCode(),
        "a translator needs an output directory: -o OUT_DIR");
  std::string error = out.open(outputFile, filesRead(), "translator");
  if (!error.empty())
    return createStringError(inconvertibleErrorCode(), error);
  Expected<mlir::tfm::TokenizerFiles> tokenizer =
      findTokenizer(module, out.buildPath());
  if (tokenizer && !tokenizer->warning.empty())
    WithColor::warning(errs(), "tfmc") << tokenizer->warning << "\n";
  return tokenizer;
}

/// `compile --vmap`: the map read with the model's vocabulary and stored
/// as OUT_DIR/vmap.bin, which joins the files copied or embedded. The
/// special tokens are always included. The vocabulary is vocab.json (the
/// Marian layout's, M2M-100's); a model whose ids come from a
/// SentencePiece model alone (T5, NLLB, mBART-50) gets the text, checked
/// line by line, as OUT_DIR/vmap.txt, which the runtime reads with the
/// tokenizer.
static Error storeVmap(mlir::ModuleOp module,
                       mlir::tfm::TokenizerFiles &tokenizer, StringRef outDir) {
  auto vocabPath = llvm::find_if(tokenizer.files, [](const std::string &file) {
    return sys::path::filename(file) == "vocab.json";
  });
  if (vocabPath == tokenizer.files.end()) {
    if (tokenizer.files.empty())
      return createStringError(
          inconvertibleErrorCode(),
          "--vmap " + vmapFile + ": a vmap names pieces, and " +
              checkpointDir() + " has no tokenizer to give them ids");
    SmallString<256> textPath(outDir);
    sys::path::append(textPath, tfm_runtime::kVmapTextFileName);
    if (Error err = tfm_tools::storeVmapText(vmapFile, textPath))
      return err;
    tokenizer.files.push_back(textPath.str().str());
    return Error::success();
  }
  Expected<tfm_tools::Vocabulary> vocabulary =
      tfm_tools::readVocabulary(*vocabPath);
  if (!vocabulary)
    return vocabulary.takeError();
  auto model = module->getAttrOfType<mlir::DictionaryAttr>("tfm.model");
  auto modelInt = [&](StringRef key) {
    auto value = model ? model.getAs<mlir::IntegerAttr>(key) : nullptr;
    return value ? int32_t(value.getInt()) : int32_t(-1);
  };
  std::vector<int32_t> specials;
  for (StringRef key : {"eos_token_id", "pad_token_id",
                        "decoder_start_token_id", "forced_bos_token_id"})
    specials.push_back(modelInt(key));
  if (vocabulary->count("<unk>"))
    specials.push_back(vocabulary->lookup("<unk>"));
  llvm::erase_if(specials, [](int32_t id) { return id < 0; });
  SmallString<256> outPath(outDir);
  sys::path::append(outPath, tfm_runtime::kVmapFileName);
  std::string warning;
  if (Error err = tfm_tools::storeVmap(vmapFile, *vocabulary,
                                       modelInt("target_vocab_size"), specials,
                                       outPath, warning))
    return err;
  if (!warning.empty())
    WithColor::warning(errs(), "tfmc") << warning << "\n";
  tokenizer.files.push_back(outPath.str().str());
  return Error::success();
}

/// The translator, its weights and its files, in `outDir`.
static int compileTranslator(mlir::ModuleOp module,
                             ArrayRef<std::string> tokenizerFiles,
                             StringRef outDir) {
  SmallString<256> object(outDir), weights(outDir), translator(outDir);
  sys::path::append(object, "model");
  sys::path::append(weights, "model.tfmw");
  sys::path::append(translator, "translator");

  Expected<mlir::tfm::Checkpoint> checkpoint =
      mlir::tfm::Checkpoint::open(checkpointDir());
  if (!checkpoint)
    return reportError(toString(checkpoint.takeError()));
  if (Error err = mlir::tfm::writeWeightsFile(module, *checkpoint, weights))
    return reportError(toString(std::move(err)));
  mlir::tfm::CodegenOptions options;
  options.targetCpu = targetCpu;
  options.targetFeatures = targetFeatures;
  options.threads = codegenThreads
                        ? codegenThreads.getValue()
                        : std::max(1u, std::thread::hardware_concurrency());
  Expected<std::vector<std::string>> objects =
      mlir::tfm::emitObjectFiles(module, object, options);
  if (!objects)
    return reportError(toString(objects.takeError()));
  if (int rc = linkTranslator(*objects, translator, callsOneDnn(module)))
    return rc;
  SmallString<256> library(outDir);
  sys::path::append(library, "libtranslator.so");
  if (int rc = linkTranslator(*objects, library, callsOneDnn(module),
                              /*sharedLibrary=*/true))
    return rc;
  for (const std::string &path : *objects)
    sys::fs::remove(path);
  if (embedWeights) {
    if (int rc = embed(translator, weights, tokenizerFiles))
      return rc;
    // What tfmc wrote (tokenizer.tfm, a vocab.json made from a Marian
    // vocab.yml) is inside the translator now.
    for (const std::string &file : tokenizerFiles)
      if (sys::fs::equivalent(sys::path::parent_path(file), outDir))
        sys::fs::remove(file);
    return 0;
  }
  if (Error err = mlir::tfm::copyTokenizerFiles(tokenizerFiles, outDir))
    return reportError(toString(std::move(err)));
  return 0;
}

/// The output formats of Graphviz's `dot` at `graphviz` (what `dot -T?`
/// lists after "Use one of:", e.g. "svg", "png:cairo"), their names before
/// any ':' renderer suffix.
static Expected<StringSet<>> graphvizFormats(StringRef graphviz) {
  SmallString<128> listPath;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("tfmc-formats", "txt", listPath))
    return createStringError(ec, "a temporary file: " + ec.message());
  std::optional<StringRef> redirects[] = {std::nullopt, listPath, listPath};
  sys::ExecuteAndWait(graphviz, {graphviz, "-T?"}, std::nullopt, redirects);
  auto list = MemoryBuffer::getFile(listPath);
  sys::fs::remove(listPath);
  StringSet<> formats;
  if (!list)
    return formats;
  StringRef text = (*list)->getBuffer();
  size_t at = text.find("Use one of:");
  if (at == StringRef::npos)
    return formats;
  SmallVector<StringRef> words;
  text.drop_front(at + strlen("Use one of:")).split(words, ' ', -1, false);
  for (StringRef word : words)
    formats.insert(word.trim().split(':').first);
  return formats;
}

/// `tfmc graph`: the module as DOT (an output named .dot or .gv, without
/// an extension, or stdout), or drawn by Graphviz's `dot` in the format its
/// extension names (any that `dot` writes: svg, png, pdf, jpg, ...).
static int drawGraph(mlir::ModuleOp module) {
  static const char *const kStageNames[] = {"imported", "fused", "backends"};
  std::string title = (sys::path::filename(modelDir) + ", " +
                       kStageNames[int(graphStage.getValue())])
                          .str();
  if (graphStage == Stage::Backends)
    title += " (" + backend + ")";
  std::string dot;
  raw_string_ostream dotStream(dot);
  mlir::tfm::writeGraphPicture(module, title, dotStream);
  StringRef format = sys::path::extension(outputFile).drop_front();
  if (format.empty() || format == "dot" || format == "gv" || outputFile == "-")
    return writeOutput([&](raw_ostream &os) { os << dot; });
  // dot writes the temporary that replaces the output once it is drawn.
  tfm_tools::ReplacementFile output;
  std::string error = output.open(outputFile, filesRead());
  if (!error.empty())
    return reportError(error);
  ::close(output.fd());
  ErrorOr<std::string> graphviz = sys::findProgramByName("dot");
  if (!graphviz)
    return reportError("drawing " + outputFile +
                       " needs Graphviz's `dot` "
                       "(Debian's graphviz; scripts/setup.sh installs it); "
                       "-o NAME.dot writes the graph without it");
  Expected<StringSet<>> formats = graphvizFormats(*graphviz);
  if (!formats)
    return reportError(toString(formats.takeError()));
  if (!formats->contains(format)) {
    SmallVector<StringRef> names;
    for (const auto &entry : *formats)
      names.push_back(entry.getKey());
    llvm::sort(names);
    return reportError(outputFile + ": Graphviz's dot cannot write ." + format +
                       " files; name the output .dot (the graph as "
                       "text) or one of the formats dot writes: " +
                       join(names, ", "));
  }
  SmallString<128> dotPath;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("tfmc-graph", "dot", dotPath))
    return reportError("a temporary file: " + ec.message());
  {
    std::error_code ec;
    raw_fd_ostream file(dotPath, ec);
    if (ec)
      return reportError(dotPath + ": " + ec.message());
    file << dot;
  }
  std::string typeFlag = ("-T" + format).str(),
              outFlag = "-o" + output.writePath();
  std::string errorMessage;
  int rc =
      sys::ExecuteAndWait(*graphviz, {*graphviz, typeFlag, outFlag, dotPath},
                          std::nullopt, {}, 0, 0, &errorMessage);
  sys::fs::remove(dotPath);
  if (rc != 0)
    return reportError("dot failed to draw " + outputFile +
                       (errorMessage.empty() ? "" : ": " + errorMessage));
  error = output.commit();
  return error.empty() ? 0 : reportError(error);
}

/// `tfmc shortlist`: builds a vmap from --source and --target, or with
/// --measure reports the shortlists of --vmap on --source.
static int runShortlist() {
  if (corpusSource.empty())
    return reportError("shortlist needs --source: the source side's pieces");
  if (shortlistMeasure) {
    if (vmapFile.empty() || shortlistVocab.empty())
      return reportError("shortlist --measure needs --vmap and --vocab");
    Expected<tfm_tools::Vocabulary> vocabulary =
        tfm_tools::readVocabulary(shortlistVocab);
    if (!vocabulary)
      return reportError(toString(vocabulary.takeError()));
    std::vector<unsigned> batches(shortlistBatchSizes.begin(),
                                  shortlistBatchSizes.end());
    if (batches.empty())
      batches = {1, 32};
    if (llvm::is_contained(batches, 0u))
      return reportError("--batch-sizes: a batch has at least 1 sentence");
    if (Error err = tfm_tools::measureShortlist(
            vmapFile, *vocabulary, corpusSource, corpusTarget, batches, outs()))
      return reportError(toString(std::move(err)));
    return 0;
  }
  if (corpusTarget.empty())
    return reportError("shortlist needs --target: the target side's pieces");
  if (shortlistNgrams < 1 || shortlistNgrams > 2)
    return reportError("--ngrams is 1 (source pieces) or 2 (and bigrams)");
  tfm_tools::ShortlistOptions options;
  options.topK = shortlistTopK;
  options.frequent = shortlistFrequent;
  options.minProbability = shortlistMinProbability;
  options.minCount = shortlistMinCount;
  options.ngrams = shortlistNgrams;
  options.minNgramCount = shortlistMinNgramCount;
  std::string text;
  raw_string_ostream os(text);
  Expected<tfm_tools::ShortlistSummary> summary =
      tfm_tools::buildShortlist(corpusSource, corpusTarget, options, os);
  if (!summary)
    return reportError(toString(summary.takeError()));
  errs() << "tfmc shortlist: " << summary->pairs << " sentence pairs, "
         << summary->unigramRules << " source pieces and "
         << summary->bigramRules << " bigrams with targets, "
         << summary->targetEntries << " target entries\n";
  return writeOutput([&](raw_ostream &out) { out << text; });
}

/// An option that names something (a file, a directory, a language, a
/// CPU, a backend) given as "" names nothing: an error naming the option,
/// never the option's default taken silently.
static int refuseEmptyNames() {
  if (modelDir.getNumOccurrences() && modelDir.empty())
    return reportError("the model directory (or graph) argument is empty");
  for (cl::opt<std::string> *option :
       {&outputFile, &graphWeights, &targetCpu, &backend, &precision,
        &sourceLang, &targetLang, &vmapFile, &corpusSource, &corpusTarget,
        &shortlistVocab})
    if (option->getNumOccurrences() && option->empty())
      return reportError((option->ArgStr.size() == 1 ? "-" : "--") +
                         option->ArgStr + " is empty: give it a value (" +
                         option->ValueStr + ")");
  return 0;
}

static void printVersion(raw_ostream &os) {
  os << "tfmc " << TFM_VERSION << " (commit " << TFM_COMMIT << ")\n"
     << "built with LLVM/MLIR " << LLVM_VERSION_STRING << "\n";
}

static int run(StringRef command) {
  if (precision != "fp32" && precision != "bf16" && precision != "int8")
    return reportError("unknown --precision '" + precision +
                       "': expected fp32, bf16 or int8");
  mlir::DialectRegistry registry;
  mlir::tfm::registerCodegenDialects(registry);
  mlir::MLIRContext context(registry);
  // A checkpoint directory is imported; a graph file is parsed and checked
  // against the checkpoint of --weights.
  bool graph = !sys::fs::is_directory(modelDir) && sys::fs::exists(modelDir);
  if (graph && command != "compile")
    return reportError(command + " reads a checkpoint directory; " + modelDir +
                       " is a file (`tfmc compile " + modelDir +
                       " --weights MODEL_DIR` compiles a graph)");
  if (graph && graphWeights.empty())
    return reportError("compiling the graph " + modelDir +
                       " needs --weights MODEL_DIR: the checkpoint whose "
                       "tensors it names");
  if (!graph && !graphWeights.empty())
    return reportError("--weights is for compiling a graph file; " + modelDir +
                       " is a model directory");
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      graph ? mlir::tfm::loadGraph(context, modelDir, graphWeights)
            : mlir::tfm::importModel(context, modelDir,
                                     {allowUnusedTensors.getValue()});
  if (!module)
    return reportError(toString(module.takeError()));

  if (command == "import" && summary)
    return writeOutput(
        [&](raw_ostream &os) { mlir::tfm::printModelSummary(**module, os); });

  std::optional<mlir::tfm::TokenizerFiles> tokenizer;
  tfm_tools::ReplacementDirectory outDir;
  if (command == "compile" && compileTo == Phase::Translator) {
    Expected<mlir::tfm::TokenizerFiles> found = prepareOutput(**module, outDir);
    if (!found)
      return reportError(toString(found.takeError()));
    tokenizer = std::move(*found);
    if (!vmapFile.empty())
      if (Error err = storeVmap(**module, *tokenizer, outDir.buildPath()))
        return reportError(toString(std::move(err)));
  } else if (!vmapFile.empty()) {
    return reportError("--vmap is stored with a translator: `tfmc compile "
                       "MODEL_DIR -o OUT_DIR --vmap FILE`");
  } else if (!sourceLang.empty() || !targetLang.empty()) {
    return reportError("--source-lang and --target-lang are recorded in a "
                       "translator: `tfmc compile MODEL_DIR -o OUT_DIR`");
  }
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
      Expected<mlir::tfm::VectorTarget> vectorUnit =
          mlir::tfm::targetVectorUnit(target);
      if (!vectorUnit)
        return reportError(toString(vectorUnit.takeError()));
      mlir::tfm::buildLoweringPipeline(pm, backend, printBackends, *vectorUnit,
                                       precision);
    }
    if (failed(pm.run(**module)))
      return reportError("compiling " + modelDir + " failed");
  }
  if (command == "graph") {
    if (graphStage != Stage::Imported) {
      mlir::PassManager pm(&context);
      mlir::tfm::buildFusionPipeline(pm);
      if (graphStage == Stage::Backends) {
        mlir::tfm::TfmSelectBackendPassOptions selection;
        selection.backend = backend;
        pm.addPass(mlir::tfm::createTfmSelectBackendPass(selection));
      }
      if (failed(pm.run(**module)))
        return reportError("compiling " + modelDir + " failed");
    }
    return drawGraph(**module);
  }
  if (passStatistics)
    mlir::tfm::printPassStatistics(errs());
  if (command == "compile" && compileTo == Phase::Translator) {
    if (int rc =
            compileTranslator(**module, tokenizer->files, outDir.buildPath()))
      return rc;
    std::string error = outDir.commit();
    return error.empty() ? 0 : reportError(error);
  }
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

  cl::SetVersionPrinter(printVersion);
  StringRef command = argc > 1 ? argv[1] : "";
  if (command == "--version" || command == "version") {
    printVersion(outs());
    return 0;
  }
  if (command == "shortlist") {
    // As a subcommand: "tfmc shortlist ..." selects it.
    cl::HideUnrelatedOptions({&shortlistOptions, &tfmcOptions},
                             shortlistCommand);
    cl::ParseCommandLineOptions(argc, argv, kUsage);
    if (int rc = refuseEmptyNames())
      return rc;
    return runShortlist();
  }
  if (command != "import" && command != "compile" && command != "graph") {
    if (command == "--help" || command == "-h" || command == "help") {
      outs() << kUsage
             << "\nRun `tfmc import --help` or `tfmc compile "
                "--help` for the options.\n";
      return 0;
    }
    errs() << kUsage;
    return reportError(command.empty() ? Twine("no command given")
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
  if (int rc = refuseEmptyNames())
    return rc;
  return run(command);
}
