//===- HttpServer.cpp - LibreTranslate's routes over httplib ----*- C++ -*-===//

#include "tools/serve/HttpServer.h"
#include "tools/serve/page/IndexHtml.h"

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

using namespace tfm_serve;
using json = nlohmann::json;
using httplib::Request;
using httplib::Response;

namespace {

const char *kJson = "application/json";
const std::set<std::string> kPostPaths = {"/translate", "/detect",
                                          "/v1/translate", "/translate_file"};
const char *kDownloadPrefix = "/download_file/";
/// What a multipart body holds beside its file: boundaries, part headers,
/// the languages and the key.
const size_t kFormOverhead = 64 << 10;
const std::set<std::string> kGetPaths = {"/", "/languages", "/health",
                                         "/metrics", "/frontend/settings"};

/// LibreTranslate's default delay (ms) of its page between the last
/// keystroke and the translation; our page translates on demand.
const int kFrontendTimeoutMs = 500;

/// The page's own script and style are inline; it fetches from its server
/// only and never loads, frames or submits anything else.
const char *kPagePolicy =
    "default-src 'none'; script-src 'unsafe-inline'; style-src "
    "'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

/// httplib's Server, whose listening backlog (5, compiled into Debian's
/// library) can be deepened: a burst of clients (64 at once) would
/// otherwise see connections dropped and retried a second later.
class Listener : public httplib::Server {
public:
  void deepenBacklog(int backlog) { ::listen(svr_sock_, backlog); }
};

/// SO_REUSEADDR always, so that a restarted server binds at once while
/// its predecessor's connections linger in TIME_WAIT; SO_REUSEPORT only on
/// request. httplib's default sets SO_REUSEPORT, with which a second server
/// on a port in use starts and the kernel splits the connections between
/// the two (one perhaps with API keys, the other without).
void setSocketOptions(int sock, bool reusePort) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  if (reusePort)
    setsockopt(sock, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof(yes));
}

/// Why binding `host`:`port` failed, from the errno bind left.
std::string bindFailure(const std::string &host, int port, int error) {
  if (error == EADDRINUSE)
    return fmt::format("port {} on {} is in use (another process listens on "
                       "it): choose another --port, or give --reuse-port to "
                       "every server that is to share it",
                       port, host);
  return fmt::format("cannot listen on {}:{}: {}", host, port,
                     error ? std::strerror(error) : "the address is invalid");
}

std::string dump(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

void replyError(Response &res, const HttpError &error) {
  res.status = error.status;
  if (error.status == 503)
    res.set_header("Retry-After", "1");
  res.set_content(dump(json{{"error", error.message}}), kJson);
}

/// A path for the metrics' labels: a route's, or "other" (any path a
/// client sends would make a series of its own).
std::string pathLabel(const std::string &path) {
  if (path.rfind(kDownloadPrefix, 0) == 0)
    return "/download_file";
  return kPostPaths.count(path) || kGetPaths.count(path) ? path : "other";
}

/// The largest body any route takes: /translate_file's holds a file.
size_t payloadLimit(const HttpOptions &options) {
  return std::max(options.maxBody, options.files.maxBytes + kFormOverhead);
}

HttpError tooLarge(const std::string &path, const HttpOptions &options) {
  if (path == "/translate_file")
    return {413, fmt::format("Payload too large: the limit is {} bytes "
                             "(a file of --max-file-bytes {} and its form)",
                             payloadLimit(options), options.files.maxBytes)};
  return {413, fmt::format("Payload too large: the limit is {} bytes (form "
                           "bodies: 8192)",
                           options.maxBody)};
}

bool isMultipart(const Request &req) {
  std::string type = req.get_header_value("Content-Type");
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return type.rfind("multipart/form-data", 0) == 0;
}

/// The message of an error httplib answered without a body of ours.
std::string statusMessage(const Request &req, const Response &res,
                          const HttpOptions &options) {
  switch (res.status) {
  case 400:
    if (req.path == "/translate_file")
      return "Invalid request: the multipart/form-data body could not be "
             "read (its boundary, a part's headers or its end)";
    return "Bad request: the HTTP request could not be read";
  case 404:
    return "Not found: " + req.path.substr(0, 100);
  case 413:
    return tooLarge(req.path, options).message;
  case 414:
    return "URI too long";
  default:
    return fmt::format("HTTP error {}", res.status);
  }
}

/// LibreTranslate's {"confidence": 97.0, "language": "de"}.
json detectedJson(const DetectedLanguage &detected) {
  return json{{"confidence", detected.confidence},
              {"language", detected.language}};
}

json translateAnswer(const TranslateRequest &request,
                     const TextResult &result) {
  json out;
  if (!request.batch) {
    out["translatedText"] = result.translations[0];
    if (request.alternatives > 0)
      out["alternatives"] = result.alternatives[0];
    if (!result.detected.empty())
      out["detectedLanguage"] = detectedJson(result.detected[0]);
    return out;
  }
  out["translatedText"] = result.translations;
  if (request.alternatives > 0)
    out["alternatives"] = result.alternatives;
  if (!result.detected.empty()) {
    out["detectedLanguage"] = json::array();
    for (const DetectedLanguage &detected : result.detected)
      out["detectedLanguage"].push_back(detectedJson(detected));
  }
  return out;
}

/// /detect's list, best first; LibreTranslate's answer when nothing was
/// detected: one language with confidence 0.
json detectAnswer(const std::vector<DetectedLanguage> &found,
                  const std::string &fallback) {
  json out = json::array();
  for (const DetectedLanguage &detected : found)
    out.push_back(detectedJson(detected));
  if (found.empty())
    out.push_back(detectedJson({fallback, 0.0}));
  return out;
}

/// The texts of a /detect request as one: an array's items weigh as their
/// lengths, as LibreTranslate weighs them.
std::string joinedText(const DetectRequest &request) {
  std::string text;
  for (const std::string &item : request.q)
    text += (text.empty() ? "" : "\n") + item;
  return text;
}

json nativeAnswer(const NativeRequest &request, const NativeResult &result) {
  json results = json::array();
  for (size_t i = 0; i < result.hypotheses.size(); ++i) {
    json one = {{"hypotheses", result.hypotheses[i]}};
    if (request.returnScores)
      one["scores"] = result.scores[i];
    if (request.returnTokenScores)
      one["token_scores"] = result.tokenScores[i];
    results.push_back(one);
  }
  return json{{"results", results}};
}

/// The page at GET /. Revalidated on every load (no-cache): a new binary's
/// page must not meet an old page's script in the browser's cache.
void replyPage(Response &res) {
  res.set_header("Content-Security-Policy", kPagePolicy);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(reinterpret_cast<const char *>(kIndexHtml),
                  sizeof(kIndexHtml), "text/html; charset=utf-8");
}

json namedLanguage(const std::string &code) {
  return json{{"code", code}, {"name", code.empty() ? "" : languageName(code)}};
}

/// The pair a page starts with, as LibreTranslate's settings give it: the
/// first source language and its first target.
json defaultPair(const std::vector<LanguageEntry> &languages) {
  for (const LanguageEntry &entry : languages)
    if (!entry.targets.empty())
      return json{{"source", namedLanguage(entry.code)},
                  {"target", namedLanguage(entry.targets.front())}};
  return json{{"source", namedLanguage("")}, {"target", namedLanguage("")}};
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

HttpServer::HttpServer(Service &service, const Catalog &catalog,
                       Metrics &metrics, Access &access,
                       std::function<size_t(size_t)> queued,
                       HttpOptions options)
    : service(service), catalog(catalog), metrics(metrics), access(access),
      queued(std::move(queued)), options(std::move(options)),
      server(std::make_unique<Listener>()), files(this->options.files) {
  int connections = this->options.connections;
  server->new_task_queue = [connections] {
    return new httplib::ThreadPool(size_t(connections));
  };
  server->set_read_timeout(this->options.ioTimeoutSeconds);
  server->set_write_timeout(this->options.ioTimeoutSeconds);
  server->set_keep_alive_timeout(this->options.ioTimeoutSeconds);
  server->set_keep_alive_max_count(1000);
  server->set_payload_max_length(payloadLimit(this->options));
  server->set_tcp_nodelay(true);
  bool reusePort = this->options.reusePort;
  server->set_socket_options(
      [reusePort](int sock) { setSocketOptions(sock, reusePort); });
  addGuards();
  addRoutes();
}

HttpServer::~HttpServer() = default;

/// Limits and errors around every route: header count, JSON bodies for
/// httplib's own errors, exceptions, and the request counts.
void HttpServer::addGuards() {
  server->set_pre_routing_handler([this](const Request &req, Response &res) {
    if (req.headers.size() <= options.maxHeaders)
      return httplib::Server::HandlerResponse::Unhandled;
    replyError(res, {431, fmt::format("Request header fields too large: more "
                                      "than {} fields",
                                      options.maxHeaders)});
    return httplib::Server::HandlerResponse::Handled;
  });
  server->set_error_handler(httplib::Server::HandlerWithResponse(
      [this](const Request &req, Response &res) {
        if (!res.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        res.set_content(dump(json{{"error", statusMessage(req, res, options)}}),
                        kJson);
        return httplib::Server::HandlerResponse::Handled;
      }));
  server->set_exception_handler(
      [](const Request &, Response &res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception &e) {
          what = e.what();
        } catch (...) {
        }
        replyError(res, {500, "Internal error: " + what});
      });
  // Counted before the answer is written, not in the logger after it: a
  // client that reads /metrics once it has its answer must find it counted.
  server->set_post_routing_handler([this](const Request &req, Response &res) {
    metrics.countRequest(pathLabel(req.path), res.status);
  });
}

void HttpServer::addRoutes() {
  server->Post("/translate", [this](const Request &req, Response &res) {
    postTranslate(req, res);
  });
  server->Post("/v1/translate", [this](const Request &req, Response &res) {
    postNative(req, res);
  });
  server->Post("/detect", [this](const Request &req, Response &res) {
    postDetect(req, res);
  });
  server->Post("/translate_file", [this](const Request &req, Response &res) {
    postTranslateFile(req, res);
  });
  server->Get(
      R"(/download_file/(.*))",
      [this](const Request &req, Response &res) { getDownload(req, res); });
  server->Get("/languages", [this](const Request &req, Response &res) {
    getLanguages(req, res);
  });
  server->Get("/", [](const Request &, Response &res) { replyPage(res); });
  server->Get("/health", [](const Request &, Response &res) {
    res.set_content(dump(json{{"status", "ok"}}), kJson);
  });
  server->Get("/metrics", [this](const Request &req, Response &res) {
    getMetrics(req, res);
  });
  server->Get("/frontend/settings", [this](const Request &req, Response &res) {
    getFrontendSettings(req, res);
  });
  // A known path with the wrong method: 405 naming the right one.
  auto notAllowed = [](const char *allow) {
    return [allow](const Request &, Response &res) {
      res.set_header("Allow", allow);
      replyError(res, {405, fmt::format("Method not allowed: use {}", allow)});
    };
  };
  for (const std::string &path : kPostPaths) {
    server->Get(path, notAllowed("POST"));
    server->Put(path, notAllowed("POST"));
    server->Delete(path, notAllowed("POST"));
  }
  for (const std::string &path : kGetPaths) {
    server->Post(path, notAllowed("GET"));
    server->Put(path, notAllowed("GET"));
    server->Delete(path, notAllowed("GET"));
  }
}

bool HttpServer::admitted(const std::string &key, const Request &req,
                          Response &res) {
  std::optional<HttpError> refused = access.admit(key, req.remote_addr);
  if (!refused)
    return true;
  replyError(res, *refused);
  if (refused->status == 429)
    res.set_header(
        "Retry-After",
        std::to_string(60 / std::max(1, access.ratePerMinute()) + 1));
  return false;
}

void HttpServer::postTranslate(const Request &req, Response &res) {
  Clock::time_point arrival = Clock::now();
  if (req.body.size() > options.maxBody)
    return replyError(res, tooLarge(req.path, options));
  Parsed<TranslateRequest> request = parseTranslateRequest(
      req.body, req.get_header_value("Content-Type"), options.request);
  if (const HttpError *error = errorOf(request))
    return replyError(res, *error);
  const TranslateRequest &parsed = std::get<TranslateRequest>(request);
  if (!admitted(parsed.apiKey, req, res))
    return;
  Parsed<TextResult> result = service.translate(parsed, arrival);
  if (const HttpError *error = errorOf(result))
    replyError(res, *error);
  else
    res.set_content(dump(translateAnswer(parsed, std::get<TextResult>(result))),
                    kJson);
  metrics.observeLatency("/translate", secondsSince(arrival));
}

void HttpServer::postNative(const Request &req, Response &res) {
  Clock::time_point arrival = Clock::now();
  if (req.body.size() > options.maxBody)
    return replyError(res, tooLarge(req.path, options));
  Parsed<NativeRequest> request = parseNativeRequest(
      req.body, req.get_header_value("Content-Type"), options.request);
  if (const HttpError *error = errorOf(request))
    return replyError(res, *error);
  const NativeRequest &parsed = std::get<NativeRequest>(request);
  if (!admitted(parsed.apiKey, req, res))
    return;
  Parsed<NativeResult> result = service.translate(parsed, arrival);
  if (const HttpError *error = errorOf(result))
    replyError(res, *error);
  else
    res.set_content(dump(nativeAnswer(parsed, std::get<NativeResult>(result))),
                    kJson);
  metrics.observeLatency("/v1/translate", secondsSince(arrival));
}

void HttpServer::postDetect(const Request &req, Response &res) {
  if (req.body.size() > options.maxBody)
    return replyError(res, tooLarge(req.path, options));
  Parsed<DetectRequest> request = parseDetectQuery(
      req.body, req.get_header_value("Content-Type"), options.request);
  if (const HttpError *error = errorOf(request))
    return replyError(res, *error);
  const DetectRequest &parsed = std::get<DetectRequest>(request);
  if (!admitted(parsed.apiKey, req, res))
    return;
  res.set_content(dump(detectAnswer(service.detect(joinedText(parsed)),
                                    service.fallbackLanguage())),
                  kJson);
}

/// LibreTranslate's /translate_file: a multipart form of the file, the
/// languages and the key; the answer is the URL of the translation, which
/// GET /download_file/<token> gives for --file-expiry seconds.
void HttpServer::postTranslateFile(const Request &req, Response &res) {
  Clock::time_point arrival = Clock::now();
  if (!isMultipart(req))
    return replyError(
        res, {415, fmt::format(
                       "Content-Type must be multipart/form-data, "
                       "found '{}'",
                       req.get_header_value("Content-Type").substr(0, 100))});
  std::vector<UploadPart> parts;
  for (const auto &[name, part] : req.files)
    parts.push_back({name, part.filename, part.content});
  Parsed<FileRequest> request = parseFileRequest(parts, options.files);
  if (const HttpError *error = errorOf(request))
    return replyError(res, *error);
  const FileRequest &parsed = std::get<FileRequest>(request);
  if (!admitted(parsed.apiKey, req, res))
    return;
  Parsed<FileResult> result = service.translate(parsed, arrival);
  if (const HttpError *error = errorOf(result))
    return replyError(res, *error);
  FileResult &translated = std::get<FileResult>(result);
  std::optional<std::string> token =
      files.put({downloadName(parsed.filename, parsed.target),
                 translated.contentType,
                 std::move(translated.content),
                 {}});
  if (!token)
    return replyError(res, {503, fmt::format("{} translated files are kept "
                                             "for download already "
                                             "(--max-files): retry later",
                                             options.files.maxFiles)});
  res.set_content(dump(json{{"translatedFileUrl",
                             baseUrl(req) + kDownloadPrefix + *token}}),
                  kJson);
  metrics.observeLatency("/translate_file", secondsSince(arrival));
}

/// A translated file, as an attachment; never rendered here (a page of
/// the client's HTML on this origin would run its scripts).
void HttpServer::getDownload(const Request &req, Response &res) {
  std::string token = req.matches[1];
  if (!isDownloadToken(token))
    return replyError(res, {400, "Invalid filename: a download's name is "
                                 "letters and digits"});
  std::optional<StoredFile> file = files.get(token);
  if (!file)
    return replyError(
        res, {404, fmt::format("Not found: no translated file of this name "
                               "(files are kept {} s)",
                               options.files.expirySeconds)});
  res.set_header("Content-Disposition", contentDisposition(file->name));
  res.set_header("Content-Security-Policy", "default-src 'none'; sandbox");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-store");
  res.set_content(file->content, file->contentType.c_str());
}

/// http://HOST of the request's Host header when it is a plain host
/// (letters, digits, dots, dashes, a port, an IPv6 address), else the
/// address the server listens on: as LibreTranslate's URLs, they follow
/// the name the client used.
std::string HttpServer::baseUrl(const Request &req) const {
  std::string host = req.get_header_value("Host");
  bool plain = !host.empty() && host.size() <= 255 &&
               host.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789.-:[]") == std::string::npos;
  if (plain)
    return "http://" + host;
  return fmt::format("http://{}:{}", options.host, boundPort);
}

void HttpServer::getLanguages(const Request &, Response &res) {
  json out = json::array();
  for (const LanguageEntry &entry : catalog.languages())
    out.push_back({{"code", entry.code},
                   {"name", entry.name},
                   {"targets", entry.targets}});
  res.set_content(dump(out), kJson);
}

void HttpServer::getMetrics(const Request &, Response &res) {
  res.set_content(metrics.render(queued), "text/plain; version=0.0.4");
}

/// LibreTranslate's /frontend/settings, field for field, as its page and
/// clients read it: whether a key is required (our page then shows a key
/// field), the character limit (of one q item here), the default pair, the
/// file formats of /translate_file; no suggestions.
void HttpServer::getFrontendSettings(const Request &, Response &res) {
  json settings = {{"charLimit", options.request.maxItemChars},
                   {"frontendTimeout", kFrontendTimeoutMs},
                   {"apiKeys", access.keysRequired()},
                   {"keyRequired", access.keysRequired()},
                   {"suggestions", false},
                   {"filesTranslation", true},
                   {"supportedFilesFormat", supportedFileExtensions()},
                   {"language", defaultPair(catalog.languages())}};
  res.set_content(dump(settings), kJson);
}

int HttpServer::bind() {
  int port = options.port;
  errno = 0;
  if (port == 0)
    port = server->bind_to_any_port(options.host);
  else if (!server->bind_to_port(options.host, port))
    port = -1;
  if (port < 0)
    throw std::runtime_error(bindFailure(options.host, options.port, errno));
  static_cast<Listener &>(*server).deepenBacklog(SOMAXCONN);
  boundPort = port;
  return port;
}

bool HttpServer::listen() { return server->listen_after_bind(); }

void HttpServer::stop() {
  // A signal may come before listen() started: stop() would do nothing.
  for (int i = 0; i < 500 && !server->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  server->stop();
}
