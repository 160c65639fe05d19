//===- Metrics.cpp - Counters and histograms for /metrics -------*- C++ -*-===//

#include "tools/serve/Metrics.h"

#include <fmt/format.h>

#include <algorithm>

using namespace tfm_serve;

namespace {

const std::vector<double> kLatencyBounds = {
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30};
const std::vector<double> kBatchSizeBounds = {1, 2, 4, 8, 16, 32, 64, 128};

/// A label value with \, " and newlines escaped.
std::string labelValue(const std::string &value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"')
      out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

void header(std::string &out, const char *name, const char *type,
            const char *help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

} // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds(std::move(bounds)), counts(this->bounds.size() + 1) {}

void Histogram::observe(double value) {
  size_t bucket = size_t(std::lower_bound(bounds.begin(), bounds.end(), value) -
                         bounds.begin());
  ++counts[bucket];
  sum += value;
  ++count;
}

void Histogram::render(std::string &out, const std::string &name,
                       const std::string &labels) const {
  std::string sep = labels.empty() ? "" : ",";
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += counts[i];
    std::string le = i < bounds.size() ? fmt::format("{}", bounds[i]) : "+Inf";
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, le,
                       cumulative);
  }
  std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", name, braces, sum, name,
                     braces, count);
}

Metrics::ModelStats::ModelStats()
    : batchSentences(kBatchSizeBounds), batchSeconds(kLatencyBounds) {}

Metrics::Metrics(std::vector<std::string> models)
    : modelNames(std::move(models)), models(modelNames.size()) {}

void Metrics::countRequest(const std::string &path, int status) {
  std::lock_guard<std::mutex> lock(mutex);
  ++requests[{path, status}];
}

void Metrics::observeLatency(const std::string &path, double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  latency.try_emplace(path, kLatencyBounds).first->second.observe(seconds);
}

void Metrics::observeBatch(const BatchReport &report) {
  std::lock_guard<std::mutex> lock(mutex);
  ModelStats &m = models[report.model];
  ++m.batches;
  m.batchSentences.observe(double(report.decoded));
  m.batchSeconds.observe(report.seconds);
  if (report.failed) {
    ++m.failures;
    return;
  }
  m.sentences += report.sentences;
  m.sourceTokens += report.sourceTokens;
  m.targetTokens += report.targetTokens;
}

void Metrics::renderRequests(std::string &out) const {
  header(out, "tfm_serve_requests_total", "counter",
         "HTTP requests answered, by path and status code.");
  for (const auto &[key, count] : requests)
    out += fmt::format("tfm_serve_requests_total{{path=\"{}\",code=\"{}\"}} "
                       "{}\n",
                       labelValue(key.first), key.second, count);
  header(out, "tfm_serve_request_duration_seconds", "histogram",
         "Time from a translation request's parsing to its answer.");
  for (const auto &[path, histogram] : latency)
    histogram.render(out, "tfm_serve_request_duration_seconds",
                     "path=\"" + labelValue(path) + "\"");
}

void Metrics::renderModels(std::string &out,
                           const std::function<size_t(size_t)> &queued) const {
  auto counter = [&](const char *name, const char *help, auto member) {
    header(out, name, "counter", help);
    for (size_t i = 0; i < models.size(); ++i)
      out += fmt::format("{}{{model=\"{}\"}} {}\n", name,
                         labelValue(modelNames[i]), models[i].*member);
  };
  auto histogram = [&](const char *name, const char *help, auto member) {
    header(out, name, "histogram", help);
    for (size_t i = 0; i < models.size(); ++i)
      (models[i].*member)
          .render(out, name, "model=\"" + labelValue(modelNames[i]) + "\"");
  };
  header(out, "tfm_serve_queue_sentences", "gauge",
         "Sentences waiting in a model's queue.");
  for (size_t i = 0; i < models.size(); ++i)
    out += fmt::format("tfm_serve_queue_sentences{{model=\"{}\"}} {}\n",
                       labelValue(modelNames[i]), queued(i));
  counter("tfm_serve_batches_total",
          "Batches run (with continuous batching: decoder steps).",
          &ModelStats::batches);
  counter("tfm_serve_batch_failures_total",
          "Batches that failed (their requests answered 500).",
          &ModelStats::failures);
  counter("tfm_serve_sentences_total", "Sentences translated.",
          &ModelStats::sentences);
  counter("tfm_serve_source_tokens_total", "Source tokens translated.",
          &ModelStats::sourceTokens);
  counter("tfm_serve_target_tokens_total",
          "Target tokens generated (best hypotheses).",
          &ModelStats::targetTokens);
  histogram("tfm_serve_batch_sentences",
            "Sentences decoded together: per batch, or per step.",
            &ModelStats::batchSentences);
  histogram("tfm_serve_batch_duration_seconds",
            "Time one batch (or step) took.", &ModelStats::batchSeconds);
}

std::string Metrics::render(const std::function<size_t(size_t)> &queued) const {
  std::string out;
  std::lock_guard<std::mutex> lock(mutex);
  renderRequests(out);
  renderModels(out, queued);
  return out;
}
