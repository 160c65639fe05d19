//===- Tokenizer.cpp - SentencePiece text in and out ------------*- C++ -*-===//
//
// Marian's layout: source.spm cuts the source text into pieces, vocab.json
// maps pieces to ids in one vocabulary shared by both sides, target.spm
// joins the output's pieces into text. The files sit beside the weights, or
// inside a translator with embedded weights (EmbeddedFiles.h). Each is
// checked when opened, and every message names the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/Tokenizer.h"

#include "runtime/src/Status.h"
#include "tfm/abi/EmbeddedFiles.h"
#include "tfm/abi/ModelInfo.h"

#include <fmt/ranges.h>

#include <sentencepiece_processor.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <memory>
#include <new>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

using tfm_runtime::makeError;

struct tfm_tokenizer_t {
  sentencepiece::SentencePieceProcessor source, target;
  std::unordered_map<std::string, int32_t> ids; // vocab.json
  std::vector<std::string> pieces;              // its inverse
  int32_t unk = 0, eos = 0, pad = 0;
};

namespace {

const char *const kTokenizerFileNames[] = {"source.spm", "target.spm",
                                           "vocab.json"};

/// One of the tokenizer's files: its bytes, and what to call it in messages.
struct NamedBytes {
  std::string name;
  std::string bytes;
  std::string fileName = {}; // within an executable: "vocab.json", ...
};

/// A file descriptor that closes itself.
struct FileHandle {
  int fd;
  explicit FileHandle(int fd) : fd(fd) {}
  ~FileHandle() {
    if (fd >= 0)
      close(fd);
  }
};

bool readAt(int fd, void *buffer, uint64_t size, uint64_t offset) {
  char *out = static_cast<char *>(buffer);
  while (size > 0) {
    ssize_t n = pread(fd, out, size, off_t(offset));
    if (n <= 0) {
      if (n < 0 && errno == EINTR)
        continue;
      return false;
    }
    out += n;
    size -= uint64_t(n);
    offset += uint64_t(n);
  }
  return true;
}

tfm_status readWholeFile(const std::string &path, std::string &out) {
  FileHandle file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (file.fd < 0 || fstat(file.fd, &st) != 0)
    return makeError("{}: cannot open: {}", path, std::strerror(errno));
  out.resize(size_t(st.st_size));
  if (!readAt(file.fd, out.data(), out.size(), 0))
    return makeError("{}: cannot read: {}", path, std::strerror(errno));
  return nullptr;
}

/// The tokenizer files inside `path`, a translator with embedded weights.
/// `found` is set when `path` has embedded weights at all; `files` stays
/// empty when it carries no tokenizer.
tfm_status readEmbeddedFiles(const std::string &path, bool &found,
                             std::vector<NamedBytes> &files) {
  found = false;
  FileHandle file(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st;
  if (file.fd < 0 || fstat(file.fd, &st) != 0)
    return makeError("{}: cannot open: {}", path, std::strerror(errno));
  uint64_t size = uint64_t(st.st_size);
  tfm_runtime::EmbedTrailer embed;
  tfm_runtime::EmbeddedFilesTrailer trailer;
  if (size < sizeof embed + sizeof trailer ||
      !readAt(file.fd, &embed, sizeof embed, size - sizeof embed) ||
      std::memcmp(embed.magic, tfm_runtime::kEmbedMagic, 8) != 0)
    return nullptr;
  found = true;
  uint64_t trailerAt = size - sizeof embed - sizeof trailer;
  if (!readAt(file.fd, &trailer, sizeof trailer, trailerAt) ||
      std::memcmp(trailer.magic, tfm_runtime::kEmbeddedFilesMagic, 8) != 0)
    return nullptr; // embedded weights, no other files
  uint64_t weightsEnd = embed.offset + embed.size;
  if (trailer.count > tfm_runtime::kMaxEmbeddedFiles ||
      trailer.count * sizeof(tfm_runtime::EmbeddedFile) >
          trailerAt - weightsEnd)
    return makeError("{}: corrupt table of embedded files", path);
  uint64_t tableAt =
      trailerAt - trailer.count * sizeof(tfm_runtime::EmbeddedFile);
  std::vector<tfm_runtime::EmbeddedFile> table(trailer.count);
  if (!readAt(file.fd, table.data(), trailer.count * sizeof(table[0]), tableAt))
    return makeError("{}: cannot read: {}", path, std::strerror(errno));
  for (const tfm_runtime::EmbeddedFile &entry : table) {
    std::string name(entry.name, strnlen(entry.name, sizeof entry.name));
    if (entry.offset < weightsEnd || entry.offset > tableAt ||
        entry.size > tableAt - entry.offset)
      return makeError("{}: corrupt table of embedded files ({})", path, name);
    NamedBytes named{fmt::format("{} (embedded {})", path, name), std::string(),
                     name};
    named.bytes.resize(entry.size);
    if (!readAt(file.fd, named.bytes.data(), entry.size, entry.offset))
      return makeError("{}: cannot read: {}", named.name, std::strerror(errno));
    files.push_back(std::move(named));
  }
  // In the order of kTokenizerFileNames, each once.
  std::vector<NamedBytes> ordered;
  for (const char *wanted : kTokenizerFileNames)
    for (NamedBytes &f : files)
      if (f.fileName == wanted) {
        ordered.push_back(std::move(f));
        break;
      }
  if (ordered.size() != 3)
    return makeError("{}: the embedded tokenizer is incomplete: it needs "
                     "source.spm, target.spm and vocab.json",
                     path);
  files = std::move(ordered);
  return nullptr;
}

/// source.spm, target.spm and vocab.json in `dir`: all three, or none.
tfm_status readFilesBeside(const std::string &dir,
                           std::vector<NamedBytes> &files) {
  std::vector<std::string> present, missing;
  for (const char *name : kTokenizerFileNames)
    (access((dir + name).c_str(), F_OK) == 0 ? present : missing)
        .push_back(dir + name);
  if (present.empty())
    return nullptr;
  if (!missing.empty()) {
    return makeError("the tokenizer is incomplete: {} is there but not {}",
                     present.front(), fmt::join(missing, ", "));
  }
  for (const std::string &path : present) {
    NamedBytes named{path, std::string()};
    if (tfm_status s = readWholeFile(path, named.bytes))
      return s;
    files.push_back(std::move(named));
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

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
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
        appendUtf8(out, cp);
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

tfm_status loadVocab(const NamedBytes &file, const tfm_model_config &config,
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
  if (int64_t(tok.ids.size()) != vocab)
    return makeError("{}: {} pieces, but the model's vocabulary has {}",
                     file.name, tok.ids.size(), vocab);
  tok.pieces.assign(size_t(vocab), std::string());
  std::vector<bool> seen(size_t(vocab), false);
  for (const auto &[piece, id] : tok.ids) {
    if (id >= vocab)
      return makeError(
          "{}: piece \"{}\" has id {}, outside the vocabulary of {}", file.name,
          piece, id, vocab);
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
  if (tfm_status s = require("<unk>", -1, tok.unk))
    return s;
  tok.pad = int32_t(config.pad_token_id);
  return nullptr;
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

} // namespace

tfm_status tfm_runtime::openTokenizer(const char *model_path,
                                      const tfm_model_config &config,
                                      tfm_tokenizer **out_tokenizer) {
  *out_tokenizer = nullptr;
  return guarded("opening the tokenizer", [&]() -> tfm_status {
    std::string path = model_path;
    std::vector<NamedBytes> files;
    bool embedded = false;
    if (tfm_status s = readEmbeddedFiles(path, embedded, files))
      return s;
    if (!embedded)
      if (tfm_status s =
              readFilesBeside(path.substr(0, path.rfind('/') + 1), files))
        return s;
    if (files.empty())
      return nullptr;
    auto tok = std::make_unique<tfm_tokenizer_t>();
    if (tfm_status s = loadSentencePiece(files[0], tok->source))
      return s;
    if (tfm_status s = loadSentencePiece(files[1], tok->target))
      return s;
    if (tfm_status s = loadVocab(files[2], config, *tok))
      return s;
    *out_tokenizer = tok.release();
    return nullptr;
  });
}

void tfm_runtime::closeTokenizer(tfm_tokenizer *tokenizer) { delete tokenizer; }

tfm_status tfm_runtime::encodeText(const tfm_tokenizer &tok, const char *text,
                                   size_t length, int32_t **out_ids,
                                   int32_t *out_length) {
  *out_ids = nullptr;
  *out_length = 0;
  return guarded("encoding a sentence", [&]() -> tfm_status {
    std::vector<std::string> pieces;
    sentencepiece::util::Status s =
        tok.source.Encode(absl::string_view(text, length), &pieces);
    if (!s.ok())
      return makeError("cannot cut the text into pieces: {}", s.ToString());
    auto *ids = static_cast<int32_t *>(
        std::malloc((pieces.size() + 1) * sizeof(int32_t)));
    if (!ids)
      return makeError("out of memory encoding a sentence");
    for (size_t i = 0; i < pieces.size(); ++i) {
      auto it = tok.ids.find(pieces[i]);
      ids[i] = it == tok.ids.end() ? tok.unk : it->second;
    }
    ids[pieces.size()] = tok.eos; // Marian ends every source with EOS
    *out_ids = ids;
    *out_length = int32_t(pieces.size() + 1);
    return nullptr;
  });
}

tfm_status tfm_runtime::pieceId(const tfm_tokenizer &tok, const char *piece,
                                size_t length, int32_t *out_id) {
  return guarded("looking up a piece", [&]() -> tfm_status {
    auto it = tok.ids.find(std::string(piece, length));
    if (it == tok.ids.end())
      return makeError("\"{}\" is not a piece of the vocabulary",
                       std::string(piece, length));
    *out_id = it->second;
    return nullptr;
  });
}

tfm_status tfm_runtime::decodeIds(const tfm_tokenizer &tok, const int32_t *ids,
                                  int32_t length, char **out_text,
                                  size_t *out_length) {
  *out_text = nullptr;
  *out_length = 0;
  return guarded("decoding a sentence", [&]() -> tfm_status {
    std::vector<std::string> pieces;
    for (int32_t i = 0; i < length; ++i) {
      if (ids[i] < 0 || size_t(ids[i]) >= tok.pieces.size())
        return makeError("token id {} is outside the vocabulary of {}", ids[i],
                         tok.pieces.size());
      if (ids[i] != tok.eos && ids[i] != tok.pad)
        pieces.push_back(tok.pieces[ids[i]]);
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
