//===- SentencePieceModel.h - What tfmc reads of a .spm file ----*- C++ -*-===//
//
// A SentencePiece model file is a serialized protocol buffer (sentencepiece
// _model.proto's ModelProto). tfmc reads the little it needs of it, the
// pieces and whether a text gets a dummy prefix, from the wire format
// itself, so that it needs no SentencePiece or protobuf library.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_SENTENCEPIECEMODEL_H
#define TFM_COMPILER_SENTENCEPIECEMODEL_H

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
namespace tfm {

/// What tfmc needs of a SentencePiece model: ModelProto's field 1,
/// repeated, is the pieces (a piece's field 1 its text); its field 3 the
/// NormalizerSpec, whose field 3 is add_dummy_prefix (true unless given).
struct SentencePieceSummary {
  std::vector<std::string> pieces; // every piece's text, in id order
  bool dummyPrefix = true; // "▁" put before a text, as if it began a word
};

/// The model at `path`, or an error naming it: unreadable, not a
/// serialized ModelProto, or without pieces.
llvm::Expected<SentencePieceSummary> readSentencePiece(llvm::StringRef path);

} // namespace tfm
} // namespace mlir

#endif // TFM_COMPILER_SENTENCEPIECEMODEL_H
