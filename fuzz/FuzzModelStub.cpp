//===- FuzzModelStub.cpp - A compiled model's exports, faked ----*- C++ -*-===//
//
// The runtime links against what tfmc generates (tfm/abi/ModelInfo.h).
// The weights-file and tokenizer fuzzers exercise only the loaders, so a
// small fake model stands in: its fingerprint and data size are what the
// seeds in corpus/WeightsFile are written for (make_seeds.py).
//
//===----------------------------------------------------------------------===//

#include "tfm/abi/ModelInfo.h"

#include <cstdio>
#include <cstdlib>

extern "C" {
const tfm_model_info tfm_model_info_data = {
    /*abiVersion=*/int64_t(tfm_runtime::kAbiVersion),
    /*fingerprint=*/0x5eed5eed,
    /*dModel=*/1, // so that the output projection fits the 256 bytes
    /*encoderLayers=*/1,
    /*decoderLayers=*/1,
    /*encoderHeads=*/2,
    /*decoderHeads=*/2,
    /*sourceVocabSize=*/64,
    /*targetVocabSize=*/64,
    /*maxPositions=*/32,
    /*eosTokenId=*/0,
    /*padTokenId=*/63,
    /*decoderStartTokenId=*/63,
    /*forcedEosTokenId=*/-1,
    /*forcedBosTokenId=*/-1,
    /*weightsSize=*/256,
    /*precision=*/int64_t(tfm_runtime::kPrecisionFp32),
    /*decoderHeadDim=*/8,
    // 16 panels of 4 features by 1 input, f32: the data's 256 bytes.
    /*outputPanelsOffset=*/0,
    /*outputPanelWidth=*/4,
    /*outputBiasOffset=*/-1,
    /*noRepeatNgramSize=*/0,
    /*repetitionPenalty=*/1.0};
const int64_t tfm_model_bad_words[] = {0};
const char tfm_model_backends[] = "";

// Never reached: the fuzzers do not translate.
void tfm_encode(void **) {
  std::fprintf(stderr, "fuzz stub: tfm_encode called\n");
  std::abort();
}
void tfm_decode_step(void **) {
  std::fprintf(stderr, "fuzz stub: tfm_decode_step called\n");
  std::abort();
}
}
