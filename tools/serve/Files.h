//===- Files.h - Translated files kept for download -------------*- C++ -*-===//
//
// POST /translate_file answers a URL, GET /download_file/<token> the
// translated file, for a bounded time. The files live in memory only
// (never on a path a request could name), at most a given number at once,
// each under a token of 32 letters and digits drawn from /dev/urandom, so
// a URL cannot be guessed. And the pieces of a file's translation that
// need no model: a text file's lines and their endings, the download's
// name and its Content-Disposition header. No HTTP here either.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_SERVE_FILES_H
#define TFM_TOOLS_SERVE_FILES_H

#include "tools/serve/Request.h"

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tfm_serve {

/// A translated file as it is downloaded.
struct StoredFile {
  std::string name, contentType, content;
  std::chrono::steady_clock::time_point expires;
};

class FileStore {
public:
  explicit FileStore(FileLimits limits);

  /// Keeps `file` until its expiry; its token, or none when maxFiles
  /// unexpired files are kept already.
  std::optional<std::string> put(StoredFile file);
  /// The file under `token`, if it has not expired.
  std::optional<StoredFile> get(const std::string &token);
  const FileLimits &limits() const { return fileLimits; }

private:
  void dropExpired(std::chrono::steady_clock::time_point now);
  std::string newToken();

  FileLimits fileLimits;
  std::random_device random;
  std::mutex mutex;
  std::map<std::string, StoredFile> files;
};

/// Letters and digits only, 1 to 64 of them: anything else is no token.
bool isDownloadToken(const std::string &text);

/// A text file's lines without their endings, and per line whether it
/// ended in "\r\n" (the last line may have no ending at all).
struct TextFileLines {
  std::vector<std::string> lines;
  std::vector<bool> crlf;
  bool finalNewline = false;
};
TextFileLines splitTextFile(const std::string &content);
/// The lines' translations with the original line endings.
std::string joinTextFile(const TextFileLines &split,
                         const std::vector<std::string> &translations);

/// LibreTranslate's name of a translated file: "notes.txt" to "de" is
/// "notes_de.txt".
std::string downloadName(const std::string &filename,
                         const std::string &target);
/// `attachment; filename="..."; filename*=UTF-8''...`: the name in
/// printable ASCII (others as '_') and in full, percent-encoded.
std::string contentDisposition(const std::string &name);

} // namespace tfm_serve

#endif // TFM_TOOLS_SERVE_FILES_H
