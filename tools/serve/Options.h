//===- Options.h - tfm-serve's command line ---------------------*- C++ -*-===//
//
// The server's options, parsed with CLI11: the models to serve, where to
// listen, the batching budgets and every limit, each with its default and
// one line of help (docs/Serving.md explains them).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_OPTIONS_H
#define TFM_TOOLS_SERVE_OPTIONS_H

#include "tools/serve/Batcher.h"
#include "tools/serve/HttpServer.h"
#include "tools/serve/Service.h"

#include <string>
#include <vector>

namespace tfm_serve {

struct ModelSpec {
  std::string name, dir;
};

struct ServeOptions {
  std::vector<ModelSpec> models;
  HttpOptions http;
  BatchLimits batch;
  ServiceOptions service;
  int threads = 2;
  std::string apiKeysFile;
  int keyRate = 0;
  bool quiet = false;
};

/// The options of `argv`; prints the help or the version and exits where
/// asked to, and exits with a message naming the option when one is wrong.
ServeOptions parseCommandLine(int argc, char **argv);

/// Reports an error that ends the run, and ends it (exit 1).
[[noreturn]] void die(const std::string &message);

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_OPTIONS_H
