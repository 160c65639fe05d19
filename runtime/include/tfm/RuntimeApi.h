//===- RuntimeApi.h - The C API as a table of functions ---------*- C++ -*-===//
//
// Programs that serve models of any shape (the Python module, tfm-serve)
// link no model: they dlopen each model's libtranslator.so (RTLD_LOCAL, so
// every model keeps its own runtime) and call the C API of tfm/runtime.h
// through these pointers. The translator, linked with its runtime, fills
// the same table from its own symbols, so that one client (tfm/Client.h)
// serves all three.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_API_H
#define TFM_RUNTIME_API_H

#include "tfm/runtime.h"

#include <dlfcn.h>
#include <string>

#define TFM_RUNTIME_API_LIST(X)                                                \
  X(tfm_status_message)                                                        \
  X(tfm_status_sentence)                                                       \
  X(tfm_status_free)                                                           \
  X(tfm_model_open)                                                            \
  X(tfm_model_close)                                                           \
  X(tfm_model_get_config)                                                      \
  X(tfm_search_options_default)                                                \
  X(tfm_search_options_check)                                                  \
  X(tfm_set_num_threads)                                                       \
  X(tfm_translate_prefixed)                                                    \
  X(tfm_translate_batch)                                                       \
  X(tfm_score_batch)                                                           \
  X(tfm_results_count)                                                         \
  X(tfm_results_tokens)                                                        \
  X(tfm_results_score)                                                         \
  X(tfm_results_token_scores)                                                  \
  X(tfm_results_first_logits)                                                  \
  X(tfm_results_timing)                                                        \
  X(tfm_results_free)                                                          \
  X(tfm_results_sentences)                                                     \
  X(tfm_results_sentence_number)                                               \
  X(tfm_stream_open)                                                           \
  X(tfm_stream_add)                                                            \
  X(tfm_stream_step)                                                           \
  X(tfm_stream_sentences)                                                      \
  X(tfm_stream_close)                                                          \
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
  X(tfm_model_read_vmap)                                                       \
  X(tfm_model_has_vmap)                                                        \
  X(tfm_free)

namespace tfm_runtime {

/// The runtime's C API, as found in one model's libtranslator.so.
struct RuntimeApi {
#define TFM_RUNTIME_API_POINTER(name) decltype(&::name) name = nullptr;
  TFM_RUNTIME_API_LIST(TFM_RUNTIME_API_POINTER)
#undef TFM_RUNTIME_API_POINTER

  /// Finds every function in `handle` (from dlopen) once it has checked
  /// that the library speaks this program's version of the C API: empty,
  /// or what is wrong (to follow the library's name).
  std::string bind(void *handle) {
    auto version = reinterpret_cast<decltype(&::tfm_c_api_version)>(
        dlsym(handle, "tfm_c_api_version"));
    if (!version)
      return "has no tfm_c_api_version: compiled by a tfmc older than this "
             "program; compile the model again with this program's tfmc";
    if (int32_t v = version(); v != TFM_C_API_VERSION)
      return "speaks version " + std::to_string(v) +
             " of the runtime's C API; this program speaks version " +
             std::to_string(TFM_C_API_VERSION) +
             ": compile the model again with this program's tfmc";
#define TFM_RUNTIME_API_BIND(name)                                             \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, #name));               \
  if (!name)                                                                   \
    return std::string("lacks ") + #name;
    TFM_RUNTIME_API_LIST(TFM_RUNTIME_API_BIND)
#undef TFM_RUNTIME_API_BIND
    return "";
  }

  /// The runtime linked into this program (the translator's): defined
  /// only where it is called, so that programs which dlopen their models
  /// need none of its symbols.
  static RuntimeApi linked() {
    RuntimeApi api;
#define TFM_RUNTIME_API_LINK(name) api.name = &::name;
    TFM_RUNTIME_API_LIST(TFM_RUNTIME_API_LINK)
#undef TFM_RUNTIME_API_LINK
    return api;
  }
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_API_H
