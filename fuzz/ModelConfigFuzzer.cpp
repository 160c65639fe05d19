//===- ModelConfigFuzzer.cpp - Fuzz config.json parsing ---------*- C++ -*-===//
//
// Input: a config.json. ModelConfig::load either fails with a message that
// names the file, or returns a configuration that satisfies the checks the
// importer relies on (sizes positive, heads dividing d_model, special
// tokens inside the target vocabulary).
//
//===----------------------------------------------------------------------===//

#include "compiler/ModelConfig.h"
#include "fuzz/CompilerReaders.h"

#include <cmath>

using namespace mlir::tfm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<ModelConfig> config = tfm_fuzz::openInput(
      data, size, ModelConfig::load, tfm_fuzz::startsWithPathThen(": "));
  if (!config)
    return 0;
  const ModelConfig &c = *config;
  bool relative = c.positions == ModelConfig::Positions::relative;
  bool tables = c.positions == ModelConfig::Positions::table;
  // Sinusoids (which a Marian config gets without tables) pair channels.
  TFM_FUZZ_CHECK(c.dModel >= 1 && (relative || tables || c.dModel % 2 == 0));
  TFM_FUZZ_CHECK(c.encoderLayers >= 1 && c.decoderLayers >= 1);
  // Heads split d_model unless their width is given (T5's d_kv).
  TFM_FUZZ_CHECK(c.encoderHeads >= 1 && c.decoderHeads >= 1);
  TFM_FUZZ_CHECK(c.headDim >= 1 || (c.dModel % c.encoderHeads == 0 &&
                                    c.dModel % c.decoderHeads == 0));
  // What tfm.relative_position_bias verifies.
  TFM_FUZZ_CHECK(relative == (c.relativeBuckets > 0));
  TFM_FUZZ_CHECK(!relative || (c.relativeBuckets >= 4 &&
                               c.relativeMaxDistance > c.relativeBuckets / 2));
  TFM_FUZZ_CHECK(c.layerNormEpsilon > 0 && std::isfinite(c.layerNormEpsilon));
  TFM_FUZZ_CHECK(c.encoderFfnDim >= 1 && c.decoderFfnDim >= 1);
  TFM_FUZZ_CHECK(c.vocabSize >= 1 && c.targetVocabSize >= 1);
  TFM_FUZZ_CHECK(!c.shareEmbeddings || c.vocabSize == c.targetVocabSize);
  TFM_FUZZ_CHECK(c.maxPositions >= 1);
  for (int64_t id : {c.eosTokenId, c.padTokenId, c.decoderStartTokenId})
    TFM_FUZZ_CHECK(id >= 0 && id < c.targetVocabSize);
  return 0;
}
