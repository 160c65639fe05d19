//===- Errors.h - How the translator reports an error -----------*- C++ -*-===//

#ifndef TFM_TOOLS_TRANSLATOR_ERRORS_H
#define TFM_TOOLS_TRANSLATOR_ERRORS_H

#include <cstdio>
#include <cstdlib>
#include <string>

namespace tfm_translator {

/// Reports an error that ends the run, and ends it.
[[noreturn]] inline void die(const std::string &message) {
  std::string line = "translator: error: " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::exit(1);
}

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_ERRORS_H
