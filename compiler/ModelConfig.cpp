//===- ModelConfig.cpp - A checkpoint's config.json -------------*- C++ -*-===//

#include "compiler/ModelConfig.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {
/// Reads typed keys of one JSON object, keeping the first error.
class ConfigReader {
public:
  ConfigReader(llvm::StringRef path, const llvm::json::Object &obj)
      : path(path), obj(obj) {}

  void integer(llvm::StringRef key, int64_t &out, int64_t min,
               std::optional<int64_t> fallback = std::nullopt) {
    if (error)
      return;
    const llvm::json::Value *v = obj.get(key);
    if (!v || v->kind() == llvm::json::Value::Null) {
      if (fallback)
        out = *fallback;
      else
        fail(llvm::formatv("missing key '{0}'", key));
      return;
    }
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i < min)
      return fail(llvm::formatv(
          "key '{0}' must be an integer >= {1}, found {2}", key, min, *v));
    out = *i;
  }

  /// A finite number > 0, or `fallback` when absent.
  void number(llvm::StringRef key, double &out, double fallback) {
    if (error)
      return;
    const llvm::json::Value *v = obj.get(key);
    if (!v || v->kind() == llvm::json::Value::Null) {
      out = fallback;
      return;
    }
    std::optional<double> d = v->getAsNumber();
    if (!d || !(*d > 0) || !std::isfinite(*d))
      return fail(
          llvm::formatv("key '{0}' must be a number > 0, found {1}", key, *v));
    out = *d;
  }

  void boolean(llvm::StringRef key, bool &out, bool fallback) {
    if (error)
      return;
    const llvm::json::Value *v = obj.get(key);
    if (!v) {
      out = fallback;
      return;
    }
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return fail(
          llvm::formatv("key '{0}' must be true or false, found {1}", key, *v));
    out = *b;
  }

  /// A list of non-empty lists of integers >= 0, or null / absent.
  void integerLists(llvm::StringRef key,
                    std::vector<std::vector<int64_t>> &out) {
    if (error)
      return;
    const llvm::json::Value *v = obj.get(key);
    if (!v || v->kind() == llvm::json::Value::Null)
      return;
    const llvm::json::Array *lists = v->getAsArray();
    if (!lists)
      return fail(llvm::formatv("key '{0}' must be a list of lists of token "
                                "ids, found {1}",
                                key, *v));
    for (auto [i, item] : llvm::enumerate(*lists)) {
      const llvm::json::Array *list = item.getAsArray();
      if (!list || list->empty())
        return fail(llvm::formatv("key '{0}': entry {1} must be a non-empty "
                                  "list of token ids, found {2}",
                                  key, i, item));
      std::vector<int64_t> &ids = out.emplace_back();
      for (const llvm::json::Value &id : *list) {
        std::optional<int64_t> n = id.getAsInteger();
        if (!n || *n < 0)
          return fail(llvm::formatv("key '{0}': entry {1} holds {2}, not a "
                                    "token id",
                                    key, i, id));
        ids.push_back(*n);
      }
    }
  }

  std::optional<std::string> string(llvm::StringRef key) {
    if (error)
      return std::nullopt;
    const llvm::json::Value *v = obj.get(key);
    if (!v)
      return std::nullopt;
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s) {
      fail(llvm::formatv("key '{0}' must be a string, found {1}", key, *v));
      return std::nullopt;
    }
    return s->str();
  }

  void fail(const llvm::Twine &message) {
    if (!error)
      error = (path + ": " + message).str();
  }

  llvm::Error takeError() {
    if (!error)
      return llvm::Error::success();
    return llvm::createStringError(llvm::inconvertibleErrorCode(), *error);
  }

private:
  llvm::StringRef path;
  const llvm::json::Object &obj;
  /// The first problem found, already prefixed with the path.
  std::optional<std::string> error;
};
} // namespace

static llvm::Error fileError(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (path + ": " + message).str());
}

/// The JSON object in `path`.
static llvm::Expected<llvm::json::Value> readJsonObject(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fileError(path, "cannot open: " + buffer.getError().message());
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return fileError(path, "invalid JSON: " + llvm::toString(json.takeError()));
  if (!json->getAsObject())
    return fileError(path, "expected a JSON object at the top level");
  return json;
}

/// The keys that steer generation, in config.json or generation_config.json
/// (whose keys, where present, override config.json's); absent keys keep
/// `c`'s values.
static void readGenerationKeys(ConfigReader &r, const llvm::json::Object &obj,
                               ModelConfig &c) {
  r.integer("eos_token_id", c.eosTokenId, 0, c.eosTokenId);
  r.integer("pad_token_id", c.padTokenId, 0, c.padTokenId);
  r.integer("decoder_start_token_id", c.decoderStartTokenId, 0,
            c.decoderStartTokenId);
  r.integer("forced_eos_token_id", c.forcedEosTokenId, 0, c.forcedEosTokenId);
  r.integer("forced_bos_token_id", c.forcedBosTokenId, 0, c.forcedBosTokenId);
  if (obj.get("bad_words_ids")) {
    c.badWordsIds.clear();
    r.integerLists("bad_words_ids", c.badWordsIds);
  }
  r.number("repetition_penalty", c.repetitionPenalty, c.repetitionPenalty);
  r.integer("no_repeat_ngram_size", c.noRepeatNgramSize, 0,
            c.noRepeatNgramSize);
}

/// Special tokens inside the target vocabulary; `path` is the file that set
/// them.
static llvm::Error checkGenerationKeys(llvm::StringRef path,
                                       const ModelConfig &c) {
  for (auto [key, id] :
       {std::pair<const char *, int64_t>{"eos_token_id", c.eosTokenId},
        {"pad_token_id", c.padTokenId},
        {"decoder_start_token_id", c.decoderStartTokenId},
        {"forced_eos_token_id", c.forcedEosTokenId},
        {"forced_bos_token_id", c.forcedBosTokenId}})
    if (id >= c.targetVocabSize)
      return fileError(path, llvm::formatv("{0} {1} is outside the target "
                                           "vocabulary of {2} tokens",
                                           key, id, c.targetVocabSize));
  for (auto [i, ids] : llvm::enumerate(c.badWordsIds))
    for (int64_t id : ids)
      if (id >= c.targetVocabSize)
        return fileError(path, llvm::formatv("bad_words_ids entry {0} holds "
                                             "token {1}, outside the target "
                                             "vocabulary of {2} tokens",
                                             i, id, c.targetVocabSize));
  return llvm::Error::success();
}

llvm::StringRef mlir::tfm::modelTypeName(ModelFamily family) {
  switch (family) {
  case ModelFamily::marian:
    return "marian";
  case ModelFamily::bart:
    return "bart";
  case ModelFamily::mbart:
    return "mbart";
  case ModelFamily::m2m100:
    return "m2m_100";
  case ModelFamily::t5:
    return "t5";
  }
  return "";
}

/// The family of `model_type` (Marian when absent), with what its Hugging
/// Face class hard-codes: BART normalizes after each sub-layer, mBART and
/// M2M-100 before it and after each stack (their configs' leftover
/// `normalize_before` keys are ignored, as the classes ignore them);
/// fairseq's positions start at 2; M2M-100 computes fairseq's sinusoids.
static void readFamily(ConfigReader &r, ModelConfig &c) {
  std::optional<std::string> type = r.string("model_type");
  if (type && (*type == "t5" || *type == "mt5")) {
    c.family = ModelFamily::t5;
    return;
  }
  if (!type || *type == "marian") {
    r.boolean("normalize_before", c.normalizeBefore, false);
    r.boolean("scale_embedding", c.scaleEmbedding, false);
    return;
  }
  bool known = false;
  for (ModelFamily f :
       {ModelFamily::bart, ModelFamily::mbart, ModelFamily::m2m100})
    if (*type == modelTypeName(f)) {
      c.family = f;
      known = true;
    }
  if (!known)
    return r.fail(llvm::formatv("unsupported model_type '{0}' (supported: "
                                "marian, bart, mbart, m2m_100, t5, mt5)",
                                *type));
  c.normalizeBefore = c.family != ModelFamily::bart;
  c.normalizeEmbedding = c.family != ModelFamily::m2m100;
  c.firstPosition = 2;
  c.positions = ModelConfig::Positions::table;
  if (c.family == ModelFamily::m2m100) {
    c.positions = ModelConfig::Positions::sinusoids;
    c.sinusoidKind = PositionKind::sinusoidal_concat_half_minus_one;
  }
  // M2M100Config's default is true, BartConfig's and MBartConfig's false.
  r.boolean("scale_embedding", c.scaleEmbedding,
            c.family == ModelFamily::m2m100);
}

/// `activation_function`, Hugging Face's names.
static void readActivation(ConfigReader &r, ModelConfig &c) {
  std::optional<std::string> act = r.string("activation_function");
  if (!act)
    return r.fail("missing key 'activation_function'");
  if (*act == "relu")
    c.activation = Activation::relu;
  else if (*act == "gelu")
    c.activation = Activation::gelu;
  else if (*act == "swish" || *act == "silu")
    c.activation = Activation::silu;
  else
    r.fail(llvm::formatv("unsupported activation_function '{0}' (supported: "
                         "relu, gelu, swish, silu)",
                         *act));
}

/// Not a Hugging Face key: lets a Marian checkpoint without position tables
/// ask for the paper's interleaved sinusoids, or the frequencies of Marian's
/// own sinusoids, instead of Hugging Face's sin|cos halves.
static void readPositionEncoding(ConfigReader &r, ModelConfig &c) {
  std::optional<std::string> pos = r.string("position_encoding");
  if (!pos)
    return;
  if (c.family != ModelFamily::marian)
    return r.fail(llvm::formatv("key 'position_encoding' is tfmc's for "
                                "marian models; model_type '{0}' fixes its "
                                "positions",
                                modelTypeName(c.family)));
  if (*pos == "sinusoidal_interleaved")
    c.sinusoidKind = PositionKind::sinusoidal_interleaved;
  else if (*pos == "sinusoidal_concat_half_minus_one")
    c.sinusoidKind = PositionKind::sinusoidal_concat_half_minus_one;
  else if (*pos != "sinusoidal_concat")
    r.fail(llvm::formatv("unsupported position_encoding '{0}' (supported: "
                         "sinusoidal_concat, sinusoidal_interleaved, "
                         "sinusoidal_concat_half_minus_one)",
                         *pos));
}

/// Keys that ask for what tfmc does not compute: refused, never ignored.
static void refuseUnsupported(ConfigReader &r, const llvm::json::Object &obj) {
  for (llvm::StringRef key : {"num_experts", "moe_token_dropout",
                              "encoder_sparse_step", "decoder_sparse_step"})
    if (const llvm::json::Value *v = obj.get(key))
      if (v->kind() != llvm::json::Value::Null)
        return r.fail(llvm::formatv("key '{0}' ({1}) asks for a mixture of "
                                    "experts; tfmc compiles dense models",
                                    key, *v));
  if (const llvm::json::Value *v = obj.get("position_embedding_type"))
    if (v->getAsString() != std::optional<llvm::StringRef>("absolute"))
      r.fail(llvm::formatv("unsupported position_embedding_type {0} "
                           "(supported: absolute)",
                           *v));
}

/// T5's `feed_forward_proj`: "[gated-]ACT" as Hugging Face's T5Config
/// reads it, "gated-gelu" meaning the tanh GELU (gelu_new).
static void readFeedForward(ConfigReader &r, ModelConfig &c) {
  std::string proj = r.string("feed_forward_proj").value_or("relu");
  llvm::StringRef act = proj;
  c.gatedFfn = act.consume_front("gated-");
  if (proj == "gated-gelu" || act == "gelu_new")
    c.activation = Activation::gelu_tanh;
  else if (act == "relu")
    c.activation = Activation::relu;
  else if (act == "gelu")
    c.activation = Activation::gelu;
  else if (act == "silu" || act == "swish")
    c.activation = Activation::silu;
  else
    r.fail(llvm::formatv("unsupported feed_forward_proj '{0}' (supported: "
                         "relu, gelu, gelu_new, silu, each optionally "
                         "gated-)",
                         proj));
}

/// T5's keys and what its class fixes: RMS norms before each sub-layer and
/// after each stack, no biases, unscaled scores, relative position buckets,
/// decoder start = pad.
static void readT5(ConfigReader &r, ModelConfig &c) {
  r.integer("d_model", c.dModel, 1);
  r.integer("d_kv", c.headDim, 1);
  r.integer("num_layers", c.encoderLayers, 1);
  r.integer("num_decoder_layers", c.decoderLayers, 1, c.encoderLayers);
  r.integer("num_heads", c.encoderHeads, 1);
  c.decoderHeads = c.encoderHeads;
  r.integer("d_ff", c.encoderFfnDim, 1);
  c.decoderFfnDim = c.encoderFfnDim;
  r.integer("vocab_size", c.vocabSize, 1);
  r.integer("relative_attention_num_buckets", c.relativeBuckets, 2, 32);
  r.integer("relative_attention_max_distance", c.relativeMaxDistance, 1, 128);
  // No position table bounds T5's length: `n_positions` where old configs
  // give it, else 512, the length it was trained with.
  r.integer("n_positions", c.maxPositions, 1, 512);
  r.integer("pad_token_id", c.padTokenId, 0, 0);
  r.integer("eos_token_id", c.eosTokenId, 0, 1);
  r.integer("decoder_start_token_id", c.decoderStartTokenId, 0, c.padTokenId);
  r.number("layer_norm_epsilon", c.layerNormEpsilon, 1e-6);
  readFeedForward(r, c);
  c.normalizeBefore = true;
  c.rmsNorm = true;
  c.linearBias = false;
  c.scaleScores = false;
  c.positions = ModelConfig::Positions::relative;
  r.boolean("tie_word_embeddings", c.tieWordEmbeddings, true);
  c.rescaleTiedOutput = c.tieWordEmbeddings;
  c.targetVocabSize = c.vocabSize;
}

namespace {
/// A key a config must have, the field it fills and its least value.
struct RequiredInteger {
  const char *key;
  int64_t ModelConfig::*field;
  int64_t min;
};
} // namespace

/// The integers of Marian's, BART's and fairseq's configs, in the order
/// they are checked.
static constexpr RequiredInteger kBartStyleIntegers[] = {
    {"d_model", &ModelConfig::dModel, 1},
    {"encoder_layers", &ModelConfig::encoderLayers, 1},
    {"decoder_layers", &ModelConfig::decoderLayers, 1},
    {"encoder_attention_heads", &ModelConfig::encoderHeads, 1},
    {"decoder_attention_heads", &ModelConfig::decoderHeads, 1},
    {"encoder_ffn_dim", &ModelConfig::encoderFfnDim, 1},
    {"decoder_ffn_dim", &ModelConfig::decoderFfnDim, 1},
    {"vocab_size", &ModelConfig::vocabSize, 1},
    {"max_position_embeddings", &ModelConfig::maxPositions, 1},
    {"eos_token_id", &ModelConfig::eosTokenId, 0},
    {"pad_token_id", &ModelConfig::padTokenId, 0},
    {"decoder_start_token_id", &ModelConfig::decoderStartTokenId, 0},
};

/// The keys of Marian's, BART's and fairseq's configs.
static void readBartStyle(ConfigReader &r, ModelConfig &c) {
  for (const RequiredInteger &integer : kBartStyleIntegers)
    r.integer(integer.key, c.*integer.field, integer.min);
  if (c.family == ModelFamily::marian)
    r.boolean("share_encoder_decoder_embeddings", c.shareEmbeddings, true);
  r.boolean("tie_word_embeddings", c.tieWordEmbeddings, true);
  r.integer("decoder_vocab_size", c.targetVocabSize, 1, c.vocabSize);
  readActivation(r, c);
  readPositionEncoding(r, c);
}

/// Sizes the model's arithmetic needs: heads that divide d_model (unless
/// their width is given), an even d_model for sinusoids.
static llvm::Error checkSizes(llvm::StringRef path, const ModelConfig &c) {
  if (!c.headDim)
    for (auto [key, heads] : {std::pair<const char *, int64_t>{
                                  "encoder_attention_heads", c.encoderHeads},
                              {"decoder_attention_heads", c.decoderHeads}})
      if (c.dModel % heads != 0)
        return fileError(path,
                         llvm::formatv("d_model {0} is not a multiple of {1} "
                                       "{2}",
                                       c.dModel, key, heads));
  bool sinusoids = c.positions == ModelConfig::Positions::sinusoids ||
                   c.positions == ModelConfig::Positions::tableIfPresent;
  if (sinusoids && c.dModel % 2 != 0)
    return fileError(path, llvm::formatv("d_model {0} must be even for "
                                         "sinusoidal positions",
                                         c.dModel));
  if (sinusoids &&
      c.sinusoidKind == PositionKind::sinusoidal_concat_half_minus_one &&
      c.dModel < 4)
    return fileError(path, llvm::formatv("d_model {0} must be at least 4 for "
                                         "sinusoidal_concat_half_minus_one "
                                         "positions",
                                         c.dModel));
  // The encoder's buckets split in halves, each with exact buckets below
  // the logarithmic ones (n/2/2 >= 1), whose range ends at max_distance.
  if (c.relativeBuckets && c.relativeBuckets < 4)
    return fileError(path, llvm::formatv("relative_attention_num_buckets {0} "
                                         "must be at least 4",
                                         c.relativeBuckets));
  if (c.relativeBuckets && c.relativeMaxDistance <= c.relativeBuckets / 2)
    return fileError(path,
                     llvm::formatv("relative_attention_max_distance {0} must "
                                   "exceed half the {1} buckets",
                                   c.relativeMaxDistance, c.relativeBuckets));
  if (c.shareEmbeddings && c.targetVocabSize != c.vocabSize)
    return fileError(path,
                     llvm::formatv("decoder_vocab_size {0} differs from "
                                   "vocab_size {1}, but "
                                   "share_encoder_decoder_embeddings is true",
                                   c.targetVocabSize, c.vocabSize));
  return llvm::Error::success();
}

llvm::Expected<ModelConfig> ModelConfig::load(llvm::StringRef path) {
  llvm::Expected<llvm::json::Value> json = readJsonObject(path);
  if (!json)
    return json.takeError();
  const llvm::json::Object *obj = json->getAsObject();

  ModelConfig c;
  ConfigReader r(path, *obj);
  readFamily(r, c);
  refuseUnsupported(r, *obj);
  if (c.family == ModelFamily::t5)
    readT5(r, c);
  else
    readBartStyle(r, c);
  readGenerationKeys(r, *obj, c);
  if (llvm::Error e = r.takeError())
    return std::move(e);

  if (llvm::Error e = checkSizes(path, c))
    return std::move(e);
  if (llvm::Error e = checkGenerationKeys(path, c))
    return std::move(e);

  // generation_config.json beside config.json overrides its generation
  // keys, as Hugging Face's GenerationConfig does.
  llvm::SmallString<256> generationPath(llvm::sys::path::parent_path(path));
  llvm::sys::path::append(generationPath, "generation_config.json");
  if (llvm::sys::fs::exists(generationPath)) {
    llvm::Expected<llvm::json::Value> generation =
        readJsonObject(generationPath);
    if (!generation)
      return generation.takeError();
    ConfigReader g(generationPath, *generation->getAsObject());
    readGenerationKeys(g, *generation->getAsObject(), c);
    if (llvm::Error e = g.takeError())
      return std::move(e);
    if (llvm::Error e = checkGenerationKeys(generationPath, c))
      return std::move(e);
  }
  // As Hugging Face does: EOS alone is never a bad word (it would make
  // every sentence run to its length limit).
  llvm::erase_if(c.badWordsIds, [&](const std::vector<int64_t> &ids) {
    return ids.size() == 1 && ids[0] == c.eosTokenId;
  });
  return c;
}
