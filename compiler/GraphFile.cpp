//===- GraphFile.cpp - A tfm graph as compiler input ------------*- C++ -*-===//

#include "compiler/GraphFile.h"

#include "compiler/Checkpoint.h"
#include "compiler/Codegen.h"
#include "dialects/Tfm/IR/TfmLayers.h"
#include "dialects/Tfm/IR/TfmOps.h"
#include "tfm/abi/ModelInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::tfm;

static llvm::Error graphError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// "FILE:LINE" of an op parsed from `graphPath`, for messages; the file
/// alone when the op carries a location of its own.
static std::string where(Operation *op, StringRef graphPath) {
  if (auto loc = dyn_cast<FileLineColLoc>(op->getLoc()))
    return llvm::formatv("{0}:{1}", loc.getFilename(), loc.getLine()).str();
  return graphPath.str();
}

/// The rows callers choose (tfm.caller_rows): the runtime passes the
/// output projection's, `output_panels` (a batch's shortlist, or all), and
/// the logits bias's, `output_bias`, to decode_step and nothing else.
/// decode_step's second result: the blocks the runtime reads the logits in
/// (tfm/abi/ModelInfo.h), made from its first.
static llvm::Error checkLogitBlocks(ModuleOp module, StringRef graphPath) {
  auto func = module.lookupSymbol<func::FuncOp>("decode_step");
  Operation *ret = func.getBody().back().getTerminator();
  auto blocks = ret->getOperand(1).getDefiningOp<LogSumExpBlocksOp>();
  if (blocks && blocks.getInput() == ret->getOperand(0) &&
      blocks.getBlock() == tfm_runtime::kLogitBlock)
    return llvm::Error::success();
  return graphError(llvm::formatv(
      "{0}: decode_step's second result must be tfm.logsumexp_blocks of "
      "its first (the logits) with block {1}: the runtime's search reads "
      "the logits in those blocks",
      where(ret, graphPath), tfm_runtime::kLogitBlock));
}

static llvm::Error checkChosenRows(ModuleOp module, StringRef graphPath) {
  std::optional<std::string> error;
  bool projection = false;
  module.walk([&](CallerRowsOp op) {
    auto func = op->getParentOfType<func::FuncOp>();
    StringRef from = op.getFrom();
    if (func.getName() != "decode_step" ||
        (from != "output_panels" && from != "output_bias")) {
      error = where(op, graphPath) + ": tfm.caller_rows from '" + from.str() +
              "' in '" + func.getName().str() +
              "': the runtime passes only decode_step's output_panels and "
              "output_bias";
      return WalkResult::interrupt();
    }
    projection |= from == "output_panels";
    return WalkResult::advance();
  });
  if (error)
    return graphError(*error);
  if (!projection)
    return graphError(graphPath +
                      ": decode_step's output projection does not read its "
                      "weight through tfm.caller_rows from \"output_panels\" "
                      "(the rows of a batch's shortlist, as `tfmc import` "
                      "writes it)");
  return llvm::Error::success();
}

/// The arity the runtime calls the entry points with (ModelInfo.h):
///   encode(source_ids, source_lengths) -> (encoder_output, per decoder
///     layer: cross K, cross V)
///   decode_step(tokens, step, source_lengths, cache_rows, row_starts, per
///     layer: cross K, cross V, cache K, cache V) -> (logits, logit blocks,
///     per layer: cache K, cache V)
static llvm::Error checkEntryPoints(ModuleOp module, StringRef graphPath) {
  auto model = module->getAttrOfType<DictionaryAttr>("tfm.model");
  if (!model)
    return graphError(graphPath +
                      ": the module has no tfm.model attribute (the "
                      "model's sizes and special tokens, as `tfmc import` "
                      "writes them)");
  for (StringRef key : kModelInfoKeys)
    if (!model.getAs<IntegerAttr>(key))
      return graphError(graphPath + ": tfm.model lacks the integer '" + key +
                        "'");
  int64_t layers = model.getAs<IntegerAttr>("decoder_layers").getInt();
  struct Arity {
    StringRef name;
    int64_t inputs, results;
  };
  for (Arity entry : {Arity{"encode", 2, 1 + 2 * layers},
                      Arity{"decode_step", 5 + 4 * layers, 2 + 2 * layers}}) {
    auto func = module.lookupSymbol<func::FuncOp>(entry.name);
    if (!func || func.isExternal())
      return graphError(graphPath + ": no function '" + entry.name +
                        "' (a translator's entry point)");
    if (func.getNumArguments() != entry.inputs ||
        func.getNumResults() != entry.results)
      return graphError(llvm::formatv(
          "{0}: '{1}' takes {2} arguments and returns {3} values; with "
          "tfm.model's decoder_layers = {4} the runtime passes {5} and "
          "expects {6}",
          where(func, graphPath), entry.name, func.getNumArguments(),
          func.getNumResults(), layers, entry.inputs, entry.results));
  }
  if (llvm::Error e = checkLogitBlocks(module, graphPath))
    return e;
  return checkChosenRows(module, graphPath);
}

/// The first problem with the checkpoint tensors that `w` stands for
/// under `prefix` (a layer's weights, bound by a call), or nothing.
static std::optional<std::string> checkWeight(WeightOp w, StringRef prefix,
                                              StringRef graphPath,
                                              const Checkpoint &checkpoint) {
  std::string at =
      where(w, graphPath) + ": tfm.weight '" + boundWeightName(w, prefix) + "'";
  if (!prefix.empty())
    at += " (tfm.weights_prefix '" + prefix.str() + "')";
  ArrayRef<int64_t> shape = w.getType().getShape();
  // Without parts the weight is the tensor of its name; with them, their
  // stack along the first axis.
  SmallVector<std::string> names = boundTensorNames(w, prefix);
  int64_t rows = 0;
  for (const std::string &name : names) {
    std::string tensor = names.size() > 1 ? at + "'s part '" + name + "'" : at;
    const TensorInfo *info = checkpoint.lookup(name);
    if (!info)
      return tensor + " is not in " + checkpoint.path().str();
    if (info->dtype != DType::F32 && info->dtype != DType::F16 &&
        info->dtype != DType::BF16)
      return tensor + " has dtype " + dtypeName(info->dtype).str() + " in " +
             checkpoint.path().str() + "; weights must be F32, F16 or BF16";
    if (names.size() == 1 && ArrayRef<int64_t>(info->shape) != shape)
      return llvm::formatv("{0} has shape {1} in the graph but {2} in {3}", at,
                           formatShape(shape), formatShape(info->shape),
                           checkpoint.path())
          .str();
    if (names.size() > 1 &&
        (info->shape.empty() ||
         ArrayRef<int64_t>(info->shape).drop_front() != shape.drop_front()))
      return llvm::formatv("{0} has shape {1} in {2}, which does not stack "
                           "along the first axis into {3}",
                           tensor, formatShape(info->shape), checkpoint.path(),
                           formatShape(shape))
          .str();
    rows += info->shape.empty() ? 1 : info->shape.front();
  }
  if (names.size() > 1 && rows != shape.front())
    return llvm::formatv("{0} stacks {1} rows of its parts but has shape {2}",
                         at, rows, formatShape(shape))
        .str();
  return std::nullopt;
}

static llvm::Error checkWeights(ModuleOp module, StringRef graphPath,
                                const Checkpoint &checkpoint) {
  std::optional<std::string> error;
  forEachBoundWeight(module, [&](WeightOp w, StringRef prefix) {
    if (!error)
      error = checkWeight(w, prefix, graphPath, checkpoint);
  });
  return error ? graphError(*error) : llvm::Error::success();
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::tfm::loadGraph(MLIRContext &context, llvm::StringRef graphPath,
                     llvm::StringRef modelDir) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(graphPath, sourceMgr, &context);
  if (!module)
    return graphError(graphPath + ": not a valid tfm graph (see above)");
  if (llvm::Error err = checkEntryPoints(*module, graphPath))
    return std::move(err);
  llvm::Expected<Checkpoint> checkpoint = Checkpoint::open(modelDir);
  if (!checkpoint)
    return checkpoint.takeError();
  if (llvm::Error err = checkWeights(*module, graphPath, *checkpoint))
    return std::move(err);
  return std::move(module);
}
