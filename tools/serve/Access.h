//===- Access.h - API keys and request rates --------------------*- C++ -*-===//
//
// --api-keys FILE: only requests with one of its keys are served (403
// otherwise); --key-rate N: at most N requests a minute per key (per client
// address when there are no keys), else 429. A token bucket per key: N
// requests at once, then one every 60/N seconds.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_ACCESS_H
#define TFM_TOOLS_SERVE_ACCESS_H

#include "tools/serve/Batcher.h"
#include "tools/serve/Request.h"

#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tfm_serve {

class Access {
public:
  /// The keys of FILE, one a line (blank lines and lines starting with '#'
  /// skipped); throws when it cannot be read or holds none.
  static std::vector<std::string> readKeys(const std::string &path);

  Access(std::vector<std::string> keys, int perMinute);

  /// None when the request may go on; else a 403 (no valid key) or a 429
  /// (past the rate). `client` is counted when there are no keys.
  std::optional<HttpError> admit(const std::string &key,
                                 const std::string &client);
  int ratePerMinute() const { return perMinute; }
  /// Whether a request needs a key (--api-keys).
  bool keysRequired() const { return !keys.empty(); }

private:
  struct Bucket {
    double tokens;
    Clock::time_point refilled;
  };
  bool take(const std::string &who);

  std::set<std::string> keys;
  int perMinute;
  std::mutex mutex;
  std::map<std::string, Bucket> buckets;
};

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_ACCESS_H
