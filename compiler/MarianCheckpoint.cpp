//===- MarianCheckpoint.cpp - Marian's native .npz models -------*- C++ -*-===//

#include "compiler/MarianCheckpoint.h"

#include "compiler/Zip.h"
#include "dialects/Tfm/IR/TfmOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <yaml-cpp/yaml.h>

#include <cstring>
#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::tfm;
using llvm::formatv;

static llvm::Error fail(const llvm::Twine &path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 (path + ": " + message).str());
}

//===----------------------------------------------------------------------===//
// .npy arrays
//===----------------------------------------------------------------------===//

namespace {
/// One array of the archive: its element type, shape and bytes.
struct NpyArray {
  std::string descr; // numpy's type string, e.g. "<f4"
  llvm::SmallVector<int64_t> shape;
  llvm::StringRef bytes;
};
} // namespace

/// The value of `key` in a .npy header, a Python dict literal such as
/// {'descr': '<f4', 'fortran_order': False, 'shape': (512, 2048), }.
static std::optional<llvm::StringRef> headerValue(llvm::StringRef header,
                                                  llvm::StringRef key) {
  size_t at = header.find(("'" + key + "':").str());
  if (at == llvm::StringRef::npos)
    return std::nullopt;
  llvm::StringRef rest = header.drop_front(at + key.size() + 3).ltrim();
  if (rest.consume_front("'"))
    return rest.take_until([](char c) { return c == '\''; });
  if (rest.consume_front("("))
    return rest.take_until([](char c) { return c == ')'; });
  return rest.take_until([](char c) { return c == ',' || c == '}'; }).trim();
}

static llvm::Expected<NpyArray> parseNpy(llvm::StringRef where,
                                         llvm::StringRef npy) {
  auto bad = [&](const llvm::Twine &why) { return fail(where, why); };
  if (npy.size() < 10 || !npy.starts_with("\x93NUMPY"))
    return bad("not a .npy array (bad magic)");
  unsigned major = uint8_t(npy[6]);
  uint64_t headerSize, start;
  if (major == 1) {
    headerSize = llvm::support::endian::read16le(npy.data() + 8);
    start = 10;
  } else if ((major == 2 || major == 3) && npy.size() >= 12) {
    headerSize = llvm::support::endian::read32le(npy.data() + 8);
    start = 12;
  } else {
    return bad(formatv(".npy format version {0}, not 1, 2 or 3", major));
  }
  if (headerSize > npy.size() - start)
    return bad(".npy header runs past the array; truncated?");
  llvm::StringRef header = npy.substr(start, headerSize);
  NpyArray array;
  std::optional<llvm::StringRef> descr = headerValue(header, "descr"),
                                 order = headerValue(header, "fortran_order"),
                                 shape = headerValue(header, "shape");
  if (!descr || !order || !shape)
    return bad(".npy header without descr, fortran_order and shape");
  if (*order != "False")
    return bad("stored in Fortran order; Marian writes C order");
  array.descr = descr->str();
  llvm::SmallVector<llvm::StringRef> dims;
  shape->split(dims, ',', -1, /*KeepEmpty=*/false);
  uint64_t elements = 1;
  for (llvm::StringRef dim : dims) {
    int64_t n;
    if (dim.trim().getAsInteger(10, n) || n < 0 || n > (int64_t(1) << 40))
      return bad("bad shape (" + *shape + ") in the .npy header");
    array.shape.push_back(n);
    elements *= uint64_t(n);
  }
  uint64_t size = array.descr.size() == 3 ? array.descr[2] - '0' : 0;
  if (array.descr.size() != 3 || size < 1 || size > 8 ||
      elements > (npy.size() - start - headerSize) / size)
    return bad(formatv("{0} elements of type '{1}' do not fit its {2} bytes",
                       elements, array.descr, npy.size() - start - headerSize));
  array.bytes = npy.substr(start + headerSize, elements * size);
  return array;
}

//===----------------------------------------------------------------------===//
// The config
//===----------------------------------------------------------------------===//

/// Marian's model.yml: a map of scalars and lists of scalars.
struct MarianYaml {
  std::map<std::string, std::string> scalars;
  std::map<std::string, std::vector<std::string>> lists;
};

/// yaml-cpp reports errors by throwing: this file is built with exceptions
/// (CMakeLists.txt) and none leaves this function.
static llvm::Expected<MarianYaml> parseYaml(const std::string &where,
                                            llvm::StringRef text) {
  std::string error;
  MarianYaml keys;
  try {
    YAML::Node root = YAML::Load(text.str());
    if (!root.IsMap())
      return fail(where, "the model's YAML config is not a map of keys");
    for (const auto &entry : root) {
      std::string key = entry.first.as<std::string>();
      if (entry.second.IsScalar()) {
        keys.scalars[key] = entry.second.as<std::string>();
      } else if (entry.second.IsSequence()) {
        std::vector<std::string> &list = keys.lists[key];
        for (const YAML::Node &item : entry.second)
          if (item.IsScalar())
            list.push_back(item.as<std::string>());
      }
    }
  } catch (const YAML::Exception &e) {
    error = formatv("invalid YAML at line {0}: {1}", e.mark.line + 1, e.msg);
  }
  if (!error.empty())
    return fail(where, error);
  return keys;
}

llvm::Expected<std::string>
mlir::tfm::marianVocabularyJson(llvm::StringRef path) {
  auto text = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!text)
    return fail(path, "cannot open: " + text.getError().message());
  std::vector<std::pair<std::string, int64_t>> pieces;
  std::string error;
  try {
    YAML::Node root = YAML::Load((*text)->getBuffer().str());
    if (!root.IsMap())
      error = "expected a map from pieces to ids";
    else
      for (const auto &entry : root)
        pieces.emplace_back(entry.first.as<std::string>(),
                            entry.second.as<int64_t>());
  } catch (const YAML::Exception &e) {
    error = formatv("invalid YAML at line {0}: {1}", e.mark.line + 1, e.msg);
  }
  if (!error.empty())
    return fail(path, error);
  int64_t last = -1;
  llvm::json::Object vocab;
  for (auto &[piece, id] : pieces) {
    if (id < 0)
      return fail(path, formatv("piece '{0}' has id {1}", piece, id));
    last = std::max(last, id);
    vocab[piece] = id;
  }
  if (!vocab.get("<pad>"))
    vocab["<pad>"] = last + 1;
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(std::move(vocab));
  return json;
}

/// Marian's operations around a sub-layer or stack (transformer-preprocess
/// etc.: d = dropout, a = add, n = normalize) without the dropouts, which do
/// nothing in translation.
static std::string withoutDropout(std::string ops) {
  llvm::erase(ops, 'd');
  return ops;
}

/// Marian's config as a ModelConfig, checked as Hugging Face's converter
/// checks it (a transformer with untrained positions and tied output
/// embeddings), except that pre-norm transformers are read too, and with
/// Marian's own positions and layer norms.
static llvm::Error readConfig(const std::string &where, const MarianYaml &yaml,
                              ModelConfig &c) {
  auto scalar = [&](const char *key) -> std::optional<std::string> {
    auto it = yaml.scalars.find(key);
    if (it == yaml.scalars.end())
      return std::nullopt;
    return it->second;
  };
  auto integer = [&](const char *key, int64_t &out) -> llvm::Error {
    std::optional<std::string> s = scalar(key);
    if (!s)
      return fail(where, formatv("missing key '{0}'", key));
    if (llvm::StringRef(*s).getAsInteger(10, out) || out < 1)
      return fail(
          where,
          formatv("key '{0}' must be an integer >= 1, found '{1}'", key, *s));
    return llvm::Error::success();
  };
  // Settings the MarianMT architecture has (absent keys take Marian's
  // defaults, which are these).
  struct Expected {
    const char *key, *value;
  };
  for (Expected e : {Expected{"type", "transformer"},
                     {"transformer-ffn-depth", "2"},
                     {"transformer-train-position-embeddings", "false"},
                     {"transformer-no-projection", "false"},
                     {"layer-normalization", "false"},
                     {"right-left", "false"}}) {
    std::optional<std::string> value = scalar(e.key);
    if (!value && llvm::StringRef(e.key) == "type")
      return fail(where, "missing key 'type'");
    if (value && *value != e.value)
      return fail(where, formatv("unsupported {0} '{1}': tfmc reads Marian "
                                 "models with {0} '{2}' (the MarianMT "
                                 "architecture)",
                                 e.key, *value, e.value));
  }
  // Where the layer norms are (transformer.h: preProcess before each
  // sub-layer, postProcess after it and after the last layer, "top"): after
  // each sub-layer (post-norm, the default and Hugging Face's MarianMT), or
  // before each and on top of each stack (pre-norm, Marian's
  // --task transformer-base-prenorm).
  std::string emb = scalar("transformer-postprocess-emb").value_or("d"),
              pre = scalar("transformer-preprocess").value_or(""),
              post = scalar("transformer-postprocess").value_or("dan"),
              top = scalar("transformer-postprocess-top").value_or("");
  if (!withoutDropout(emb).empty())
    return fail(where, "unsupported transformer-postprocess-emb '" + emb +
                           "': tfmc reads Marian models with only dropout "
                           "after the embeddings ('d')");
  if (withoutDropout(pre).empty() && withoutDropout(post) == "an" &&
      withoutDropout(top).empty())
    c.normalizeBefore = false;
  else if (withoutDropout(pre) == "n" && withoutDropout(post) == "a" &&
           withoutDropout(top) == "n")
    c.normalizeBefore = true;
  else
    return fail(where,
                formatv("unsupported transformer-preprocess '{0}', "
                        "transformer-postprocess '{1}' and "
                        "transformer-postprocess-top '{2}': tfmc reads "
                        "post-norm Marian transformers ('', 'dan', '') and "
                        "pre-norm ones ('n', 'da', 'n')",
                        pre, post, top));
  for (auto [key, out] :
       {std::pair<const char *, int64_t *>{"dim-emb", &c.dModel},
        {"enc-depth", &c.encoderLayers},
        {"dec-depth", &c.decoderLayers},
        {"transformer-heads", &c.encoderHeads},
        {"transformer-dim-ffn", &c.encoderFfnDim}})
    if (llvm::Error e = integer(key, *out))
      return e;
  c.decoderHeads = c.encoderHeads;
  c.decoderFfnDim = c.encoderFfnDim;
  std::string activation =
      scalar("transformer-ffn-activation").value_or("swish");
  if (activation == "relu")
    c.activation = Activation::relu;
  else if (activation == "swish")
    c.activation = Activation::silu;
  else if (activation == "gelu")
    c.activation = Activation::gelu;
  else
    return fail(where, "unsupported transformer-ffn-activation '" + activation +
                           "' (supported: relu, swish, gelu)");
  auto flag = [&](const char *key) { return scalar(key) == "true"; };
  c.shareEmbeddings =
      flag("tied-embeddings-all") || flag("tied-embeddings-src");
  c.tieWordEmbeddings = flag("tied-embeddings-all") || flag("tied-embeddings");
  if (!c.tieWordEmbeddings)
    return fail(where, "the output layer is not tied to the target "
                       "embeddings (tied-embeddings false); tfmc reads tied "
                       "Marian models, as Hugging Face's converter does");
  if (c.dModel % c.encoderHeads != 0 || c.dModel % 2 != 0 || c.dModel < 4)
    return fail(where, formatv("dim-emb {0} must be an even multiple of "
                               "transformer-heads {1} and at least 4",
                               c.dModel, c.encoderHeads));
  c.scaleEmbedding = true;
  // Marian's sinusoids (node_initializers.cpp, sinusoidalPositionEmbeddings:
  // frequencies exp(-i log(10000) / (d/2 - 1))), from position 0 in the
  // encoder and at the decoder's first step; and its layer norms' epsilon.
  // Hugging Face's converter keeps neither: its MarianMT computes
  // 10000^(-i/(d/2)) and normalizes with 1e-5.
  c.sinusoidKind = PositionKind::sinusoidal_concat_half_minus_one;
  c.layerNormEpsilon = 1e-6;
  // Hugging Face's converter: positions up to dim-emb, </s> = 0 (also the
  // forced EOS), the padding token after the vocabulary, which the decoder
  // starts from and never generates.
  c.maxPositions = c.dModel;
  c.eosTokenId = 0;
  c.forcedEosTokenId = 0;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// The tensors
//===----------------------------------------------------------------------===//

/// Marian's names in a layer (after `encoder_lN_` / `decoder_lN_`) and the
/// MarianMT ones.
static const std::pair<const char *, const char *> kLayerNames[] = {
    {"self_Wq", "self_attn.q_proj.weight"},
    {"self_bq", "self_attn.q_proj.bias"},
    {"self_Wk", "self_attn.k_proj.weight"},
    {"self_bk", "self_attn.k_proj.bias"},
    {"self_Wv", "self_attn.v_proj.weight"},
    {"self_bv", "self_attn.v_proj.bias"},
    {"self_Wo", "self_attn.out_proj.weight"},
    {"self_bo", "self_attn.out_proj.bias"},
    {"context_Wq", "encoder_attn.q_proj.weight"},
    {"context_bq", "encoder_attn.q_proj.bias"},
    {"context_Wk", "encoder_attn.k_proj.weight"},
    {"context_bk", "encoder_attn.k_proj.bias"},
    {"context_Wv", "encoder_attn.v_proj.weight"},
    {"context_bv", "encoder_attn.v_proj.bias"},
    {"context_Wo", "encoder_attn.out_proj.weight"},
    {"context_bo", "encoder_attn.out_proj.bias"},
    {"ffn_W1", "fc1.weight"},
    {"ffn_b1", "fc1.bias"},
    {"ffn_W2", "fc2.weight"},
    {"ffn_b2", "fc2.bias"},
};

/// A layer's norms: Marian's prefix of their parameters (`_ln_scale` and
/// `_ln_bias` follow; then `_pre` for the norm before the sub-layer in a
/// pre-norm model) and the MarianMT name.
static const std::pair<const char *, const char *> kLayerNorms[] = {
    {"self_Wo", "self_attn_layer_norm"},
    {"context_Wo", "encoder_attn_layer_norm"},
    {"ffn_ffn", "final_layer_norm"},
};

/// The MarianMT name of a Marian layer tensor, or "": a post-norm model's
/// norms are `encoder_l1_self_Wo_ln_scale` etc., a pre-norm one's
/// `encoder_l1_self_Wo_ln_scale_pre` etc. and the stacks' top norms
/// `encoder_top_ln_scale` (model.encoder.layer_norm) etc.
static std::string layerTensorName(llvm::StringRef name, bool preNorm) {
  llvm::StringRef suffix = preNorm ? "_pre" : "";
  for (llvm::StringRef side : {"encoder", "decoder"}) {
    llvm::StringRef rest = name;
    if (preNorm && rest.consume_front((side + "_top_ln_").str())) {
      if (rest == "scale")
        return formatv("model.{0}.layer_norm.weight", side).str();
      if (rest == "bias")
        return formatv("model.{0}.layer_norm.bias", side).str();
      continue;
    }
    unsigned layer;
    if (!rest.consume_front((side + "_l").str()) ||
        rest.consumeInteger(10, layer) || layer < 1 || !rest.consume_front("_"))
      continue;
    auto hfName = [&](llvm::StringRef hf) {
      return formatv("model.{0}.layers.{1}.{2}", side, layer - 1, hf).str();
    };
    for (auto [marian, hf] : kLayerNames)
      if (rest == marian)
        return hfName(hf);
    for (auto [marian, hf] : kLayerNorms) {
      if (rest == (llvm::Twine(marian) + "_ln_scale" + suffix).str())
        return hfName((llvm::Twine(hf) + ".weight").str());
      if (rest == (llvm::Twine(marian) + "_ln_bias" + suffix).str())
        return hfName((llvm::Twine(hf) + ".bias").str());
    }
  }
  return "";
}

llvm::Expected<MarianCheckpointFile>
MarianCheckpointFile::open(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fail(path, "cannot open: " + buffer.getError().message());
  llvm::StringRef archive = (*buffer)->getBuffer();
  llvm::Expected<llvm::StringMap<ZipEntry>> entries =
      readZipDirectory(path, archive, "numpy savez");
  if (!entries)
    return entries.takeError();
  std::map<std::string, NpyArray> arrays; // by name, without ".npy"
  for (const auto &entry : *entries) {
    llvm::StringRef name = entry.getKey();
    if (!name.consume_back(".npy"))
      continue;
    llvm::Expected<NpyArray> array =
        parseNpy((path + ": " + name).str(),
                 archive.substr(entry.second.offset, entry.second.size));
    if (!array)
      return array.takeError();
    arrays[name.str()] = std::move(*array);
  }

  // The config: inside, else beside.
  MarianCheckpointFile file;
  file.filePath = path.str();
  std::string yamlWhere, yamlText;
  if (auto it = arrays.find("special:model.yml"); it != arrays.end()) {
    yamlWhere = (path + ": special:model.yml").str();
    yamlText = it->second.bytes.str();
    yamlText = yamlText.substr(0, yamlText.find('\0'));
  } else {
    llvm::SmallString<256> dir = llvm::sys::path::parent_path(path);
    for (std::string beside :
         {(path + ".yml").str(), (dir + "/decoder.yml").str()}) {
      auto text = llvm::MemoryBuffer::getFile(beside, /*IsText=*/true);
      if (!text)
        continue;
      yamlWhere = beside;
      yamlText = (*text)->getBuffer().str();
      break;
    }
    if (yamlWhere.empty())
      return fail(path, "no model config: neither the entry "
                        "special:model.yml nor " +
                            llvm::sys::path::filename(path) +
                            ".yml or decoder.yml beside it");
  }
  llvm::Expected<MarianYaml> yaml = parseYaml(yamlWhere, yamlText);
  if (!yaml)
    return yaml.takeError();
  ModelConfig &c = file.modelConfig;
  if (llvm::Error e = readConfig(yamlWhere, *yaml, c))
    return std::move(e);

  // Every array is a tensor we know; each goes under its MarianMT name, in
  // MarianMT's layout. One row is added to the embeddings and the logits
  // bias: the padding token, zero.
  auto bad = [&](llvm::StringRef name, const llvm::Twine &why) {
    return fail(path, "tensor '" + name + "': " + why);
  };
  std::optional<int64_t> vocab;
  for (const auto &[name, array] : arrays) {
    if (name == "special:model.yml")
      continue;
    std::optional<DType> dtype;
    if (array.descr == "<f4")
      dtype = DType::F32;
    else if (array.descr == "<f2")
      dtype = DType::F16;
    else
      return bad(name, "numpy type '" + array.descr +
                           "'; weights must be float32 or float16");
    bool embedding =
        name == "Wemb" || name == "encoder_Wemb" || name == "decoder_Wemb";
    std::string hfName;
    if (name == "Wemb")
      hfName = "model.shared.weight";
    else if (name == "encoder_Wemb" || name == "decoder_Wemb")
      hfName = "model." + name.substr(0, 7) + ".embed_tokens.weight";
    else if (name == "decoder_ff_logit_out_b")
      hfName = "final_logits_bias";
    else
      hfName = layerTensorName(name, c.normalizeBefore);
    if (hfName.empty())
      return bad(name, c.normalizeBefore
                           ? "not a tensor of Marian's pre-norm transformer "
                             "(Wemb, encoder_lN_*, decoder_lN_*, "
                             "decoder_ff_logit_out_b, encoder_top_ln_*, "
                             "decoder_top_ln_*; norms *_ln_*_pre)"
                           : "not a tensor of Marian's transformer (Wemb, "
                             "encoder_lN_*, decoder_lN_*, "
                             "decoder_ff_logit_out_b)");
    if (array.shape.size() != 2 || array.shape[0] < 1 || array.shape[1] < 1)
      return bad(name,
                 "expected a matrix, found shape " + formatShape(array.shape));
    int64_t rows = array.shape[0], cols = array.shape[1];
    uint64_t size = dtypeSize(*dtype);
    TensorInfo info;
    info.name = hfName;
    info.dtype = *dtype;
    info.begin = file.data.size();
    const char *from = array.bytes.data();
    if (embedding || name == "decoder_ff_logit_out_b") {
      // [V, d] and [1, V] as they are, plus the zero padding entry.
      int64_t words = embedding ? rows : cols;
      if (vocab && *vocab != words)
        return bad(name, formatv("{0} tokens where the other tensors have "
                                 "{1}",
                                 words, *vocab));
      vocab = words;
      info.shape = embedding ? llvm::SmallVector<int64_t>{rows + 1, cols}
                             : llvm::SmallVector<int64_t>{1, cols + 1};
      file.data.insert(file.data.end(), from, from + array.bytes.size());
      file.data.resize(file.data.size() + (embedding ? cols : 1) * size, 0);
    } else if (rows == 1) {
      // Biases and layer-norm parameters: [1, n] -> [n].
      info.shape = {cols};
      file.data.insert(file.data.end(), from, from + array.bytes.size());
    } else {
      // x . W with W [in, out] -> MarianMT's [out, in].
      info.shape = {cols, rows};
      size_t at = file.data.size();
      file.data.resize(at + array.bytes.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < cols; ++k)
          std::memcpy(&file.data[at + (k * rows + r) * size],
                      from + (r * cols + k) * size, size);
    }
    info.end = file.data.size();
    file.index[info.name] = file.tensorList.size();
    file.tensorList.push_back(std::move(info));
  }
  if (!vocab)
    return fail(path, "no embeddings (Wemb, or encoder_Wemb and "
                      "decoder_Wemb): not a Marian transformer model");
  c.vocabSize = c.targetVocabSize = *vocab + 1;
  c.padTokenId = c.decoderStartTokenId = *vocab;
  c.badWordsIds = {{*vocab}};
  if (auto dims = yaml->lists.find("dim-vocabs"); dims != yaml->lists.end())
    for (const std::string &dim : dims->second)
      if (dim != std::to_string(*vocab))
        return fail(yamlWhere, formatv("dim-vocabs {0} differs from the "
                                       "embeddings' {1} tokens",
                                       dim, *vocab));
  return std::move(file);
}

const TensorInfo *MarianCheckpointFile::lookup(llvm::StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &tensorList[it->second];
}

llvm::ArrayRef<char>
MarianCheckpointFile::bytes(const TensorInfo &tensor) const {
  return llvm::ArrayRef<char>(data.data() + tensor.begin,
                              tensor.end - tensor.begin);
}
