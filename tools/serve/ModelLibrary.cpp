//===- ModelLibrary.cpp - A compiled model, dlopened ------------*- C++ -*-===//

#include "tools/serve/ModelLibrary.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <sstream>
#include <stdexcept>

using namespace tfm_serve;

namespace {

bool isFile(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> splitWords(const char *text) {
  std::vector<std::string> words;
  std::istringstream in(text ? text : "");
  for (std::string word; in >> word;)
    words.push_back(word);
  return words;
}

} // namespace

ModelLibrary::ModelLibrary(std::string name, const std::string &dir)
    : modelName(std::move(name)) {
  try {
    load(dir);
  } catch (...) {
    close();
    throw;
  }
}

void ModelLibrary::load(const std::string &dir) {
  std::string library = dir + "/libtranslator.so";
  if (!isFile(library))
    throw std::runtime_error(library + " does not exist: pass the directory "
                                       "`tfmc compile -o` wrote");
  handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    throw std::runtime_error("cannot load " + library + ": " + dlerror());
  if (std::string problem = api.bind(handle); !problem.empty())
    throw std::runtime_error(library + ": " + problem);
  // The weights beside the library, else inside the translator.
  std::string weights = dir + "/model.tfmw";
  if (!isFile(weights))
    weights = dir + "/translator";
  check(api.tfm_model_open(weights.c_str(), &model));
  api.tfm_model_get_config(model, &modelConfig);
  check(api.tfm_tokenizer_open(weights.c_str(), &modelConfig, &tokenizer));
  if (!tokenizer)
    throw std::runtime_error(dir + ": the model has no tokenizer (source.spm, "
                                   "target.spm, vocab.json): it cannot "
                                   "translate text");
  check(api.tfm_languages_open(weights.c_str(), &modelConfig, &languageTable));
  readLanguages();
}

ModelLibrary::~ModelLibrary() { close(); }

void ModelLibrary::close() {
  if (languageTable)
    api.tfm_languages_close(languageTable);
  if (tokenizer)
    api.tfm_tokenizer_close(tokenizer);
  if (model)
    api.tfm_model_close(model);
  languageTable = nullptr;
  tokenizer = nullptr;
  model = nullptr;
  // The library stays loaded: OpenMP's threads may still run its code.
}

void ModelLibrary::readLanguages() {
  if (!languageTable)
    return;
  for (int32_t i = 0; i < api.tfm_languages_count(languageTable); ++i)
    langs.push_back({api.tfm_languages_code(languageTable, i),
                     splitWords(api.tfm_languages_names(languageTable, i))});
  api.tfm_languages_pair(languageTable, &pair[0], &pair[1]);
}

void ModelLibrary::check(tfm_status status) const {
  if (!status)
    return;
  std::string message = api.tfm_status_message(status);
  api.tfm_status_free(status);
  throw std::runtime_error(message);
}

tfm_search_options ModelLibrary::defaultSearch() const {
  tfm_search_options options;
  api.tfm_search_options_default(&options);
  return options;
}

int ModelLibrary::findLanguage(const std::string &code) const {
  if (!languageTable)
    return -1;
  int32_t index = -1;
  tfm_status status =
      api.tfm_languages_find(languageTable, code.c_str(), &index);
  if (status) {
    api.tfm_status_free(status);
    return -1;
  }
  return index;
}

tfm_language_tokens ModelLibrary::languageTokens(int source, int target) const {
  tfm_language_tokens tokens{};
  check(api.tfm_languages_tokens(languageTable, langs[source].code.c_str(),
                                 langs[target].code.c_str(), &tokens));
  return tokens;
}

std::vector<int32_t>
ModelLibrary::encode(const std::string &text,
                     const tfm_language_tokens &frame) const {
  int32_t *ids = nullptr, length = 0;
  check(api.tfm_tokenizer_encode_framed(
      tokenizer, languageTable ? &frame : nullptr, text.data(), text.size(),
      &ids, &length));
  std::vector<int32_t> out(ids, ids + length);
  api.tfm_free(ids);
  // As the translator cuts a line: its start and its end, EOS last.
  if (int64_t(out.size()) > modelConfig.max_positions) {
    out.resize(size_t(modelConfig.max_positions));
    out.back() = int32_t(modelConfig.eos_token_id);
  }
  return out;
}

std::string ModelLibrary::decode(const std::vector<int32_t> &ids) const {
  char *text = nullptr;
  size_t size = 0;
  check(api.tfm_tokenizer_decode(tokenizer, ids.data(), int32_t(ids.size()),
                                 &text, &size));
  std::string out(text, size);
  api.tfm_free(text);
  return out;
}

int32_t ModelLibrary::pieceId(const std::string &piece) const {
  int32_t id = 0;
  check(api.tfm_tokenizer_piece_id(tokenizer, piece.data(), piece.size(), &id));
  return id;
}

void ModelLibrary::setThreads(int threads) const {
  check(api.tfm_set_num_threads(threads));
}

void ModelLibrary::translate(const tfm_search_options &search,
                             const std::vector<const Sentence *> &sentences,
                             std::vector<Hypotheses> &out) const {
  std::vector<const int32_t *> sources, prefixes;
  std::vector<int32_t> lengths, prefixLengths;
  std::vector<int64_t> indexes;
  for (const Sentence *s : sentences) {
    sources.push_back(s->source.data());
    lengths.push_back(int32_t(s->source.size()));
    prefixes.push_back(s->prefix.data());
    prefixLengths.push_back(int32_t(s->prefix.size()));
    indexes.push_back(s->index);
  }
  tfm_batch batch = {int32_t(sentences.size()),
                     sources.data(),
                     lengths.data(),
                     prefixes.data(),
                     prefixLengths.data(),
                     nullptr,
                     nullptr,
                     indexes.data()};
  tfm_results *results = nullptr;
  check(api.tfm_translate_batch(model, &search, &batch, &results));
  for (size_t k = 0; k < sentences.size(); ++k) {
    int32_t index = int32_t(k);
    for (int32_t rank = 0; rank < api.tfm_results_count(results, index);
         ++rank) {
      int32_t length = 0;
      const int32_t *tokens =
          api.tfm_results_tokens(results, index, rank, &length);
      out[k].tokens.emplace_back(tokens, tokens + length);
      out[k].scores.push_back(api.tfm_results_score(results, index, rank));
      const float *tokenScores =
          api.tfm_results_token_scores(results, index, rank, &length);
      out[k].tokenScores.emplace_back(tokenScores, tokenScores + length);
    }
  }
  api.tfm_results_free(results);
}
