//===- HtmlTranslate.cpp - HTML files through a compiled model --*- C++ -*-===//
//
// The test driver of test/Integration/html-translate.test until the
// translator takes --format html: tools/common/Html.h over a real model,
// loaded from the directory `tfmc compile -o` wrote (its
// libtranslator.so, through the runtime's client tfm/Client.h, as
// tfm-serve and the Python module load theirs), with the runtime's default
// search (the translator's without options).
//
//   tfm-html-translate MODEL_DIR OUT_DIR FILE...
//
// writes each FILE's translation to OUT_DIR/<its name> and one line of
// figures per file to stdout. The model is loaded once.
//
//===----------------------------------------------------------------------===//

#include "tools/common/Html.h"

#include "tfm/Client.h"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace {

using tfm_runtime::RuntimeApi;

/// One compiled model and its tokenizer, with the framing of its language
/// pair if it has one.
class Model {
public:
  explicit Model(const std::string &dir) {
    std::string library = dir + "/libtranslator.so";
    void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      throw std::runtime_error("cannot load " + library + ": " + dlerror());
    if (std::string problem = api.bind(handle); !problem.empty())
      throw std::runtime_error(library + ": " + problem);
    std::string weights = dir + "/model.tfmw";
    tfm_client::check(api, api.tfm_model_open(weights.c_str(), &model));
    api.tfm_model_get_config(model, &config);
    tfm_client::check(
        api, api.tfm_tokenizer_open(weights.c_str(), &config, &tokenizer));
    if (!tokenizer)
      throw std::runtime_error(dir + ": the model has no tokenizer");
    tfm_client::check(
        api, api.tfm_languages_open(weights.c_str(), &config, &languages));
    framePair();
  }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;
  ~Model() {
    if (languages)
      api.tfm_languages_close(languages);
    api.tfm_tokenizer_close(tokenizer);
    api.tfm_model_close(model);
  }

  /// Translations of the sentences, in batches of `batchSize`.
  std::vector<std::string> translate(const std::vector<std::string> &sentences,
                                     size_t batchSize = 32) const {
    std::vector<std::string> out;
    for (size_t first = 0; first < sentences.size(); first += batchSize) {
      size_t last = std::min(sentences.size(), first + batchSize);
      std::vector<std::string> part(sentences.begin() + long(first),
                                    sentences.begin() + long(last));
      for (std::string &translation : translateBatch(part, first))
        out.push_back(std::move(translation));
    }
    return out;
  }

private:
  void framePair() {
    int32_t source = -1, target = -1;
    if (languages)
      api.tfm_languages_pair(languages, &source, &target);
    if (source < 0 || target < 0)
      return;
    framed = true;
    tfm_client::check(api,
                      api.tfm_languages_tokens(
                          languages, api.tfm_languages_code(languages, source),
                          api.tfm_languages_code(languages, target), &frame));
  }

  std::vector<int32_t> encode(const std::string &text) const {
    int32_t *ids = nullptr, length = 0;
    tfm_client::check(api, api.tfm_tokenizer_encode_framed(
                               tokenizer, framed ? &frame : nullptr,
                               text.data(), text.size(), &ids, &length));
    std::vector<int32_t> out(ids, ids + length);
    api.tfm_free(ids);
    tfm_client::cutToPositions(out, config);
    return out;
  }

  std::string decode(const std::vector<int32_t> &ids) const {
    char *text = nullptr;
    size_t size = 0;
    tfm_client::check(api, api.tfm_tokenizer_decode(tokenizer, ids.data(),
                                                    int32_t(ids.size()), &text,
                                                    &size));
    std::string out(text, size);
    api.tfm_free(text);
    return out;
  }

  std::vector<std::string>
  translateBatch(const std::vector<std::string> &sentences,
                 size_t firstIndex) const {
    std::vector<std::vector<int32_t>> sources;
    for (const std::string &sentence : sentences)
      sources.push_back(encode(sentence));
    std::vector<int32_t> prefix(frame.target_prefix,
                                frame.target_prefix +
                                    (framed ? frame.target_prefix_length : 0));
    tfm_client::BatchBuilder batch;
    for (size_t i = 0; i < sources.size(); ++i)
      batch.add(sources[i], prefix, int64_t(firstIndex + i));
    tfm_search_options options;
    api.tfm_search_options_default(&options);
    tfm_client::Results results =
        tfm_client::Client(api, model).translate(options, batch);
    std::vector<std::string> out;
    for (size_t i = 0; i < sources.size(); ++i)
      out.push_back(decode(results.hypothesis(int32_t(i), 0).tokens));
    return out;
  }

  RuntimeApi api;
  tfm_model *model = nullptr;
  tfm_model_config config{};
  tfm_tokenizer *tokenizer = nullptr;
  tfm_languages *languages = nullptr;
  tfm_language_tokens frame{};
  bool framed = false;
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void translateFile(const Model &model, const std::string &path,
                   const std::string &outDir) {
  tfm_tools::HtmlResult result = tfm_tools::translateHtml(
      readFile(path),
      [&](const std::vector<std::string> &s) { return model.translate(s); });
  if (!result.error.empty())
    throw std::runtime_error(path + ": " + result.error);
  std::string out = outDir + "/" + baseName(path);
  std::ofstream(out, std::ios::binary) << result.html;
  const tfm_tools::HtmlStats &stats = result.stats;
  std::cout << baseName(path) << ": sentences " << stats.sentences << " spread "
            << stats.spread << " piecewise " << stats.piecewise << " kept "
            << stats.kept << "\n";
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::cerr << "usage: tfm-html-translate MODEL_DIR OUT_DIR FILE...\n";
    return 2;
  }
  try {
    Model model(argv[1]);
    for (int i = 3; i < argc; ++i)
      translateFile(model, argv[i], argv[2]);
  } catch (const std::exception &e) {
    std::cerr << "tfm-html-translate: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
