//===- Tokenizer.h - SentencePiece text in and out --------------*- C++ -*-===//
//
// tfm_tokenizer's operations, for the C API (tfm/runtime.h says what each
// does). tfm_tokenizer itself stays inside Tokenizer.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_TOKENIZER_H
#define TFM_RUNTIME_TOKENIZER_H

#include "tfm/runtime.h"

#include <cstddef>
#include <cstdint>

namespace tfm_runtime {

tfm_status openTokenizer(const char *model_path, const tfm_model_config &config,
                         tfm_tokenizer **out_tokenizer);
void closeTokenizer(tfm_tokenizer *tokenizer);
/// `frame`: the source prefix and suffix (NULL: the default source's).
tfm_status encodeText(const tfm_tokenizer &tokenizer,
                      const tfm_language_tokens *frame, const char *text,
                      size_t length, int32_t **out_ids, int32_t *out_length);
/// Target text -> the ids of the target model's pieces (no EOS).
tfm_status encodeTarget(const tfm_tokenizer &tokenizer, const char *text,
                        size_t length, int32_t **out_ids, int32_t *out_length);
tfm_status pieceId(const tfm_tokenizer &tokenizer, const char *piece,
                   size_t length, int32_t *out_id);
tfm_status decodeIds(const tfm_tokenizer &tokenizer, const int32_t *ids,
                     int32_t length, char **out_text, size_t *out_length);

} // namespace tfm_runtime

#endif // TFM_RUNTIME_TOKENIZER_H
