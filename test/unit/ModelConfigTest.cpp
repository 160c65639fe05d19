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
  std::string err =
      errorOf(edited(R"("encoder_layers": 2)", R"("encoder_layers": "two")"));
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
  std::string err = errorOf(edited(R"("marian")", R"("umt5")"));
  EXPECT_NE(err.find("unsupported model_type 'umt5'"), std::string::npos)
      << err;
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

static const char *kT5 = R"({
  "model_type": "mt5", "d_model": 512, "d_kv": 64, "d_ff": 1024,
  "num_layers": 8, "num_heads": 6, "vocab_size": 250112,
  "feed_forward_proj": "gated-gelu", "tie_word_embeddings": false
})";

// T5's keys and its class's fixed choices; heads of d_kv need not divide
// d_model (mT5-small: 6 x 64 over 512).
TEST(ModelConfig, ReadsT5) {
  TempFile file("config.json", kT5);
  auto c = ModelConfig::load(file.path);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->family, ModelFamily::t5);
  EXPECT_EQ(c->headWidth(c->decoderHeads), 64);
  EXPECT_EQ(c->decoderLayers, 8); // num_decoder_layers defaults to num_layers
  EXPECT_EQ(c->decoderFfnDim, 1024);
  EXPECT_EQ(c->activation, Activation::gelu_tanh);
  EXPECT_TRUE(c->gatedFfn && c->rmsNorm && c->normalizeBefore);
  EXPECT_FALSE(c->linearBias || c->scaleScores || c->rescaleTiedOutput);
  EXPECT_EQ(c->relativeBuckets, 32);
  EXPECT_EQ(c->relativeMaxDistance, 128);
  EXPECT_EQ(c->positions, ModelConfig::Positions::relative);
  EXPECT_EQ(c->maxPositions, 512);
  EXPECT_EQ(c->padTokenId, 0);
  EXPECT_EQ(c->eosTokenId, 1);
  EXPECT_EQ(c->decoderStartTokenId, 0);
  EXPECT_DOUBLE_EQ(c->layerNormEpsilon, 1e-6);
}

TEST(ModelConfig, RefusesUnknownT5FeedForward) {
  std::string json = kT5;
  json.replace(json.find("gated-gelu"), 10, "gated-tanh");
  std::string err = errorOf(json);
  EXPECT_NE(err.find("unsupported feed_forward_proj 'gated-tanh'"),
            std::string::npos)
      << err;
}

TEST(ModelConfig, RejectsHeadsThatDoNotDivide) {
  std::string err = errorOf(edited(R"("decoder_attention_heads": 8)",
                                   R"("decoder_attention_heads": 6)"));
  EXPECT_NE(
      err.find("d_model 64 is not a multiple of decoder_attention_heads 6"),
      std::string::npos)
      << err;
}

TEST(ModelConfig, RejectsTokenOutsideVocabulary) {
  std::string err =
      errorOf(edited(R"("pad_token_id": 999)", R"("pad_token_id": 1000)"));
  EXPECT_NE(err.find("pad_token_id 1000 is outside the target vocabulary"),
            std::string::npos)
      << err;
}

TEST(ModelConfig, RejectsInvalidJson) {
  std::string err = errorOf("{\"d_model\": 64,");
  EXPECT_NE(err.find("config.json: invalid JSON"), std::string::npos) << err;
}
