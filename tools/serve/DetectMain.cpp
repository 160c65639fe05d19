//===- DetectMain.cpp - tfm-detect: the language of each line ---*- C++ -*-===//
//
// What tfm-serve's /detect and source "auto" decide, a line at a time, for
// measuring them on labelled text (docs/Serving.md gives the figures):
// each line of standard input gets "LANGUAGE<TAB>CONFIDENCE" ("-<TAB>0"
// when nothing was detected), ranked as a server whose models translate
// from --sources would rank it; --time adds the time per detection.
//
//===----------------------------------------------------------------------===//

#include "tools/common/CommandLine.h"
#include "tools/common/LanguageDetector.h"
#include "tools/common/Text.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <sstream>

namespace {

[[noreturn]] void die(const std::string &message) {
  fmt::print(stderr, "tfm-detect: error: {}\n", message);
  std::exit(1);
}

std::vector<std::string> splitCommas(const std::string &list) {
  std::vector<std::string> codes;
  std::istringstream in(list);
  for (std::string code; std::getline(in, code, ',');)
    if (!code.empty())
      codes.push_back(code);
  return codes;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app("Detects the language of each line of standard input as "
               "tfm-serve's /detect does (CLD2).",
               "tfm-detect");
  std::string sources;
  bool all = false, time = false;
  app.add_option("--sources", sources,
                 "comma-separated languages ranked first (a server's "
                 "source languages: en,de)");
  app.add_flag("--all", all,
               "every language found, best first, not the "
               "first alone");
  app.add_flag("--time", time, "print the mean time of a detection");
  tfm_tools::addVersionFlag(app, "tfm-detect of tfmc", "print the version");
  tfm_tools::parseCommandLine(app, argc, argv, die);

  tfm_tools::LanguageDetector detector(splitCommas(sources));
  std::chrono::steady_clock::duration spent{};
  size_t lines = 0;
  std::string out;
  for (std::string line; std::getline(std::cin, line); ++lines) {
    tfm_tools::replaceInvalidUtf8(line);
    auto start = std::chrono::steady_clock::now();
    std::vector<tfm_tools::DetectedLanguage> found = detector.detect(line);
    spent += std::chrono::steady_clock::now() - start;
    if (found.empty())
      out = "-\t0";
    for (size_t i = 0; i < found.size() && (all || i == 0); ++i)
      out += fmt::format("{}{}\t{:g}", i ? "\t" : "", found[i].language,
                         found[i].confidence);
    fmt::print("{}\n", out);
    out.clear();
  }
  if (time)
    fmt::print(stderr, "tfm-detect: {} lines, {:.1f} us a detection\n", lines,
               lines
                   ? std::chrono::duration<double, std::micro>(spent).count() /
                         double(lines)
                   : 0.0);
  return 0;
}
