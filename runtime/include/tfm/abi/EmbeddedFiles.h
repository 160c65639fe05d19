//===- EmbeddedFiles.h - Model files inside a translator --------*- C++ -*-===//
//
// A translator with embedded weights (tfmc compile --embed-weights) carries
// the model's other files too, the tokenizer's, so that the one executable
// is the whole model. They sit between the weights and the EmbedTrailer
// (ModelInfo.h), where the weights loader does not look:
//
//   [executable][pad][weights][file bytes...][EmbeddedFile x count]
//   [EmbeddedFilesTrailer][EmbedTrailer]
//
// tfmc writes this (compiler/TokenizerFiles.cpp), the runtime reads it
// (Tokenizer.cpp); both take the layout from here. Little-endian.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_EMBEDDEDFILES_H
#define TFM_RUNTIME_EMBEDDEDFILES_H

#include <cstdint>

namespace tfm_runtime {

constexpr char kEmbeddedFilesMagic[8] = {'T', 'F', 'M', 'F',
                                         'I', 'L', 'E', 'S'};
/// More files than this means the trailer is not what it seems.
constexpr uint64_t kMaxEmbeddedFiles = 16;

struct EmbeddedFile {
  char name[48];   // NUL-padded file name, e.g. "vocab.json"
  uint64_t offset; // from the start of the executable
  uint64_t size;
};

struct EmbeddedFilesTrailer {
  uint64_t count; // EmbeddedFile entries just before this trailer
  char magic[8];
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_EMBEDDEDFILES_H
