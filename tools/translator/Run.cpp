//===- Run.cpp - The translator's run over its input ------------*- C++ -*-===//

#include "tools/translator/Run.h"

#include <fmt/format.h>

#include <algorithm>
#include <unistd.h>

using namespace tfm_translator;

namespace {
/// Lines read and translated together: a few batches, so that sentences of
/// similar length can share a batch. A stream (--continuous) needs no
/// sorting, but each window ends with its last sentences decoding alone:
/// its windows are longer, so that this tail comes rarely.
constexpr size_t kBatchesPerWindow = 4, kStreamBatchesPerWindow = 64;
} // namespace

void Run::translateAll(Output &out, Output *logits) {
  uint64_t totalBytes = 0;
  if (!o.quiet && isatty(STDERR_FILENO) && reader.allFiles(totalBytes))
    progress.enable(totalBytes);
  auto read = [&](std::string &line, const Location &where) {
    Sentence sentence;
    sentence.where = where;
    sentence.ids = sourceIds(line, where);
    sentence.prefix = prefixes.next(where);
    sentence.index = linesRead++;
    return sentence;
  };
  forEachWindow(read, [&](const std::vector<Sentence> &sentences) {
    out.write(format(sentences));
    out.flush();
    if (logits)
      for (const Sentence &sentence : sentences)
        logits->write(sentence.firstLogits.data(),
                      sentence.firstLogits.size() * sizeof(float));
    progress.update(reader.bytesRead, sentencesDone, tokensOut, false);
  });
  prefixes.checkAllUsed();
  progress.update(reader.bytesRead, sentencesDone, tokensOut, true);
  warnings.summarize();
}

/// --score: reads (source, target) pairs a window at a time, scores them
/// in batches as translateAll translates, and writes a score a line.
void Run::scoreAll(Output &out) {
  ScoredTargets targets(o);
  auto read = [&](std::string &line, const Location &where) {
    // The target first: with one input it is the line's part after a
    // TAB, cut off the source's line.
    std::string target = targets.next(line, where);
    Sentence sentence;
    sentence.where = where;
    sentence.ids = sourceIds(line, where);
    sentence.prefix = prefixes.next(where);
    sentence.target = targetIds(target, where);
    return sentence;
  };
  forEachWindow(read, [&](const std::vector<Sentence> &sentences) {
    out.write(formatScores(sentences));
    out.flush();
  });
  targets.checkAllUsed();
  warnings.summarize();
}

/// Reads the input a window of lines at a time, each line made a Sentence
/// by `read`, translates (or scores) the window and hands it to `done`.
void Run::forEachWindow(const ReadSentence &read, const WindowDone &done) {
  const size_t window =
      size_t(o.batchSize) *
      (o.continuous ? kStreamBatchesPerWindow : kBatchesPerWindow);
  std::vector<Sentence> sentences;
  std::string line;
  Location where{};
  while (true) {
    sentences.clear();
    uint64_t windowStart = reader.bytesRead;
    while (sentences.size() < window && reader.next(line, where))
      sentences.push_back(read(line, where));
    if (sentences.empty())
      return;
    translateWindow(sentences, windowStart);
    done(sentences);
  }
}

/// A target to score: ids (with --output-format ids; a last EOS is
/// dropped, as ids output has none) or text cut by the target's
/// SentencePiece model, after the tokens translating forces first (the
/// target language's), which text output leaves out.
std::vector<int32_t> Run::targetIds(std::string &line, const Location &where) {
  std::vector<int32_t> ids;
  if (s.outputFormat == Format::Ids) {
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      char *stop = nullptr;
      errno = 0;
      long id = std::strtol(word.c_str(), &stop, 10);
      if (errno || *stop || id < 0 || id >= s.cfg.target_vocab_size)
        die(fmt::format("{}: target '{}' is not a target token id in [0, {})",
                        where.str(), word, s.cfg.target_vocab_size));
      ids.push_back(int32_t(id));
    }
    if (!ids.empty() && ids.back() == s.cfg.eos_token_id)
      ids.pop_back();
    return ids;
  }
  if (tfm_tools::replaceInvalidUtf8(line))
    warnings.warn(where, "invalid UTF-8 in the target, bytes replaced by "
                         "U+FFFD");
  const tfm_language_tokens &t = s.languageTokens;
  ids.assign(t.target_prefix, t.target_prefix + t.target_prefix_length);
  int32_t *encoded = nullptr, length = 0;
  if (tfm_status status = tfm_tokenizer_encode_target(
          s.tokenizer, line.data(), line.size(), &encoded, &length))
    die(where.str() + ": " + tfm_status_message(status));
  ids.insert(ids.end(), encoded, encoded + length);
  tfm_free(encoded);
  return ids;
}

/// A score a line (0 for a blank source), with --token-scores a TAB and the
/// target's token scores.
std::string Run::formatScores(const std::vector<Sentence> &sentences) {
  std::string text;
  for (const Sentence &sentence : sentences) {
    ++sentencesDone;
    float score = 0;
    std::vector<float> tokenScores;
    if (!sentence.nbest.empty()) {
      score = sentence.nbest.front().score;
      tokenScores = sentence.nbest.front().tokenScores;
    }
    text += fmt::format("{:g}", double(score));
    if (o.tokenScores)
      text += "\t" + showScores(tokenScores);
    text += '\n';
  }
  return text;
}

/// The source ids of one line; empty for a blank line.
std::vector<int32_t> Run::sourceIds(std::string &line, const Location &where) {
  std::vector<int32_t> ids;
  if (s.inputFormat == Format::Text) {
    if (tfm_tools::replaceInvalidUtf8(line))
      warnings.warn(where, "invalid UTF-8, bytes replaced by U+FFFD");
    if (tfm_tools::isBlank(line))
      return ids;
    // The source language's frame; without languages the tokenizer's.
    const tfm_language_tokens *frame =
        s.autoSource  ? detectedFrame(line, where.str(), "line")
        : s.languages ? &s.languageTokens
                      : nullptr;
    ids = encodeText(line, frame, where);
  } else {
    ids = parseIds(line, where);
  }
  truncate(ids, where);
  return ids;
}

/// The ids of valid UTF-8 `text` framed by `frame` (null: the
/// tokenizer's), not yet cut to the model's positions.
std::vector<int32_t> Run::encodeText(const std::string &text,
                                     const tfm_language_tokens *frame,
                                     const Location &where) {
  int32_t *encoded = nullptr, length = 0;
  if (tfm_status status = tfm_tokenizer_encode_framed(
          s.tokenizer, frame, text.data(), text.size(), &encoded, &length))
    die(where.str() + ": " + tfm_status_message(status));
  std::vector<int32_t> ids(encoded, encoded + length);
  tfm_free(encoded);
  return ids;
}

/// --source-lang auto: the frame of the text's detected language; a text
/// (`what`: a line, a document) in none of the model's languages keeps
/// the tokenizer's default frame, with a warning.
const tfm_language_tokens *Run::detectedFrame(const std::string &text,
                                              const std::string &where,
                                              const char *what) {
  std::string detected;
  if (const tfm_language_tokens *frame = s.autoSource->frameOf(text, detected))
    return frame;
  if (detected.empty())
    warnings.warn(where,
                  "no language detected: the {} is framed as the "
                  "tokenizer's default source language",
                  what);
  else
    warnings.warn(where,
                  "detected {}, not a language of this model: the {} is "
                  "framed as the tokenizer's default source language",
                  detected, what);
  return &s.languageTokens;
}

/// Space-separated token ids; EOS appended where the line does not end in
/// it, since the model reads sentences that end in EOS (as the tokenizer
/// and the Python API give them).
std::vector<int32_t> Run::parseIds(const std::string &line,
                                   const Location &where) const {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while ((pos = line.find_first_not_of(" \t\r\v\f", pos)) !=
         std::string::npos) {
    size_t end = line.find_first_of(" \t\r\v\f", pos);
    std::string token = line.substr(pos, end - pos);
    pos = end;
    char *stop = nullptr;
    errno = 0;
    long id = std::strtol(token.c_str(), &stop, 10);
    if (errno || *stop || id < 0 || id >= s.cfg.source_vocab_size)
      die(fmt::format("{}: '{}' is not a token id in [0, {})", where.str(),
                      token, s.cfg.source_vocab_size));
    ids.push_back(int32_t(id));
  }
  if (!ids.empty() && ids.back() != s.cfg.eos_token_id)
    ids.push_back(int32_t(s.cfg.eos_token_id));
  return ids;
}

/// A sentence longer than the model's positions keeps its start and its
/// end: EOS stays last.
void Run::truncate(std::vector<int32_t> &ids, const Location &where) {
  size_t length = ids.size();
  if (tfm_client::cutToPositions(ids, s.cfg))
    warnings.warn(where, "{} tokens, truncated to the model's {} positions",
                  length, s.cfg.max_positions);
}

/// Batches of similar lengths pad less; results do not depend on them.
void Run::translateWindow(std::vector<Sentence> &sentences, uint64_t start) {
  std::vector<size_t> order;
  for (size_t i = 0; i < sentences.size(); ++i)
    if (!sentences[i].ids.empty())
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return sentences[x].ids.size() < sentences[y].ids.size();
  });
  uint64_t windowBytes = reader.bytesRead - start;
  if (o.continuous) {
    translateContinuously(sentences, order);
    progress.update(reader.bytesRead, sentencesDone + order.size(), tokensOut,
                    false);
    return;
  }
  for (size_t begin = 0; begin < order.size(); begin += size_t(o.batchSize)) {
    size_t end = std::min(order.size(), begin + size_t(o.batchSize));
    translateBatch(sentences, {order.begin() + begin, order.begin() + end});
    // The input translated so far, counting this window's share.
    progress.update(start + windowBytes * end / order.size(),
                    sentencesDone + end, tokensOut, false);
  }
}

void Run::translateBatch(std::vector<Sentence> &sentences,
                         const std::vector<size_t> &batch) {
  auto start = Clock::now();
  tfm_client::Results results = runBatch(sentences, batch);
  translateSeconds += secondsSince(start);
  keepResults(results, sentences, batch);
}

/// The batch through the client; an error names the line of the sentence
/// it concerns, else the batch's first.
tfm_client::Results Run::runBatch(const std::vector<Sentence> &sentences,
                                  const std::vector<size_t> &batch) const {
  tfm_client::BatchBuilder request;
  for (size_t index : batch) {
    const Sentence &sentence = sentences[index];
    if (o.score)
      request.addScored(sentence.ids, sentence.prefix, sentence.target,
                        sentence.index);
    else
      request.add(sentence.ids, sentence.prefix, sentence.index);
  }
  try {
    tfm_client::Client client = s.client();
    return o.score ? client.score(o.search, request)
                   : client.translate(o.search, request);
  } catch (const tfm_client::Error &e) {
    size_t named = e.sentence() >= 0 && size_t(e.sentence()) < batch.size()
                       ? batch[size_t(e.sentence())]
                       : batch.front();
    die(fmt::format("{} (in a batch of {}): {}", sentences[named].where.str(),
                    batch.size(), e.what()));
  }
}

/// The sentences of `order` through one stream of --batch-size slots: as
/// many join as there are free slots before each step, and each leaves
/// with its hypotheses at the step it finishes.
void Run::translateContinuously(std::vector<Sentence> &sentences,
                                const std::vector<size_t> &order) {
  auto start = Clock::now();
  tfm_client::Stream stream = s.stream(o.search, o.batchSize);
  std::vector<size_t> byNumber; // each added sentence's index
  tfm_translate_timing timing{};
  while (byNumber.size() < order.size() || stream.sentences() > 0) {
    tfm_client::BatchBuilder joining;
    for (int32_t room = o.batchSize - stream.sentences();
         room > 0 && byNumber.size() < order.size(); --room) {
      const Sentence &sentence = sentences[order[byNumber.size()]];
      joining.add(sentence.ids, sentence.prefix, sentence.index);
      byNumber.push_back(order[byNumber.size()]);
    }
    try {
      if (joining.size() > 0)
        stream.add(joining);
      tfm_client::Results done = stream.step();
      for (int32_t k = 0; k < done.sentences(); ++k)
        keepHypotheses(done, k, sentences[byNumber[done.number(k)]]);
      timing = done.timing();
    } catch (const tfm_client::Error &e) {
      size_t named = e.sentence() >= 0 && size_t(e.sentence()) < byNumber.size()
                         ? byNumber[size_t(e.sentence())]
                         : byNumber.back();
      die(fmt::format("{} (continuous batching): {}",
                      sentences[named].where.str(), e.what()));
    }
  }
  translateSeconds += secondsSince(start);
  timing.output_tokens = s.cfg.target_vocab_size;
  keepTiming(timing);
}

void Run::keepHypotheses(const tfm_client::Results &results, int32_t k,
                         Sentence &sentence) {
  sentence.nbest = results.hypotheses(k, o.search.n_best);
  if (!sentence.nbest.empty())
    tokensOut += sentence.nbest.front().tokens.size();
}

void Run::keepResults(const tfm_client::Results &results,
                      std::vector<Sentence> &sentences,
                      const std::vector<size_t> &batch) {
  keepTiming(results.timing());
  for (size_t k = 0; k < batch.size(); ++k) {
    Sentence &sentence = sentences[batch[k]];
    keepHypotheses(results, int32_t(k), sentence);
    if (!o.logitsPath.empty())
      sentence.firstLogits =
          results.firstLogits(int32_t(k), s.cfg.target_vocab_size);
  }
}

void Run::keepTiming(const tfm_translate_timing &t) {
  parts.encode += t.encode;
  parts.decode += t.decode;
  parts.search += t.search;
  parts.scan += t.scan;
  parts.caches += t.caches;
  parts.steps += t.steps;
  parts.row_steps += t.row_steps;
  parts.parallel_regions =
      t.parallel_regions < 0 ? -1 : parts.parallel_regions + t.parallel_regions;
  outputTokens.push_back(t.output_tokens);
}

/// The window's output lines: a translation a line (after its score and a
/// TAB with --with-scores), or with --n-best "INDEX ||| TRANSLATION |||
/// SCORE" lines; --token-scores adds the tokens' log-probabilities (a TAB
/// or " ||| " before them).
std::string Run::format(const std::vector<Sentence> &sentences) {
  // A blank line's one hypothesis: empty, scored 0.
  static const std::vector<tfm_client::Hypothesis> blank{{{}, 0.0f, {}}};
  std::string text;
  for (const Sentence &sentence : sentences) {
    size_t index = sentencesDone++;
    const std::vector<tfm_client::Hypothesis> &nbest =
        sentence.nbest.empty() ? blank : sentence.nbest;
    for (const tfm_client::Hypothesis &h : nbest) {
      std::string hypothesis =
          h.tokens.empty() ? "" : show(h.tokens, sentence.where);
      if (o.search.n_best > 1)
        text += fmt::format("{} ||| {} ||| {:g}", index, hypothesis,
                            double(h.score));
      else if (o.withScores || o.tokenScores)
        text += fmt::format("{:g}\t{}", double(h.score), hypothesis);
      else
        text += hypothesis;
      if (o.tokenScores)
        text +=
            (o.search.n_best > 1 ? " ||| " : "\t") + showScores(h.tokenScores);
      text += '\n';
    }
  }
  return text;
}

std::string Run::showScores(const std::vector<float> &scores) {
  std::string text;
  for (float score : scores)
    text += fmt::format("{}{:g}", text.empty() ? "" : " ", double(score));
  return text;
}

std::string Run::show(const std::vector<int32_t> &tokens,
                      const Location &where) const {
  if (s.outputFormat == Format::Ids)
    return fmt::format("{}", fmt::join(tokens, " "));
  char *text = nullptr;
  size_t length = 0;
  if (tfm_status status = tfm_tokenizer_decode(
          s.tokenizer, tokens.data(), int32_t(tokens.size()), &text, &length))
    die(where.str() + ": " + tfm_status_message(status));
  std::string result(text, length);
  tfm_free(text);
  return result;
}

/// A translator compiled with --profile-kernels: each kernel's time in
/// the decoder steps and in encode, the longest first, beside its phase's.
void Run::printKernelTimes() const {
  std::vector<tfm_kernel_time> times(size_t(tfm_kernel_times(nullptr, 0)));
  tfm_kernel_times(times.data(), int64_t(times.size()));
  std::stable_sort(times.begin(), times.end(),
                   [](auto &a, auto &b) { return a.seconds > b.seconds; });
  for (auto [phase, name, total] :
       {std::tuple{1, "decode", parts.decode}, {0, "encode", parts.encode}})
    for (const tfm_kernel_time &t : times)
      if (t.phase == phase)
        fmt::print(stderr,
                   "translator: {} kernel {}: {} calls, {:.4f} s, {:.1f}% of "
                   "{}\n",
                   name, t.name, t.calls, t.seconds,
                   total > 0 ? 100 * t.seconds / total : 0.0, name);
}

void Run::printTiming(double loadSeconds) const {
  fmt::print(stderr,
             "translator: load {:.4f} s, translate {:.4f} s, {} lines\n",
             loadSeconds, translateSeconds, sentencesDone);
  fmt::print(stderr,
             "translator: encode {:.4f} s, decode {:.4f} s in {} steps of {} "
             "rows in all, search {:.4f} s (row scans {:.4f} s), cache moves "
             "{:.4f} s\n",
             parts.encode, parts.decode, parts.steps, parts.row_steps,
             parts.search, parts.scan, parts.caches);
  if (parts.parallel_regions >= 0 && parts.steps > 0)
    fmt::print(stderr,
               "translator: {:.1f} parallel regions a decoder step (forks "
               "and joins of the threads)\n",
               double(parts.parallel_regions) / double(parts.steps));
  printKernelTimes();
  if (outputTokens.empty())
    return;
  std::vector<int64_t> sorted = outputTokens;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2,
                   sorted.end());
  fmt::print(stderr,
             "translator: output projection over a median {} of {} target "
             "tokens a batch ({} batches{})\n",
             sorted[sorted.size() / 2], s.cfg.target_vocab_size,
             outputTokens.size(),
             tfm_model_has_vmap(s.model) && o.search.use_vmap
                 ? ", vocabulary shortlist"
                 : "");
}
