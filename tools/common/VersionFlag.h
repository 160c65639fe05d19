//===- VersionFlag.h - --version for the tools' command lines ---*- C++ -*-===//
//
// Every tool says which tfmc (version and commit) it belongs to the same
// way; each names itself in `banner`.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_COMMON_VERSIONFLAG_H
#define TFM_TOOLS_COMMON_VERSIONFLAG_H

#include "tools/Version.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <string>

namespace tfm_tools {

/// --version: prints "<banner> <version> (commit <hash>)" and exits.
inline void addVersionFlag(CLI::App &app, std::string banner,
                           const std::string &help) {
  app.add_flag_callback(
      "--version",
      [banner] {
        fmt::print("{} {} (commit {})\n", banner, TFM_VERSION, TFM_COMMIT);
        std::exit(0);
      },
      help);
}

} // namespace tfm_tools

#endif // TFM_TOOLS_COMMON_VERSIONFLAG_H
