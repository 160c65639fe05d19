//===- Lines.h - The translator's input and output lines --------*- C++ -*-===//
//
// Reading the lines of several inputs in turn, writing the output with its
// errors reported, and the text conventions the reference shares
// (test/reference/text_io.py): lines end at '\n', a line of blanks is
// blank, invalid UTF-8 is repaired as Python's decoder does.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_LINES_H
#define TFM_TOOLS_TRANSLATOR_LINES_H

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tfm_translator {

/// Reports an error that ends the run, and ends it.
[[noreturn]] inline void die(const std::string &message) {
  std::string line = "translator: error: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::exit(1);
}

/// Replaces each maximal invalid subsequence of `text` with U+FFFD, as the
/// Unicode standard recommends (and Python's errors="replace" does): a byte
/// that cannot start a sequence is one; a valid start followed by too few
/// valid continuation bytes is one, covering the bytes that were valid so
/// far. Returns whether anything was replaced.
bool replaceInvalidUtf8(std::string &text);

/// Nothing but " \t\r\v\f": an empty output line, not sent to the model.
inline bool isBlank(const std::string &line) {
  return line.find_first_not_of(" \t\r\v\f") == std::string::npos;
}

/// Where a line came from, for messages: "FILE:LINE" or "stdin:LINE".
struct Location {
  const std::string *input;
  size_t line;
  std::string str() const { return *input + ":" + std::to_string(line); }
};

/// Reads the lines of several inputs in turn ("-": stdin), one at a time.
class LineReader {
public:
  explicit LineReader(std::vector<std::string> inputs)
      : inputs(std::move(inputs)) {
    if (this->inputs.empty())
      this->inputs.push_back("-");
    for (std::string &input : this->inputs)
      names.push_back(input == "-" ? "stdin" : input);
  }
  ~LineReader() {
    closeCurrent();
    std::free(buffer);
  }

  /// All inputs are files whose sizes are known (for the progress line).
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

  /// Fails (exits) if an input cannot be opened, before any work is done.
  void checkReadable() const {
    for (const std::string &input : inputs)
      if (input != "-" && access(input.c_str(), R_OK) != 0)
        die(input + ": cannot open: " + std::strerror(errno));
  }

  bool next(std::string &line, Location &where) {
    while (true) {
      if (!file) {
        if (current >= inputs.size())
          return false;
        openCurrent();
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
        die(names[current] + ": cannot read: " + std::strerror(errno));
      closeCurrent();
      ++current;
    }
  }

  uint64_t bytesRead = 0;

private:
  void openCurrent() {
    lineNo = 0;
    if (inputs[current] == "-") {
      file = stdin;
      return;
    }
    file = std::fopen(inputs[current].c_str(), "rb");
    if (!file)
      die(inputs[current] + ": cannot open: " + std::strerror(errno));
  }
  void closeCurrent() {
    if (file && file != stdin)
      std::fclose(file);
    file = nullptr;
  }

  std::vector<std::string> inputs, names;
  size_t current = 0, lineNo = 0;
  FILE *file = nullptr;
  char *buffer = nullptr;
  size_t capacity = 0;
};

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_LINES_H
