//===- Progress.h - What the translator says on stderr ----------*- C++ -*-===//
//
// The progress line (on a terminal only) and the warnings about input
// lines, which must not garble each other.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_PROGRESS_H
#define TFM_TOOLS_TRANSLATOR_PROGRESS_H

#include "tools/common/Text.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace tfm_translator {

/// Warnings printed before they are only counted.
constexpr size_t kWarningsShown = 20;

/// The progress line on stderr, rewritten in place; off unless enabled.
class Progress {
public:
  void enable(uint64_t totalBytes) {
    enabled = true;
    total = totalBytes;
  }

  /// `bytesDone`: of the input, how much has been translated.
  void update(uint64_t bytesDone, size_t sentences, size_t tokens, bool last) {
    if (!enabled)
      return;
    auto now = std::chrono::steady_clock::now();
    if (!last && shown && now - lastShown < std::chrono::milliseconds(200))
      return;
    lastShown = now;
    double seconds = std::chrono::duration<double>(now - started).count();
    double rate = seconds > 0 ? 1 / seconds : 0;
    int percent = total ? int(100 * bytesDone / total) : 100;
    fmt::print(stderr,
               "\r\033[Ktranslator: {:3d}% {} sentences, {:.1f} sentences/s, "
               "{:.0f} tokens/s{}",
               percent, sentences, sentences * rate, tokens * rate,
               last ? "\n" : "");
    shown = !last;
  }

  /// Clears the line so that a message can be printed in its place.
  void clear() {
    if (shown)
      std::fputs("\r\033[K", stderr);
    shown = false;
  }

private:
  bool enabled = false, shown = false;
  uint64_t total = 0;
  using Clock = std::chrono::steady_clock;
  Clock::time_point started = Clock::now(), lastShown;
};

/// Warnings about input lines: the first few printed, all counted.
class Warnings {
public:
  Warnings(bool quiet, Progress &progress) : quiet(quiet), progress(progress) {}

  template <typename... Args>
  void warn(const tfm_tools::Location &where,
            fmt::format_string<Args...> format, Args &&...args) {
    warn(where.str(), format, std::forward<Args>(args)...);
  }
  /// `where`: a line's location, or a document's name.
  template <typename... Args>
  void warn(const std::string &where, fmt::format_string<Args...> format,
            Args &&...args) {
    ++count;
    if (quiet || count > kWarningsShown)
      return;
    progress.clear();
    fmt::print(stderr, "translator: warning: {}: {}\n", where,
               fmt::format(format, std::forward<Args>(args)...));
  }

  /// How many went unprinted, if any did.
  void summarize() {
    if (quiet || count <= kWarningsShown)
      return;
    progress.clear();
    fmt::print(stderr, "translator: {} warnings in all (the first {} shown)\n",
               count, kWarningsShown);
  }

private:
  bool quiet;
  Progress &progress;
  size_t count = 0;
};

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_PROGRESS_H
