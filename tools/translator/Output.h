//===- Output.h - Writing the translator's output safely --------*- C++ -*-===//
//
// An output never destroys an input: a path that names the same file as an
// input (by device and inode, so links and other spellings are caught) is
// refused, and a regular file is written through a temporary file in the
// same directory, renamed over it only when the run succeeds. A failed or
// interrupted run leaves the previous file as it was. Devices and pipes
// (/dev/full, /dev/stdout, a FIFO) cannot be replaced and are written
// directly.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_OUTPUT_H
#define TFM_TOOLS_TRANSLATOR_OUTPUT_H

#include <cstdio>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tfm_translator {

/// A file the run reads: its name for messages and its identity.
struct InputFile {
  std::string name;
  dev_t device;
  ino_t inode;
};

/// The identities of `paths` ("-": standard input) that are regular files;
/// others (pipes, terminals, missing files) cannot be overwritten by an
/// output and are left out.
std::vector<InputFile> regularFiles(const std::vector<std::string> &paths);

/// Writes one output and says so if it cannot.
class Output {
public:
  /// `path` empty: standard output. Dies if the output is one of `inputs`.
  Output(const std::string &path, const std::vector<InputFile> &inputs);
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
  void openReplacement(const std::string &target);
  std::string name;      // for messages
  std::string target;    // the file the temporary replaces, if any
  std::string temporary; // written instead of `target` until close()
  FILE *file = nullptr;
};

} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_OUTPUT_H
