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

tfm_search_options ModelLibrary::defaultSearch() const {
  tfm_search_options options;
  api.tfm_search_options_default(&options);
  return options;
}

void ModelLibrary::checkSearch(const tfm_search_options &search) const {
  client().checkOptions(search);
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
  tfm_client::cutToPositions(out, modelConfig);
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

namespace {

/// A sentence's hypotheses as the executor keeps them.
Hypotheses hypothesesOf(std::vector<tfm_client::Hypothesis> nbest) {
  Hypotheses out;
  for (tfm_client::Hypothesis &h : nbest) {
    out.tokens.push_back(std::move(h.tokens));
    out.scores.push_back(h.score);
    out.tokenScores.push_back(std::move(h.tokenScores));
  }
  return out;
}

/// The runtime's stream as the executor drives it.
class ModelStream : public SentenceStream {
public:
  ModelStream(const RuntimeApi &api, tfm_model *model,
              const tfm_search_options &search, size_t slots)
      : stream(api, model, search, int32_t(slots)) {}

  void add(const std::vector<const Sentence *> &sentences) override {
    tfm_client::BatchBuilder batch;
    for (const Sentence *s : sentences)
      batch.add(s->source, s->prefix, s->index);
    stream.add(batch);
  }

  std::vector<std::pair<int64_t, Hypotheses>> step() override {
    tfm_client::Results results = stream.step();
    std::vector<std::pair<int64_t, Hypotheses>> done;
    for (int32_t k = 0; k < results.sentences(); ++k)
      done.emplace_back(results.number(k), hypothesesOf(results.hypotheses(k)));
    return done;
  }

private:
  tfm_client::Stream stream;
};

} // namespace

std::unique_ptr<SentenceStream>
ModelLibrary::openStream(const tfm_search_options &search, size_t slots) const {
  if (search.use_vmap && api.tfm_model_has_vmap(model))
    return nullptr;
  return std::make_unique<ModelStream>(api, model, search, slots);
}

void ModelLibrary::translate(const tfm_search_options &search,
                             const std::vector<const Sentence *> &sentences,
                             std::vector<Hypotheses> &out) const {
  tfm_client::BatchBuilder batch;
  for (const Sentence *s : sentences)
    batch.add(s->source, s->prefix, s->index);
  tfm_client::Results results = client().translate(search, batch);
  for (size_t k = 0; k < sentences.size(); ++k)
    out[k] = hypothesesOf(results.hypotheses(int32_t(k)));
}
