//===- main.cpp - The compiled translator's command line --------*- C++ -*-===//
//
// Reads one sentence a line (text, or token ids) from stdin or files and
// writes one translation a line in the same order; with --format html,
// one HTML document a file (HtmlDocuments.cpp), translated with its
// markup kept. Linked by tfmc with the
// compiled model and the runtime; needs nothing else at run time but its
// weights and tokenizer (next to it, embedded in it, or named by --weights).
// The session (Session.cpp), the inputs read beside the source
// (Companions.h) and the run over the input (Run.cpp) have files of their
// own.
//
//===----------------------------------------------------------------------===//

#include "tools/translator/Errors.h"
#include "tools/translator/Options.h"
#include "tools/translator/Run.h"
#include "tools/translator/Session.h"

#include <csignal>
#include <exception>
#include <optional>

using namespace tfm_translator;

/// Parses the command line, opens the model, and translates (or scores)
/// the input, or does what an information option asks.
static int run(int argc, char **argv) {
  auto started = Clock::now();
  Options o = parseCommandLine(argc, argv);
  // Before OpenMP starts (tfm_set_num_threads starts it).
  if (o.timing || o.modelInfo)
    tfm_count_parallel_regions();
  if (o.modelInfo)
    return printModelInfo(o);
  // --score reads its sources from the first input (the second holds the
  // targets, if given).
  LineReader reader(o.score && !o.inputs.empty()
                        ? std::vector<std::string>{o.inputs[0]}
                        : o.inputs,
                    die);
  reader.checkReadable();
  Session s;
  openModel(o, s);
  if (o.verifyWeights)
    return verifyWeights(o, s);
  openSession(o, s);
  double loadSeconds = secondsSince(started);

  tfm_tools::ReadFiles readFiles = filesRead(o);
  Output out(o.output, readFiles);
  std::optional<Output> logits;
  if (!o.logitsPath.empty())
    logits.emplace(o.logitsPath, readFiles);

  Run run(o, s, reader);
  if (o.html)
    run.translateDocuments(out);
  else if (o.score)
    run.scoreAll(out);
  else
    run.translateAll(out, logits ? &*logits : nullptr);
  out.close();
  if (logits)
    logits->close();
  if (o.timing)
    run.printTiming(loadSeconds);
  return 0;
}

int main(int argc, char **argv) {
  std::signal(SIGPIPE, SIG_DFL); // `| head` ends us quietly
  // What the text library and the client throw ends the run as an error.
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    die(e.what());
  }
}
