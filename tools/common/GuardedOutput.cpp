//===- GuardedOutput.cpp - Outputs that never destroy an input --*- C++ -*-===//

#include "tools/common/GuardedOutput.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

using namespace tfm_tools;

namespace {

//===----------------------------------------------------------------------===//
// What a run has begun and not yet put in place
//===----------------------------------------------------------------------===//

/// Temporaries not yet renamed into place, removed when the run ends
/// without renaming them: at exit or on a signal. Fixed storage, so that
/// the signal handler only reads memory and makes system calls.
struct Pending {
  char path[PATH_MAX];
  bool directory;
};
constexpr int kMaxPending = 8;
Pending pending[kMaxPending];
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
struct sigaction previousActions[NSIG];

/// Removes the entries of the directory `path` and then it, with system
/// calls alone (a signal handler may run it). Our build directories are
/// flat: an entry that is itself a non-empty directory stays, and so does
/// `path`.
void removeFlatDirectory(const char *path) {
  int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return;
  // Unlinking while reading may skip entries: read again until a pass
  // removes nothing.
  bool removed = true;
  while (removed) {
    removed = false;
    lseek(dir, 0, SEEK_SET);
    alignas(8) char buffer[4096];
    long size;
    while ((size = syscall(SYS_getdents64, dir, buffer, sizeof buffer)) > 0)
      for (long at = 0; at < size;) {
        auto *entry = reinterpret_cast<struct dirent64 *>(buffer + at);
        at += entry->d_reclen;
        const char *name = entry->d_name;
        if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0)
          continue;
        if (unlinkat(dir, name, 0) == 0 ||
            unlinkat(dir, name, AT_REMOVEDIR) == 0)
          removed = true;
      }
  }
  close(dir);
  rmdir(path);
}

void removePending() {
  for (Pending &entry : pending)
    if (entry.path[0]) {
      if (entry.directory)
        removeFlatDirectory(entry.path);
      else
        unlink(entry.path);
      entry.path[0] = 0;
    }
}

/// Removes what is pending, then lets the signal do what it did before we
/// came (end the process, or the handler that was installed). A previous
/// handler that restores ours and raises again (LLVM's does) finds it
/// ending the process: the second time, the default action.
extern "C" void removePendingAndResignal(int signal) {
  static volatile sig_atomic_t handled = 0;
  removePending();
  if (handled)
    std::signal(signal, SIG_DFL);
  else
    sigaction(signal, &previousActions[signal], nullptr);
  handled = 1;
  raise(signal); // delivered once this handler returns
}

void installHandlers() {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  std::atexit(removePending);
  for (int signal : kSignals) {
    struct sigaction action = {};
    action.sa_handler = removePendingAndResignal;
    sigemptyset(&action.sa_mask);
    sigaction(signal, &action, &previousActions[signal]);
    // An ignored signal (nohup's SIGHUP) stays ignored.
    if (previousActions[signal].sa_handler == SIG_IGN)
      sigaction(signal, &previousActions[signal], nullptr);
  }
}

bool addPending(const std::string &path, bool directory) {
  installHandlers();
  for (Pending &entry : pending)
    if (!entry.path[0] && path.size() < PATH_MAX) {
      entry.directory = directory;
      std::memcpy(entry.path, path.c_str(), path.size() + 1);
      return true;
    }
  return false;
}

void forgetPending(const std::string &path) {
  for (Pending &entry : pending)
    if (path == entry.path)
      entry.path[0] = 0;
}

//===----------------------------------------------------------------------===//
// Paths
//===----------------------------------------------------------------------===//

/// `path` made absolute with links resolved, as far as it exists; the
/// components that do not exist yet are appended as written, "." and ".."
/// taken lexically.
std::string resolvedPath(const std::string &path) {
  char buffer[PATH_MAX];
  if (realpath(path.c_str(), buffer))
    return buffer;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec).lexically_normal();
  fs::path existing = absolute, rest;
  while (existing.has_relative_path() && !fs::exists(existing, ec)) {
    rest = existing.filename() / rest;
    existing = existing.parent_path();
  }
  if (realpath(existing.c_str(), buffer))
    existing = buffer;
  return (existing / rest).lexically_normal().string();
}

/// Whether `path` is `dir` or lies inside it (both resolved).
bool isWithin(const std::string &path, const std::string &dir) {
  if (path == dir)
    return true;
  std::string prefix = dir.back() == '/' ? dir : dir + "/";
  return path.compare(0, prefix.size(), prefix) == 0;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

std::string baseName(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// The permissions a file or directory created now gets: `base` less the
/// umask.
mode_t newMode(mode_t base) {
  mode_t mask = umask(0);
  umask(mask);
  return base & ~mask;
}

std::string systemError(const std::string &what) {
  return what + ": " + std::strerror(errno);
}

} // namespace

//===----------------------------------------------------------------------===//
// ReadFiles
//===----------------------------------------------------------------------===//

void ReadFiles::addFile(const std::string &path, const std::string &role) {
  addRegularFile(path, path == "-" ? "standard input" : role + " " + path);
}

void ReadFiles::addRegularFile(const std::string &path,
                               const std::string &description) {
  struct stat st;
  bool standardInput = path == "-";
  int status =
      standardInput ? fstat(STDIN_FILENO, &st) : stat(path.c_str(), &st);
  if (status != 0 || !S_ISREG(st.st_mode))
    return;
  files.push_back({description, standardInput ? "" : resolvedPath(path),
                   st.st_dev, st.st_ino});
}

void ReadFiles::addDirectory(const std::string &dir, const std::string &role) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return;
  directories.push_back(
      {role + " " + dir, resolvedPath(dir), st.st_dev, st.st_ino});
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    if (it->is_regular_file(ec))
      addRegularFile(it->path().string(), "a file of " + role + " " + dir +
                                              " (" + it->path().string() + ")");
}

std::string ReadFiles::fileConflict(const std::string &path) const {
  struct stat st;
  bool standardOutput = path.empty() || path == "-";
  int status =
      standardOutput ? fstat(STDOUT_FILENO, &st) : stat(path.c_str(), &st);
  if (status != 0)
    return "";
  for (const File &file : files)
    if (file.device == st.st_dev && file.inode == st.st_ino)
      return file.description;
  if (S_ISDIR(st.st_mode))
    for (const File &dir : directories)
      if (dir.device == st.st_dev && dir.inode == st.st_ino)
        return dir.description;
  return "";
}

std::string ReadFiles::directoryConflict(const std::string &dir) const {
  std::string resolved = resolvedPath(dir);
  for (const File &read : directories) {
    if (resolved == read.realPath)
      return "is " + read.description;
    if (isWithin(resolved, read.realPath))
      return "lies inside " + read.description;
    if (isWithin(read.realPath, resolved))
      return "holds " + read.description;
  }
  for (const File &file : files)
    if (!file.realPath.empty() && isWithin(file.realPath, resolved))
      return (file.realPath == resolved ? "is " : "holds ") + file.description;
  return "";
}

//===----------------------------------------------------------------------===//
// ReplacementFile
//===----------------------------------------------------------------------===//

std::string ReplacementFile::open(const std::string &path,
                                  const ReadFiles &reads) {
  bool standardOutput = path.empty() || path == "-";
  name = standardOutput ? "standard output" : path;
  std::string conflict = reads.fileConflict(path);
  if (!conflict.empty())
    return name + " is " + conflict +
           ": writing it would destroy what is being read; choose another "
           "output";
  if (standardOutput) {
    descriptor = STDOUT_FILENO;
    return "";
  }
  struct stat st;
  bool exists = stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return path + ": cannot write: it is a directory";
  if (exists && !S_ISREG(st.st_mode)) {
    descriptor = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    return descriptor < 0 ? systemError(path + ": cannot write") : "";
  }
  // A link is followed: the file it names is replaced, not the link.
  char resolved[PATH_MAX];
  target = exists && realpath(path.c_str(), resolved) ? resolved : path;
  temporary = directoryOf(target) + "." + baseName(target) + ".tmp-XXXXXX";
  descriptor = mkostemp(temporary.data(), O_CLOEXEC);
  if (descriptor < 0) {
    temporary.clear();
    return systemError(path + ": cannot write");
  }
  if (!addPending(temporary, /*directory=*/false))
    return path + ": cannot write: too many outputs at once";
  if (fchmod(descriptor, exists ? st.st_mode & 07777 : newMode(0666)) != 0)
    return systemError(path + ": cannot write");
  return "";
}

const std::string &ReplacementFile::writePath() const {
  return temporary.empty() ? name : temporary;
}

std::string ReplacementFile::commit() {
  if (temporary.empty())
    return "";
  if (std::rename(temporary.c_str(), target.c_str()) != 0)
    return systemError(name + ": cannot write");
  forgetPending(temporary);
  temporary.clear();
  return "";
}

ReplacementFile::~ReplacementFile() {
  if (temporary.empty())
    return;
  unlink(temporary.c_str());
  forgetPending(temporary);
}

//===----------------------------------------------------------------------===//
// ReplacementDirectory
//===----------------------------------------------------------------------===//

std::string ReplacementDirectory::open(const std::string &path,
                                       const ReadFiles &reads,
                                       const std::string &marker) {
  std::string conflict = reads.directoryConflict(path);
  if (!conflict.empty())
    return "the output directory " + path + " " + conflict +
           ": replacing it would destroy what is being read; choose another "
           "output directory";
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_directory(status))
    return path + ": cannot write a directory: it is a file";
  if (fs::is_directory(status) && !fs::is_empty(path, ec) &&
      !fs::exists(fs::path(path) / marker, ec))
    return "the output directory " + path +
           " holds files that no compilation wrote (it has no " + marker +
           "); choose a new or empty directory, or one tfmc wrote";
  std::string resolved = resolvedPath(path);
  while (resolved.size() > 1 && resolved.back() == '/')
    resolved.pop_back();
  fs::create_directories(fs::path(resolved).parent_path(), ec);
  target = resolved;
  building = directoryOf(resolved) + "." + baseName(resolved) + ".tmp-XXXXXX";
  if (!mkdtemp(building.data())) {
    building.clear();
    return systemError(path + ": cannot create the output directory");
  }
  if (!addPending(building, /*directory=*/true))
    return path + ": cannot write: too many outputs at once";
  struct stat st;
  mode_t mode =
      stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : newMode(0777);
  if (chmod(building.c_str(), mode) != 0)
    return systemError(path + ": cannot create the output directory");
  return "";
}

std::string ReplacementDirectory::commit() {
  // Into a place that is free or an empty directory, a rename; over a
  // directory with contents, an exchange, so that the path always names a
  // whole output, and then the old one (now at `building`) is removed.
  if (std::rename(building.c_str(), target.c_str()) != 0) {
    if (errno != ENOTEMPTY && errno != EEXIST)
      return systemError(target + ": cannot put the output in place");
    if (renameat2(AT_FDCWD, building.c_str(), AT_FDCWD, target.c_str(),
                  RENAME_EXCHANGE) != 0)
      return systemError(target + ": cannot replace the old output");
    std::error_code ec;
    std::filesystem::remove_all(building, ec);
  }
  forgetPending(building);
  building.clear();
  return "";
}

ReplacementDirectory::~ReplacementDirectory() {
  if (building.empty())
    return;
  std::error_code ec;
  std::filesystem::remove_all(building, ec);
  forgetPending(building);
}
