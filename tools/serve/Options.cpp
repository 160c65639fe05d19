//===- Options.cpp - tfm-serve's command line -------------------*- C++ -*-===//

#include "tools/serve/Options.h"

#include "tools/common/CommandLine.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <set>

using namespace tfm_serve;

namespace {

const char *kDescription =
    R"(Serves models compiled by tfmc (tfmc compile MODEL_DIR -o DIR) over HTTP
with LibreTranslate's API (POST /translate, GET /languages, ...) and a native
POST /v1/translate, batching the sentences of concurrent requests together.
Each DIR is what tfmc compile -o wrote; its language pair(s) come from the
model. SIGTERM or SIGINT: stop accepting, answer what was accepted, exit 0.
See docs/Serving.md.)";

bool isBlank(const std::string &text) {
  return text.find_first_not_of(" \t\r\n") == std::string::npos;
}

/// Refuses an empty value of an option that names something: `--api-keys
/// ""` (a variable that expanded to nothing) would otherwise serve without
/// keys, and an empty directory or host names nothing to load or bind.
CLI::Validator namesSomething(const std::string &what) {
  return CLI::Validator(
      [what](std::string &value) {
        return isBlank(value) ? "the value is empty: give " + what
                              : std::string();
      },
      "", "names something");
}

/// "NAME=DIR", or a directory named after its last component.
ModelSpec modelSpec(const std::string &text, bool named) {
  if (named) {
    size_t eq = text.find('=');
    if (eq == std::string::npos || isBlank(text.substr(0, eq)) ||
        isBlank(text.substr(eq + 1)))
      die(fmt::format("--model expects NAME=DIR, found '{}'", text));
    return {text.substr(0, eq), text.substr(eq + 1)};
  }
  std::string dir = text;
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  std::string name = dir.substr(dir.rfind('/') + 1);
  if (name.empty())
    die(fmt::format("MODEL_DIR '{}' has no last component to name the model "
                    "after: use --model NAME=DIR",
                    text));
  return {name, text};
}

void addModelOptions(CLI::App &app, std::vector<std::string> &dirs,
                     std::vector<std::string> &named, ServeOptions &o) {
  app.add_option("MODEL_DIR", dirs,
                 "directories tfmc compile -o wrote (named after their last "
                 "component)")
      ->check(namesSomething("a directory tfmc compile -o wrote"));
  app.add_option("--model", named, "a model under a name of its own")
      ->type_name("NAME=DIR")
      ->check(namesSomething("NAME=DIR"));
  app.add_option("--threads", o.threads, "threads a batch runs on")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--beam-size", o.service.beamSize,
                 "beam width of requests that ask for none (LibreTranslate's "
                 "alternatives N widen it to N + 1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
}

void addHttpOptions(CLI::App &app, ServeOptions &o) {
  HttpOptions &h = o.http;
  app.add_option("--host", h.host, "address to listen on")
      ->capture_default_str()
      ->check(namesSomething("an address to listen on"));
  app.add_option("--port", h.port, "port to listen on (0: any free one)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_flag("--reuse-port", h.reusePort,
               "share the port with other servers that ask for it too "
               "(SO_REUSEPORT: the kernel splits connections among them); "
               "without it a port in use is an error");
  app.add_option("--connections", h.connections,
                 "connections served at once (more wait to be accepted)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--io-timeout", h.ioTimeoutSeconds,
                 "seconds a client may stay silent while sending or reading")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app.add_option("--api-keys", o.apiKeysFile,
                 "only requests with one of the keys in FILE (one a line) "
                 "are served (403 otherwise)")
      ->type_name("FILE")
      ->check(namesSomething("a file of API keys"));
  app.add_option("--key-rate", o.keyRate,
                 "at most N requests a minute per key, or per client "
                 "address without keys (429 past it; 0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_flag("-q,--quiet", o.quiet, "print nothing but errors");
}

void addLimitOptions(CLI::App &app, ServeOptions &o) {
  app.add_option("--max-body", o.http.maxBody, "bytes of a request body (413)")
      ->capture_default_str()
      ->check(CLI::Range(1024, 1 << 30));
  app.add_option("--max-headers", o.http.maxHeaders,
                 "header fields of a request (431)")
      ->capture_default_str()
      ->check(CLI::Range(8, 10000));
  RequestLimits &r = o.http.request;
  app.add_option("--max-q-items", r.maxItems, "items of an array q (400)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--max-q-chars", r.maxItemChars,
                 "characters of one q item (400)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000000));
  app.add_option("--max-alternatives", r.maxAlternatives,
                 "alternatives a request may ask for (400)")
      ->capture_default_str()
      ->check(CLI::Range(0, 63));
  app.add_option("--max-queue", o.batch.maxQueued,
                 "sentences waiting per model (503 with Retry-After past it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000000));
  app.add_option_function<double>(
         "--timeout",
         [&o](double seconds) {
           o.service.deadline = std::chrono::duration_cast<Clock::duration>(
               std::chrono::duration<double>(seconds));
         },
         "seconds from a request's arrival to its answer (504 past it) "
         "[30]")
      ->check(CLI::Range(0.001, 86400.0));
}

void addFileOptions(CLI::App &app, ServeOptions &o) {
  FileLimits &f = o.http.files;
  app.add_option("--max-file-bytes", f.maxBytes,
                 "bytes of a file sent to /translate_file (413)")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1), size_t(1) << 30));
  app.add_option("--max-files", f.maxFiles,
                 "translated files kept for download at once (503 past it)")
      ->capture_default_str()
      ->check(CLI::Range(size_t(1), size_t(1) << 20));
  app.add_option("--file-expiry", f.expirySeconds,
                 "seconds a translated file can be downloaded")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 86400.0 * 7));
}

void addBatchOptions(CLI::App &app, ServeOptions &o) {
  app.add_option("--max-batch-sentences", o.batch.maxSentences,
                 "sentences in one batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--max-batch-tokens", o.batch.maxTokens,
                 "sentences x longest source (with its prefix) in one batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  app.add_option_function<double>(
         "--batch-wait-ms",
         [&o](double ms) {
           o.batch.wait = std::chrono::duration_cast<Clock::duration>(
               std::chrono::duration<double, std::milli>(ms));
         },
         "after a batch, wait at most this long for as many sentences as it "
         "had beside those it left waiting (an idle model runs a request at "
         "once; batches only, with --no-continuous) [5]")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_flag_callback(
      "--no-continuous", [&o] { o.batch.continuous = false; },
      "batches run to their end before new sentences start (by default "
      "sentences join the running batch between its steps)");
}

/// CLI11 reads `--api-keys= DIR` as `--api-keys DIR`, an empty value
/// after '=' taking the next argument instead: refused before it parses.
void refuseEmptyAssignments(int argc, char **argv) {
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    if (arg.compare(0, 2, "--") == 0 && eq + 1 == arg.size())
      die(fmt::format("{}: the value is empty; see --help", arg.substr(0, eq)));
  }
}

std::vector<ModelSpec> modelSpecs(const std::vector<std::string> &dirs,
                                  const std::vector<std::string> &named) {
  std::vector<ModelSpec> models;
  for (const std::string &dir : dirs)
    models.push_back(modelSpec(dir, false));
  for (const std::string &text : named)
    models.push_back(modelSpec(text, true));
  if (models.empty())
    die("no model to serve: give MODEL_DIR or --model NAME=DIR; see --help");
  std::set<std::string> names;
  for (const ModelSpec &model : models)
    if (!names.insert(model.name).second)
      die(fmt::format("two models are named '{}': name them with --model "
                      "NAME=DIR",
                      model.name));
  return models;
}

} // namespace

void tfm_serve::die(const std::string &message) {
  std::string line = "tfm-serve: error: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::exit(1);
}

ServeOptions tfm_serve::parseCommandLine(int argc, char **argv) {
  ServeOptions o;
  std::vector<std::string> dirs, named;
  CLI::App app(kDescription, "tfm-serve");
  app.set_help_flag("-h,--help", "this text");
  tfm_tools::addVersionFlag(app, "tfm-serve of tfmc",
                            "print the version and exit");
  addModelOptions(app, dirs, named, o);
  addHttpOptions(app, o);
  addLimitOptions(app, o);
  addFileOptions(app, o);
  addBatchOptions(app, o);
  refuseEmptyAssignments(argc, argv);
  tfm_tools::parseCommandLine(app, argc, argv,
                              [](const std::string &message) { die(message); });
  o.models = modelSpecs(dirs, named);
  return o;
}
