//===- Access.cpp - API keys and request rates ------------------*- C++ -*-===//

#include "tools/serve/Access.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

using namespace tfm_serve;

/// More clients than this and the buckets start afresh (memory stays
/// bounded whatever the addresses).
constexpr size_t kMaxBuckets = 100000;

std::vector<std::string> Access::readKeys(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(path + ": cannot read the API keys");
  std::vector<std::string> keys;
  for (std::string line; std::getline(in, line);) {
    line.erase(line.find_last_not_of(" \t\r") + 1);
    line.erase(0, line.find_first_not_of(" \t"));
    if (!line.empty() && line[0] != '#')
      keys.push_back(line);
  }
  if (keys.empty())
    throw std::runtime_error(path + ": no API keys in it");
  return keys;
}

Access::Access(std::vector<std::string> keys, int perMinute)
    : keys(keys.begin(), keys.end()), perMinute(perMinute) {}

std::optional<HttpError> Access::admit(const std::string &key,
                                       const std::string &client) {
  if (!keys.empty() && key.empty())
    return HttpError{403, "Invalid request: an API key (api_key) is required"};
  if (!keys.empty() && !keys.count(key))
    return HttpError{403, "Invalid API key"};
  if (perMinute > 0 && !take(keys.empty() ? client : key))
    return HttpError{429, fmt::format("Slowdown: {} per 1 minute", perMinute)};
  return std::nullopt;
}

bool Access::take(const std::string &who) {
  std::lock_guard<std::mutex> lock(mutex);
  Clock::time_point now = Clock::now();
  if (buckets.size() >= kMaxBuckets && !buckets.count(who))
    buckets.clear();
  Bucket &bucket =
      buckets.try_emplace(who, Bucket{double(perMinute), now}).first->second;
  double seconds = std::chrono::duration<double>(now - bucket.refilled).count();
  bucket.tokens =
      std::min(double(perMinute), bucket.tokens + seconds * perMinute / 60.0);
  bucket.refilled = now;
  if (bucket.tokens < 1)
    return false;
  bucket.tokens -= 1;
  return true;
}
