//===- Graph.cpp - tfmc graph: the model drawn ------------------*- C++ -*-===//
//
//   tfmc graph MODEL_DIR [--stage=imported|fused|backends] -o model.svg
//
// Draws the model at a stage of the pipeline with Graphviz: as DOT (an
// output named .dot or .gv, without an extension, or stdout), or drawn by
// Graphviz's `dot` in the format its extension names (any that `dot`
// writes: svg, png, pdf, jpg, ...).
//
//===----------------------------------------------------------------------===//

#include "tools/tfmc/Commands.h"
#include "tools/tfmc/Driver.h"

#include "compiler/GraphPicture.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <optional>
#include <unistd.h>

using namespace llvm;
using namespace tfmc;

namespace {
enum class Stage { Imported, Fused, Backends };
} // namespace

static cl::opt<Stage> graphStage(
    "stage", cl::desc("graph: the model to draw"),
    cl::values(clEnumValN(Stage::Imported, "imported",
                          "as imported, primitive tfm ops"),
               clEnumValN(Stage::Fused, "fused",
                          "after the fusion pipeline (default)"),
               clEnumValN(Stage::Backends, "backends",
                          "fused, each op coloured by the backend that runs "
                          "it (--backend)")),
    cl::init(Stage::Fused), cl::cat(tfmcCategory()));

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

/// Graphviz's `dot`, if it writes `format`; else an error naming what it
/// writes.
static Expected<std::string> graphvizFor(StringRef format) {
  ErrorOr<std::string> graphviz = sys::findProgramByName("dot");
  if (!graphviz)
    return createStringError(
        inconvertibleErrorCode(),
        "drawing " + outputFile +
            " needs Graphviz's `dot` "
            "(Debian's graphviz; scripts/setup.sh installs it); "
            "-o NAME.dot writes the graph without it");
  Expected<StringSet<>> formats = graphvizFormats(*graphviz);
  if (!formats)
    return formats.takeError();
  if (formats->contains(format))
    return *graphviz;
  SmallVector<StringRef> names;
  for (const auto &entry : *formats)
    names.push_back(entry.getKey());
  llvm::sort(names);
  return createStringError(inconvertibleErrorCode(),
                           outputFile + ": Graphviz's dot cannot write ." +
                               format +
                               " files; name the output .dot (the graph as "
                               "text) or one of the formats dot writes: " +
                               join(names, ", "));
}

/// `dot` run on `dot` (the graph's text) to write `format` to `outPath`.
static Error runGraphviz(StringRef graphviz, StringRef dot, StringRef format,
                         StringRef outPath) {
  SmallString<128> dotPath;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("tfmc-graph", "dot", dotPath))
    return createStringError(ec, "a temporary file: " + ec.message());
  {
    std::error_code ec;
    raw_fd_ostream file(dotPath, ec);
    if (ec)
      return createStringError(ec, dotPath + ": " + ec.message());
    file << dot;
  }
  std::string typeFlag = ("-T" + format).str(),
              outFlag = ("-o" + outPath).str();
  std::string errorMessage;
  int rc = sys::ExecuteAndWait(graphviz, {graphviz, typeFlag, outFlag, dotPath},
                               std::nullopt, {}, 0, 0, &errorMessage);
  sys::fs::remove(dotPath);
  if (rc != 0)
    return createStringError(
        inconvertibleErrorCode(),
        "dot failed to draw " + outputFile +
            (errorMessage.empty() ? "" : ": " + errorMessage));
  return Error::success();
}

/// The module as DOT to -o, or drawn in the format -o's extension names.
static int drawGraph(mlir::ModuleOp module) {
  static const char *const kStageNames[] = {"imported", "fused", "backends"};
  std::string title = (sys::path::filename(modelDir) + ", " +
                       kStageNames[int(graphStage.getValue())])
                          .str();
  if (graphStage == Stage::Backends)
    title += " (" + mlir::tfm::backendName(chosenBackend()).str() + ")";
  std::string dot;
  raw_string_ostream dotStream(dot);
  mlir::tfm::writeGraphPicture(module, title, dotStream);
  StringRef format = sys::path::extension(outputFile).drop_front();
  if (format.empty() || format == "dot" || format == "gv" || outputFile == "-")
    return writeOutput(filesRead(), [&](raw_ostream &os) { os << dot; });
  // dot writes the temporary that replaces the output once it is drawn.
  tfm_tools::ReplacementFile output;
  std::string error = output.open(outputFile, filesRead());
  if (!error.empty())
    return reportError(error);
  ::close(output.fd());
  Expected<std::string> graphviz = graphvizFor(format);
  if (!graphviz)
    return reportError(toString(graphviz.takeError()));
  if (Error err = runGraphviz(*graphviz, dot, format, output.writePath()))
    return reportError(toString(std::move(err)));
  error = output.commit();
  return error.empty() ? 0 : reportError(error);
}

/// The fusion pipeline, and for --stage=backends the choice of backends.
static int runStagePasses(mlir::ModuleOp module) {
  mlir::PassManager pm(module->getContext());
  mlir::tfm::buildFusionPipeline(pm);
  if (graphStage == Stage::Backends) {
    mlir::tfm::TfmSelectBackendPassOptions selection;
    selection.backend = mlir::tfm::backendName(chosenBackend()).str();
    pm.addPass(mlir::tfm::createTfmSelectBackendPass(selection));
  }
  if (failed(pm.run(module)))
    return reportError("compiling " + modelDir + " failed");
  return 0;
}

int tfmc::runGraph() {
  if (int rc = checkModelOptions())
    return rc;
  mlir::MLIRContext context(codegenRegistry());
  Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      loadModel(context, "graph");
  if (!module)
    return reportError(toString(module.takeError()));
  if (int rc = refuseTranslatorOptions())
    return rc;
  if (graphStage != Stage::Imported)
    if (int rc = runStagePasses(**module))
      return rc;
  return drawGraph(**module);
}
