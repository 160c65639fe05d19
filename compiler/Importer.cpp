//===- Importer.cpp - Checkpoint to tfm IR ----------------------*- C++ -*-===//
//
// Emits the model as "Attention is all you need" writes it, one primitive op
// per formula. Fusion passes later find the attention and layer-norm blocks
// in this form, so it must stay the plain textbook graph.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer.h"

#include "compiler/Checkpoint.h"
#include "compiler/ModelConfig.h"
#include "dialects/Tfm/IR/TfmLayers.h"
#include "dialects/Tfm/IR/TfmOps.h"
#include "tfm/abi/ModelInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::tfm;

namespace {

static constexpr int64_t kDyn = ShapedType::kDynamic;

/// Builds `encode` and `decode_step` for one checkpoint. Weight references
/// are checked against the safetensors header as they are made; on a problem
/// the first error is kept and building goes on with the expected shape, so
/// the IR stays well-formed until the error is returned.
class ModelImporter {
public:
  ModelImporter(MLIRContext &context, const ModelConfig &config,
                const Checkpoint &weights, const ImportOptions &options,
                llvm::raw_ostream &warnings)
      : builder(&context), config(config), weights(weights), options(options),
        warnings(warnings), f32(builder.getF32Type()) {}

  llvm::Expected<OwningOpRef<ModuleOp>> run();

private:
  // --- weights -------------------------------------------------------------
  /// The checkpoint tensor that the model's `name` (BART's spelling, which
  /// the importer uses for every family) stands for.
  Value weight(StringRef name, ArrayRef<int64_t> shape);
  bool hasTensor(StringRef name) const {
    return weights.lookup(checkpointName(name));
  }
  std::string checkpointName(StringRef name) const;

  // --- the paper's building blocks, in primitive ops ------------------------
  Value linear(Value x, StringRef prefix, int64_t out, int64_t in);
  Value layerNorm(Value x, StringRef prefix);
  Value feedForward(Value x, StringRef prefix, int64_t ffnDim);
  Value attention(Value query, Value keys, Value values, int64_t heads,
                  Value keyLengths, bool causal, Value bias = {},
                  Value keyStarts = {});
  Value projectHeads(Value x, StringRef prefix, int64_t heads);
  Value relativeBias(StringRef stack, int64_t heads, Value queries, Value keys,
                     Value offset, bool bidirectional);
  Value reshape(Value x, Value s0, Value s1, Value width);
  Value rowsBySentence(Value x, Value sentences, Value width);
  Value rowsByBeam(Value x, Value like, Value width);
  Value embed(Value ids, Value offset, StringRef table, int64_t vocab,
              StringRef stack, Value starts = {});
  Value positionEncoding(Value ids, Value offset, StringRef table,
                         Value starts);
  /// x + sublayer(x), normalized after (post-norm) or before the sublayer
  /// (pre-norm): post: LN(x + f(x)); pre: x + f(LN(x)).
  Value residual(Value x, StringRef normPrefix,
                 llvm::function_ref<Value(Value)> sublayer);

  // --- layers ----------------------------------------------------------------
  using LayerBody = llvm::function_ref<SmallVector<Value>(ValueRange)>;
  /// Calls the layer that `body` builds over `inputs` (named `names`),
  /// binding its weights with the checkpoint prefix `prefix`: a new
  /// function `kind`, or one built before that is equal to it.
  SmallVector<Value> callLayer(StringRef kind, StringRef prefix,
                               ValueRange inputs, ArrayRef<StringRef> names,
                               LayerBody body);
  func::FuncOp buildLayer(StringRef kind, StringRef prefix, ValueRange inputs,
                          ArrayRef<StringRef> names, LayerBody body);
  func::FuncOp findEqualLayer(func::FuncOp layer);
  /// The checkpoint prefix of layer `i`'s tensors in `stack`.
  std::string layerPrefix(StringRef stack, int64_t i) const;
  Value encoderLayer(Value x, int64_t i, Value srcLengths, Value bias);
  SmallVector<Value> decoderLayer(Value x, int64_t i, ValueRange state,
                                  Value bias);

  void checkUnusedTensors();
  bool ignoredAsHuggingFaceDoes(StringRef name) const;
  void buildEncode(ModuleOp module);
  void buildDecodeStep(ModuleOp module);
  DictionaryAttr configAttr();

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elt = {}) {
    return RankedTensorType::get(shape, elt ? elt : f32);
  }
  /// An f32 scalar tensor constant.
  Value scalar(double value) {
    return builder.create<arith::ConstantOp>(
        loc,
        DenseElementsAttr::get(tensor({}), builder.getF32FloatAttr(value)));
  }
  void setLoc(StringRef name) {
    loc = NameLoc::get(builder.getStringAttr(name));
  }
  void fail(const Twine &message) {
    if (!error)
      error = (weights.path() + ": " + message).str();
  }

  OpBuilder builder;
  const ModelConfig &config;
  const Checkpoint &weights;
  const ImportOptions &options;
  llvm::raw_ostream &warnings;
  Type f32;
  Location loc = builder.getUnknownLoc();
  /// Weights already referenced in the function being built.
  llvm::StringMap<Value> weightValues;
  /// Every checkpoint tensor either function reads.
  llvm::StringSet<> usedTensors;
  Operation *lastWeight = nullptr;
  /// While a layer is built: the checkpoint prefix its weight names drop.
  std::string weightsPrefix;
  /// The distinct layers built so far.
  SmallVector<func::FuncOp> layers;
  std::optional<std::string> error;
};

} // namespace

/// T5's names for BART's: `encoder.block.I.layer.K.X` for
/// `model.encoder.layers.I.Y`, sub-layer K being self-attention, then (in
/// the decoder) cross-attention, then the FFN.
static std::string t5Name(StringRef name, bool gated) {
  llvm::SmallVector<StringRef> m;
  if (name == "model.shared.weight")
    return "shared.weight";
  static const llvm::Regex stack(
      "^model\\.(encoder|decoder)\\.(embed_tokens|layer_norm)\\.weight$");
  if (stack.match(name, &m))
    return (m[1] +
            (m[2] == "layer_norm" ? ".final_layer_norm" : ".embed_tokens") +
            ".weight")
        .str();
  static const llvm::Regex layer(
      "^model\\.(encoder|decoder)\\.layers\\.([0-9]+)\\.(.*)$");
  if (!layer.match(name, &m))
    return name.str();
  StringRef side = m[1], rest = m[3];
  std::string ffn = side == "encoder" ? "1" : "2";
  std::string block = (side + ".block." + m[2] + ".layer.").str();
  static const llvm::Regex attn(
      "^(self_attn|encoder_attn)\\.(q|k|v|out)_proj\\.weight$");
  llvm::SmallVector<StringRef> a;
  if (attn.match(rest, &a))
    return block +
           (a[1] == "self_attn" ? "0.SelfAttention." : "1.EncDecAttention.") +
           (a[2] == "out" ? "o" : a[2].str()) + ".weight";
  std::string dense = block + ffn + ".DenseReluDense.";
  if (rest == "self_attn.relative_attention_bias.weight")
    return block + "0.SelfAttention.relative_attention_bias.weight";
  if (rest == "self_attn_layer_norm.weight")
    return block + "0.layer_norm.weight";
  if (rest == "encoder_attn_layer_norm.weight")
    return block + "1.layer_norm.weight";
  if (rest == "final_layer_norm.weight")
    return block + ffn + ".layer_norm.weight";
  if (rest == "fc1.weight")
    return dense + (gated ? "wi_0" : "wi") + ".weight";
  if (rest == "fc_gate.weight")
    return dense + "wi_1.weight";
  if (rest == "fc2.weight")
    return dense + "wo.weight";
  return name.str();
}

std::string ModelImporter::checkpointName(StringRef name) const {
  if (config.family == ModelFamily::t5)
    return t5Name(name, config.gatedFfn);
  return name.str();
}

Value ModelImporter::weight(StringRef canonical, ArrayRef<int64_t> shape) {
  auto it = weightValues.find(canonical);
  if (it != weightValues.end())
    return it->second;
  std::string name = checkpointName(canonical);
  usedTensors.insert(name);
  if (const TensorInfo *info = weights.lookup(name)) {
    if (info->dtype != DType::F32 && info->dtype != DType::F16 &&
        info->dtype != DType::BF16)
      fail(llvm::formatv("tensor '{0}' has unsupported dtype {1}; model "
                         "weights must be F32, F16 or BF16",
                         name, dtypeName(info->dtype)));
    else if (ArrayRef<int64_t>(info->shape) != shape)
      fail(llvm::formatv("tensor '{0}' has shape {1}, but config.json implies "
                         "{2}",
                         name, formatShape(info->shape), formatShape(shape)));
  } else {
    fail(llvm::formatv("missing tensor '{0}' (expected shape {1})", name,
                       formatShape(shape)));
  }
  // Weights go at the top of the entry block, in order of first use, so
  // every use is dominated and the IR reads like the checkpoint's index.
  OpBuilder::InsertionGuard guard(builder);
  if (lastWeight)
    builder.setInsertionPointAfter(lastWeight);
  else
    builder.setInsertionPointToStart(builder.getInsertionBlock());
  StringRef relative = name;
  if (!weightsPrefix.empty() && !relative.consume_front(weightsPrefix))
    fail(llvm::formatv("internal error: tensor '{0}' is read by the layer "
                       "of '{1}' but is not one of its tensors",
                       name, weightsPrefix));
  auto w = builder.create<WeightOp>(loc, tensor(shape), relative);
  lastWeight = w;
  weightValues[canonical] = w;
  return w;
}

Value ModelImporter::linear(Value x, StringRef prefix, int64_t out,
                            int64_t in) {
  Value w = weight((prefix + ".weight").str(), {out, in});
  Value b =
      config.linearBias ? weight((prefix + ".bias").str(), {out}) : Value();
  return builder.create<LinearOp>(loc, x, w, b);
}

Value ModelImporter::layerNorm(Value x, StringRef prefix) {
  int64_t d = config.dModel;
  int64_t axis = cast<RankedTensorType>(x.getType()).getRank() - 1;
  Value gamma = weight((prefix + ".weight").str(), {d});
  if (config.rmsNorm) {
    // result = x * rsqrt(E[x^2] + eps) * gamma
    Value squares = builder.create<MulOp>(loc, x, x);
    Value meanSquare = builder.create<MeanOp>(loc, squares, axis);
    Value shifted =
        builder.create<AddOp>(loc, meanSquare, scalar(config.layerNormEpsilon));
    Value normalized =
        builder.create<MulOp>(loc, x, builder.create<RsqrtOp>(loc, shifted));
    return builder.create<MulOp>(loc, normalized, gamma);
  }
  Value beta = weight((prefix + ".bias").str(), {d});
  // mean = E[x]; var = E[(x - mean)^2]; y = (x - mean) * rsqrt(var + eps)
  // result = y * gamma + beta
  Value mean = builder.create<MeanOp>(loc, x, axis);
  Value centered = builder.create<SubOp>(loc, x, mean);
  Value squared = builder.create<MulOp>(loc, centered, centered);
  Value variance = builder.create<MeanOp>(loc, squared, axis);
  Value shifted =
      builder.create<AddOp>(loc, variance, scalar(config.layerNormEpsilon));
  Value invStd = builder.create<RsqrtOp>(loc, shifted);
  Value normalized = builder.create<MulOp>(loc, centered, invStd);
  Value scaled = builder.create<MulOp>(loc, normalized, gamma);
  return builder.create<AddOp>(loc, scaled, beta);
}

Value ModelImporter::feedForward(Value x, StringRef prefix, int64_t ffnDim) {
  // FFN(x) = W2 act(W1 x + b1) + b2; gated: W2 (act(W1 x) * (W1' x))
  Value h = linear(x, (prefix + ".fc1").str(), ffnDim, config.dModel);
  switch (config.activation) {
  case Activation::relu:
    h = builder.create<ReluOp>(loc, h);
    break;
  case Activation::gelu:
    h = builder.create<GeluOp>(loc, h);
    break;
  case Activation::silu:
    h = builder.create<SiluOp>(loc, h);
    break;
  case Activation::gelu_tanh:
    h = builder.create<GeluTanhOp>(loc, h);
    break;
  case Activation::none:
    break;
  }
  if (config.gatedFfn)
    h = builder.create<MulOp>(
        loc, h, linear(x, (prefix + ".fc_gate").str(), ffnDim, config.dModel));
  return linear(h, (prefix + ".fc2").str(), config.dModel, ffnDim);
}

Value ModelImporter::projectHeads(Value x, StringRef prefix, int64_t heads) {
  Value projected =
      linear(x, prefix, heads * config.headWidth(heads), config.dModel);
  return builder.create<SplitHeadsOp>(loc, projected, heads);
}

/// T5's bias of the scores [1, heads, queries, keys], from the first
/// layer's table of the stack: computed once, read by every layer.
Value ModelImporter::relativeBias(StringRef stack, int64_t heads, Value queries,
                                  Value keys, Value offset,
                                  bool bidirectional) {
  Value table = weight(
      (stack + ".layers.0.self_attn.relative_attention_bias.weight").str(),
      {config.relativeBuckets, heads});
  return builder.create<RelativePositionBiasOp>(
      loc, tensor({1, heads, kDyn, kDyn}), table, queries, keys, offset,
      bidirectional, config.relativeMaxDistance);
}

/// x [.., .., d] as a tensor of sizes {s0, s1, d}, row-major (a reshape:
/// the elements stay), `width` holding d. tensor.reshape rather than
/// collapse + expand: MLIR 19 cannot bufferize an expand_shape whose group
/// holds two dynamic sizes.
Value ModelImporter::reshape(Value x, Value s0, Value s1, Value width) {
  int64_t d = cast<RankedTensorType>(x.getType()).getDimSize(2);
  Value shape =
      builder.create<tensor::FromElementsOp>(loc, ValueRange{s0, s1, width});
  return builder.create<tensor::ReshapeOp>(loc, tensor({kDyn, kDyn, d}), x,
                                           shape);
}

/// [R, T, d] -> [S, (R / S)·T, d], S = `sentences`: the rows of a decoder
/// step are the beams of each sentence, one after the other (r = s·G + g),
/// so the G·T queries of sentence s share its cross-attention keys and
/// values, which the runtime keeps once per sentence (a beam of 4 reads a
/// quarter of the bytes).
Value ModelImporter::rowsBySentence(Value x, Value sentences, Value width) {
  Value rows = builder.create<tensor::DimOp>(loc, x, 0);
  Value tokens = builder.create<tensor::DimOp>(loc, x, 1);
  Value perSentence = builder.create<arith::DivUIOp>(
      loc, builder.create<arith::MulIOp>(loc, rows, tokens), sentences);
  return reshape(x, sentences, perSentence, width);
}

/// The inverse of rowsBySentence: [S, G·T, d] -> the [R, T, d] of `like`.
Value ModelImporter::rowsByBeam(Value x, Value like, Value width) {
  return reshape(x, builder.create<tensor::DimOp>(loc, like, 0),
                 builder.create<tensor::DimOp>(loc, like, 1), width);
}

Value ModelImporter::attention(Value query, Value keys, Value values,
                               int64_t heads, Value keyLengths, bool causal,
                               Value bias, Value keyStarts) {
  // softmax(Q Kᵀ / sqrt(d_k) + B + M) V, per head (T5: unscaled, B its
  // relative bias)
  int64_t headDim = config.headWidth(heads);
  Value scores = builder.create<MatmulOp>(loc, query, keys,
                                          /*transposeLhs=*/false,
                                          /*transposeRhs=*/true);
  if (config.scaleScores)
    scores = builder.create<ScaleOp>(
        loc, scores, builder.getF64FloatAttr(1.0 / std::sqrt(double(headDim))));
  if (bias)
    scores = builder.create<AddOp>(loc, scores, bias);
  if (keyLengths)
    scores = builder.create<KeyPaddingMaskOp>(loc, scores, keyLengths);
  if (keyStarts)
    scores = builder.create<KeyStartMaskOp>(loc, scores, keyStarts);
  if (causal)
    scores = builder.create<CausalMaskOp>(loc, scores);
  int64_t keyAxis = cast<RankedTensorType>(scores.getType()).getRank() - 1;
  Value probs = builder.create<SoftmaxOp>(loc, scores, keyAxis);
  Value context = builder.create<MatmulOp>(loc, probs, values, false, false);
  return builder.create<MergeHeadsOp>(loc, context);
}

/// The encodings of positions firstPosition + offset + j (less the row's
/// start, with `starts`): rows of the checkpoint's `table`, or the
/// config's sinusoids.
Value ModelImporter::positionEncoding(Value ids, Value offset, StringRef table,
                                      Value starts) {
  int64_t d = config.dModel;
  SmallVector<int64_t> shape(cast<RankedTensorType>(ids.getType()).getShape());
  shape.push_back(d);
  if (config.positions == ModelConfig::Positions::relative)
    return {};
  if (config.firstPosition)
    offset = builder.create<arith::AddIOp>(
        loc, offset,
        builder.create<arith::ConstantIndexOp>(loc, config.firstPosition));
  bool learned = config.positions == ModelConfig::Positions::table ||
                 (config.positions == ModelConfig::Positions::tableIfPresent &&
                  hasTensor(table));
  if (!learned)
    return builder.create<PositionEncodingOp>(
        loc, tensor(shape), config.sinusoidKind, ids, offset, starts, Value());
  int64_t rows = config.maxPositions + config.firstPosition;
  return builder.create<PositionEncodingOp>(loc, tensor(shape),
                                            PositionKind::learned, ids, offset,
                                            starts, weight(table, {rows, d}));
}

Value ModelImporter::embed(Value ids, Value offset, StringRef table,
                           int64_t vocab, StringRef stack, Value starts) {
  int64_t d = config.dModel;
  // x = E[ids] * sqrt(d_model) + PE(offset + j), then BART's LayerNorm
  Value x = builder.create<EmbeddingOp>(loc, weight(table, {vocab, d}), ids);
  if (config.scaleEmbedding)
    x = builder.create<ScaleOp>(loc, x,
                                builder.getF64FloatAttr(std::sqrt(double(d))));
  if (Value pe = positionEncoding(
          ids, offset, (stack + ".embed_positions.weight").str(), starts))
    x = builder.create<AddOp>(loc, x, pe);
  if (config.normalizeEmbedding)
    x = layerNorm(x, (stack + ".layernorm_embedding").str());
  return x;
}

Value ModelImporter::residual(Value x, StringRef normPrefix,
                              llvm::function_ref<Value(Value)> sublayer) {
  if (config.normalizeBefore)
    return builder.create<AddOp>(loc, x, sublayer(layerNorm(x, normPrefix)));
  return layerNorm(builder.create<AddOp>(loc, x, sublayer(x)), normPrefix);
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

std::string ModelImporter::layerPrefix(StringRef stack, int64_t i) const {
  // T5 numbers blocks: model.encoder.layers.I is encoder.block.I.
  if (config.family == ModelFamily::t5)
    return llvm::formatv("{0}.block.{1}.", stack.drop_front(strlen("model.")),
                         i);
  return llvm::formatv("{0}.layers.{1}.", stack, i);
}

func::FuncOp ModelImporter::buildLayer(StringRef kind, StringRef prefix,
                                       ValueRange inputs,
                                       ArrayRef<StringRef> names,
                                       LayerBody body) {
  OpBuilder::InsertionGuard guard(builder);
  // Before the function that calls it, as a reader meets them.
  builder.setInsertionPoint(builder.getInsertionBlock()->getParentOp());
  auto layer = builder.create<func::FuncOp>(
      loc, kind, builder.getFunctionType(inputs.getTypes(), {}));
  layer.setPrivate();
  layer->setAttr(kLayerAttr, builder.getUnitAttr());
  for (auto [i, name] : llvm::enumerate(names))
    layer.setArgAttr(i, "tfm.name", builder.getStringAttr(name));
  builder.setInsertionPointToStart(layer.addEntryBlock());

  llvm::StringMap<Value> callerWeights = std::move(weightValues);
  weightValues.clear();
  Operation *callerLastWeight = std::exchange(lastWeight, nullptr);
  weightsPrefix = prefix.str();
  SmallVector<Value> results = body(layer.getArguments());
  builder.create<func::ReturnOp>(loc, results);
  layer.setType(builder.getFunctionType(inputs.getTypes(),
                                        ValueRange(results).getTypes()));
  weightsPrefix.clear();
  weightValues = std::move(callerWeights);
  lastWeight = callerLastWeight;
  return layer;
}

/// A layer of the same kind built before that can serve for this one, or
/// null.
func::FuncOp ModelImporter::findEqualLayer(func::FuncOp layer) {
  for (func::FuncOp other : layers)
    if (other.getSymName().starts_with(layer.getSymName()) &&
        areEqualLayers(other, layer))
      return other;
  return {};
}

SmallVector<Value> ModelImporter::callLayer(StringRef kind, StringRef prefix,
                                            ValueRange inputs,
                                            ArrayRef<StringRef> names,
                                            LayerBody body) {
  Location callLoc = loc;
  func::FuncOp layer = buildLayer(kind, prefix, inputs, names, body);
  if (func::FuncOp equal = findEqualLayer(layer)) {
    layer.erase();
    layer = equal;
  } else {
    int64_t sameKind = llvm::count_if(layers, [&](func::FuncOp other) {
      return other.getSymName().starts_with(kind);
    });
    if (sameKind)
      layer.setSymName(llvm::formatv("{0}_{1}", kind, sameKind).str());
    layers.push_back(layer);
  }
  auto call = builder.create<func::CallOp>(callLoc, layer, inputs);
  call->setAttr(kWeightsPrefixAttr, builder.getStringAttr(prefix));
  return call.getResults();
}

/// x + SelfAttention(x), then x + FFN(x), each with its norm (residual()).
Value ModelImporter::encoderLayer(Value x, int64_t i, Value srcLengths,
                                  Value bias) {
  int64_t d = config.dModel, heads = config.encoderHeads;
  int64_t inner = heads * config.headWidth(heads);
  std::string p = llvm::formatv("model.encoder.layers.{0}", i);
  SmallVector<Value> inputs = {x, srcLengths};
  SmallVector<StringRef> names = {"hidden", "source_lengths"};
  if (bias) {
    inputs.push_back(bias);
    names.push_back("position_bias");
  }
  setLoc(p);
  auto body = [&](ValueRange args) -> SmallVector<Value> {
    Value lengths = args[1], layerBias = bias ? args[2] : Value();
    setLoc("self_attn");
    Value y = residual(args[0], p + ".self_attn_layer_norm", [&](Value h) {
      Value q = projectHeads(h, p + ".self_attn.q_proj", heads);
      Value k = projectHeads(h, p + ".self_attn.k_proj", heads);
      Value v = projectHeads(h, p + ".self_attn.v_proj", heads);
      Value o = attention(q, k, v, heads, lengths, /*causal=*/false, layerBias);
      return linear(o, p + ".self_attn.out_proj", d, inner);
    });
    setLoc("ffn");
    y = residual(y, p + ".final_layer_norm", [&](Value h) {
      return feedForward(h, p, config.encoderFfnDim);
    });
    return {y};
  };
  return callLayer("encoder_layer", layerPrefix("model.encoder", i), inputs,
                   names, body)
      .front();
}

/// Self-attention over the cache (updated with this step's keys and
/// values), cross-attention, FFN. `state`: step, source lengths, cache
/// rows, row starts, cross K, cross V, cache K, cache V. Returns x and the
/// caches.
SmallVector<Value> ModelImporter::decoderLayer(Value x, int64_t i,
                                               ValueRange state, Value bias) {
  int64_t d = config.dModel, heads = config.decoderHeads;
  int64_t headDim = config.headWidth(heads), inner = heads * headDim;
  Type kv = tensor({kDyn, heads, kDyn, headDim});
  std::string p = llvm::formatv("model.decoder.layers.{0}", i);
  SmallVector<Value> inputs = {x};
  inputs.append(state.begin(), state.end());
  SmallVector<StringRef> names = {"hidden",      "step",       "source_lengths",
                                  "cache_rows",  "row_starts", "cross_key",
                                  "cross_value", "cache_key",  "cache_value"};
  if (bias) {
    inputs.push_back(bias);
    names.push_back("position_bias");
  }
  setLoc(p);
  auto body = [&](ValueRange args) -> SmallVector<Value> {
    Value step = args[1], srcLengths = args[2], cacheRows = args[3],
          rowStarts = args[4];
    Value crossK = args[5], crossV = args[6], cacheK = args[7],
          cacheV = args[8], layerBias = bias ? args[9] : Value();
    Value zero = builder.create<arith::ConstantIndexOp>(loc, 0);
    Value one = builder.create<arith::ConstantIndexOp>(loc, 1);
    Value innerWidth = builder.create<arith::ConstantIndexOp>(loc, inner);
    // Self-attention sees the cache up to step + T.
    Value seen = builder.create<arith::AddIOp>(
        loc, step, builder.create<tensor::DimOp>(loc, args[0], one));
    SmallVector<Value> out(3);
    setLoc("self_attn");
    out[0] = residual(args[0], p + ".self_attn_layer_norm", [&](Value h) {
      Value q = projectHeads(h, p + ".self_attn.q_proj", heads);
      Value k = projectHeads(h, p + ".self_attn.k_proj", heads);
      Value v = projectHeads(h, p + ".self_attn.v_proj", heads);
      out[1] = builder.create<CacheUpdateOp>(loc, k, cacheK, step, 2);
      out[2] = builder.create<CacheUpdateOp>(loc, v, cacheV, step, 2);
      Value keys = builder.create<SliceOp>(loc, kv, out[1], zero, seen, 2);
      Value values = builder.create<SliceOp>(loc, kv, out[2], zero, seen, 2);
      keys = builder.create<CacheRowsOp>(loc, keys, cacheRows, 2);
      values = builder.create<CacheRowsOp>(loc, values, cacheRows, 2);
      // Keys are the batch's steps; a row's history begins at its start.
      Value o = attention(q, keys, values, heads, Value(), /*causal=*/true,
                          layerBias, rowStarts);
      return linear(o, p + ".self_attn.out_proj", d, inner);
    });
    setLoc("encoder_attn");
    out[0] = residual(out[0], p + ".encoder_attn_layer_norm", [&](Value h) {
      Value q = linear(h, p + ".encoder_attn.q_proj", inner, d);
      Value sentences = builder.create<tensor::DimOp>(loc, crossK, zero);
      q = builder.create<SplitHeadsOp>(
          loc, rowsBySentence(q, sentences, innerWidth), heads);
      Value o = attention(q, crossK, crossV, heads, srcLengths,
                          /*causal=*/false);
      return linear(rowsByBeam(o, h, innerWidth), p + ".encoder_attn.out_proj",
                    d, inner);
    });
    setLoc("ffn");
    out[0] = residual(out[0], p + ".final_layer_norm", [&](Value h) {
      return feedForward(h, p, config.decoderFfnDim);
    });
    return out;
  };
  return callLayer("decoder_layer", layerPrefix("model.decoder", i), inputs,
                   names, body);
}

void ModelImporter::buildEncode(ModuleOp module) {
  int64_t d = config.dModel, heads = config.encoderHeads;
  int64_t decHeads = config.decoderHeads;
  int64_t headDim = config.headWidth(decHeads);
  Type ids = tensor({kDyn, kDyn}, builder.getI32Type());
  Type lengths = tensor({kDyn}, builder.getI32Type());
  Type hidden = tensor({kDyn, kDyn, d});
  Type crossKV = tensor({kDyn, decHeads, kDyn, headDim});

  SmallVector<Type> results = {hidden};
  results.append(2 * config.decoderLayers, crossKV);
  setLoc("encode");
  builder.setInsertionPointToEnd(module.getBody());
  auto func = builder.create<func::FuncOp>(
      loc, "encode", builder.getFunctionType({ids, lengths}, results));
  func.setArgAttr(0, "tfm.name", builder.getStringAttr("source_ids"));
  func.setArgAttr(1, "tfm.name", builder.getStringAttr("source_lengths"));
  weightValues.clear();
  lastWeight = nullptr;
  builder.setInsertionPointToStart(func.addEntryBlock());
  Value srcIds = func.getArgument(0), srcLengths = func.getArgument(1);

  setLoc("model.encoder");
  Value zero = builder.create<arith::ConstantIndexOp>(loc, 0);
  StringRef table = config.shareEmbeddings
                        ? "model.shared.weight"
                        : "model.encoder.embed_tokens.weight";
  Value x = embed(srcIds, zero, table, config.vocabSize, "model.encoder");
  Value bias;
  if (config.relativeBuckets) {
    Value length = builder.create<tensor::DimOp>(loc, srcIds, 1);
    bias = relativeBias("model.encoder", heads, length, length, zero,
                        /*bidirectional=*/true);
  }

  for (int64_t i = 0; i < config.encoderLayers; ++i)
    x = encoderLayer(x, i, srcLengths, bias);
  if (config.normalizeBefore) {
    setLoc("model.encoder.layer_norm");
    x = layerNorm(x, "model.encoder.layer_norm");
  }

  // Cross-attention keys and values depend only on the encoder output:
  // computed once here, not at every decoding step.
  SmallVector<Value> outputs = {x};
  for (int64_t i = 0; i < config.decoderLayers; ++i) {
    std::string p = llvm::formatv("model.decoder.layers.{0}.encoder_attn", i);
    setLoc(p);
    outputs.push_back(projectHeads(x, p + ".k_proj", decHeads));
    outputs.push_back(projectHeads(x, p + ".v_proj", decHeads));
  }
  builder.create<func::ReturnOp>(loc, outputs);
}

void ModelImporter::buildDecodeStep(ModuleOp module) {
  int64_t d = config.dModel, heads = config.decoderHeads;
  int64_t headDim = config.headWidth(heads);
  int64_t vocab = config.targetVocabSize;
  Type ids = tensor({kDyn, kDyn}, builder.getI32Type());
  Type lengths = tensor({kDyn}, builder.getI32Type());
  Type kv = tensor({kDyn, heads, kDyn, headDim});
  Type logits = tensor({kDyn, kDyn, kDyn});

  // (tokens, step, source_lengths, cache_rows, row_starts, per layer:
  // cross K, cross V, cache K, cache V) -> (logits, their blocks'
  // log-sum-exp terms, per layer: cache K, cache V)
  SmallVector<Type> inputs = {ids, builder.getIndexType(), lengths, ids,
                              lengths};
  SmallVector<Type> results = {logits, tensor({kDyn, kDyn, kDyn, 2})};
  for (int64_t i = 0; i < config.decoderLayers; ++i) {
    inputs.append(4, kv);
    results.append(2, kv);
  }
  setLoc("decode_step");
  builder.setInsertionPointToEnd(module.getBody());
  auto func = builder.create<func::FuncOp>(
      loc, "decode_step", builder.getFunctionType(inputs, results));
  weightValues.clear();
  lastWeight = nullptr;
  builder.setInsertionPointToStart(func.addEntryBlock());
  auto name = [&](unsigned arg, const Twine &n) {
    func.setArgAttr(arg, "tfm.name", builder.getStringAttr(n));
  };
  name(0, "tokens");
  name(1, "step");
  name(2, "source_lengths");
  name(3, "cache_rows");
  name(4, "row_starts");
  constexpr unsigned firstLayerArg = 5;
  for (int64_t i = 0; i < config.decoderLayers; ++i) {
    unsigned arg = firstLayerArg + 4 * i;
    name(arg, llvm::formatv("cross_key.{0}", i));
    name(arg + 1, llvm::formatv("cross_value.{0}", i));
    name(arg + 2, llvm::formatv("cache_key.{0}", i));
    name(arg + 3, llvm::formatv("cache_value.{0}", i));
  }
  // The batch's step p of row r's history is in row cacheRows[r, p] of the
  // caches: a beam reads its parent's keys where they were written. Row r
  // joined the batch at step rowStarts[r]: its position is step - start.
  Value tokens = func.getArgument(0), step = func.getArgument(1),
        srcLengths = func.getArgument(2), cacheRows = func.getArgument(3),
        rowStarts = func.getArgument(4);

  setLoc("model.decoder");
  StringRef table = config.shareEmbeddings
                        ? "model.shared.weight"
                        : "model.decoder.embed_tokens.weight";
  Value x = embed(tokens, step, table, vocab, "model.decoder", rowStarts);
  Value bias;
  if (config.relativeBuckets) {
    // The new tokens sit at steps [step, step + T) of the batch;
    // self-attention sees the cache up to step + T. Distances between steps
    // are those between positions, whenever a row joined.
    Value one = builder.create<arith::ConstantIndexOp>(loc, 1);
    Value newTokens = builder.create<tensor::DimOp>(loc, tokens, one);
    Value seen = builder.create<arith::AddIOp>(loc, step, newTokens);
    bias = relativeBias("model.decoder", heads, newTokens, seen, step,
                        /*bidirectional=*/false);
  }

  SmallVector<Value> caches;
  for (int64_t i = 0; i < config.decoderLayers; ++i) {
    SmallVector<Value> state = {step, srcLengths, cacheRows, rowStarts};
    auto layerArgs = func.getArguments().begin() + firstLayerArg + 4 * i;
    state.append(layerArgs, layerArgs + 4);
    SmallVector<Value> out = decoderLayer(x, i, state, bias);
    x = out[0];
    caches.append({out[1], out[2]});
  }
  if (config.normalizeBefore) {
    setLoc("model.decoder.layer_norm");
    x = layerNorm(x, "model.decoder.layer_norm");
  }

  // logits = x · E[rows]ᵀ + final_logits_bias[rows] (E: the target
  // embedding when tied) over the vocabulary rows the caller chose: all of
  // them, or a batch's shortlist. The bias, [1, V] in checkpoints, is the
  // linear's own, so the logits are written once.
  setLoc("lm_head");
  StringRef outTable = config.tieWordEmbeddings ? table : "lm_head.weight";
  if (config.rescaleTiedOutput)
    x = builder.create<ScaleOp>(
        loc, x, builder.getF64FloatAttr(1.0 / std::sqrt(double(d))));
  Value rows = builder.create<CallerRowsOp>(
      loc, tensor({kDyn, d}), weight(outTable, {vocab, d}), "output_panels",
      /*axis=*/0);
  Value logitsBias;
  if (hasTensor("final_logits_bias")) {
    Value chosen = builder.create<CallerRowsOp>(
        loc, tensor({1, kDyn}), weight("final_logits_bias", {1, vocab}),
        "output_bias", /*axis=*/1);
    logitsBias = builder.create<tensor::CollapseShapeOp>(
        loc, chosen, ArrayRef<ReassociationIndices>{{0, 1}});
  }
  Value out = builder.create<LinearOp>(loc, x, rows, logitsBias);
  // Per block of logits, the terms of their log-sum-exp, which the search
  // merges instead of reading every logit; blocks of the output panels'
  // width on AVX-512, so that the panel kernel makes both.
  Value blocks =
      builder.create<LogSumExpBlocksOp>(loc, out, tfm_runtime::kLogitBlock);
  SmallVector<Value> outputs = {out, blocks};
  outputs.append(caches);
  builder.create<func::ReturnOp>(loc, outputs);
}

/// Tensors that Hugging Face's classes save but do not read back: the
/// encoder's and decoder's copies of the shared embedding table, the
/// output projection tied to it, and the sinusoid buffers that fairseq's
/// M2M-100 checkpoints carry (recomputed from the config).
bool ModelImporter::ignoredAsHuggingFaceDoes(StringRef name) const {
  if (config.positions == ModelConfig::Positions::sinusoids &&
      (name.ends_with(".embed_positions.weights") ||
       name.ends_with(".embed_positions._float_tensor")))
    return true;
  if (config.shareEmbeddings &&
      (name == checkpointName("model.encoder.embed_tokens.weight") ||
       name == checkpointName("model.decoder.embed_tokens.weight")))
    return true;
  return config.tieWordEmbeddings && name == "lm_head.weight";
}

/// A checkpoint tensor that the model does not read means that the config
/// does not describe the checkpoint (fewer layers than it holds, a renamed
/// tensor): the translator would compute something else than the model.
void ModelImporter::checkUnusedTensors() {
  SmallVector<std::string> unused;
  for (const std::string &name : weights.tensorNames())
    if (!usedTensors.contains(name) && !ignoredAsHuggingFaceDoes(name))
      unused.push_back(name);
  if (unused.empty())
    return;
  std::string list;
  for (size_t i = 0; i < unused.size(); ++i)
    if (i < 8 || options.allowUnusedTensors)
      list += (i ? ", '" : "'") + unused[i] + "'";
  if (unused.size() > 8 && !options.allowUnusedTensors)
    list += llvm::formatv(", ... ({0} more)", unused.size() - 8).str();
  if (options.allowUnusedTensors) {
    warnings << "tfmc: warning: " << weights.path() << ": " << unused.size()
             << " tensors not used by the model (--allow-unused-tensors): "
             << list << "\n";
    return;
  }
  fail(llvm::formatv("{0} tensors are not used by the model that the config "
                     "describes ({1} encoder and {2} decoder layers): {3}; "
                     "check the config against the checkpoint, or pass "
                     "--allow-unused-tensors to compile without them",
                     unused.size(), config.encoderLayers, config.decoderLayers,
                     list));
}

DictionaryAttr ModelImporter::configAttr() {
  auto i64 = [&](int64_t v) { return builder.getI64IntegerAttr(v); };
  SmallVector<NamedAttribute> attrs = {
      builder.getNamedAttr("d_model", i64(config.dModel)),
      builder.getNamedAttr("encoder_layers", i64(config.encoderLayers)),
      builder.getNamedAttr("decoder_layers", i64(config.decoderLayers)),
      builder.getNamedAttr("encoder_heads", i64(config.encoderHeads)),
      builder.getNamedAttr("decoder_heads", i64(config.decoderHeads)),
      builder.getNamedAttr("decoder_head_dim",
                           i64(config.headWidth(config.decoderHeads))),
      builder.getNamedAttr("source_vocab_size", i64(config.vocabSize)),
      builder.getNamedAttr("target_vocab_size", i64(config.targetVocabSize)),
      builder.getNamedAttr("max_positions", i64(config.maxPositions)),
      builder.getNamedAttr("eos_token_id", i64(config.eosTokenId)),
      builder.getNamedAttr("pad_token_id", i64(config.padTokenId)),
      builder.getNamedAttr("decoder_start_token_id",
                           i64(config.decoderStartTokenId)),
      builder.getNamedAttr("forced_eos_token_id", i64(config.forcedEosTokenId)),
      builder.getNamedAttr("forced_bos_token_id", i64(config.forcedBosTokenId)),
      builder.getNamedAttr("repetition_penalty",
                           builder.getF64FloatAttr(config.repetitionPenalty)),
      builder.getNamedAttr("no_repeat_ngram_size",
                           i64(config.noRepeatNgramSize)),
      builder.getNamedAttr("model_type",
                           builder.getStringAttr(modelTypeName(config.family))),
  };
  SmallVector<Attribute> badWords;
  for (const std::vector<int64_t> &ids : config.badWordsIds)
    badWords.push_back(builder.getDenseI64ArrayAttr(ids));
  attrs.push_back(
      builder.getNamedAttr("bad_words_ids", builder.getArrayAttr(badWords)));
  return builder.getDictionaryAttr(attrs);
}

llvm::Expected<OwningOpRef<ModuleOp>> ModelImporter::run() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  module->getOperation()->setAttr("tfm.model", configAttr());
  module->getOperation()->setAttr(
      "tfm.weights_file",
      builder.getStringAttr(llvm::sys::path::filename(weights.path())));
  buildEncode(*module);
  buildDecodeStep(*module);
  if (!error)
    checkUnusedTensors();
  if (error)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), *error);
  if (failed(verify(*module)))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "internal error: the imported module does "
                                   "not verify");
  return std::move(module);
}

llvm::Expected<OwningOpRef<ModuleOp>>
mlir::tfm::importModel(MLIRContext &context, llvm::StringRef modelDir,
                       const ImportOptions &options,
                       llvm::raw_ostream &warnings) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  if (!llvm::sys::fs::is_directory(modelDir))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        (modelDir + ": not a model directory").str());
  SmallString<256> configPath(modelDir);
  llvm::sys::path::append(configPath, "config.json");
  // Without config.json, a Marian model's .npz brings its config.
  llvm::Expected<std::optional<std::string>> npz =
      Checkpoint::findMarianModel(modelDir);
  if (!npz)
    return npz.takeError();
  if (!llvm::sys::fs::exists(configPath) && *npz) {
    llvm::Expected<Checkpoint> marian = Checkpoint::open(modelDir);
    if (!marian)
      return marian.takeError();
    if (const ModelConfig *config = marian->marianConfig())
      return ModelImporter(context, *config, *marian, options, warnings).run();
  }
  llvm::Expected<ModelConfig> config = ModelConfig::load(configPath);
  if (!config)
    return config.takeError();
  llvm::Expected<Checkpoint> weights = Checkpoint::open(modelDir);
  if (!weights)
    return weights.takeError();
  return ModelImporter(context, *config, *weights, options, warnings).run();
}

namespace {
/// What a function runs, its layers' ops counted once per call of them.
struct FunctionCensus {
  std::map<std::string, int64_t> ops;
  llvm::StringMap<int64_t> weights; // bound name -> elements
  int64_t layerCalls = 0;

  void count(func::FuncOp func, StringRef prefix, SymbolTable &symbols) {
    func.walk([&](Operation *op) {
      if (op == func.getOperation())
        return;
      ++ops[op->getName().getStringRef().str()];
      if (auto w = dyn_cast<WeightOp>(op))
        weights[boundWeightName(w, prefix)] = w.getType().getNumElements();
      auto call = dyn_cast<func::CallOp>(op);
      if (!call || !weightsPrefix(call))
        return;
      ++layerCalls;
      count(symbols.lookup<func::FuncOp>(call.getCallee()),
            weightsPrefix(call).getValue(), symbols);
    });
  }
  int64_t parameters() const {
    int64_t total = 0;
    for (auto &entry : weights)
      total += entry.second;
    return total;
  }
};
} // namespace

void mlir::tfm::printModelSummary(ModuleOp module, llvm::raw_ostream &os) {
  if (auto model = module->getAttrOfType<DictionaryAttr>("tfm.model")) {
    os << "model:";
    for (NamedAttribute a : model)
      if (auto i = dyn_cast<IntegerAttr>(a.getValue()))
        os << " " << a.getName().getValue() << "=" << i.getInt();
    os << "\n";
  }
  // Unique checkpoint tensors across entry points (encode and decode_step
  // share the embedding table) and layers.
  llvm::StringMap<int64_t> allWeights;
  forEachBoundWeight(module, [&](WeightOp w, StringRef prefix) {
    allWeights[boundWeightName(w, prefix)] = w.getType().getNumElements();
  });
  int64_t total = 0;
  for (auto &entry : allWeights)
    total += entry.second;
  os << "weights: " << allWeights.size() << " tensors, " << total
     << " parameters\n";
  SymbolTable symbols(module);
  llvm::DenseMap<Operation *, int64_t> calls;
  module.walk([&](func::CallOp call) {
    if (weightsPrefix(call))
      ++calls[symbols.lookup(call.getCallee())];
  });
  for (auto func : module.getOps<func::FuncOp>()) {
    FunctionCensus census;
    census.count(func, "", symbols);
    os << "func @" << func.getSymName() << ": " << func.getNumArguments()
       << " inputs, " << func.getNumResults() << " results, "
       << census.weights.size() << " weights (" << census.parameters()
       << " parameters)";
    if (isLayer(func))
      os << ", a layer called " << calls.lookup(func) << " times";
    else if (census.layerCalls)
      os << ", ops of its " << census.layerCalls << " layer calls included";
    os << "\n";
    for (auto &[name, count] : census.ops)
      os << "  " << name << ": " << count << "\n";
  }
}
