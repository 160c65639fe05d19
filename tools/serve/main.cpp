//===- main.cpp - tfm-serve: compiled translators over HTTP -----*- C++ -*-===//
//
// Loads each model (its libtranslator.so), starts the executor that runs
// their batches and the HTTP server in front of it, and serves until
// SIGTERM or SIGINT: then the server stops accepting, every request it
// accepted is answered, the queues drain, and the process exits 0.
//
//===----------------------------------------------------------------------===//

#include "tools/serve/Access.h"
#include "tools/serve/Batcher.h"
#include "tools/serve/Catalog.h"
#include "tools/serve/HttpServer.h"
#include "tools/serve/Metrics.h"
#include "tools/serve/ModelLibrary.h"
#include "tools/serve/Options.h"
#include "tools/serve/Service.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <thread>

using namespace tfm_serve;

namespace {

std::vector<std::unique_ptr<ModelLibrary>>
loadModels(const std::vector<ModelSpec> &specs) {
  std::vector<std::unique_ptr<ModelLibrary>> models;
  for (const ModelSpec &spec : specs) {
    try {
      models.push_back(std::make_unique<ModelLibrary>(spec.name, spec.dir));
    } catch (const std::exception &e) {
      die(fmt::format("model {} ({}): {}", spec.name, spec.dir, e.what()));
    }
  }
  return models;
}

std::vector<std::string> keysOf(const ServeOptions &o) {
  if (o.apiKeysFile.empty())
    return {};
  try {
    return Access::readKeys(o.apiKeysFile);
  } catch (const std::exception &e) {
    die(e.what());
  }
}

/// SIGTERM and SIGINT are taken by one thread (sigwait), which stops the
/// server; every other thread, started after this, has them blocked.
sigset_t blockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A client gone mid-answer must not end the process.
  std::signal(SIGPIPE, SIG_IGN);
  return signals;
}

/// At most `limit` items of `items`, joined, and how many more there are.
std::string someOf(const std::vector<std::string> &items, size_t limit) {
  std::vector<std::string> shown(items.begin(),
                                 items.begin() + std::min(limit, items.size()));
  std::string text = fmt::format("{}", fmt::join(shown, ", "));
  if (items.size() > limit)
    text += fmt::format(" and {} more", items.size() - limit);
  return text;
}

/// Which model serves which pair. A model whose pairs a model given before
/// it serves is reached for them only by /v1/translate's "model" field: a
/// warning names each such model and its pairs (printed even with --quiet:
/// the second model may be there by mistake).
void printPairs(const std::vector<std::unique_ptr<ModelLibrary>> &models,
                const Catalog &catalog, bool quiet) {
  std::vector<ModelPairs> byModel = catalog.pairsByModel();
  size_t total = 0;
  for (size_t m = 0; m < models.size(); ++m) {
    const ModelPairs &pairs = byModel[m];
    total += pairs.served.size();
    if (!quiet)
      fmt::print(stderr, "tfm-serve: model {} ({} languages) serves {}\n",
                 models[m]->name(), models[m]->languages().size(),
                 pairs.served.empty() ? std::string("no pair")
                                      : someOf(pairs.served, 20));
    if (pairs.shadowed.empty())
      continue;
    std::vector<std::string> shadowed;
    for (const auto &[pair, by] : pairs.shadowed)
      shadowed.push_back(fmt::format("{} by {}", pair, models[by]->name()));
    fmt::print(stderr,
               "tfm-serve: warning: model {} is shadowed: {} of its {} pairs "
               "are served by a model given before it ({}); only "
               "/v1/translate's \"model\": \"{}\" reaches it for them\n",
               models[m]->name(), pairs.shadowed.size(),
               pairs.served.size() + pairs.shadowed.size(),
               someOf(shadowed, 20), models[m]->name());
  }
  if (!quiet)
    fmt::print(stderr, "tfm-serve: {} language pairs\n", total);
}

} // namespace

int main(int argc, char **argv) {
  ServeOptions o = parseCommandLine(argc, argv);
  sigset_t stopSignals = blockStopSignals();
  std::vector<std::unique_ptr<ModelLibrary>> models = loadModels(o.models);
  std::unique_ptr<Catalog> catalog;
  try {
    catalog = std::make_unique<Catalog>(models);
  } catch (const std::exception &e) {
    die(e.what());
  }
  Access access(keysOf(o), o.keyRate);
  std::vector<std::string> names;
  for (const auto &model : models)
    names.push_back(model->name());
  Metrics metrics(names);
  Executor executor(
      [&] {
        for (const auto &model : models)
          model->setThreads(o.threads);
      },
      [&](const BatchReport &report) { metrics.observeBatch(report); });
  Service service(models, *catalog, executor, o.batch, o.service);

  HttpServer http(
      service, *catalog, metrics, access,
      [&](size_t model) { return executor.queued(model); }, o.http);
  int port = 0;
  try {
    port = http.bind();
  } catch (const std::exception &e) {
    die(e.what());
  }
  printPairs(models, *catalog, o.quiet);
  fmt::print("tfm-serve: listening on http://{}:{}\n", o.http.host, port);
  std::fflush(stdout);

  std::thread([&http, stopSignals] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    http.stop();
  }).detach();
  bool served = false;
  std::thread listener([&] {
    served = http.listen();
    executor.stop();
  });
  // Batches run on this thread, which loaded the models (see Batcher.h).
  executor.run();
  listener.join();
  if (!o.quiet)
    fmt::print(stderr, "tfm-serve: stopped\n");
  return served ? 0 : 1;
}
