//===- GuardedOutput.h - Outputs that never destroy an input ----*- C++ -*-===//
//
// Every tool writes its outputs through this file, so that one set of rules
// holds for all of them:
//  - an output that names a file the run reads (by device and inode, so
//    links and other spellings are caught) is refused, saying which input;
//  - an output directory that is, holds or lies inside a directory the run
//    reads is refused;
//  - a regular file is written to a temporary beside it and renamed over it
//    only when complete; a directory is built beside it and swapped in
//    whole. A failed, crashed or interrupted run leaves the old output as it
//    was and removes what it had begun (at exit, and on SIGINT, SIGTERM,
//    SIGHUP and SIGQUIT before the previous handler of the signal runs);
//  - devices and pipes (/dev/null, a FIFO, standard output) cannot be
//    replaced and are written directly.
// Plain C++ and POSIX: the translator's main (no LLVM) and the LLVM-based
// tools share it. Errors are returned as messages for each tool to report
// its own way.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_COMMON_GUARDEDOUTPUT_H
#define TFM_TOOLS_COMMON_GUARDEDOUTPUT_H

#include <string>
#include <sys/types.h>
#include <vector>

namespace tfm_tools {

/// Everything a run reads, by identity.
class ReadFiles {
public:
  /// Records `path` ("-": standard input) if it is a regular file, under
  /// `role` ("the input file", "the weights file", "--vmap"); pipes,
  /// terminals and missing files cannot be overwritten and are skipped.
  void addFile(const std::string &path, const std::string &role);
  /// Records `dir` as a directory the run reads (a model or checkpoint
  /// directory) and every regular file under it.
  void addDirectory(const std::string &dir, const std::string &role);

  /// What `path` would destroy as an output file: "the weights file
  /// out/model.tfmw", or empty if it names nothing the run reads.
  std::string fileConflict(const std::string &path) const;
  /// What `dir` would destroy as an output directory: it is, holds or lies
  /// inside a directory read, or holds a file read; empty if nothing.
  std::string directoryConflict(const std::string &dir) const;

private:
  void addRegularFile(const std::string &path, const std::string &description);
  struct File {
    std::string description; // role and path, for messages
    std::string realPath;
    dev_t device;
    ino_t inode;
  };
  std::vector<File> files;
  std::vector<File> directories;
};

/// One output file. `open` checks it and creates the temporary; the caller
/// writes `fd()` (or lets a program write `writePath()`), closes what it
/// opened on the descriptor, and calls `commit`. Destroyed uncommitted, the
/// temporary is removed and the old file kept.
class ReplacementFile {
public:
  ReplacementFile() = default;
  ~ReplacementFile();
  ReplacementFile(const ReplacementFile &) = delete;
  ReplacementFile &operator=(const ReplacementFile &) = delete;

  /// `path` "-" or empty: standard output. Returns an error message naming
  /// the output, or empty.
  std::string open(const std::string &path, const ReadFiles &reads);
  /// The descriptor to write: the caller's to close (fclose, a stream's
  /// close); standard output's is never closed here.
  int fd() const { return descriptor; }
  /// Where the bytes go before commit: the temporary, or the output itself
  /// where it is a device or pipe.
  const std::string &writePath() const;
  /// Renames the temporary into place; an error message, or empty.
  std::string commit();

private:
  std::string name;      // the output as given, for messages
  std::string target;    // the file replaced (a link's target), if any
  std::string temporary; // written instead of `target` until commit
  int descriptor = -1;
};

/// One output directory, built at `buildPath()` beside `path` and put in
/// its place by `commit`: an existing one is swapped out in one step and
/// removed. Only an empty directory, or one a tool of ours wrote (it holds
/// `marker`), is replaced: anything else may hold a user's files.
/// Destroyed uncommitted, the build directory is removed and the old one
/// kept.
class ReplacementDirectory {
public:
  ReplacementDirectory() = default;
  ~ReplacementDirectory();
  ReplacementDirectory(const ReplacementDirectory &) = delete;
  ReplacementDirectory &operator=(const ReplacementDirectory &) = delete;

  std::string open(const std::string &path, const ReadFiles &reads,
                   const std::string &marker);
  const std::string &buildPath() const { return building; }
  std::string commit();

private:
  std::string target;
  std::string building;
};

} // namespace tfm_tools

#endif // TFM_TOOLS_COMMON_GUARDEDOUTPUT_H
