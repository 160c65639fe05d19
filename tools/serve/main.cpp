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

void printModels(const std::vector<std::unique_ptr<ModelLibrary>> &models,
                 const Catalog &catalog) {
  for (const auto &model : models)
    fmt::print(stderr, "tfm-serve: model {}: {} languages\n", model->name(),
               model->languages().size());
  size_t pairs = 0;
  for (const LanguageEntry &entry : catalog.languages())
    pairs += entry.targets.size();
  fmt::print(stderr, "tfm-serve: {} language pairs\n", pairs);
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
  if (!o.quiet)
    printModels(models, *catalog);
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
