//===- Files.cpp - Translated files kept for download -----------*- C++ -*-===//

#include "tools/serve/Files.h"

#include <fmt/format.h>

#include <algorithm>

using namespace tfm_serve;
using Clock = std::chrono::steady_clock;

namespace {

const char kTokenAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const size_t kTokenLength = 32; // 62^32: about 190 bits

bool isAlphanumeric(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
         (c >= 'a' && c <= 'z');
}

/// A character a quoted header parameter can hold as it is.
bool isPlainNameChar(unsigned char c) {
  return c >= 0x20 && c < 0x7F && c != '"' && c != '\\' && c != '%' && c != ';';
}

} // namespace

FileStore::FileStore(FileLimits limits)
    : fileLimits(limits), random("/dev/urandom") {}

/// Letters and digits drawn uniformly: bytes past the last whole multiple
/// of the alphabet's size are drawn again.
std::string FileStore::newToken() {
  const unsigned size = sizeof(kTokenAlphabet) - 1;
  const unsigned limit = 256 / size * size;
  std::string token;
  while (token.size() < kTokenLength) {
    unsigned word = random();
    for (int i = 0; i < 4 && token.size() < kTokenLength; ++i, word >>= 8)
      if ((word & 0xFF) < limit)
        token += kTokenAlphabet[(word & 0xFF) % size];
  }
  return token;
}

void FileStore::dropExpired(Clock::time_point now) {
  for (auto it = files.begin(); it != files.end();)
    it = it->second.expires <= now ? files.erase(it) : std::next(it);
}

std::optional<std::string> FileStore::put(StoredFile file) {
  std::lock_guard<std::mutex> lock(mutex);
  Clock::time_point now = Clock::now();
  dropExpired(now);
  if (files.size() >= fileLimits.maxFiles)
    return std::nullopt;
  file.expires =
      now + std::chrono::duration_cast<Clock::duration>(
                std::chrono::duration<double>(fileLimits.expirySeconds));
  std::string token = newToken();
  while (files.count(token))
    token = newToken();
  files.emplace(token, std::move(file));
  return token;
}

std::optional<StoredFile> FileStore::get(const std::string &token) {
  std::lock_guard<std::mutex> lock(mutex);
  dropExpired(Clock::now());
  auto it = files.find(token);
  if (it == files.end())
    return std::nullopt;
  return it->second;
}

bool tfm_serve::isDownloadToken(const std::string &text) {
  return !text.empty() && text.size() <= 64 &&
         std::all_of(text.begin(), text.end(),
                     [](unsigned char c) { return isAlphanumeric(c); });
}

TextFileLines tfm_serve::splitTextFile(const std::string &content) {
  TextFileLines out;
  size_t start = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos)
      end = content.size();
    else
      out.finalNewline = end + 1 == content.size();
    std::string line = content.substr(start, end - start);
    bool crlf = end < content.size() && !line.empty() && line.back() == '\r';
    if (crlf)
      line.pop_back();
    out.lines.push_back(std::move(line));
    out.crlf.push_back(crlf);
    start = end + 1;
  }
  return out;
}

std::string
tfm_serve::joinTextFile(const TextFileLines &split,
                        const std::vector<std::string> &translations) {
  std::string out;
  for (size_t i = 0; i < translations.size(); ++i) {
    out += translations[i];
    bool last = i + 1 == translations.size();
    if (!last || split.finalNewline)
      out += split.crlf[i] ? "\r\n" : "\n";
  }
  return out;
}

std::string tfm_serve::downloadName(const std::string &filename,
                                    const std::string &target) {
  size_t dot = filename.rfind('.');
  if (dot == std::string::npos || dot == 0)
    return filename + "_" + target;
  return filename.substr(0, dot) + "_" + target + filename.substr(dot);
}

std::string tfm_serve::contentDisposition(const std::string &name) {
  std::string plain, encoded;
  for (unsigned char c : name) {
    plain += isPlainNameChar(c) ? char(c) : '_';
    if (isAlphanumeric(c) || c == '.' || c == '-' || c == '_')
      encoded += char(c);
    else
      encoded += fmt::format("%{:02X}", unsigned(c));
  }
  return fmt::format("attachment; filename=\"{}\"; filename*=UTF-8''{}", plain,
                     encoded);
}
