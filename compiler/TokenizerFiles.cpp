//===- TokenizerFiles.cpp - A model's tokenizer, carried along --*- C++ -*-===//

#include "compiler/TokenizerFiles.h"

#include "compiler/MarianCheckpoint.h"
#include "tfm/abi/EmbeddedFiles.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace llvm;

static const char *const kTokenizerFileNames[] = {"source.spm", "target.spm",
                                                  "vocab.json"};

static Error fail(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message.str());
}

/// The checks of vocab.json that need no SentencePiece, so that a bad one
/// fails here rather than in every run of the translator (which checks the
/// .spm files too).
static Error checkVocabulary(StringRef path, int64_t vocabSize,
                             int64_t eosTokenId) {
  auto text = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!text)
    return fail(path + ": " + text.getError().message());
  Expected<json::Value> parsed = json::parse((*text)->getBuffer());
  if (!parsed)
    return fail(path + ": not valid JSON: " + toString(parsed.takeError()));
  const json::Object *vocab = parsed->getAsObject();
  if (!vocab)
    return fail(path + ": expected a JSON object from pieces to ids");
  if (int64_t(vocab->size()) != vocabSize)
    return fail(path + ": " + Twine(vocab->size()) +
                " pieces, but the model's vocabulary has " + Twine(vocabSize));
  std::optional<int64_t> eos = vocab->getInteger("</s>");
  if (!eos)
    return fail(path + ": no entry for </s>");
  if (*eos != eosTokenId)
    return fail(path + ": </s> has id " + Twine(*eos) +
                ", but the model's is " + Twine(eosTokenId));
  if (!vocab->getInteger("<unk>"))
    return fail(path + ": no entry for <unk>");
  return Error::success();
}

/// The one `*.vocab.yml` of a Marian release in `modelDir`, or "".
static std::string marianVocabulary(StringRef modelDir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (sys::fs::directory_iterator it(modelDir, ec), end; it != end && !ec;
       it.increment(ec))
    if (StringRef(it->path()).ends_with("vocab.yml"))
      found.push_back(it->path());
  return found.size() == 1 ? found[0] : "";
}

Expected<SmallVector<std::string, 3>>
mlir::tfm::findTokenizerFiles(StringRef modelDir, int64_t vocabSize,
                              int64_t eosTokenId, StringRef outDir) {
  SmallVector<std::string, 3> present, missing;
  for (const char *name : kTokenizerFileNames) {
    SmallString<256> path(modelDir);
    sys::path::append(path, name);
    (sys::fs::exists(path) ? present : missing).push_back(path.str().str());
  }
  if (present.empty())
    return present;
  // Marian's layout: vocab.json made from its vocab.yml.
  std::string yml = marianVocabulary(modelDir);
  if (missing.size() == 1 && sys::path::filename(missing[0]) == "vocab.json" &&
      !yml.empty()) {
    Expected<std::string> json = marianVocabularyJson(yml);
    if (!json)
      return json.takeError();
    SmallString<256> generated(outDir);
    sys::path::append(generated, "vocab.json");
    std::error_code ec;
    raw_fd_ostream out(generated, ec);
    if (ec)
      return fail(generated + ": " + ec.message());
    out << *json;
    out.close();
    if (out.has_error())
      return fail(generated + ": " + out.error().message());
    present.push_back(generated.str().str());
    missing.clear();
  }
  if (!missing.empty())
    return fail(present.front() + " is there but not " + join(missing, ", ") +
                ": a tokenizer needs source.spm, target.spm and vocab.json "
                "(or a Marian *.vocab.yml)");
  if (Error err = checkVocabulary(present.back(), vocabSize, eosTokenId))
    return std::move(err);
  return present;
}

Error mlir::tfm::copyTokenizerFiles(ArrayRef<std::string> files,
                                    StringRef outDir) {
  for (const std::string &file : files) {
    SmallString<256> target(outDir);
    sys::path::append(target, sys::path::filename(file));
    if (sys::fs::equivalent(file, target))
      continue;
    if (std::error_code ec = sys::fs::copy_file(file, target))
      return fail("copying " + file + " to " + target + ": " + ec.message());
  }
  return Error::success();
}

Error mlir::tfm::appendEmbeddedFiles(raw_ostream &out, uint64_t position,
                                     ArrayRef<std::string> files) {
  if (files.empty())
    return Error::success();
  std::vector<tfm_runtime::EmbeddedFile> table;
  for (const std::string &file : files) {
    auto bytes = MemoryBuffer::getFile(file, /*IsText=*/false,
                                       /*RequiresNullTerminator=*/false);
    if (!bytes)
      return fail(file + ": " + bytes.getError().message());
    StringRef name = sys::path::filename(file);
    tfm_runtime::EmbeddedFile entry{};
    if (name.size() >= sizeof entry.name)
      return fail(file + ": file name too long to embed");
    std::memcpy(entry.name, name.data(), name.size());
    entry.offset = position;
    entry.size = (*bytes)->getBufferSize();
    out << (*bytes)->getBuffer();
    position += entry.size;
    table.push_back(entry);
  }
  out.write(reinterpret_cast<const char *>(table.data()),
            table.size() * sizeof(table[0]));
  tfm_runtime::EmbeddedFilesTrailer trailer{table.size(), {}};
  std::memcpy(trailer.magic, tfm_runtime::kEmbeddedFilesMagic, 8);
  out.write(reinterpret_cast<const char *>(&trailer), sizeof trailer);
  return Error::success();
}
