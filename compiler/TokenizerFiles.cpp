//===- TokenizerFiles.cpp - A model's tokenizer, carried along --*- C++ -*-===//
//
// Marian's layout of the tokenizer (source.spm, target.spm, vocab.json, or
// a release's vocab.yml), and the files copied beside the translator; the
// families' rules are in TokenizerFamilies.cpp.
//
//===----------------------------------------------------------------------===//

#include "compiler/TokenizerFiles.h"
#include "compiler/Support.h"

#include "compiler/MarianCheckpoint.h"
#include "compiler/TokenizerFamilies.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using mlir::tfm::fail;
using mlir::tfm::pathIn;
using mlir::tfm::TokenizerFiles;
using mlir::tfm::TokenizerTarget;

static const char *const kTokenizerFileNames[] = {"source.spm", "target.spm",
                                                  "vocab.json"};

/// The checks of vocab.json that need no SentencePiece, so that a bad one
/// fails here rather than in every run of the translator (which checks the
/// .spm files too).
static Error checkVocabulary(StringRef path, int64_t vocabSize,
                             int64_t eosTokenId) {
  Expected<json::Value> parsed = mlir::tfm::readTokenizerJson(path);
  if (!parsed)
    return parsed.takeError();
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
    std::string path = pathIn(modelDir, name);
    (sys::fs::exists(path) ? present : missing).push_back(path);
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
    std::string generated = pathIn(outDir, "vocab.json");
    std::error_code ec;
    raw_fd_ostream out(generated, ec);
    if (ec)
      return fail(generated + ": " + ec.message());
    out << *json;
    out.close();
    if (out.has_error())
      return fail(generated + ": " + out.error().message());
    present.push_back(generated);
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

Expected<TokenizerFiles>
mlir::tfm::findTokenizerFiles(StringRef modelDir, const TokenizerTarget &model,
                              StringRef outDir) {
  return findFamilyTokenizerFiles(modelDir, model, outDir);
}

Error mlir::tfm::copyTokenizerFiles(ArrayRef<std::string> files,
                                    StringRef outDir) {
  for (const std::string &file : files) {
    std::string target = pathIn(outDir, sys::path::filename(file));
    if (sys::fs::equivalent(file, target))
      continue;
    if (std::error_code ec = sys::fs::copy_file(file, target))
      return fail("copying " + file + " to " + target + ": " + ec.message());
  }
  return Error::success();
}
