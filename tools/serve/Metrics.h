//===- Metrics.h - Counters and histograms for /metrics ---------*- C++ -*-===//
//
// What GET /metrics shows, in Prometheus' text format (version 0.0.4):
// requests by path and status, each model's queue depth, batch sizes and
// durations, sentences and tokens (counters: rate() gives them per second),
// and the latency of the translation endpoints.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_METRICS_H
#define TFM_TOOLS_SERVE_METRICS_H

#include "tools/serve/Batcher.h"

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace tfm_serve {

/// A Prometheus histogram: counts per upper bound, their sum and count.
class Histogram {
public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  /// Appends NAME_bucket / _sum / _count lines with `labels` ("a=\"b\"").
  void render(std::string &out, const std::string &name,
              const std::string &labels) const;

private:
  std::vector<double> bounds;
  std::vector<uint64_t> counts; // per bucket, not cumulative; last: +Inf
  double sum = 0;
  uint64_t count = 0;
};

class Metrics {
public:
  explicit Metrics(std::vector<std::string> models);

  void countRequest(const std::string &path, int status);
  void observeLatency(const std::string &path, double seconds);
  void observeBatch(const BatchReport &report);
  /// The text of /metrics; `queued(model)` gives a queue's depth now.
  std::string render(const std::function<size_t(size_t)> &queued) const;

private:
  struct ModelStats {
    Histogram batchSentences, batchSeconds;
    uint64_t batches = 0, failures = 0, sentences = 0, sourceTokens = 0,
             targetTokens = 0;
    ModelStats();
  };
  void renderRequests(std::string &out) const;
  void renderModels(std::string &out,
                    const std::function<size_t(size_t)> &queued) const;

  std::vector<std::string> modelNames;
  mutable std::mutex mutex;
  std::map<std::pair<std::string, int>, uint64_t> requests;
  std::map<std::string, Histogram> latency;
  std::vector<ModelStats> models;
};

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_METRICS_H
