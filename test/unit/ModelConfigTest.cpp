//===- ModelConfigTest.cpp - config.json parsing ----------------*- C++ -*-===//

#include "compiler/ModelConfig.h"
#include "test/unit/TestFiles.h"

#include "gtest/gtest.h"

using namespace mlir::tfm;
using tfm_test::TempFile;

static const char *kTiny = R"({
  "model_type": "marian", "d_model": 64, "encoder_layers": 2,
  "decoder_layers": 3, "encoder_attention_heads": 4,
  "decoder_attention_heads": 8, "encoder_ffn_dim": 256,
  "decoder_ffn_dim": 128, "vocab_size": 1000, "max_position_embeddings": 512,
  "activation_function": "swish", "normalize_before": true,
  "scale_embedding": true, "eos_token_id": 0, "pad_token_id": 999,
  "decoder_start_token_id": 999, "tie_word_embeddings": false
})";

/// kTiny with `from` replaced by `to`.
static std::string edited(const std::string &from, const std::string &to) {
  std::string s = kTiny;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

static std::string errorOf(const std::string &json) {
  TempFile file("config.json", json);
  auto c = ModelConfig::load(file.path);
  return c ? "" : llvm::toString(c.takeError());
}

TEST(ModelConfig, ReadsEveryKey) {
  TempFile file("config.json", kTiny);
  auto c = ModelConfig::load(file.path);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->dModel, 64);
  EXPECT_EQ(c->encoderLayers, 2);
  EXPECT_EQ(c->decoderLayers, 3);
  EXPECT_EQ(c->encoderHeads, 4);
  EXPECT_EQ(c->decoderHeads, 8);
  EXPECT_EQ(c->encoderFfnDim, 256);
  EXPECT_EQ(c->decoderFfnDim, 128);
  EXPECT_EQ(c->vocabSize, 1000);
  EXPECT_EQ(c->targetVocabSize, 1000);
  EXPECT_EQ(c->activation, Activation::silu);
  EXPECT_TRUE(c->normalizeBefore);
  EXPECT_TRUE(c->scaleEmbedding);
  EXPECT_TRUE(c->shareEmbeddings);
  EXPECT_FALSE(c->tieWordEmbeddings);
  EXPECT_EQ(c->padTokenId, 999);
  EXPECT_EQ(c->sinusoidKind, PositionKind::sinusoidal_concat);
}

TEST(ModelConfig, NamesAMissingKey) {
  std::string err = errorOf(edited(R"("d_model": 64,)", ""));
  EXPECT_NE(err.find("config.json: missing key 'd_model'"), std::string::npos)
      << err;
}

TEST(ModelConfig, NamesAKeyOfTheWrongType) {
  std::string err = errorOf(edited(R"("encoder_layers": 2)",
                                   R"("encoder_layers": "two")"));
  EXPECT_NE(err.find("key 'encoder_layers' must be an integer >= 1, found "
                     "\"two\""),
            std::string::npos)
      << err;
}

TEST(ModelConfig, RejectsUnsupportedActivation) {
  std::string err = errorOf(edited(R"("swish")", R"("gelu_new")"));
  EXPECT_NE(err.find("unsupported activation_function 'gelu_new'"),
            std::string::npos)
      << err;
}

TEST(ModelConfig, RejectsUnsupportedModelType) {
  std::string err = errorOf(edited(R"("marian")", R"("t5")"));
  EXPECT_NE(err.find("unsupported model_type 't5'"), std::string::npos) << err;
}

// Each family's Hugging Face class fixes norm placement and positions; a
// leftover normalize_before key does not change them.
TEST(ModelConfig, FamiliesFixWhatTheirClassesHardCode) {
  struct Expected {
    const char *type;
    bool preNorm, normalizeEmbedding, scaleByDefault;
    ModelConfig::Positions positions;
  };
  for (Expected e :
       {Expected{"bart", false, true, false, ModelConfig::Positions::table},
        Expected{"mbart", true, true, false, ModelConfig::Positions::table},
        Expected{"m2m_100", true, false, true,
                 ModelConfig::Positions::sinusoids}}) {
    std::string json = edited(R"("marian")", std::string("\"") + e.type + "\"");
    size_t at = json.find(R"("scale_embedding": true,)");
    json.erase(at, std::string(R"("scale_embedding": true,)").size());
    at = json.find(R"("normalize_before": true)");
    json.replace(at, 24,
                 e.preNorm ? R"("normalize_before": false)"
                           : R"("normalize_before": true )");
    TempFile file("config.json", json);
    auto c = ModelConfig::load(file.path);
    ASSERT_TRUE(bool(c)) << e.type << ": " << llvm::toString(c.takeError());
    EXPECT_EQ(modelTypeName(c->family), e.type);
    EXPECT_EQ(c->normalizeBefore, e.preNorm) << e.type;
    EXPECT_EQ(c->normalizeEmbedding, e.normalizeEmbedding) << e.type;
    EXPECT_EQ(c->scaleEmbedding, e.scaleByDefault) << e.type;
    EXPECT_EQ(c->positions, e.positions) << e.type;
    EXPECT_EQ(c->firstPosition, 2) << e.type;
  }
}

TEST(ModelConfig, ReadsTheForcedFirstToken) {
  TempFile file("config.json", edited(R"("eos_token_id": 0,)",
                                      R"("eos_token_id": 0,
                                          "forced_bos_token_id": 7,)"));
  auto c = ModelConfig::load(file.path);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->forcedBosTokenId, 7);
  TempFile none("config.json", kTiny);
  EXPECT_EQ(ModelConfig::load(none.path)->forcedBosTokenId, -1);
}

TEST(ModelConfig, RefusesMixturesOfExperts) {
  std::string err = errorOf(edited(R"("marian")", R"("m2m_100",
                                                      "num_experts": 128)"));
  EXPECT_NE(err.find("key 'num_experts' (128) asks for a mixture of experts"),
            std::string::npos)
      << err;
}

TEST(ModelConfig, RejectsHeadsThatDoNotDivide) {
  std::string err = errorOf(edited(R"("decoder_attention_heads": 8)",
                                   R"("decoder_attention_heads": 6)"));
  EXPECT_NE(err.find("d_model 64 is not a multiple of decoder_attention_heads 6"),
            std::string::npos)
      << err;
}

TEST(ModelConfig, RejectsTokenOutsideVocabulary) {
  std::string err = errorOf(edited(R"("pad_token_id": 999)",
                                   R"("pad_token_id": 1000)"));
  EXPECT_NE(err.find("pad_token_id 1000 is outside the target vocabulary"),
            std::string::npos)
      << err;
}

TEST(ModelConfig, RejectsInvalidJson) {
  std::string err = errorOf("{\"d_model\": 64,");
  EXPECT_NE(err.find("config.json: invalid JSON"), std::string::npos) << err;
}
