//===- TokenizerFamiliesTest.cpp - The families' token ids ------*- C++ -*-===//
//
// tfmc's description of a tokenizer (compiler/TokenizerFiles.cpp) followed
// by the runtime (tfm/runtime.h), against ids computed here from the
// families' published rules and vocabularies: M2M-100's pieces through
// vocab.json and its language tokens from len(vocab.json) (__en__ 128022,
// __de__ 128020 after the 128004 entries of m2m100_418M's vocab.json);
// NLLB's and mBART-50's fairseq alignment (a piece's id SentencePiece's +
// 1, <unk> 3) with their codes after the pieces (NLLB-200: eng_Latn 256047,
// deu_Latn 256042, <mask> 256203 after 256000 pieces; mBART-50: en_XX
// 250004, de_DE 250003, <mask> 250053 after 250000 pieces); T5's own
// SentencePiece ids with T5Tokenizer's sentinels after them, counting down
// (<extra_id_0> = pieces + extra_ids - 1), and MADLAD-400's <2xx> pieces
// before the source text (as "<2de> text" is cut: ▁ <2de> pieces </s>).
// The test models are tiny SentencePiece models written here.
//
//===----------------------------------------------------------------------===//

#include "compiler/Embed.h"
#include "compiler/TokenizerFiles.h"
#include "tfm/abi/EmbeddedFiles.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/runtime.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <cstring>
#include <string>
#include <vector>

using namespace mlir::tfm;

namespace {

std::string varint(uint64_t n) {
  std::string out;
  do {
    out += char((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>= 7;
  } while (n);
  return out;
}

std::string field(int number, const std::string &payload) {
  return varint(uint64_t(number) << 3 | 2) + varint(payload.size()) + payload;
}

// SentencePiece's piece types.
constexpr int kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4;

/// A serialized SentencePiece ModelProto (unigram, identity normalizer,
/// which adds the dummy prefix "▁" unless `dummyPrefix` is false): the
/// `specials` (text and type), then `pieces`, user-defined where they look
/// like MADLAD-400's <2xx>.
std::string modelProto(const std::vector<std::pair<std::string, int>> &specials,
                       const std::vector<std::string> &pieces,
                       bool dummyPrefix = true) {
  std::string model;
  auto add = [&](const std::string &text, float score, int type) {
    std::string bits(4, '\0');
    std::memcpy(bits.data(), &score, 4);
    model += field(1, field(1, text) + varint(2 << 3 | 5) + bits +
                          varint(3 << 3) + varint(uint64_t(type)));
  };
  for (const auto &[text, type] : specials)
    add(text, 0, type);
  for (size_t i = 0; i < pieces.size(); ++i)
    add(pieces[i], -1.0f - float(i) / 100,
        pieces[i].rfind("<2", 0) == 0 ? kUserDefined : kNormal);
  std::string normalizer = field(1, "identity");
  if (!dummyPrefix)
    normalizer += varint(3 << 3) + varint(0); // add_dummy_prefix: false
  return model + field(2, varint(3 << 3) + varint(1)) + field(3, normalizer);
}

/// SentencePiece's default first pieces (<unk>, <s>, </s>), fairseq's
/// alignment's, then `pieces`.
std::string sentencePiece(const std::vector<std::string> &pieces,
                          const char *first = "<unk>") {
  return modelProto({{first, kUnknown}, {"<s>", kControl}, {"</s>", kControl}},
                    pieces);
}

/// T5's first pieces (<pad>, </s>, <unk>), then `pieces`.
std::string t5SentencePiece(const std::vector<std::string> &pieces,
                            bool dummyPrefix = true) {
  return modelProto(
      {{"<pad>", kControl}, {"</s>", kControl}, {"<unk>", kUnknown}}, pieces,
      dummyPrefix);
}

const std::vector<std::string> kPieces = {"\xe2\x96\x81hello",
                                          "\xe2\x96\x81world"};

/// A checkpoint directory with tokenizer files, compiled by tfmc's
/// tokenizer step into out/, and opened by the runtime.
class Family {
public:
  Family() {
    llvm::sys::fs::createUniqueDirectory("tfm-families", dir);
    out = (dir + "/out").str();
    llvm::sys::fs::create_directories(out);
    weights = out + "/model.tfmw";
    write(weights, "");
  }
  ~Family() {
    if (languages)
      tfm_languages_close(languages);
    if (tokenizer)
      tfm_tokenizer_close(tokenizer);
    llvm::sys::fs::remove_directories(dir);
  }

  void write(const std::string &path, const std::string &bytes) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << bytes;
  }
  void add(const std::string &name, const std::string &bytes) {
    write((dir + "/" + name).str(), bytes);
  }

  /// tfmc's step: "" or its error.
  std::string compile(const std::string &modelType, int64_t vocab,
                      const std::string &source = "",
                      const std::string &target = "") {
    TokenizerTarget model;
    model.modelType = modelType;
    model.vocabSize = config.source_vocab_size = config.target_vocab_size =
        vocab;
    model.eosTokenId = config.eos_token_id;
    model.padTokenId = config.pad_token_id;
    model.sourceLang = source;
    model.targetLang = target;
    auto found = findTokenizerFiles(dir.str(), model, out);
    if (!found)
      return llvm::toString(found.takeError());
    files = found->files;
    return llvm::toString(copyTokenizerFiles(files, out));
  }

  /// compile, then open: "" or the first error.
  std::string compileAndOpen(const std::string &modelType, int64_t vocab,
                             const std::string &source = "",
                             const std::string &target = "") {
    std::string error = compile(modelType, vocab, source, target);
    return error.empty() ? open() : error;
  }

  /// The runtime's tokenizer and languages of out/ ("" or the error).
  std::string open(const std::string &path = "") {
    const std::string &at = path.empty() ? weights : path;
    tfm_status s = tfm_tokenizer_open(at.c_str(), &config, &tokenizer);
    if (!s)
      s = tfm_languages_open(at.c_str(), &config, &languages);
    return message(s);
  }

  static std::string message(tfm_status s) {
    std::string text = s ? tfm_status_message(s) : "";
    tfm_status_free(s);
    return text;
  }

  tfm_language_tokens tokens(const char *source, const char *target) {
    tfm_language_tokens t{};
    EXPECT_EQ(message(tfm_languages_tokens(languages, source, target, &t)), "");
    return t;
  }

  std::vector<int32_t> encode(const std::string &text,
                              const tfm_language_tokens *frame = nullptr) {
    int32_t *ids = nullptr, length = 0;
    EXPECT_EQ(message(tfm_tokenizer_encode_framed(tokenizer, frame, text.data(),
                                                  text.size(), &ids, &length)),
              "");
    std::vector<int32_t> out(ids, ids + length);
    tfm_free(ids);
    return out;
  }

  std::string decode(const std::vector<int32_t> &ids) {
    char *text = nullptr;
    size_t length = 0;
    EXPECT_EQ(message(tfm_tokenizer_decode(
                  tokenizer, ids.data(), int32_t(ids.size()), &text, &length)),
              "");
    std::string out(text ? text : "", length);
    tfm_free(text);
    return out;
  }

  int32_t find(const char *code) {
    int32_t index = -1;
    EXPECT_EQ(message(tfm_languages_find(languages, code, &index)), "");
    return index;
  }

  llvm::SmallString<128> dir;
  std::string out, weights;
  llvm::SmallVector<std::string, 4> files;
  tfm_model_config config = [] {
    tfm_model_config c{};
    c.max_positions = 64;
    c.eos_token_id = c.decoder_start_token_id = 2;
    c.pad_token_id = 1;
    c.forced_eos_token_id = c.forced_bos_token_id = -1;
    return c;
  }();
  tfm_tokenizer *tokenizer = nullptr;
  tfm_languages *languages = nullptr;
};

std::vector<int32_t> prefixOf(const tfm_language_tokens &t) {
  return {t.target_prefix, t.target_prefix + t.target_prefix_length};
}

// M2M-100: vocab.json's ids (here not SentencePiece's order), language
// tokens from len(vocab.json) in fairseq's order, then 8 made-up words.
const char kM2MVocab[] = R"({"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3,
  "\u2581world": 4, "\u2581hello": 5})";
constexpr int32_t kM2MEn = 6 + (128022 - 128004),
                  kM2MDe = 6 + (128020 - 128004);

/// NLLB's and mBART-50's files (fairseq's alignment) for kPieces, compiled
/// as `modelType` for `vocab` ids and opened: "" or the first error.
std::string openFairseq(Family &f, const std::string &modelType,
                        int64_t vocab) {
  f.add("sentencepiece.bpe.model", sentencePiece(kPieces));
  return f.compileAndOpen(modelType, vocab);
}

/// In openFairseq's ids (kPieces: 5 pieces, so 6 ids), the id of what the
/// published tokenizer of `publishedPieces` pieces numbers `publishedId`
/// after its pieces and fairseq's extra id: a language code or <mask>.
int32_t idAfterPieces(int32_t publishedId, int32_t publishedPieces) {
  return 5 + 1 + publishedId - (publishedPieces + 1);
}
int32_t nllbId(int32_t publishedId) {
  return idAfterPieces(publishedId, 256000);
}
int32_t mbartId(int32_t publishedId) {
  return idAfterPieces(publishedId, 250000);
}

} // namespace

TEST(TokenizerFamilies, M2M100) {
  Family f;
  f.add("config.json", "{}");
  f.add("vocab.json", kM2MVocab);
  f.add("sentencepiece.bpe.model", sentencePiece(kPieces));
  ASSERT_EQ(f.compileAndOpen("m2m_100", 6 + 100 + 8), "");
  ASSERT_TRUE(f.tokenizer && f.languages);
  EXPECT_EQ(tfm_languages_count(f.languages), 100);
  // source = __src__ pieces </s>; an unknown piece is <unk>.
  std::vector<int32_t> expected = {kM2MEn, 5, 3, 4, 2};
  EXPECT_EQ(f.encode("hello zzz world"), expected); // the default: en
  tfm_language_tokens t = f.tokens("en", "de");
  EXPECT_EQ(f.encode("hello zzz world", &t), expected);
  EXPECT_EQ(prefixOf(t), std::vector<int32_t>{kM2MDe});
  t = f.tokens("__de__", nullptr);
  EXPECT_EQ(f.encode("hello", &t), (std::vector<int32_t>{kM2MDe, 5, 2}));
  EXPECT_EQ(t.target_prefix_length, 0);
  EXPECT_EQ(f.find("de"), f.find("__de__"));
  EXPECT_EQ(tfm_languages_token(f.languages, f.find("de")), kM2MDe);
  int32_t id = 0;
  EXPECT_EQ(
      Family::message(tfm_tokenizer_piece_id(f.tokenizer, "__de__", 6, &id)),
      "");
  EXPECT_EQ(id, kM2MDe);
  // Text output leaves out the language, special and made-up tokens.
  EXPECT_EQ(f.decode({kM2MDe, 5, 3, 4, 2, 1, 113}), "hello world");
}

TEST(TokenizerFamilies, M2M100WithoutSentencePieceHasLanguagesOnly) {
  Family f;
  f.add("vocab.json", kM2MVocab);
  ASSERT_EQ(f.compileAndOpen("m2m_100", 114), "");
  EXPECT_EQ(f.tokenizer, nullptr);
  ASSERT_NE(f.languages, nullptr);
  EXPECT_EQ(prefixOf(f.tokens(nullptr, "de")), std::vector<int32_t>{kM2MDe});
}

TEST(TokenizerFamilies, Nllb) {
  const int32_t eng = nllbId(256047), deu = nllbId(256042),
                mask = nllbId(256203);
  Family f;
  // The model's vocabulary is padded past <mask> as NLLB-200's is.
  ASSERT_EQ(openFairseq(f, "m2m_100", mask + 3), "");
  ASSERT_TRUE(f.tokenizer && f.languages);
  EXPECT_EQ(tfm_languages_count(f.languages), 202);
  tfm_language_tokens t = f.tokens("eng_Latn", "de");
  EXPECT_EQ(f.encode("hello zzz world", &t),
            (std::vector<int32_t>{eng, 4, 3, 5, 2}));
  EXPECT_EQ(f.encode("hello zzz world"), f.encode("hello zzz world", &t));
  EXPECT_EQ(prefixOf(t), std::vector<int32_t>{deu});
  EXPECT_EQ(f.find("deu"), f.find("deu_Latn"));
  EXPECT_EQ(f.find("zh"), f.find("zho_Hans"));
  EXPECT_EQ(f.decode({deu, 4, 3, 5, 2, mask, mask + 2}), "hello world");
}

TEST(TokenizerFamilies, NllbLegacyBehaviour) {
  Family f;
  f.add("tokenizer_config.json",
        R"({"tokenizer_class": "NllbTokenizer", "legacy_behaviour": true})");
  ASSERT_EQ(openFairseq(f, "m2m_100", 5 + 1 + 202 + 1), "");
  tfm_language_tokens t = f.tokens("fr", nullptr);
  EXPECT_EQ(f.encode("world", &t),
            (std::vector<int32_t>{5, 2, nllbId(256057)}));
}

TEST(TokenizerFamilies, MBart50) {
  const int32_t en = mbartId(250004), de = mbartId(250003),
                mask = mbartId(250053);
  Family f;
  ASSERT_EQ(openFairseq(f, "mbart", mask + 1), "");
  EXPECT_EQ(tfm_languages_count(f.languages), 52);
  tfm_language_tokens t = f.tokens("en_XX", "de");
  EXPECT_EQ(f.encode("world hello", &t), (std::vector<int32_t>{en, 5, 4, 2}));
  EXPECT_EQ(prefixOf(t), std::vector<int32_t>{de});
  EXPECT_EQ(f.find("de"), f.find("de_DE"));
  EXPECT_EQ(f.decode({de, 5, 4, mask, 2}), "world hello");
}

namespace {

// T5: SentencePiece's own ids; MADLAD-400's <2xx> pieces are languages
// ("<2>" is none); 3 sentinels after the 9 pieces count down (<extra_id_0>
// 11, <extra_id_2> 9); rows 12..15 have no piece.
const std::vector<std::string> kT5Pieces = {
    "\xe2\x96\x81", "\xe2\x96\x81hello", "\xe2\x96\x81world",
    "<2de>",        "<2pt_BR>",          "<2>"};

/// T5's EOS and padding, and 3 sentinels.
void makeT5(Family &f) {
  f.config.eos_token_id = 1;
  f.config.pad_token_id = f.config.decoder_start_token_id = 0;
  f.add("tokenizer_config.json", R"({"extra_ids": 3})");
}

} // namespace

TEST(TokenizerFamilies, T5) {
  Family f;
  makeT5(f);
  f.add("spiece.model", t5SentencePiece(kT5Pieces));
  ASSERT_EQ(f.compileAndOpen("t5", 16), "");
  ASSERT_TRUE(f.tokenizer && f.languages);
  EXPECT_EQ(tfm_languages_count(f.languages), 2);
  EXPECT_EQ(f.find("pt_BR"), f.find("<2pt_BR>"));
  EXPECT_EQ(tfm_languages_token(f.languages, f.find("de")), 6);
  // source = pieces </s>; an unknown piece is <unk>, 2 (SentencePiece
  // cuts "▁zzz" into "▁" and "zzz").
  EXPECT_EQ(f.encode("hello zzz world"), (std::vector<int32_t>{4, 3, 2, 5, 1}));
  // A target language goes in the source as "<2de> text" is cut:
  // "▁" <2de>, then the text's pieces; nothing is forced, and the source
  // language changes no id.
  tfm_language_tokens t = f.tokens("de", "pt_BR");
  EXPECT_EQ(f.encode("hello", &t), (std::vector<int32_t>{3, 7, 4, 1}));
  EXPECT_EQ(prefixOf(t), std::vector<int32_t>{});
  t = f.tokens("pt_BR", nullptr);
  EXPECT_EQ(f.encode("world", &t), (std::vector<int32_t>{5, 1}));
  // Text output leaves out the special tokens, the sentinels, the
  // languages and the rows past the tokenizer's.
  EXPECT_EQ(f.decode({6, 4, 11, 9, 13, 15, 2, 5, 1, 0}), "hello world");
  int32_t id = 0;
  for (auto [piece, expected] : {std::pair{"<extra_id_0>", 11},
                                 {"<extra_id_2>", 9},
                                 {"\xe2\x96\x81world", 5},
                                 {"<2de>", 6}}) {
    EXPECT_EQ(Family::message(tfm_tokenizer_piece_id(f.tokenizer, piece,
                                                     std::strlen(piece), &id)),
              "");
    EXPECT_EQ(id, expected) << piece;
  }
  EXPECT_EQ(Family::message(tfm_tokenizer_piece_id(f.tokenizer, "zzz", 3, &id)),
            "\"zzz\" is not a piece of the vocabulary");
}

TEST(TokenizerFamilies, T5WithoutDummyPrefixPutsTheLanguageAlone) {
  Family f;
  makeT5(f);
  f.add("spiece.model", t5SentencePiece(kT5Pieces, /*dummyPrefix=*/false));
  ASSERT_EQ(f.compileAndOpen("mt5", 16), "");
  tfm_language_tokens t = f.tokens(nullptr, "de");
  EXPECT_EQ(std::vector<int32_t>(t.source_prefix,
                                 t.source_prefix + t.source_prefix_length),
            std::vector<int32_t>{6});
}

TEST(TokenizerFamilies, T5WithoutASpacePieceLeadsWithUnknown) {
  // SentencePiece cuts "<2de> hello" into an unknown "▁", <2de>, "▁hello".
  Family f;
  makeT5(f);
  f.add("spiece.model", t5SentencePiece({"\xe2\x96\x81hello", "<2de>"}));
  ASSERT_EQ(f.compileAndOpen("t5", 8), "");
  tfm_language_tokens t = f.tokens(nullptr, "de");
  EXPECT_EQ(f.encode("hello", &t), (std::vector<int32_t>{2, 4, 3, 1}));
}

TEST(TokenizerFamilies, T5WithoutLanguageTokensHasNoLanguages) {
  Family f;
  makeT5(f);
  f.add("spiece.model", t5SentencePiece({"\xe2\x96\x81hello"}));
  ASSERT_EQ(f.compileAndOpen("t5", 16), "");
  ASSERT_NE(f.tokenizer, nullptr);
  EXPECT_EQ(f.languages, nullptr);
  EXPECT_EQ(f.encode("hello"), (std::vector<int32_t>{3, 1}));
  // <extra_id_0> is the last of 4 + 3 ids.
  int32_t id = 0;
  EXPECT_EQ(Family::message(
                tfm_tokenizer_piece_id(f.tokenizer, "<extra_id_0>", 12, &id)),
            "");
  EXPECT_EQ(id, 6);
}

// Sentinels numbered past the model's rows (MADLAD-400's rows stop at its
// pieces) are left out; the others keep T5Tokenizer's ids.
TEST(TokenizerFamilies, T5SentinelsPastTheRows) {
  Family f;
  makeT5(f);
  f.add("spiece.model", t5SentencePiece(kT5Pieces));
  ASSERT_EQ(f.compileAndOpen("t5", 11), "");
  ASSERT_TRUE(f.tokenizer);
  int32_t id = 0;
  EXPECT_EQ(Family::message(
                tfm_tokenizer_piece_id(f.tokenizer, "<extra_id_2>", 12, &id)),
            "");
  EXPECT_EQ(id, 9);
  EXPECT_NE(Family::message(
                tfm_tokenizer_piece_id(f.tokenizer, "<extra_id_0>", 12, &id)),
            "");
}

TEST(TokenizerFamilies, T5Refusals) {
  {
    Family f;
    makeT5(f);
    f.add("spiece.model", sentencePiece(kT5Pieces));
    EXPECT_NE(f.compile("t5", 16).find(
                  "spiece.model: piece 0 is \"<unk>\", but T5's ids need "
                  "<pad>, </s>, <unk> first"),
              std::string::npos);
  }
  {
    Family f;
    makeT5(f);
    f.add("spiece.model", t5SentencePiece(kT5Pieces));
    EXPECT_NE(f.compile("t5", 8).find("spiece.model: 9 pieces = 9 token "
                                      "ids, but the model's vocabulary has 8"),
              std::string::npos);
  }
  {
    Family f;
    makeT5(f);
    f.config.eos_token_id = 2;
    f.add("spiece.model", t5SentencePiece(kT5Pieces));
    EXPECT_NE(f.compile("t5", 16).find(
                  "spiece.model: </s> is token 1, but the model's EOS is 2"),
              std::string::npos);
  }
  {
    Family f;
    makeT5(f);
    f.add("tokenizer_config.json", R"({"extra_ids": -1})");
    f.add("spiece.model", t5SentencePiece(kT5Pieces));
    EXPECT_NE(f.compile("t5", 16).find(
                  "tokenizer_config.json: extra_ids is -1, not a number of "
                  "sentinels"),
              std::string::npos);
  }
}

TEST(TokenizerFamilies, EmbeddedFilesGiveTheSameIds) {
  Family f;
  f.add("vocab.json", kM2MVocab);
  f.add("sentencepiece.bpe.model", sentencePiece(kPieces));
  ASSERT_EQ(f.compile("m2m_100", 114), "");
  // An executable: 4096 bytes, no weights, the files, the trailers.
  std::string exe(4096, 'x');
  llvm::raw_string_ostream os(exe);
  ASSERT_FALSE(bool(appendEmbeddedFiles(os, 4096, f.files)));
  os.flush();
  tfm_runtime::EmbedTrailer trailer{4096, 0, {}};
  std::memcpy(trailer.magic, tfm_runtime::kEmbedMagic, 8);
  exe.append(reinterpret_cast<const char *>(&trailer), sizeof trailer);
  std::string path = (f.dir + "/translator").str();
  f.write(path, exe);
  ASSERT_EQ(f.open(path), "");
  tfm_language_tokens t = f.tokens("en", "de");
  EXPECT_EQ(f.encode("hello world", &t),
            (std::vector<int32_t>{kM2MEn, 5, 4, 2}));
}

TEST(TokenizerFamilies, OnePairLanguages) {
  Family f;
  f.add("config.json", "{}");
  ASSERT_EQ(f.compileAndOpen("bart", 30, "en", "de"), "");
  EXPECT_EQ(f.tokenizer, nullptr);
  ASSERT_NE(f.languages, nullptr);
  int32_t source = -1, target = -1;
  tfm_languages_pair(f.languages, &source, &target);
  EXPECT_STREQ(tfm_languages_code(f.languages, source), "en");
  EXPECT_STREQ(tfm_languages_code(f.languages, target), "de");
  EXPECT_EQ(tfm_languages_token(f.languages, target), -1);
  tfm_language_tokens t = f.tokens("en", "de");
  EXPECT_EQ(t.target_prefix_length + t.source_prefix_length, 0);
  tfm_language_tokens wrong{};
  EXPECT_EQ(
      Family::message(tfm_languages_tokens(f.languages, "de", "de", &wrong)),
      "'de' is not this model's source language: it translates en to "
      "de only");
  EXPECT_EQ(
      Family::message(tfm_languages_tokens(f.languages, nullptr, "fr", &wrong)),
      "'fr' is not a language of this model; it has en, de");
}

TEST(TokenizerFamilies, UnknownLanguagesAreNamed) {
  Family f;
  f.add("vocab.json", kM2MVocab);
  ASSERT_EQ(f.compileAndOpen("m2m_100", 114), "");
  int32_t index = 0;
  EXPECT_EQ(Family::message(tfm_languages_find(f.languages, "dx", &index)),
            "'dx' is not a language of this model; it has da (__da__), de "
            "(__de__), ... (100 in all)");
}

TEST(TokenizerFamilies, Refusals) {
  {
    Family f;
    f.add("vocab.json", kM2MVocab);
    EXPECT_NE(
        f.compile("m2m_100", 100)
            .find("vocab.json: 6 pieces + 100 language tokens + 8 made-up "
                  "words = 114 token ids, but the model's vocabulary has 100"),
        std::string::npos);
  }
  {
    Family f;
    f.add("sentencepiece.bpe.model", sentencePiece(kPieces, "<pad>"));
    EXPECT_NE(f.compile("mbart", 100)
                  .find("sentencepiece.bpe.model: piece 0 is \"<pad>\", but "
                        "fairseq's ids need <unk>, <s>, </s> first"),
              std::string::npos);
  }
  {
    Family f;
    f.add("sentencepiece.bpe.model", "not a model");
    EXPECT_NE(f.compile("mbart", 100)
                  .find("sentencepiece.bpe.model: not a "
                        "SentencePiece model"),
              std::string::npos);
  }
  {
    Family f;
    f.add("vocab.json", kM2MVocab);
    EXPECT_NE(f.compile("m2m_100", 114, "en", "de")
                  .find("--source-lang/--target-lang: a m2m_100 model has a "
                        "language table"),
              std::string::npos);
  }
}

TEST(TokenizerFamilies, DamagedDescriptionIsNamed) {
  Family f;
  f.add("vocab.json", kM2MVocab);
  ASSERT_EQ(f.compile("m2m_100", 114), "");
  f.write(f.out + "/tokenizer.tfm", "tfm-tokenizer 1\nlanguage __de__ 999\n");
  EXPECT_NE(f.open().find("tokenizer.tfm: line 2: '999' is not a number in "
                          "[0, 113]"),
            std::string::npos);
  f.write(f.out + "/tokenizer.tfm", "tfm-tokenizer 2\n");
  EXPECT_NE(f.open().find("tokenizer.tfm: line 1: expected 'tfm-tokenizer 1'"),
            std::string::npos);
}
