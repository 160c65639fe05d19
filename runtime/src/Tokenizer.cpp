//===- Tokenizer.cpp - SentencePiece text in and out ------------*- C++ -*-===//
//
// As tfmc's tokenizer.tfm describes it (tfm/abi/EmbeddedFiles.h): a
// SentencePiece model cuts the source text into pieces, which get ids from
// a JSON vocabulary (Marian, M2M-100) or from SentencePiece's own ids with
// fairseq's offset (NLLB, mBART-50) or none (T5); a source is framed with
// the tokens the description gives (a language's token, </s>); output ids
// become pieces that the target's SentencePiece model joins into text, the
// special and language tokens left out. A model without the description has
// Marian's layout: source.spm, target.spm and vocab.json, one vocabulary for
// both sides. The files sit beside the weights, or inside a translator with
// embedded weights (ModelFiles.h). Each is checked when opened, and every
// message names the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Tokenizer.h"

#include "runtime/src/Languages.h"
#include "runtime/src/ModelFiles.h"
#include "runtime/src/Status.h"
#include "runtime/src/TokenizerInfo.h"
#include "tfm/Utf8.h"

#include <fmt/ranges.h>

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using tfm_runtime::makeError;
using tfm_runtime::NamedBytes;

struct tfm_tokenizer_t {
  sentencepiece::SentencePieceProcessor source, target;
  std::unordered_map<std::string, int32_t> ids; // the JSON vocabulary
  std::vector<std::string> pieces;              // its inverse
  /// Without a JSON vocabulary: id = SentencePiece's id + offset.
  bool offsetIds = false;
  int32_t offset = 0;
  int32_t unk = 0, eos = 0;
  /// Tokens found by their piece before the vocabulary: the special and
  /// language tokens.
  std::unordered_map<std::string, int32_t> named;
  /// Ids left out of text output, and the first id that is none of the
  /// tokenizer's (the model's padding rows, never text).
  std::unordered_set<int32_t> hidden;
  int64_t size = 0;
  int64_t vocabSize = 0; // the model's
  /// The model's Marian layout, without tokenizer.tfm: ids outside the
  /// vocabulary are errors, as they always were.
  bool legacy = true;
  /// tfm_tokenizer_encode's framing: the default source language's.
  tfm_language_tokens frame{};
};

namespace {

const char *const kMarianFileNames[] = {"source.spm", "target.spm",
                                        "vocab.json"};

/// Marian's layout beside the weights or embedded: all three, or none.
tfm_status readMarianFiles(const tfm_runtime::ModelFiles &files,
                           std::vector<NamedBytes> &out) {
  std::vector<std::string> present, missing;
  for (const char *name : kMarianFileNames)
    (files.has(name) ? present : missing).push_back(files.describe(name));
  if (present.empty())
    return nullptr;
  if (!missing.empty()) {
    if (files.embedded)
      return makeError("{}: the embedded tokenizer is incomplete: it needs "
                       "source.spm, target.spm and vocab.json",
                       present.front().substr(0, present.front().find(" (")));
    return makeError("the tokenizer is incomplete: {} is there but not {}",
                     present.front(), fmt::join(missing, ", "));
  }
  for (const char *name : kMarianFileNames) {
    out.emplace_back();
    if (tfm_status s = files.read(name, out.back()))
      return s;
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// vocab.json: one JSON object from pieces to ids. A small parser, so that
// the runtime needs no JSON library.
//===----------------------------------------------------------------------===//

class VocabParser {
public:
  VocabParser(const std::string &text) : text(text) {}

  /// Parses {"piece": id, ...}; returns false with `error` set.
  bool parse(std::unordered_map<std::string, int32_t> &ids) {
    skipSpace();
    if (!expect('{'))
      return false;
    skipSpace();
    if (peek() == '}') {
      ++pos;
    } else {
      while (true) {
        std::string piece;
        size_t pieceAt = pos;
        if (!parseString(piece))
          return false;
        skipSpace();
        if (!expect(':'))
          return false;
        skipSpace();
        int64_t id;
        if (!parseId(piece, id))
          return false;
        if (!ids.emplace(piece, int32_t(id)).second)
          return fail(pieceAt,
                      fmt::format("piece \"{}\" appears twice", piece));
        skipSpace();
        if (peek() == ',') {
          ++pos;
          skipSpace();
          continue;
        }
        if (!expect('}'))
          return false;
        break;
      }
    }
    skipSpace();
    if (pos != text.size())
      return fail(pos, "unexpected text after the object");
    return true;
  }

  std::string error;

private:
  int peek() const { return pos < text.size() ? (unsigned char)text[pos] : -1; }

  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }

  bool fail(size_t at, const std::string &message) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text.size(); ++i, ++column)
      if (text[i] == '\n')
        ++line, column = 0;
    error = fmt::format("line {}, column {}: {}", line, column, message);
    return false;
  }

  bool expect(char c) {
    if (peek() == c) {
      ++pos;
      return true;
    }
    return fail(pos, fmt::format("expected '{}'{}", c,
                                 pos < text.size() ? "" : ", found the end"));
  }

  bool parseHex4(uint32_t &value) {
    if (text.size() - pos < 4)
      return fail(pos, "truncated \\u escape");
    value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f')
        value |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        value |= uint32_t(c - 'A' + 10);
      else
        return fail(pos - 1, "bad hex digit in \\u escape");
    }
    return true;
  }

  bool parseString(std::string &out) {
    if (peek() != '"')
      return fail(pos, "expected a piece in quotes");
    size_t start = pos++;
    while (true) {
      if (pos >= text.size())
        return fail(start, "unterminated string");
      unsigned char c = (unsigned char)text[pos++];
      if (c == '"')
        return true;
      if (c < 0x20)
        return fail(pos - 1, "control character in a string");
      if (c != '\\') {
        out += char(c);
        continue;
      }
      if (pos >= text.size())
        return fail(start, "unterminated string");
      char e = text[pos++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!parseHex4(cp))
          return false;
        // A UTF-16 surrogate pair stands for one code point.
        if (cp >= 0xD800 && cp < 0xDC00 && text.compare(pos, 2, "\\u") == 0) {
          pos += 2;
          uint32_t low;
          if (!parseHex4(low))
            return false;
          if (low < 0xDC00 || low >= 0xE000)
            return fail(pos - 6, "unpaired surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xD800 && cp < 0xE000) {
          return fail(pos - 6, "unpaired surrogate in \\u escape");
        }
        tfm_runtime::appendUtf8(out, cp);
        break;
      }
      default:
        return fail(pos - 2, fmt::format("bad escape '\\{}'", e));
      }
    }
  }

  bool parseId(const std::string &piece, int64_t &id) {
    size_t start = pos;
    while (pos < text.size() &&
           std::strchr("+-0123456789.eE", text[pos]) != nullptr)
      ++pos;
    std::string number = text.substr(start, pos - start);
    bool digitsOnly =
        !number.empty() && number.size() <= 9 &&
        number.find_first_not_of("0123456789") == std::string::npos;
    if (!digitsOnly)
      return fail(start,
                  fmt::format("the id of piece \"{}\" is not a non-negative "
                              "integer{}{}",
                              piece, number.empty() ? "" : ": ", number));
    id = std::strtol(number.c_str(), nullptr, 10);
    return true;
  }

  const std::string &text;
  size_t pos = 0;
};

/// vocab.json: `count` pieces (Marian: the model's vocabulary), ids below
/// `size`, </s> the model's EOS.
tfm_status loadVocab(const NamedBytes &file, const tfm_model_config &config,
                     int64_t count, const char *countWhat, int64_t size,
                     tfm_tokenizer_t &tok) {
  VocabParser parser(file.bytes);
  if (!parser.parse(tok.ids))
    return makeError("{}: not a valid vocabulary (a JSON object from pieces "
                     "to ids): {}",
                     file.name, parser.error);
  int64_t vocab = config.source_vocab_size;
  if (config.target_vocab_size != vocab)
    return makeError("{}: one vocabulary for source and target, but the "
                     "model's vocabularies differ ({} and {})",
                     file.name, vocab, config.target_vocab_size);
  if (int64_t(tok.ids.size()) != count)
    return makeError("{}: {} pieces, but {} {}", file.name, tok.ids.size(),
                     countWhat, count);
  tok.pieces.assign(size_t(size), std::string());
  std::vector<bool> seen(size_t(size), false);
  for (const auto &[piece, id] : tok.ids) {
    if (id >= size)
      return makeError(
          "{}: piece \"{}\" has id {}, outside the vocabulary of {}", file.name,
          piece, id, size);
    if (seen[id])
      return makeError("{}: id {} is given to more than one piece", file.name,
                       id);
    seen[id] = true;
    tok.pieces[id] = piece;
  }
  auto require = [&](const char *piece, int64_t expected,
                     int32_t &out) -> tfm_status {
    auto it = tok.ids.find(piece);
    if (it == tok.ids.end())
      return makeError("{}: no entry for {}", file.name, piece);
    if (expected >= 0 && it->second != expected)
      return makeError("{}: {} has id {}, but the model's is {}", file.name,
                       piece, it->second, expected);
    out = it->second;
    return nullptr;
  };
  if (tfm_status s = require("</s>", config.eos_token_id, tok.eos))
    return s;
  return require("<unk>", -1, tok.unk);
}

tfm_status loadSentencePiece(const NamedBytes &file,
                             sentencepiece::SentencePieceProcessor &sp) {
  sentencepiece::util::Status s;
  // SentencePiece checks most of a model and returns a status, but some
  // damage throws from deep inside it (a piece of zero length: darts_clone's
  // "zero-length key"), which would end the translator; found by
  // fuzz/TokenizerFuzzer.
  try {
    s = sp.LoadFromSerializedProto(file.bytes);
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const std::exception &e) {
    return makeError("{}: not a SentencePiece model: {}", file.name, e.what());
  }
  if (!s.ok())
    return makeError("{}: not a SentencePiece model: {}", file.name,
                     s.ToString());
  return nullptr;
}

/// Runs `body`, an allocation failure becoming a status: no exception
/// crosses the C API.
template <typename Body> tfm_status guarded(const char *what, Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return makeError("out of memory {}", what);
  }
}

/// Marian's layout, as the runtime has always read it.
tfm_status openMarian(const std::vector<NamedBytes> &files,
                      const tfm_model_config &config, tfm_tokenizer_t &tok) {
  if (tfm_status s = loadSentencePiece(files[0], tok.source))
    return s;
  if (tfm_status s = loadSentencePiece(files[1], tok.target))
    return s;
  int64_t vocab = config.source_vocab_size;
  if (tfm_status s = loadVocab(files[2], config, vocab,
                               "the model's vocabulary has", vocab, tok))
    return s;
  tok.size = vocab;
  tok.hidden = {tok.eos, int32_t(config.pad_token_id)};
  tok.frame.source_suffix[0] = tok.eos;
  tok.frame.source_suffix_length = 1;
  return nullptr;
}

/// What tokenizer.tfm describes; the runtime adds no rule of its own.
tfm_status openDescribed(const tfm_runtime::ModelFiles &files,
                         const tfm_runtime::TokenizerInfo &info,
                         const tfm_model_config &config, tfm_tokenizer_t &tok) {
  tok.legacy = false;
  tok.size = info.size;
  NamedBytes file;
  for (auto [name, sp] : {std::pair{&info.sourceSpm, &tok.source},
                          std::pair{&info.targetSpm, &tok.target}}) {
    if (tfm_status s = files.read(*name, file))
      return s;
    if (tfm_status s = loadSentencePiece(file, *sp))
      return s;
  }
  for (const auto &[piece, id] : info.specials) {
    tok.named.emplace(piece, id);
    tok.hidden.insert(id);
  }
  for (const tfm_runtime::LanguageEntry &l : info.languages)
    if (l.id >= 0) {
      tok.named.emplace(l.code, l.id);
      tok.hidden.insert(l.id);
    }
  auto special = [&](const char *piece, int32_t otherwise) {
    auto it = tok.named.find(piece);
    return it == tok.named.end() ? otherwise : it->second;
  };
  tok.eos = special("</s>", int32_t(config.eos_token_id));
  tok.unk = special("<unk>", 0);
  if (!info.vocab.empty()) {
    if (tfm_status s = files.read(info.vocab, file))
      return s;
    if (tfm_status s = loadVocab(file, config, info.vocabCount,
                                 "tfmc described one of", info.size, tok))
      return s;
  } else {
    tok.offsetIds = true;
    tok.offset = info.offset;
  }
  return tfm_runtime::languageTokens(info, -1, -1, tok.frame);
}

/// The ids of the pieces (no frame) `spm` (the source's or the target's
/// SentencePiece model) cuts the text into.
tfm_status pieceIds(const tfm_tokenizer &tok,
                    const sentencepiece::SentencePieceProcessor &spm,
                    const char *text, size_t length,
                    std::vector<int32_t> &out) {
  std::vector<std::string> pieces;
  sentencepiece::util::Status s =
      spm.Encode(absl::string_view(text, length), &pieces);
  if (!s.ok())
    return makeError("cannot cut the text into pieces: {}", s.ToString());
  for (const std::string &piece : pieces) {
    if (tok.offsetIds) {
      // SentencePiece's unknown piece is the description's <unk>: its id 0
      // under fairseq's alignment, T5's 2.
      int id = spm.PieceToId(piece);
      out.push_back(spm.IsUnknown(id) ? tok.unk : id + tok.offset);
      continue;
    }
    auto it = tok.ids.find(piece);
    out.push_back(it == tok.ids.end() ? tok.unk : it->second);
  }
  return nullptr;
}

/// The piece of output id `id`, or "" for one left out of text.
tfm_status outputPiece(const tfm_tokenizer &tok, int32_t id, std::string &out) {
  out.clear();
  int64_t limit = tok.legacy ? int64_t(tok.pieces.size()) : tok.vocabSize;
  if (id < 0 || id >= limit)
    return makeError("token id {} is outside the vocabulary of {}", id, limit);
  if (tok.hidden.count(id) || id >= tok.size)
    return nullptr;
  if (!tok.offsetIds) {
    out = tok.pieces[id];
    return nullptr;
  }
  int spmId = id - tok.offset;
  if (spmId >= 0 && spmId < tok.target.GetPieceSize() &&
      !tok.target.IsControl(spmId) && !tok.target.IsUnknown(spmId))
    out = tok.target.IdToPiece(spmId);
  return nullptr;
}

/// `ids` in the encode calls' out parameters, as an array the caller frees
/// with tfm_free.
tfm_status handOut(const std::vector<int32_t> &ids, int32_t **out_ids,
                   int32_t *out_length) {
  // One byte more: an empty sentence's malloc(0) may give null, which
  // would read as out of memory.
  auto *out =
      static_cast<int32_t *>(std::malloc(ids.size() * sizeof(int32_t) + 1));
  if (!out)
    return makeError("out of memory encoding a sentence");
  std::memcpy(out, ids.data(), ids.size() * sizeof(int32_t));
  *out_ids = out;
  *out_length = int32_t(ids.size());
  return nullptr;
}

} // namespace

tfm_status tfm_runtime::openTokenizer(const char *model_path,
                                      const tfm_model_config &config,
                                      tfm_tokenizer **out_tokenizer) {
  *out_tokenizer = nullptr;
  return guarded("opening the tokenizer", [&]() -> tfm_status {
    ModelFiles files;
    if (tfm_status s = ModelFiles::open(model_path, files))
      return s;
    TokenizerInfo info;
    if (tfm_status s = readTokenizerInfo(files, config, info))
      return s;
    auto tok = std::make_unique<tfm_tokenizer_t>();
    tok->vocabSize = config.target_vocab_size;
    if (info.described) {
      if (info.sourceSpm.empty() || info.targetSpm.empty())
        return nullptr; // ids only
      if (tfm_status s = openDescribed(files, info, config, *tok))
        return s;
    } else {
      std::vector<NamedBytes> marian;
      if (tfm_status s = readMarianFiles(files, marian))
        return s;
      if (marian.empty())
        return nullptr;
      if (tfm_status s = openMarian(marian, config, *tok))
        return s;
    }
    *out_tokenizer = tok.release();
    return nullptr;
  });
}

void tfm_runtime::closeTokenizer(tfm_tokenizer *tokenizer) { delete tokenizer; }

tfm_status tfm_runtime::encodeText(const tfm_tokenizer &tok,
                                   const tfm_language_tokens *frame,
                                   const char *text, size_t length,
                                   int32_t **out_ids, int32_t *out_length) {
  *out_ids = nullptr;
  *out_length = 0;
  if (!frame)
    frame = &tok.frame;
  return guarded("encoding a sentence", [&]() -> tfm_status {
    std::vector<int32_t> ids(frame->source_prefix,
                             frame->source_prefix +
                                 frame->source_prefix_length);
    if (tfm_status s = pieceIds(tok, tok.source, text, length, ids))
      return s;
    ids.insert(ids.end(), frame->source_suffix,
               frame->source_suffix + frame->source_suffix_length);
    return handOut(ids, out_ids, out_length);
  });
}

tfm_status tfm_runtime::encodeTarget(const tfm_tokenizer &tok, const char *text,
                                     size_t length, int32_t **out_ids,
                                     int32_t *out_length) {
  *out_ids = nullptr;
  *out_length = 0;
  return guarded("encoding a target sentence", [&]() -> tfm_status {
    std::vector<int32_t> ids;
    if (tfm_status s = pieceIds(tok, tok.target, text, length, ids))
      return s;
    return handOut(ids, out_ids, out_length);
  });
}

tfm_status tfm_runtime::pieceId(const tfm_tokenizer &tok, const char *piece,
                                size_t length, int32_t *out_id) {
  return guarded("looking up a piece", [&]() -> tfm_status {
    std::string wanted(piece, length);
    auto named = tok.named.find(wanted);
    if (named != tok.named.end()) {
      *out_id = named->second;
      return nullptr;
    }
    if (tok.offsetIds) {
      // An unknown piece gets SentencePiece's unknown id: not a piece.
      int id = tok.source.PieceToId(wanted);
      if (!tok.source.IsUnknown(id)) {
        *out_id = id + tok.offset;
        return nullptr;
      }
    } else if (auto it = tok.ids.find(wanted); it != tok.ids.end()) {
      *out_id = it->second;
      return nullptr;
    }
    return makeError("\"{}\" is not a piece of the vocabulary", wanted);
  });
}

tfm_status tfm_runtime::decodeIds(const tfm_tokenizer &tok, const int32_t *ids,
                                  int32_t length, char **out_text,
                                  size_t *out_length) {
  *out_text = nullptr;
  *out_length = 0;
  return guarded("decoding a sentence", [&]() -> tfm_status {
    std::vector<std::string> pieces;
    std::string piece;
    for (int32_t i = 0; i < length; ++i) {
      if (tfm_status s = outputPiece(tok, ids[i], piece))
        return s;
      if (!piece.empty())
        pieces.push_back(piece);
    }
    std::string text;
    sentencepiece::util::Status s = tok.target.Decode(pieces, &text);
    if (!s.ok())
      return makeError("cannot join pieces into text: {}", s.ToString());
    char *copy = static_cast<char *>(std::malloc(text.size() + 1));
    if (!copy)
      return makeError("out of memory decoding a sentence");
    std::memcpy(copy, text.c_str(), text.size() + 1);
    *out_text = copy;
    *out_length = text.size();
    return nullptr;
  });
}
