//===- Commands.h - tfmc's commands -----------------------------*- C++ -*-===//
//
// What tfmc.cpp dispatches to, once the command line is parsed: each
// returns the exit code, having reported any error.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TFMC_COMMANDS_H
#define TFM_TOOLS_TFMC_COMMANDS_H

namespace tfmc {

/// `tfmc import` (Import.cpp).
int runImport();
/// `tfmc compile` (Compile.cpp).
int runCompile();
/// `tfmc graph` (Graph.cpp).
int runGraph();
/// `tfmc shortlist` (Shortlist.cpp).
int runShortlist();

} // namespace tfmc

#endif // TFM_TOOLS_TFMC_COMMANDS_H
