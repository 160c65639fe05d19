//===- RuntimeApi.h - The C API, found in a loaded model --------*- C++ -*-===//
//
// Programs that serve models of any shape (the Python module, tfm-serve)
// link no model: they dlopen each model's libtranslator.so (RTLD_LOCAL, so
// every model keeps its own runtime) and call the C API of tfm/runtime.h
// through these pointers.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_API_H
#define TFM_RUNTIME_API_H

#include "tfm/runtime.h"

#include <dlfcn.h>

#define TFM_RUNTIME_API_LIST(X)                                                \
  X(tfm_status_message)                                                        \
  X(tfm_status_free)                                                           \
  X(tfm_model_open)                                                            \
  X(tfm_model_close)                                                           \
  X(tfm_model_get_config)                                                      \
  X(tfm_search_options_default)                                                \
  X(tfm_set_num_threads)                                                       \
  X(tfm_translate_prefixed)                                                    \
  X(tfm_translate_batch)                                                       \
  X(tfm_score_batch)                                                           \
  X(tfm_results_count)                                                         \
  X(tfm_results_tokens)                                                        \
  X(tfm_results_score)                                                         \
  X(tfm_results_token_scores)                                                  \
  X(tfm_results_free)                                                          \
  X(tfm_tokenizer_open)                                                        \
  X(tfm_tokenizer_close)                                                       \
  X(tfm_tokenizer_encode)                                                      \
  X(tfm_tokenizer_decode)                                                      \
  X(tfm_tokenizer_piece_id)                                                    \
  X(tfm_tokenizer_encode_framed)                                               \
  X(tfm_tokenizer_encode_target)                                               \
  X(tfm_languages_open)                                                        \
  X(tfm_languages_close)                                                       \
  X(tfm_languages_count)                                                       \
  X(tfm_languages_code)                                                        \
  X(tfm_languages_names)                                                       \
  X(tfm_languages_pair)                                                        \
  X(tfm_languages_find)                                                        \
  X(tfm_languages_tokens)                                                      \
  X(tfm_free)

namespace tfm_runtime {

/// The runtime's C API, as found in one model's libtranslator.so.
struct RuntimeApi {
#define TFM_RUNTIME_API_POINTER(name) decltype(&::name) name = nullptr;
  TFM_RUNTIME_API_LIST(TFM_RUNTIME_API_POINTER)
#undef TFM_RUNTIME_API_POINTER

  /// Finds every function in `handle` (from dlopen); the name of the first
  /// one missing, or nullptr when all are there.
  const char *bind(void *handle) {
#define TFM_RUNTIME_API_BIND(name)                                             \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, #name));               \
  if (!name)                                                                   \
    return #name;
    TFM_RUNTIME_API_LIST(TFM_RUNTIME_API_BIND)
#undef TFM_RUNTIME_API_BIND
    return nullptr;
  }
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_API_H
