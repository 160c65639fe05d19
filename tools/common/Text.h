//===- Text.h - The text conventions the tools share ------------*- C++ -*-===//
//
// How the translator, tfm-serve and the Python module read text, as the
// reference does (test/reference/text_io.py): invalid UTF-8 is repaired as
// Python's decoder repairs it, a line of blanks is blank (an empty
// translation, not sent to the model), lines end at '\n'. Header-only,
// plain C++ and POSIX, without exceptions; errors are messages for each
// tool to report its own way.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_COMMON_TEXT_H
#define TFM_TOOLS_COMMON_TEXT_H

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tfm_tools {

namespace detail {
/// How many bytes of the sequence at `text[i]` are valid UTF-8 (1 for a
/// byte that cannot start one), and its full length (0: no valid start).
/// The second byte's range excludes overlong forms, surrogates and code
/// points past U+10FFFF.
inline size_t validUtf8Prefix(const std::string &text, size_t i,
                              size_t &length) {
  auto byte = [&](size_t k) { return (unsigned char)text[k]; };
  unsigned char c = byte(i), lo = 0x80, hi = 0xBF;
  length = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    length = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    length = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;
    hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    length = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;
  }
  size_t valid = 1;
  for (; length && valid < length && i + valid < text.size(); ++valid) {
    unsigned char next = byte(i + valid);
    if (next < (valid == 1 ? lo : 0x80) || next > (valid == 1 ? hi : 0xBF))
      break;
  }
  return valid;
}
} // namespace detail

/// Replaces each maximal invalid subsequence of `text` with U+FFFD, as the
/// Unicode standard recommends (and Python's errors="replace" does): a byte
/// that cannot start a sequence is one; a valid start followed by too few
/// valid continuation bytes is one, covering the bytes that were valid so
/// far. Returns whether anything was replaced.
inline bool replaceInvalidUtf8(std::string &text) {
  std::string out;
  bool replaced = false;
  size_t i = 0, copiedUpTo = 0;
  while (i < text.size()) {
    if ((unsigned char)text[i] < 0x80) {
      ++i;
      continue;
    }
    size_t length = 0;
    size_t valid = detail::validUtf8Prefix(text, i, length);
    if (length && valid == length) {
      i += length;
      continue;
    }
    out.append(text, copiedUpTo, i - copiedUpTo);
    out += "\xEF\xBF\xBD";
    i += valid;
    copiedUpTo = i;
    replaced = true;
  }
  if (replaced) {
    out.append(text, copiedUpTo, std::string::npos);
    text.swap(out);
  }
  return replaced;
}

/// Nothing but " \t\r\n\v\f": an empty translation, not sent to the model.
inline bool isBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos;
}

/// Where a line came from, for messages: "FILE:LINE" or "stdin:LINE".
struct Location {
  const std::string *input;
  size_t line;
  std::string str() const { return *input + ":" + std::to_string(line); }
};

/// Reads the lines of several inputs in turn ("-": stdin), one at a time,
/// without their '\n'. An input that cannot be opened or read is reported
/// to `fail` (the tool's: it does not return), or without one ends the
/// reading with error() saying why.
class LineReader {
public:
  using Fail = void (*)(const std::string &message);

  explicit LineReader(std::vector<std::string> inputs, Fail fail = nullptr)
      : inputs(std::move(inputs)), fail(fail) {
    if (this->inputs.empty())
      this->inputs.push_back("-");
    for (std::string &input : this->inputs)
      names.push_back(input == "-" ? "stdin" : input);
  }
  ~LineReader() {
    closeCurrent();
    std::free(buffer);
  }
  LineReader(const LineReader &) = delete;
  LineReader &operator=(const LineReader &) = delete;

  /// All inputs are files whose sizes are known (for a progress line).
  bool allFiles(uint64_t &totalBytes) const {
    totalBytes = 0;
    for (const std::string &input : inputs) {
      struct stat st;
      if (input == "-" || stat(input.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return false;
      totalBytes += uint64_t(st.st_size);
    }
    return true;
  }

  /// Whether every input can be opened, asked before any work is done.
  bool checkReadable() {
    for (const std::string &input : inputs)
      if (input != "-" && access(input.c_str(), R_OK) != 0)
        return failWith(input + ": cannot open: " + std::strerror(errno));
    return true;
  }

  /// Why reading ended early; empty when it did not.
  const std::string &error() const { return failure; }

  /// The next line and where it is; false after the last input's last.
  bool next(std::string &line, Location &where) {
    while (failure.empty()) {
      if (!file) {
        if (current >= inputs.size())
          return false;
        if (!openCurrent())
          return false;
      }
      errno = 0;
      ssize_t n = getline(&buffer, &capacity, file);
      if (n >= 0) {
        bytesRead += uint64_t(n);
        if (n > 0 && buffer[n - 1] == '\n')
          --n;
        line.assign(buffer, size_t(n));
        where = {&names[current], ++lineNo};
        return true;
      }
      if (std::ferror(file))
        return failWith(names[current] +
                        ": cannot read: " + std::strerror(errno));
      closeCurrent();
      ++current;
    }
    return false;
  }

  uint64_t bytesRead = 0;

private:
  bool openCurrent() {
    lineNo = 0;
    if (inputs[current] == "-") {
      file = stdin;
      return true;
    }
    file = std::fopen(inputs[current].c_str(), "rb");
    if (!file)
      return failWith(inputs[current] +
                      ": cannot open: " + std::strerror(errno));
    return true;
  }
  bool failWith(const std::string &message) {
    if (fail)
      fail(message);
    failure = message;
    return false;
  }
  void closeCurrent() {
    if (file && file != stdin)
      std::fclose(file);
    file = nullptr;
  }

  std::vector<std::string> inputs, names;
  Fail fail;
  std::string failure;
  size_t current = 0, lineNo = 0;
  FILE *file = nullptr;
  char *buffer = nullptr;
  size_t capacity = 0;
};

} // namespace tfm_tools

#endif // TFM_TOOLS_COMMON_TEXT_H
