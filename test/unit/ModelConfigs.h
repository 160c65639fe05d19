//===- ModelConfigs.h - Model configurations for unit tests -----*- C++ -*-===//
//
// The small model the runtime's unit tests check a request and a row of
// logits against; each test adds what its rules read besides.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_UNIT_MODELCONFIGS_H
#define TFM_TEST_UNIT_MODELCONFIGS_H

#include "tfm/runtime.h"

namespace tfm_test {

/// A model of 10 target tokens, EOS 0 and padding 1, that forces no token.
inline tfm_model_config tenTokenConfig() {
  tfm_model_config cfg{};
  cfg.target_vocab_size = 10;
  cfg.eos_token_id = 0;
  cfg.pad_token_id = 1;
  cfg.forced_eos_token_id = -1;
  cfg.forced_bos_token_id = -1;
  return cfg;
}

} // namespace tfm_test

#endif // TFM_TEST_UNIT_MODELCONFIGS_H
