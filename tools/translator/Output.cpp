//===- Output.cpp - Writing the translator's output safely ------*- C++ -*-===//

#include "tools/translator/Output.h"

#include "tools/translator/Lines.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tfm_translator;

namespace {

/// Temporaries not yet renamed into place, removed when the run ends
/// without renaming them: at exit (an error) or on a signal. Fixed storage,
/// so that the signal handler only reads memory and calls unlink().
constexpr int kMaxTemporaries = 4;
char pendingTemporaries[kMaxTemporaries][PATH_MAX];

void removePendingTemporaries() {
  for (char *path : pendingTemporaries)
    if (path[0])
      unlink(path);
}

extern "C" void removeTemporariesAndRaise(int signal) {
  removePendingTemporaries();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

void registerTemporary(const std::string &path) {
  static bool hooked = false;
  if (!hooked) {
    hooked = true;
    std::atexit(removePendingTemporaries);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      std::signal(signal, removeTemporariesAndRaise);
  }
  for (char *slot : pendingTemporaries)
    if (!slot[0] && path.size() < PATH_MAX) {
      std::memcpy(slot, path.c_str(), path.size() + 1);
      return;
    }
  die(path + ": too many temporary outputs");
}

void forgetTemporary(const std::string &path) {
  for (char *slot : pendingTemporaries)
    if (path == slot)
      slot[0] = 0;
}

/// The permissions a file created now gets: 0666 less the umask.
mode_t newFileMode() {
  mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

} // namespace

std::vector<InputFile>
tfm_translator::regularFiles(const std::vector<std::string> &paths) {
  std::vector<InputFile> files;
  for (const std::string &path : paths) {
    struct stat st;
    int status =
        path == "-" ? fstat(STDIN_FILENO, &st) : stat(path.c_str(), &st);
    if (status == 0 && S_ISREG(st.st_mode))
      files.push_back({path == "-" ? "stdin" : path, st.st_dev, st.st_ino});
  }
  return files;
}

Output::Output(const std::string &path, const std::vector<InputFile> &inputs)
    : name(path.empty() ? "stdout" : path) {
  struct stat st;
  bool exists = path.empty() ? fstat(STDOUT_FILENO, &st) == 0
                             : stat(path.c_str(), &st) == 0;
  if (exists)
    for (const InputFile &input : inputs)
      if (input.device == st.st_dev && input.inode == st.st_ino)
        die(name + " is the input file " + input.name +
            ": writing it would destroy what is being read; choose another "
            "output");
  if (path.empty()) {
    file = stdout;
    return;
  }
  if (exists && S_ISDIR(st.st_mode))
    die(path + ": cannot write: it is a directory");
  if (exists && !S_ISREG(st.st_mode)) {
    file = std::fopen(path.c_str(), "wb");
    if (!file)
      die(path + ": cannot write: " + std::strerror(errno));
    return;
  }
  // A link is followed: the file it names is replaced, not the link.
  char resolved[PATH_MAX];
  openReplacement(exists && realpath(path.c_str(), resolved) ? resolved : path);
  if (fchmod(fileno(file), exists ? st.st_mode & 07777 : newFileMode()) != 0)
    failed();
}

void Output::openReplacement(const std::string &path) {
  target = path;
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  temporary = dir + "." + base + ".tmp-XXXXXX";
  int fd = mkstemp(temporary.data());
  if (fd < 0)
    die(name + ": cannot write: " + std::strerror(errno));
  registerTemporary(temporary);
  file = fdopen(fd, "wb");
  if (!file)
    failed();
}

Output::~Output() {
  if (file && file != stdout)
    std::fclose(file);
  if (!temporary.empty()) {
    unlink(temporary.c_str());
    forgetTemporary(temporary);
  }
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
  if (temporary.empty())
    return;
  if (std::rename(temporary.c_str(), target.c_str()) != 0)
    failed();
  forgetTemporary(temporary);
  temporary.clear();
}

void Output::failed() {
  // A reader that went away (`| head` with SIGPIPE ignored) ends us as
  // quietly as SIGPIPE would.
  if (errno == EPIPE)
    std::_Exit(141);
  die(name + ": cannot write: " + std::strerror(errno));
}
