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
// (ModelFiles.cpp); both take the layout from here. Little-endian.
//
// Among the files, beside the weights or embedded, tfmc writes
// kTokenizerInfoName: its description of the tokenizer, so that the runtime
// follows it with no family logic of its own. UTF-8 text, a record a line,
// fields separated by spaces (no field holds one):
//
//   tfm-tokenizer 1             the first line: the format's version
//   kind KIND                   marian, m2m100, nllb, mbart50, t5, none
//                               (ids only): what to call it in messages
//   source-spm FILE             the SentencePiece model that cuts source text
//   target-spm FILE             the one that joins output pieces into text
//   vocab FILE COUNT            pieces get ids from FILE, a JSON object of
//                               COUNT pieces (a piece not in it is <unk>)
//   offset N                    or: id = SentencePiece's id + N, its
//                               unknown piece being <unk> (fairseq's
//                               alignment: N = 1; T5's own ids: N = 0)
//   size N                      the tokenizer's ids are [0, N); the model's
//                               rows past N are never text
//   special PIECE ID            <s>, <pad>, </s>, <unk>, <mask>: found by
//                               their piece, left out of text output
//   language CODE ID NAME...    a language token: the model's code
//                               (__de__, deu_Latn, de_DE), its id, and the
//                               other names that choose it (de); left out
//                               of text output
//   default-source CODE         the language of source text given without
//                               one (the Hugging Face tokenizer's default)
//   source-prefix TOKEN...      before a source text's pieces: ids, or
//                               `source` for the source language's token
//   source-suffix TOKEN...      after them (ids, `source`)
//   source-prefix-with-target TOKEN...
//                               in place of source-prefix when a target
//                               language is given: ids, `source`, `target`
//                               (MADLAD-400 takes the target language in
//                               the source: ▁'s id, then `target`)
//   target-prefix TOKEN...      forced first in a translation when a target
//                               language is given: ids, or `target`
//   pair SOURCE TARGET          a model of one language pair (tfmc compile
//                               --source-lang/--target-lang): its languages,
//                               which have no tokens
//
// A model without the file is Marian's layout: source.spm, target.spm and
// vocab.json, ids from vocab.json, sources ending in </s>.
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

/// tfmc's description of the tokenizer (see above), and its first line.
constexpr char kTokenizerInfoName[] = "tokenizer.tfm";
constexpr char kTokenizerInfoHeader[] = "tfm-tokenizer 1";

struct EmbeddedFilesTrailer {
  uint64_t count; // EmbeddedFile entries just before this trailer
  char magic[8];
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_EMBEDDEDFILES_H
