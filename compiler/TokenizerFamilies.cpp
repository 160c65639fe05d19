//===- TokenizerFamilies.cpp - Each family's tokenizer rules ----*- C++ -*-===//
//
// The families' id rules are those of their Hugging Face tokenizers
// (tokenization_m2m_100.py, tokenization_nllb.py, tokenization_mbart50.py,
// tokenization_t5.py):
//
//   M2M-100    vocab.json gives the pieces' ids; the language tokens __xx__
//              follow at len(vocab.json) + their index in fairseq's list,
//              then the made-up words; source = __src__ pieces </s>
//   NLLB       fairseq's alignment: <s> 0, <pad> 1, </s> 2, <unk> 3, a
//              piece's id SentencePiece's + 1; the codes (eng_Latn) at
//              pieces + 1 + index, then <mask>; source = src pieces </s>
//              (legacy_behaviour: pieces </s> src)
//   mBART-50   the same alignment with its 52 codes (en_XX);
//              source = src pieces </s>
//
// and the target language's token is forced first (forced_bos_token_id).
//
//   T5, mT5    SentencePiece's own ids (<pad> 0, </s> 1, <unk> 2), the
//              sentinels <extra_id_N> after the pieces, counting down;
//              source = pieces </s>
//   MADLAD-400 T5's, with target languages among the pieces (<2de>): the
//              target's token goes in the source, as "<2de> text" is cut
//              (▁ <2de> pieces </s>), and nothing is forced
//
//===----------------------------------------------------------------------===//

#include "compiler/TokenizerFamilies.h"
#include "compiler/Support.h"

#include "compiler/LanguageTables.h"
#include "compiler/SentencePieceModel.h"
#include "tfm/abi/EmbeddedFiles.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using mlir::tfm::fail;
using mlir::tfm::fairseqLanguages;
using mlir::tfm::Language;
using mlir::tfm::m2m100Languages;
using mlir::tfm::madladLanguages;
using mlir::tfm::pathIn;
using mlir::tfm::readSentencePiece;
using mlir::tfm::SentencePieceSummary;
using mlir::tfm::TokenizerFiles;
using mlir::tfm::TokenizerTarget;

static const char kSentencePieceName[] = "sentencepiece.bpe.model";
static const char kT5SentencePieceName[] = "spiece.model";

Expected<json::Value> mlir::tfm::readTokenizerJson(StringRef path) {
  auto text = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!text)
    return fail(path + ": " + text.getError().message());
  Expected<json::Value> parsed = json::parse((*text)->getBuffer());
  if (!parsed)
    return fail(path + ": not valid JSON: " + toString(parsed.takeError()));
  return parsed;
}

namespace {

/// The description the runtime reads (tfm/abi/EmbeddedFiles.h).
struct Description {
  std::string kind;
  std::string text; // the records after the header and kind
  raw_string_ostream os{text};
  void languages(ArrayRef<Language> all) {
    for (const Language &l : all) {
      os << "language " << l.code << " " << l.id;
      for (const std::string &name : l.names)
        os << " " << name;
      os << "\n";
    }
  }
  void fairseqSpecials() {
    os << "special <s> 0\nspecial <pad> 1\nspecial </s> 2\nspecial <unk> 3\n";
  }
};

/// The family's files and checks, for one model.
class FamilyTokenizer {
public:
  FamilyTokenizer(StringRef dir, const TokenizerTarget &model)
      : dir(dir), model(model) {}

  Expected<TokenizerFiles> find(StringRef outDir);

private:
  Error readTokenizerConfig();
  StringRef configString(StringRef key, StringRef otherwise) const;
  Expected<bool> m2m100(Description &d);
  Expected<bool> fairseqAligned(Description &d, StringRef kind,
                                StringRef defaultSource);
  Expected<bool> multilingual(Description &d);
  Expected<bool> t5(Description &d, StringRef outDir);
  void describeT5(Description &d, const SentencePieceSummary &spm,
                  int64_t sentinels, ArrayRef<Language> languages) const;
  Expected<bool> marianLayout(Description &d, StringRef outDir);
  Expected<bool> describe(Description &d, StringRef outDir);
  Error checkSize(const Twine &what, int64_t size) const;
  Error checkFairseqSpecials(StringRef path,
                             const SentencePieceSummary &spm) const;
  Error checkT5Specials(StringRef path, const SentencePieceSummary &spm) const;
  Expected<int64_t> sentinelCount() const;
  Error checkPair(StringRef table) const;
  std::string defaultSource(ArrayRef<Language> languages,
                            StringRef fallback) const;

  StringRef dir;
  const TokenizerTarget &model;
  json::Object tokenizerConfig; // tokenizer_config.json, if any
  SmallVector<std::string, 4> files;
  std::string warning;
};

} // namespace

Error FamilyTokenizer::readTokenizerConfig() {
  std::string path = pathIn(dir, "tokenizer_config.json");
  if (!sys::fs::exists(path))
    return Error::success();
  Expected<json::Value> parsed = mlir::tfm::readTokenizerJson(path);
  if (!parsed)
    return parsed.takeError();
  if (json::Object *object = parsed->getAsObject())
    tokenizerConfig = std::move(*object);
  return Error::success();
}

StringRef FamilyTokenizer::configString(StringRef key,
                                        StringRef otherwise) const {
  std::optional<StringRef> value = tokenizerConfig.getString(key);
  return value ? *value : otherwise;
}

Error FamilyTokenizer::checkSize(const Twine &what, int64_t size) const {
  if (size <= model.vocabSize)
    return Error::success();
  return fail(what + " = " + Twine(size) +
              " token ids, but the model's "
              "vocabulary has " +
              Twine(model.vocabSize));
}

/// The first pieces an id rule assumes (`whose`: the rule, for the
/// message), as SentencePiece's special pieces.
static Error checkFirstPieces(StringRef path, const SentencePieceSummary &spm,
                              ArrayRef<const char *> expected,
                              StringRef whose) {
  for (size_t i = 0; i < expected.size(); ++i)
    if (i >= spm.pieces.size() || spm.pieces[i] != expected[i])
      return fail(path + ": piece " + Twine(i) + " is \"" +
                  (i < spm.pieces.size() ? spm.pieces[i] : "") + "\", but " +
                  whose + " need " + join(expected, ", ") + " first");
  return Error::success();
}

/// fairseq's alignment holds only where SentencePiece's first pieces are
/// <unk>, <s>, </s>, and the model's EOS is fairseq's.
Error FamilyTokenizer::checkFairseqSpecials(
    StringRef path, const SentencePieceSummary &spm) const {
  if (Error err = checkFirstPieces(path, spm, {"<unk>", "<s>", "</s>"},
                                   "fairseq's ids"))
    return err;
  if (model.eosTokenId != 2)
    return fail(path + ": </s> is token 2, but the model's EOS is " +
                Twine(model.eosTokenId));
  return Error::success();
}

/// T5's ids are SentencePiece's own: its first pieces are T5's specials
/// (spm_train --pad_id=0 --eos_id=1 --unk_id=2), the model's EOS and
/// padding theirs.
Error FamilyTokenizer::checkT5Specials(StringRef path,
                                       const SentencePieceSummary &spm) const {
  if (Error err =
          checkFirstPieces(path, spm, {"<pad>", "</s>", "<unk>"}, "T5's ids"))
    return err;
  if (model.eosTokenId != 1)
    return fail(path + ": </s> is token 1, but the model's EOS is " +
                Twine(model.eosTokenId));
  if (model.padTokenId >= 0 && model.padTokenId != 0)
    return fail(path + ": <pad> is token 0, but the model's padding is " +
                Twine(model.padTokenId));
  return Error::success();
}

/// Languages given to tfmc are for models of one pair.
Error FamilyTokenizer::checkPair(StringRef table) const {
  if (model.sourceLang.empty())
    return Error::success();
  return fail("--source-lang/--target-lang: a " + model.modelType +
              " model has a language table (" + table +
              "); its languages are given per translation (translator "
              "--source-lang/--target-lang), not to tfmc");
}

std::string FamilyTokenizer::defaultSource(ArrayRef<Language> languages,
                                           StringRef fallback) const {
  StringRef wanted = configString("src_lang", fallback);
  for (const Language &l : languages)
    if (l.code == wanted || llvm::is_contained(l.names, wanted))
      return l.code;
  return fallback.str();
}

Expected<bool> FamilyTokenizer::m2m100(Description &d) {
  std::string vocabPath = pathIn(dir, "vocab.json");
  Expected<json::Value> parsed = mlir::tfm::readTokenizerJson(vocabPath);
  if (!parsed)
    return parsed.takeError();
  const json::Object *vocab = parsed->getAsObject();
  if (!vocab)
    return fail(vocabPath + ": expected a JSON object from pieces to ids");
  int64_t count = int64_t(vocab->size());
  for (const auto &[piece, id] : *vocab) {
    std::optional<int64_t> value = id.getAsInteger();
    if (!value || *value < 0 || *value >= count)
      return fail(vocabPath + ": piece \"" + piece.str() + "\" has id " +
                  (value ? std::to_string(*value) : "null") + ", outside [0, " +
                  Twine(count) +
                  "): M2M-100's language tokens follow the pieces");
  }
  std::optional<int64_t> eos = vocab->getInteger("</s>");
  if (!eos)
    return fail(vocabPath + ": no entry for </s>");
  if (*eos != model.eosTokenId)
    return fail(vocabPath + ": </s> has id " + Twine(*eos) +
                ", but the model's is " + Twine(model.eosTokenId));
  if (!vocab->getInteger("<unk>"))
    return fail(vocabPath + ": no entry for <unk>");
  StringRef set = configString("language_codes", "m2m100");
  if (set != "m2m100" && set != "wmt21")
    return fail(pathIn(dir, "tokenizer_config.json") + ": language_codes \"" +
                set + "\" is none of M2M-100's (m2m100, wmt21)");
  int64_t madeUp = tokenizerConfig.getInteger("num_madeup_words").value_or(8);
  SmallVector<Language> languages = m2m100Languages(set == "wmt21", count);
  int64_t size = count + int64_t(languages.size()) + madeUp;
  if (Error err =
          checkSize(vocabPath + ": " + Twine(count) + " pieces + " +
                        Twine(languages.size()) + " language tokens + " +
                        Twine(madeUp) + " made-up words",
                    size))
    return std::move(err);
  std::string spm = pathIn(dir, kSentencePieceName);
  bool text = sys::fs::exists(spm);
  if (text) {
    if (Expected<SentencePieceSummary> s = readSentencePiece(spm); !s)
      return s.takeError();
    files.append({spm, vocabPath});
    d.os << "source-spm " << kSentencePieceName << "\ntarget-spm "
         << kSentencePieceName << "\nvocab vocab.json " << count << "\n";
  }
  d.os << "size " << size << "\n";
  for (const char *special : {"<s>", "<pad>", "</s>", "<unk>"})
    if (std::optional<int64_t> id = vocab->getInteger(special))
      d.os << "special " << special << " " << *id << "\n";
  d.languages(languages);
  d.os << "default-source " << defaultSource(languages, "__en__") << "\n"
       << "source-prefix source\nsource-suffix " << model.eosTokenId << "\n"
       << "target-prefix target\n";
  d.kind = "m2m100";
  return true;
}

/// NLLB's and mBART-50's layout: ids aligned to fairseq's, the codes after
/// the pieces. Without sentencepiece.bpe.model the ids are unknown: the
/// model has no tokenizer and no languages (false).
Expected<bool> FamilyTokenizer::fairseqAligned(Description &d, StringRef kind,
                                               StringRef fallbackSource) {
  std::string spm = pathIn(dir, kSentencePieceName);
  if (!sys::fs::exists(spm))
    return false;
  Expected<SentencePieceSummary> summary = readSentencePiece(spm);
  if (!summary)
    return summary.takeError();
  if (Error err = checkFairseqSpecials(spm, *summary))
    return std::move(err);
  int64_t n = int64_t(summary->pieces.size());
  SmallVector<Language> languages = fairseqLanguages(kind, n + 1);
  int64_t mask = n + 1 + int64_t(languages.size());
  if (Error err =
          checkSize(spm + ": " + Twine(n) +
                        " pieces + 1 (fairseq's "
                        "<pad>) + " +
                        Twine(languages.size()) + " language codes + <mask>",
                    mask + 1))
    return std::move(err);
  files.push_back(spm);
  d.os << "source-spm " << kSentencePieceName << "\ntarget-spm "
       << kSentencePieceName << "\noffset 1\nsize " << mask + 1 << "\n";
  d.fairseqSpecials();
  d.os << "special <mask> " << mask << "\n";
  d.languages(languages);
  d.os << "default-source " << defaultSource(languages, fallbackSource) << "\n";
  if (kind == "nllb" &&
      tokenizerConfig.getBoolean("legacy_behaviour").value_or(false))
    d.os << "source-prefix\nsource-suffix 2 source\n";
  else
    d.os << "source-prefix source\nsource-suffix 2\n";
  d.os << "target-prefix target\n";
  d.kind = kind.str();
  return true;
}

/// M2M-100 and NLLB (model_type m2m_100: tokenizer_config.json's class
/// tells them apart, else M2M-100's vocab.json) and mBART-50 (mbart).
Expected<bool> FamilyTokenizer::multilingual(Description &d) {
  if (Error err = checkPair(kSentencePieceName))
    return std::move(err);
  StringRef tokenizerClass = configString("tokenizer_class", "");
  if (model.modelType == "mbart") {
    if (!tokenizerClass.starts_with("MBartTok"))
      return fairseqAligned(d, "mbart50", "en_XX");
    warning = "the mBART-25 tokenizer (" + tokenizerClass.str() +
              ") is not supported: the translator reads and writes ids";
    return false;
  }
  if (tokenizerClass.starts_with("Nllb") ||
      !sys::fs::exists(pathIn(dir, "vocab.json")))
    return fairseqAligned(d, "nllb", "eng_Latn");
  return m2m100(d);
}

/// tokenizer_config.json's extra_ids: T5Tokenizer's sentinels, 100 unless
/// it says otherwise.
Expected<int64_t> FamilyTokenizer::sentinelCount() const {
  const json::Value *value = tokenizerConfig.get("extra_ids");
  if (!value)
    return 100;
  std::optional<int64_t> count = value->getAsInteger();
  if (!count || *count < 0)
    return fail(pathIn(dir, "tokenizer_config.json") + ": extra_ids is " +
                formatv("{0}", *value) + ", not a number of sentinels");
  return *count;
}

/// The ids before the language's token in a source: MADLAD-400 is given
/// "<2de> text", which T5Tokenizer cuts with SentencePiece into "▁" "<2de>"
/// "▁text"...: the dummy prefix "▁" stays a piece of its own, since no
/// piece joins it to a user-defined symbol (<unk> where no piece is "▁"),
/// and the text's pieces are those it has alone.
static std::string languageLead(const SentencePieceSummary &spm) {
  if (!spm.dummyPrefix)
    return "";
  auto space = llvm::find(spm.pieces, "\xe2\x96\x81");
  int64_t id = space == spm.pieces.end() ? 2 : space - spm.pieces.begin();
  return std::to_string(id) + " ";
}

/// T5Tokenizer's description: SentencePiece's ids, <pad> </s> <unk> first,
/// then the sentinels, counting down from the last (the rule is
/// tokenization_t5.py's _convert_token_to_id: <extra_id_N> is
/// vocab_size - N - 1, its vocab_size being the pieces + extra_ids), and
/// the languages; source = pieces </s>, MADLAD-400's language token before
/// them when a target language is given (nothing is forced on the target).
void FamilyTokenizer::describeT5(Description &d,
                                 const SentencePieceSummary &spm,
                                 int64_t sentinels,
                                 ArrayRef<Language> languages) const {
  int64_t numbered = int64_t(spm.pieces.size()) + sentinels;
  int64_t size = std::min(numbered, model.vocabSize);
  d.os << "source-spm " << kT5SentencePieceName << "\ntarget-spm "
       << kT5SentencePieceName << "\noffset 0\nsize " << size
       << "\nspecial <pad> 0\nspecial </s> 1\nspecial <unk> 2\n";
  for (int64_t n = 0; n < sentinels; ++n)
    if (numbered - 1 - n < size)
      d.os << "special <extra_id_" << n << "> " << numbered - 1 - n << "\n";
  d.languages(languages);
  d.os << "source-suffix " << model.eosTokenId << "\n";
  if (!languages.empty())
    d.os << "source-prefix-with-target " << languageLead(spm) << "target\n";
  else if (!model.sourceLang.empty())
    d.os << "pair " << model.sourceLang << " " << model.targetLang << "\n";
  d.kind = "t5";
}

/// T5, mT5 and MADLAD-400 (t5, mt5) with spiece.model; without it, a
/// model of Marian's layout or none.
Expected<bool> FamilyTokenizer::t5(Description &d, StringRef outDir) {
  std::string spm = pathIn(dir, kT5SentencePieceName);
  if (!sys::fs::exists(spm))
    return marianLayout(d, outDir);
  Expected<SentencePieceSummary> summary = readSentencePiece(spm);
  if (!summary)
    return summary.takeError();
  if (Error err = checkT5Specials(spm, *summary))
    return std::move(err);
  Expected<int64_t> sentinels = sentinelCount();
  if (!sentinels)
    return sentinels.takeError();
  int64_t pieces = int64_t(summary->pieces.size());
  if (Error err = checkSize(spm + ": " + Twine(pieces) + " pieces", pieces))
    return std::move(err);
  // Checkpoints whose rows stop at the pieces (MADLAD-400's 256000) still
  // get T5Tokenizer's numbering; the sentinels it puts past the rows could
  // not be embedded, and a translation never needs them.
  int64_t past = pieces + *sentinels - model.vocabSize;
  if (past > 0)
    warning = (spm + ": " + Twine(past) + " of the " + Twine(*sentinels) +
               " sentinels <extra_id_N> (tokenizer_config.json's extra_ids, "
               "100 unless given) have ids past the model's vocabulary of " +
               Twine(model.vocabSize) + " and are left out")
                  .str();
  SmallVector<Language> languages = madladLanguages(*summary);
  if (!languages.empty())
    if (Error err = checkPair(kT5SentencePieceName))
      return std::move(err);
  files.push_back(spm);
  describeT5(d, *summary, *sentinels, languages);
  return true;
}

/// Marian's layout (and no tokenizer for other families), described only
/// when tfmc was given the model's languages: without them the runtime
/// takes the layout as it always has.
Expected<bool> FamilyTokenizer::marianLayout(Description &d, StringRef outDir) {
  if (model.modelType == "bart" && sys::fs::exists(pathIn(dir, "merges.txt"))) {
    warning = "BART's byte-level BPE tokenizer (vocab.json, merges.txt) "
              "is not supported: the translator reads and writes ids";
  } else {
    Expected<SmallVector<std::string, 3>> marianFiles =
        mlir::tfm::findTokenizerFiles(dir, model.vocabSize, model.eosTokenId,
                                      outDir);
    if (!marianFiles)
      return marianFiles.takeError();
    files.append(marianFiles->begin(), marianFiles->end());
  }
  if (model.sourceLang.empty())
    return false;
  d.kind = files.empty() ? "none" : "marian";
  if (!files.empty()) {
    d.os << "source-spm source.spm\ntarget-spm target.spm\nvocab vocab.json "
         << model.vocabSize << "\nsize " << model.vocabSize << "\nspecial </s> "
         << model.eosTokenId << "\n";
    if (model.padTokenId >= 0)
      d.os << "special <pad> " << model.padTokenId << "\n";
    d.os << "source-suffix " << model.eosTokenId << "\n";
  }
  d.os << "pair " << model.sourceLang << " " << model.targetLang << "\n";
  return true;
}

/// The description of the model's family, if it has a tokenizer.
Expected<bool> FamilyTokenizer::describe(Description &d, StringRef outDir) {
  StringRef type = model.modelType;
  if (type == "m2m_100" || type == "mbart")
    return multilingual(d);
  if (type == "t5" || type == "mt5")
    return t5(d, outDir);
  return marianLayout(d, outDir);
}

Expected<TokenizerFiles> FamilyTokenizer::find(StringRef outDir) {
  if (Error err = readTokenizerConfig())
    return std::move(err);
  Description d;
  Expected<bool> described = describe(d, outDir);
  if (!described)
    return described.takeError();
  TokenizerFiles out;
  out.warning = warning;
  out.files = files;
  if (!*described)
    return out;
  std::string infoPath = pathIn(outDir, tfm_runtime::kTokenizerInfoName);
  std::error_code ec;
  raw_fd_ostream info(infoPath, ec);
  if (ec)
    return fail(infoPath + ": " + ec.message());
  info << tfm_runtime::kTokenizerInfoHeader << "\nkind " << d.kind << "\n"
       << d.text;
  info.close();
  if (info.has_error())
    return fail(infoPath + ": " + info.error().message());
  out.files.push_back(infoPath);
  return out;
}

Expected<TokenizerFiles> mlir::tfm::findFamilyTokenizerFiles(
    StringRef modelDir, const TokenizerTarget &model, StringRef outDir) {
  return FamilyTokenizer(modelDir, model).find(outDir);
}
