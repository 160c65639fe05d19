//===- CommandLine.h - What the tools' CLI11 command lines share -*- C++
//-*-===//
//
// Every tool says which tfmc (version and commit) it belongs to the same
// way (each names itself in `banner`), and reads its command line the same
// way: --help printed, a mistake one line through the tool's own `die`.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_COMMON_COMMANDLINE_H
#define TFM_TOOLS_COMMON_COMMANDLINE_H

#include "tools/Version.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdlib>
#include <functional>
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

/// Parses the command line into `app`'s options: --help prints the help
/// and exits 0, a parse error goes to `die` with "; see --help".
inline void
parseCommandLine(CLI::App &app, int argc, char **argv,
                 const std::function<void(const std::string &)> &die) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp &) {
    fmt::print("{}", app.help());
    std::exit(0);
  } catch (const CLI::ParseError &e) {
    die(fmt::format("{}; see --help", e.what()));
  }
}

} // namespace tfm_tools

#endif // TFM_TOOLS_COMMON_COMMANDLINE_H
