//===- Output.h - Writing the translator's output safely --------*- C++ -*-===//
//
// The translator's outputs, written by the rules every tool shares
// (tools/common/GuardedOutput.h): never over a file the run reads, through
// a temporary renamed into place when the run succeeds.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_OUTPUT_H
#define TFM_TOOLS_TRANSLATOR_OUTPUT_H

#include "tools/common/GuardedOutput.h"

#include <cstdio>
#include <string>

namespace tfm_translator {

/// Writes one output and says so if it cannot.
class Output {
public:
  /// `path` empty: standard output. Dies if the output is one of `reads`.
  Output(const std::string &path, const tfm_tools::ReadFiles &reads);
  ~Output();
  Output(const Output &) = delete;
  Output &operator=(const Output &) = delete;

  void write(const void *data, size_t size);
  void write(const std::string &text) { write(text.data(), text.size()); }
  void flush();
  /// Flushes and, for a regular file, renames the temporary into place.
  void close();

private:
  [[noreturn]] void failed();
  std::string name; // for messages
  tfm_tools::ReplacementFile replacement;
  FILE *file = nullptr;
};

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_OUTPUT_H
