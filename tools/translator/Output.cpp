//===- Output.cpp - Writing the translator's output safely ------*- C++ -*-===//

#include "tools/translator/Output.h"

#include "tools/translator/Errors.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

using namespace tfm_translator;

Output::Output(const std::string &path, const tfm_tools::ReadFiles &reads)
    : name(path.empty() ? "stdout" : path) {
  std::string error = replacement.open(path, reads);
  if (!error.empty())
    die(error);
  if (path.empty()) {
    file = stdout;
    return;
  }
  file = fdopen(replacement.fd(), "wb");
  if (!file)
    failed();
}

Output::~Output() {
  if (file && file != stdout)
    std::fclose(file);
}

void Output::write(const void *data, size_t size) {
  if (std::fwrite(data, 1, size, file) != size)
    failed();
}

void Output::flush() {
  if (std::fflush(file) != 0)
    failed();
}

void Output::close() {
  flush();
  if (file == stdout)
    return;
  int closed = std::fclose(file);
  file = nullptr;
  if (closed != 0)
    failed();
  std::string error = replacement.commit();
  if (!error.empty())
    die(error);
}

void Output::failed() {
  // A reader that went away (`| head` with SIGPIPE ignored) ends us as
  // quietly as SIGPIPE would.
  if (errno == EPIPE)
    std::_Exit(141);
  die(name + ": cannot write: " + std::strerror(errno));
}
