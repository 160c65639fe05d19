//===- Shortlist.cpp - tfmc shortlist: a vocabulary map ---------*- C++ -*-===//
//
//   tfmc shortlist --source SRC.pieces --target TGT.pieces -o vmap.txt
//   tfmc shortlist --measure --vmap vmap.txt --vocab vocab.json
//                  --source TEST.pieces [--target REF.pieces]
//
// Builds a vocabulary map from a tokenized parallel corpus
// (ShortlistBuilder.h), which `compile --vmap` stores with the model
// (Vmap.h), or measures a map's shortlists on a test set.
//
//===----------------------------------------------------------------------===//

#include "tools/tfmc/Commands.h"
#include "tools/tfmc/Driver.h"
#include "tools/tfmc/ShortlistBuilder.h"
#include "tools/tfmc/Vmap.h"

using namespace llvm;
using namespace tfmc;

static cl::opt<std::string> corpusSource(
    "source",
    cl::desc("The source side of the parallel corpus: SentencePiece pieces "
             "separated by spaces, a sentence a line (spm_encode "
             "--model=source.spm writes them)"),
    cl::value_desc("file"), cl::cat(shortlistCategory()),
    cl::sub(shortlistCommand()));
static cl::opt<std::string> corpusTarget(
    "target",
    cl::desc("The target side, as many lines (with --measure: the "
             "references, for the share of their pieces the shortlist holds)"),
    cl::value_desc("file"), cl::cat(shortlistCategory()),
    cl::sub(shortlistCommand()));
static cl::opt<unsigned> shortlistTopK(
    "top-k",
    cl::desc("Target pieces kept per source n-gram: those of highest "
             "p(t|s) = pairs(s,t) / pairs(s), besides the frequent ones"),
    cl::init(100), cl::cat(shortlistCategory()), cl::sub(shortlistCommand()));
static cl::opt<unsigned> shortlistFrequent(
    "frequent",
    cl::desc("Target pieces always included: those in the most sentence "
             "pairs"),
    cl::init(100), cl::cat(shortlistCategory()), cl::sub(shortlistCommand()));
static cl::opt<double> shortlistMinProbability(
    "min-probability",
    cl::desc("Keep a target piece for a source n-gram only if p(t|s) is at "
             "least this"),
    cl::init(0.0), cl::cat(shortlistCategory()), cl::sub(shortlistCommand()));
static cl::opt<unsigned> shortlistMinCount(
    "min-count",
    cl::desc("Source pieces seen in fewer sentence pairs get no line"),
    cl::init(1), cl::cat(shortlistCategory()), cl::sub(shortlistCommand()));
static cl::opt<unsigned> shortlistNgrams(
    "ngrams",
    cl::desc("1: source pieces; 2: source bigrams too, seen in at least "
             "--min-ngram-count pairs, with the targets their pieces' lines "
             "lack"),
    cl::init(1), cl::cat(shortlistCategory()), cl::sub(shortlistCommand()));
static cl::opt<unsigned> shortlistMinNgramCount(
    "min-ngram-count",
    cl::desc("Source bigrams seen in fewer sentence pairs get no line"),
    cl::init(5), cl::cat(shortlistCategory()), cl::sub(shortlistCommand()));
static cl::opt<bool> shortlistMeasure(
    "measure",
    cl::desc("Measure --vmap instead: the median size of the shortlist of "
             "the batches of --source (pieces), with --vocab"),
    cl::cat(shortlistCategory()), cl::sub(shortlistCommand()));
static cl::opt<std::string>
    shortlistVocab("vocab", cl::desc("--measure: the model's vocab.json"),
                   cl::value_desc("file"), cl::cat(shortlistCategory()),
                   cl::sub(shortlistCommand()));
static cl::list<unsigned>
    shortlistBatchSizes("batch-sizes",
                        cl::desc("--measure: the batch sizes (default 1,32)"),
                        cl::CommaSeparated, cl::cat(shortlistCategory()),
                        cl::sub(shortlistCommand()));

/// `shortlist --measure`: the shortlists of --vmap on --source.
static int measure() {
  if (vmapFile.empty() || shortlistVocab.empty())
    return reportError("shortlist --measure needs --vmap and --vocab");
  Expected<tfm_tools::Vocabulary> vocabulary =
      tfm_tools::readVocabulary(shortlistVocab);
  if (!vocabulary)
    return reportError(toString(vocabulary.takeError()));
  std::vector<unsigned> batches(shortlistBatchSizes.begin(),
                                shortlistBatchSizes.end());
  if (batches.empty())
    batches = {1, 32};
  if (llvm::is_contained(batches, 0u))
    return reportError("--batch-sizes: a batch has at least 1 sentence");
  if (Error err = tfm_tools::measureShortlist(
          vmapFile, *vocabulary, corpusSource, corpusTarget, batches, outs()))
    return reportError(toString(std::move(err)));
  return 0;
}

/// Every file the command reads, which -o may not overwrite.
static tfm_tools::ReadFiles shortlistFilesRead() {
  tfm_tools::ReadFiles reads = filesRead();
  reads.addFile(corpusSource, "--source");
  reads.addFile(corpusTarget, "--target");
  reads.addFile(shortlistVocab, "--vocab");
  return reads;
}

/// `shortlist`: a vmap built from --source and --target, to -o.
static int build() {
  if (corpusTarget.empty())
    return reportError("shortlist needs --target: the target side's pieces");
  if (shortlistNgrams < 1 || shortlistNgrams > 2)
    return reportError("--ngrams is 1 (source pieces) or 2 (and bigrams)");
  tfm_tools::ShortlistOptions options;
  options.topK = shortlistTopK;
  options.frequent = shortlistFrequent;
  options.minProbability = shortlistMinProbability;
  options.minCount = shortlistMinCount;
  options.ngrams = shortlistNgrams;
  options.minNgramCount = shortlistMinNgramCount;
  std::string text;
  raw_string_ostream os(text);
  Expected<tfm_tools::ShortlistSummary> summary =
      tfm_tools::buildShortlist(corpusSource, corpusTarget, options, os);
  if (!summary)
    return reportError(toString(summary.takeError()));
  errs() << "tfmc shortlist: " << summary->pairs << " sentence pairs, "
         << summary->unigramRules << " source pieces and "
         << summary->bigramRules << " bigrams with targets, "
         << summary->targetEntries << " target entries\n";
  return writeOutput(shortlistFilesRead(),
                     [&](raw_ostream &out) { out << text; });
}

int tfmc::runShortlist() {
  if (int rc = refuseEmptyNames({&outputFile, &vmapFile, &corpusSource,
                                 &corpusTarget, &shortlistVocab}))
    return rc;
  if (corpusSource.empty())
    return reportError("shortlist needs --source: the source side's pieces");
  return shortlistMeasure ? measure() : build();
}
