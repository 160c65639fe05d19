//===- Service.cpp - Texts in, translations out -----------------*- C++ -*-===//

#include "tools/serve/Service.h"

#include "tools/common/Html.h"
#include "tools/common/Text.h"
#include "tools/serve/Files.h"

#include <fmt/format.h>

#include <algorithm>

using namespace tfm_serve;

namespace {

/// An error of a job run from inside the HTML writer's translate
/// function, carried out through it.
struct HtmlJobError {
  HttpError error;
};

std::string joinLines(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines)
    text += (text.empty() ? "" : "\n") + line;
  return text;
}

std::vector<std::string> splitOnNewlines(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    if (end == std::string::npos)
      return lines;
    start = end + 1;
  }
}

std::string itemName(const char *name, size_t index, bool batch) {
  return batch ? fmt::format("{}[{}]", name, index) : name;
}

/// LibreTranslate's alternatives: the other hypotheses, each once, none
/// equal to the translation.
std::vector<std::string> alternativesOf(const std::vector<std::string> &ranks) {
  std::vector<std::string> out;
  for (size_t k = 1; k < ranks.size(); ++k)
    if (ranks[k] != ranks[0] &&
        std::find(out.begin(), out.end(), ranks[k]) == out.end())
      out.push_back(ranks[k]);
  return out;
}

/// LibreTranslate's answer when it detects nothing is "en" with
/// confidence 0; here "en" where it is a source, else the first source.
std::string fallbackSource(const std::vector<std::string> &sources) {
  if (sources.empty() ||
      std::find(sources.begin(), sources.end(), "en") != sources.end())
    return "en";
  return sources.front();
}

} // namespace

Service::Service(const std::vector<std::unique_ptr<ModelLibrary>> &models,
                 const Catalog &catalog, Executor &executor, BatchLimits limits,
                 ServiceOptions options)
    : models(models), catalog(catalog), executor(executor),
      maxQueued(limits.maxQueued), options(options),
      detector(catalog.sourceNames()),
      fallback(fallbackSource(catalog.sourceLanguages())) {
  for (const std::unique_ptr<ModelLibrary> &model : models) {
    const ModelLibrary *library = model.get();
    StreamOpener opener;
    if (limits.continuous)
      opener = [library](const tfm_search_options &search, size_t slots) {
        return library->openStream(search, slots);
      };
    queueOf.push_back(executor.addModel(
        limits,
        [library](const tfm_search_options &search,
                  const std::vector<const Sentence *> &sentences,
                  std::vector<Hypotheses> &out) {
          library->translate(search, sentences, out);
        },
        std::move(opener)));
  }
}

Parsed<Service::Lines>
Service::splitLines(const Route &route, const std::vector<std::string> &texts,
                    const std::vector<size_t> &items, const char *name,
                    bool batch) const {
  const ModelLibrary &model = *models[route.model];
  Lines lines;
  try {
    tfm_language_tokens frame =
        model.languageTokens(route.source, route.target);
    for (size_t i : items) {
      lines.index.emplace_back();
      for (const std::string &line : splitOnNewlines(texts[i])) {
        if (tfm_tools::isBlank(line)) {
          lines.index.back().push_back(-1);
          continue;
        }
        Sentence sentence{model.encode(line, frame),
                          {frame.target_prefix,
                           frame.target_prefix + frame.target_prefix_length},
                          int64_t(i)};
        lines.index.back().push_back(long(lines.sentences.size()));
        lines.sentences.push_back(std::move(sentence));
      }
    }
  } catch (const std::exception &e) {
    return HttpError{
        400, fmt::format("Invalid request: {}: {}",
                         itemName(name, items[lines.index.size() - 1], batch),
                         e.what())};
  }
  if (lines.sentences.size() > maxQueued)
    return HttpError{400, fmt::format("Invalid request: {} lines to "
                                      "translate, more than the limit of {} "
                                      "(--max-queue)",
                                      lines.sentences.size(), maxQueued)};
  return lines;
}

Parsed<std::vector<Hypotheses>> Service::run(size_t model,
                                             std::shared_ptr<Job> job,
                                             Clock::time_point arrival) {
  Parsed<std::vector<std::vector<Hypotheses>>> results =
      runAll({{model, std::move(job)}}, arrival);
  if (const HttpError *error = errorOf(results))
    return *error;
  return std::move(std::get<0>(results).front());
}

Parsed<std::vector<std::vector<Hypotheses>>> Service::runAll(
    const std::vector<std::pair<size_t, std::shared_ptr<Job>>> &jobs,
    Clock::time_point arrival) {
  auto cancelAll = [&] {
    for (const auto &[model, job] : jobs)
      executor.cancel(queueOf[model], job);
  };
  for (const auto &[model, job] : jobs) {
    if (job->size() > 0 && !executor.submit(queueOf[model], job)) {
      cancelAll();
      return HttpError{503, "the translation queue is full: retry later"};
    }
  }
  std::vector<std::vector<Hypotheses>> out;
  for (const auto &[model, job] : jobs) {
    Parsed<std::vector<Hypotheses>> results = await(model, job, arrival);
    if (const HttpError *error = errorOf(results)) {
      cancelAll();
      return *error;
    }
    out.push_back(std::move(std::get<0>(results)));
  }
  return out;
}

/// A submitted job's end: its hypotheses, or the error that ended it (past
/// the deadline it is cancelled).
Parsed<std::vector<Hypotheses>> Service::await(size_t model,
                                               std::shared_ptr<Job> job,
                                               Clock::time_point arrival) {
  if (job->size() == 0)
    return std::vector<Hypotheses>{};
  Job::State state = job->wait(arrival + options.deadline);
  if (state == Job::State::Pending) {
    executor.cancel(queueOf[model], job);
    state = job->wait(Clock::now()); // it may have ended meanwhile
  }
  if (state == Job::State::Done)
    return job->results();
  if (state == Job::State::Failed)
    return HttpError{500, "Cannot translate text: " + job->error()};
  return HttpError{
      504,
      fmt::format("the translation took longer than the deadline of {} s",
                  std::chrono::duration<double>(options.deadline).count())};
}

TextResult Service::textResult(const ModelLibrary &model, const Lines &lines,
                               const std::vector<Hypotheses> &results) const {
  TextResult out;
  for (const std::vector<long> &item : lines.index) {
    size_t ranks = 1;
    for (long sentence : item)
      if (sentence >= 0)
        ranks = std::max(ranks, results[size_t(sentence)].tokens.size());
    // Hypothesis k of a text: hypothesis k of each line (a line with fewer
    // gives its last), lines joined as they came.
    std::vector<std::string> texts(ranks);
    for (size_t k = 0; k < ranks; ++k) {
      for (size_t l = 0; l < item.size(); ++l) {
        if (l > 0)
          texts[k] += '\n';
        if (item[l] < 0 || results[size_t(item[l])].tokens.empty())
          continue;
        const auto &tokens = results[size_t(item[l])].tokens;
        texts[k] += model.decode(tokens[std::min(k, tokens.size() - 1)]);
      }
    }
    out.translations.push_back(texts[0]);
    out.alternatives.push_back(alternativesOf(texts));
  }
  return out;
}

/// CLD2's languages under the codes /languages lists ("no" is "nb" where
/// a model has Norwegian Bokmål as nob_Latn).
std::vector<DetectedLanguage> Service::detect(const std::string &text) const {
  std::vector<DetectedLanguage> found = detector.detect(text);
  for (DetectedLanguage &language : found)
    language.language = catalog.publicCodeOf(language.language);
  return found;
}

/// A blank item translates to itself from any language: the first source
/// that reaches the target, at confidence 0.
Parsed<Route> Service::routeBlank(const std::string &target,
                                  DetectedLanguage &detected) const {
  for (const std::string &source : catalog.sourceLanguages()) {
    Parsed<Route> route = catalog.route(source, target);
    if (!errorOf(route)) {
      detected = {source, 0.0};
      return route;
    }
  }
  return catalog.route("auto", target); // the error naming the target
}

/// Source auto, one item: the language CLD2 ranks first among the served
/// sources (or, if none, first of all) and its pair to the target; with
/// none detected, the target's only source if it has one.
Parsed<Route> Service::routeDetected(const TranslateRequest &request,
                                     const std::string &text, size_t item,
                                     DetectedLanguage &detected) const {
  if (tfm_tools::isBlank(text))
    return routeBlank(request.target, detected);
  std::vector<DetectedLanguage> found = detect(text);
  if (found.empty()) {
    Parsed<Route> only = catalog.route("auto", request.target);
    if (const HttpError *error = errorOf(only))
      return HttpError{400, fmt::format("{}: no language detected; {}",
                                        itemName("q", item, request.batch),
                                        error->message)};
    detected = {std::get<Route>(only).sourceCode, 0.0};
    return only;
  }
  detected = found.front();
  Parsed<Route> route = catalog.route(detected.language, request.target);
  if (errorOf(route))
    return HttpError{
        400, fmt::format("{}: detected language {} (confidence {}), which no "
                         "model here translates to {}: give the source "
                         "language",
                         itemName("q", item, request.batch), detected.language,
                         detected.confidence, request.target)};
  return route;
}

Parsed<std::vector<Route>>
Service::routeItems(const TranslateRequest &request,
                    const std::vector<std::string> &texts,
                    std::vector<DetectedLanguage> &detected) const {
  if (request.source != "auto") {
    Parsed<Route> route = catalog.route(request.source, request.target);
    if (const HttpError *error = errorOf(route))
      return *error;
    return std::vector<Route>(request.q.size(), std::get<Route>(route));
  }
  // An unknown target is the request's fault, whatever its texts.
  if (!catalog.knows(request.target))
    return HttpError{400, fmt::format("{} is not supported", request.target)};
  std::vector<Route> routes;
  detected.resize(request.q.size());
  for (size_t i = 0; i < request.q.size(); ++i) {
    Parsed<Route> route = routeDetected(request, texts[i], i, detected[i]);
    if (const HttpError *error = errorOf(route))
      return *error;
    routes.push_back(std::get<Route>(route));
  }
  return routes;
}

/// Items of one route share a job: a list q in two languages is two jobs,
/// each on its model, in the order of their first items.
Parsed<std::vector<Service::RouteGroup>>
Service::groupByRoute(const std::vector<std::string> &texts, bool batch,
                      const std::vector<Route> &routes) const {
  std::vector<RouteGroup> groups;
  for (size_t i = 0; i < routes.size(); ++i) {
    auto same = std::find_if(groups.begin(), groups.end(), [&](const auto &g) {
      return g.route.model == routes[i].model &&
             g.route.source == routes[i].source &&
             g.route.target == routes[i].target;
    });
    if (same == groups.end())
      same = groups.insert(groups.end(), RouteGroup{routes[i], {}, {}});
    same->items.push_back(i);
  }
  size_t sentences = 0;
  for (RouteGroup &group : groups) {
    Parsed<Lines> lines =
        splitLines(group.route, texts, group.items, "q", batch);
    if (const HttpError *error = errorOf(lines))
      return *error;
    group.lines = std::move(std::get<Lines>(lines));
    sentences += group.lines.sentences.size();
  }
  if (sentences > maxQueued)
    return HttpError{400, fmt::format("Invalid request: {} lines to "
                                      "translate, more than the limit of {} "
                                      "(--max-queue)",
                                      sentences, maxQueued)};
  return groups;
}

Parsed<TextResult> Service::runGroups(std::vector<RouteGroup> &groups,
                                      size_t texts, int alternatives,
                                      Clock::time_point arrival) {
  std::vector<std::pair<size_t, std::shared_ptr<Job>>> jobs;
  for (RouteGroup &group : groups) {
    size_t model = group.route.model;
    tfm_search_options search = models[model]->defaultSearch();
    search.beam_size = options.beamSize;
    if (alternatives > 0) {
      search.n_best = alternatives + 1;
      search.beam_size = std::max(search.beam_size, search.n_best);
    }
    jobs.emplace_back(
        model, std::make_shared<Job>(search, std::move(group.lines.sentences)));
  }
  Parsed<std::vector<std::vector<Hypotheses>>> results = runAll(jobs, arrival);
  if (const HttpError *error = errorOf(results))
    return *error;
  TextResult out;
  out.translations.resize(texts);
  out.alternatives.resize(texts);
  for (size_t g = 0; g < groups.size(); ++g) {
    TextResult part = textResult(*models[groups[g].route.model],
                                 groups[g].lines, std::get<0>(results)[g]);
    for (size_t k = 0; k < groups[g].items.size(); ++k) {
      out.translations[groups[g].items[k]] = std::move(part.translations[k]);
      out.alternatives[groups[g].items[k]] = std::move(part.alternatives[k]);
    }
  }
  return out;
}

Parsed<TextResult> Service::translate(const TranslateRequest &request,
                                      Clock::time_point arrival) {
  return request.html ? translateHtml(request, arrival)
                      : translateText(request, arrival);
}

Parsed<TextResult> Service::translateText(const TranslateRequest &request,
                                          Clock::time_point arrival) {
  std::vector<DetectedLanguage> detected;
  Parsed<std::vector<Route>> routes = routeItems(request, request.q, detected);
  if (const HttpError *error = errorOf(routes))
    return *error;
  Parsed<std::vector<RouteGroup>> groups = groupByRoute(
      request.q, request.batch, std::get<std::vector<Route>>(routes));
  if (const HttpError *error = errorOf(groups))
    return *error;
  Parsed<TextResult> out =
      runGroups(std::get<std::vector<RouteGroup>>(groups), request.q.size(),
                request.alternatives, arrival);
  if (auto *result = std::get_if<TextResult>(&out))
    result->detected = std::move(detected);
  return out;
}

std::vector<std::string>
Service::translateOrThrow(const Route &route,
                          const std::vector<std::string> &sentences,
                          Clock::time_point arrival) {
  Parsed<std::vector<RouteGroup>> groups = groupByRoute(
      sentences, true, std::vector<Route>(sentences.size(), route));
  if (const HttpError *error = errorOf(groups))
    throw HtmlJobError{*error};
  Parsed<TextResult> out = runGroups(std::get<std::vector<RouteGroup>>(groups),
                                     sentences.size(), 0, arrival);
  if (const HttpError *error = errorOf(out))
    throw HtmlJobError{*error};
  return std::move(std::get<TextResult>(out).translations);
}

/// Every item's sentences (its blocks' text and its title and alt
/// attributes) go to the queue in one job per route, so that they share
/// batches with other requests; then each document is written back with
/// them (the writer's second pass, pieces of blocks whose translation is
/// too short to spread, is a job of its own when there is one). LibreTranslate
/// gives no alternatives for html: each item's are empty.
Parsed<TextResult> Service::translateHtml(const TranslateRequest &request,
                                          Clock::time_point arrival) {
  std::vector<std::vector<std::string>> units;
  std::vector<std::string> texts, allUnits;
  std::vector<size_t> unitItem;
  for (size_t i = 0; i < request.q.size(); ++i) {
    units.push_back(tfm_tools::htmlSentences(request.q[i]));
    texts.push_back(joinLines(units.back()));
    for (const std::string &unit : units.back()) {
      allUnits.push_back(unit);
      unitItem.push_back(i);
    }
  }
  TextResult out;
  Parsed<std::vector<Route>> itemRoutes =
      routeItems(request, texts, out.detected);
  if (const HttpError *error = errorOf(itemRoutes))
    return *error;
  const std::vector<Route> &routes = std::get<std::vector<Route>>(itemRoutes);
  std::vector<Route> unitRoutes;
  for (size_t item : unitItem)
    unitRoutes.push_back(routes[item]);
  Parsed<std::vector<RouteGroup>> groups =
      groupByRoute(allUnits, true, unitRoutes);
  if (const HttpError *error = errorOf(groups))
    return *error;
  Parsed<TextResult> first = runGroups(
      std::get<std::vector<RouteGroup>>(groups), allUnits.size(), 0, arrival);
  if (const HttpError *error = errorOf(first))
    return *error;
  const std::vector<std::string> &firstPass =
      std::get<TextResult>(first).translations;
  size_t next = 0;
  for (size_t i = 0; i < request.q.size(); ++i) {
    std::vector<std::string> mine(firstPass.begin() + long(next),
                                  firstPass.begin() +
                                      long(next + units[i].size()));
    next += units[i].size();
    bool firstCall = true;
    auto translate = [&](const std::vector<std::string> &sentences) {
      bool known = firstCall && sentences == units[i];
      firstCall = false;
      return known ? mine : translateOrThrow(routes[i], sentences, arrival);
    };
    tfm_tools::HtmlResult result;
    try {
      result = tfm_tools::translateHtml(request.q[i], translate);
    } catch (const HtmlJobError &failed) {
      return failed.error;
    }
    if (!result.error.empty())
      return HttpError{400, fmt::format("Invalid request: {}: {}",
                                        itemName("q", i, request.batch),
                                        result.error)};
    out.translations.push_back(std::move(result.html));
    out.alternatives.emplace_back();
  }
  return out;
}

/// Source auto: the language detected in the file's text, as /translate
/// detects an item's.
Parsed<std::string> Service::fileSource(const FileRequest &request,
                                        const std::string &text,
                                        DetectedLanguage &detected) const {
  if (request.source != "auto") {
    detected = {request.source, 100.0};
    return request.source;
  }
  TranslateRequest whole;
  whole.q = {text};
  whole.source = "auto";
  whole.target = request.target;
  std::vector<DetectedLanguage> found;
  Parsed<std::vector<Route>> route = routeItems(whole, whole.q, found);
  if (const HttpError *error = errorOf(route))
    return HttpError{error->status, fmt::format("file: {}", error->message)};
  detected = found.front();
  return std::get<std::vector<Route>>(route).front().sourceCode;
}

Parsed<FileResult> Service::translate(const FileRequest &request,
                                      Clock::time_point arrival) {
  bool html = request.kind == FileKind::Html;
  TextFileLines split;
  std::string text;
  if (html) {
    text = joinLines(tfm_tools::htmlSentences(request.content));
  } else {
    split = splitTextFile(request.content);
    text = joinLines(split.lines);
  }
  FileResult out;
  out.contentType =
      html ? "text/html; charset=utf-8" : "text/plain; charset=utf-8";
  Parsed<std::string> source = fileSource(request, text, out.source);
  if (const HttpError *error = errorOf(source))
    return *error;
  TranslateRequest texts;
  texts.source = std::get<std::string>(source);
  texts.target = request.target;
  texts.batch = true;
  texts.html = html;
  if (html)
    texts.q = {request.content};
  else
    texts.q = split.lines;
  if (texts.q.empty())
    return out; // an empty file translates to an empty file
  Parsed<TextResult> result = translate(texts, arrival);
  if (const HttpError *error = errorOf(result))
    return *error;
  std::vector<std::string> &translations =
      std::get<TextResult>(result).translations;
  out.content = html ? std::move(translations.front())
                     : joinTextFile(split, translations);
  return out;
}

Parsed<tfm_search_options>
Service::nativeSearch(const ModelLibrary &model,
                      const NativeRequest &request) const {
  tfm_search_options search = model.defaultSearch();
  search.beam_size = request.beamSize.value_or(options.beamSize);
  search.n_best = request.nBest.value_or(1);
  if (request.sampling) {
    // Sampling draws n_best samples with a beam of 1, unless told otherwise
    // (which the runtime refuses).
    search.beam_size = request.beamSize.value_or(1);
    search.sampling = 1;
    search.sampling_topk = request.samplingTopk.value_or(0);
    search.sampling_topp = float(request.samplingTopp.value_or(1.0));
    search.sampling_temperature =
        float(request.samplingTemperature.value_or(1.0));
    search.seed = uint64_t(request.seed.value_or(0));
  }
  search.max_length = request.maxLength.value_or(search.max_length);
  search.min_length = request.minLength.value_or(search.min_length);
  search.length_penalty =
      float(request.lengthPenalty.value_or(search.length_penalty));
  // Past the model's positions a ratio caps nothing (and cannot overflow).
  search.max_length_ratio =
      float(std::min(request.maxLengthRatio.value_or(search.max_length_ratio),
                     double(model.config().max_positions)));
  if (request.repetitionPenalty)
    search.repetition_penalty = float(*request.repetitionPenalty);
  if (request.noRepeatNgramSize)
    search.no_repeat_ngram_size = *request.noRepeatNgramSize;
  if (request.useVmap)
    search.use_vmap = *request.useVmap;
  try {
    model.checkSearch(search);
  } catch (const std::exception &e) {
    return HttpError{400, std::string("Invalid request: ") + e.what()};
  }
  return search;
}

/// The request's target prefixes after each sentence's language token.
Parsed<bool> Service::addPrefixes(const ModelLibrary &model,
                                  const NativeRequest &request,
                                  Lines &lines) const {
  const tfm_model_config &config = model.config();
  for (size_t i = 0; i < request.targetPrefix.size(); ++i) {
    long sentence = lines.index[i][0];
    for (const PrefixToken &token : request.targetPrefix[i]) {
      std::string where = fmt::format("target_prefix[{}]", i);
      int64_t id = token.id;
      if (!token.piece.empty() || id < 0) {
        try {
          id = model.pieceId(token.piece);
        } catch (const std::exception &e) {
          return HttpError{400, "Invalid request: " + where + ": " + e.what()};
        }
      }
      if (id >= config.target_vocab_size || id == config.eos_token_id ||
          id == config.pad_token_id)
        return HttpError{400, fmt::format("Invalid request: {}: {} is not a "
                                          "target id in [0, {}) other than "
                                          "EOS and padding",
                                          where, id, config.target_vocab_size)};
      if (sentence >= 0)
        lines.sentences[size_t(sentence)].prefix.push_back(int32_t(id));
    }
  }
  return true;
}

Parsed<NativeResult> Service::translate(const NativeRequest &request,
                                        Clock::time_point arrival) {
  for (size_t i = 0; i < request.source.size(); ++i)
    if (request.source[i].find('\n') != std::string::npos)
      return HttpError{400, fmt::format("Invalid request: source[{}] holds a "
                                        "newline: one sentence per item",
                                        i)};
  Parsed<Route> route =
      catalog.route(request.sourceLang, request.targetLang, request.model);
  if (const HttpError *error = errorOf(route))
    return *error;
  size_t model = std::get<Route>(route).model;
  const ModelLibrary &library = *models[model];
  std::vector<size_t> items(request.source.size());
  for (size_t i = 0; i < items.size(); ++i)
    items[i] = i;
  Parsed<Lines> lines =
      splitLines(std::get<Route>(route), request.source, items, "source", true);
  if (const HttpError *error = errorOf(lines))
    return *error;
  Parsed<tfm_search_options> search = nativeSearch(library, request);
  if (const HttpError *error = errorOf(search))
    return *error;
  Lines &split = std::get<Lines>(lines);
  Parsed<bool> prefixed = addPrefixes(library, request, split);
  if (const HttpError *error = errorOf(prefixed))
    return *error;
  auto job = std::make_shared<Job>(std::get<tfm_search_options>(search),
                                   std::move(split.sentences));
  Parsed<std::vector<Hypotheses>> results = run(model, job, arrival);
  if (const HttpError *error = errorOf(results))
    return *error;
  NativeResult out;
  for (const std::vector<long> &item : split.index) {
    out.hypotheses.emplace_back();
    out.scores.emplace_back();
    out.tokenScores.emplace_back();
    if (item[0] < 0) { // a blank sentence: "", as the translator gives it
      out.hypotheses.back().push_back("");
      out.scores.back().push_back(0.0f);
      out.tokenScores.back().emplace_back();
      continue;
    }
    const Hypotheses &h =
        std::get<std::vector<Hypotheses>>(results)[size_t(item[0])];
    for (size_t k = 0; k < h.tokens.size(); ++k) {
      out.hypotheses.back().push_back(library.decode(h.tokens[k]));
      out.scores.back().push_back(h.scores[k]);
      out.tokenScores.back().push_back(h.tokenScores[k]);
    }
  }
  return out;
}
