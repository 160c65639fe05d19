//===- Session.h - The translator's model, tokenizer, languages -*- C++ -*-===//
//
// What a run opens before it reads its input: the weights (beside the
// translator, embedded in it, or --weights), the tokenizer, the languages
// and a --vmap shortlist; and the files it reads, which no output may
// overwrite.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_SESSION_H
#define TFM_TOOLS_TRANSLATOR_SESSION_H

#include "tfm/Client.h"
#include "tools/common/GuardedOutput.h"
#include "tools/translator/Options.h"
#include "tools/translator/SourceDetection.h"

#include <memory>
#include <string>

namespace tfm_translator {

/// The model, its tokenizer, its languages and the formats they allow.
struct Session {
  /// The linked runtime as a table, for the client.
  tfm_runtime::RuntimeApi api = tfm_runtime::RuntimeApi::linked();
  tfm_model *model = nullptr;
  tfm_tokenizer *tokenizer = nullptr;
  tfm_languages *languages = nullptr;
  tfm_model_config cfg{};
  Format inputFormat, outputFormat;
  /// --source-lang and --target-lang's tokens (all empty without them).
  tfm_language_tokens languageTokens{};
  /// --source-lang auto on a multilingual model: each line's language
  /// detected (null otherwise; languageTokens then frame the lines whose
  /// language is none of the model's).
  std::unique_ptr<SourceDetection> autoSource;

  Session() = default;
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  ~Session() {
    tfm_languages_close(languages);
    tfm_tokenizer_close(tokenizer);
    tfm_model_close(model);
  }

  tfm_client::Client client() const { return {api, model}; }
  tfm_client::Stream stream(const tfm_search_options &options,
                            int32_t slots) const {
    return {api, model, options, slots};
  }
};

/// This translator's executable, or empty if the system will not say.
std::string executablePath();
/// The weights: embedded in this executable, or model.tfmw beside it.
std::string defaultWeights();

/// Opens the weights (checked unless told not to), the tokenizer, the
/// shortlist of --vmap and the languages, and checks the search options
/// and --max-length against the model: what a run needs before its input.
void openSession(Options &o, Session &s);
/// Opens the weights, checked unless told not to.
void openModel(Options &o, Session &s);

/// --verify-weights: every tensor checked and the result printed.
int verifyWeights(const Options &o, const Session &s);
/// --model-info: what tfmc compiled in, with the languages of the
/// weights' tokenizer.tfm, and a decoder step's parallel regions.
int printModelInfo(Options &o);

/// Every file the run reads, which no output may overwrite: the inputs,
/// the model's files (the translator, its weights and the files beside
/// them that tfmc writes), the companion inputs.
tfm_tools::ReadFiles filesRead(const Options &o);

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_SESSION_H
