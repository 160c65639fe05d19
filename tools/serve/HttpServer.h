//===- HttpServer.h - LibreTranslate's routes over cpp-httplib --*- C++ -*-===//
//
// The HTTP layer: routes, limits on what a request may hold, errors as
// {"error": "..."} with LibreTranslate's status codes, answers as JSON.
// Request bodies are parsed by Request.h and translated by Service.h;
// nothing here knows about models or batches.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_HTTPSERVER_H
#define TFM_TOOLS_SERVE_HTTPSERVER_H

#include "tools/serve/Access.h"
#include "tools/serve/Catalog.h"
#include "tools/serve/Files.h"
#include "tools/serve/Metrics.h"
#include "tools/serve/Request.h"
#include "tools/serve/Service.h"

#include <functional>
#include <memory>
#include <string>

namespace httplib {
class Server;
struct Request;
struct Response;
} // namespace httplib

namespace tfm_serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 5000;
  /// Share the port with other processes that ask for it too
  /// (SO_REUSEPORT); without it a port in use is an error.
  bool reusePort = false;
  /// Bodies longer than this are refused (413); /translate_file's may hold
  /// a file of files.maxBytes and its form.
  size_t maxBody = 1 << 20;
  /// Requests with more header lines are refused (431).
  size_t maxHeaders = 64;
  /// Connections served at once (each holds a thread while it lasts).
  int connections = 128;
  /// A client that sends or reads nothing this long is dropped.
  int ioTimeoutSeconds = 5;
  RequestLimits request;
  FileLimits files;
};

class HttpServer {
public:
  HttpServer(Service &service, const Catalog &catalog, Metrics &metrics,
             Access &access, std::function<size_t(size_t)> queued,
             HttpOptions options);
  ~HttpServer();

  /// Binds the address; returns the port (the one the system chose for
  /// port 0); throws naming the address and the reason when it cannot.
  int bind();
  /// Serves until stop(); returns once every connection has been answered.
  bool listen();
  /// Stops accepting; what was accepted is still answered.
  void stop();

private:
  void addRoutes();
  void addGuards();
  void postTranslate(const httplib::Request &req, httplib::Response &res);
  void postNative(const httplib::Request &req, httplib::Response &res);
  void postDetect(const httplib::Request &req, httplib::Response &res);
  void postTranslateFile(const httplib::Request &req, httplib::Response &res);
  void getDownload(const httplib::Request &req, httplib::Response &res);
  /// Where this server is reached, for the URL of a download.
  std::string baseUrl(const httplib::Request &req) const;
  void getLanguages(const httplib::Request &req, httplib::Response &res);
  void getMetrics(const httplib::Request &req, httplib::Response &res);
  void getFrontendSettings(const httplib::Request &req, httplib::Response &res);
  bool admitted(const std::string &key, const httplib::Request &req,
                httplib::Response &res);

  Service &service;
  const Catalog &catalog;
  Metrics &metrics;
  Access &access;
  std::function<size_t(size_t)> queued;
  HttpOptions options;
  std::unique_ptr<httplib::Server> server;
  FileStore files;
  int boundPort = 0;
};

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_HTTPSERVER_H
