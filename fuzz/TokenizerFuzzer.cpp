//===- TokenizerFuzzer.cpp - Fuzz the tokenizer files -----------*- C++ -*-===//
//
// source.spm, target.spm and vocab.json as tfmc checks them
// (compiler/TokenizerFiles.cpp) and as the translator loads and uses them
// (runtime/src/Tokenizer.cpp), beside the weights or embedded in the
// executable. Input:
//
//   byte 0      mode: 0 files beside the weights; 1 embedded (the layout
//               written by appendEmbeddedFiles); 2 embedded, then the table
//               of embedded files patched with the text's first bytes
//               (byte 0 % 3); bit 2: vocab.json's bytes are also tfmc's
//               description, tokenizer.tfm (which the languages read too)
//   bytes 1-2   the model's vocabulary size (little-endian)
//   the rest    source.spm, target.spm, vocab.json and a sentence,
//               separated by kSeparator
//
// Each reader fails with a message naming the file, or the tokenizer
// encodes the sentence and decodes ids, in and out of the vocabulary.
//
//===----------------------------------------------------------------------===//

#include "compiler/Embed.h"
#include "compiler/TokenizerFiles.h"
#include "fuzz/FuzzUtil.h"
#include "tfm/abi/EmbeddedFiles.h"
#include "tfm/abi/ModelInfo.h"
#include "tfm/runtime.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

static const char kSeparator[] = "\n==tfm-fuzz==\n";
static const char *const kNames[] = {"source.spm", "target.spm", "vocab.json"};

/// A directory of this process's own; removed at exit. A plain array, not a
/// std::string: exit handlers run after static objects are destroyed.
static char scratch[64];

static std::string scratchDir() {
  if (!scratch[0]) {
    std::snprintf(scratch, sizeof scratch, "/dev/shm/tfm-fuzz-XXXXXX");
    if (!mkdtemp(scratch)) {
      std::snprintf(scratch, sizeof scratch, "/tmp/tfm-fuzz-XXXXXX");
      if (!mkdtemp(scratch)) {
        std::perror("mkdtemp");
        std::abort();
      }
    }
    std::atexit([] {
      char path[128];
      for (const char *name : {"source.spm", "target.spm", "vocab.json",
                               "tokenizer.tfm", "config.json", "model.tfmw"}) {
        std::snprintf(path, sizeof path, "%s/%s", scratch, name);
        unlink(path);
      }
      rmdir(scratch);
    });
  }
  return scratch;
}

static void writeFile(const std::string &path, llvm::StringRef bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) {
    std::perror(path.c_str());
    std::abort();
  }
}

static void check(tfm_status s, const std::string &dir) {
  std::string message = tfm_status_message(s);
  tfm_status_free(s);
  // Every message names a file of the model.
  TFM_FUZZ_CHECK(message.find(dir) != std::string::npos);
  if (tfm_fuzz::verbose())
    std::fprintf(stderr, "%s\n", message.c_str());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  int mode = data[0] % 3;
  int64_t vocab = data[1] | (data[2] << 8);
  llvm::StringRef rest(reinterpret_cast<const char *>(data) + 3, size - 3);
  llvm::SmallVector<llvm::StringRef, 4> parts;
  rest.split(parts, kSeparator, /*MaxSplit=*/3);
  parts.resize(4);
  std::string dir = scratchDir();
  std::vector<std::string> paths;
  for (int i = 0; i < 3; ++i) {
    paths.push_back(dir + "/" + kNames[i]);
    writeFile(paths.back(), parts[i]);
  }
  std::string info = dir + "/" + tfm_runtime::kTokenizerInfoName;
  unlink(info.c_str());
  std::vector<std::string> embedded = paths;
  if (data[0] & 4) {
    writeFile(info, parts[2]);
    embedded.push_back(info);
  }

  // tfmc's check of vocab.json against config.json.
  std::string config = R"({"model_type": "marian", "d_model": 16,
    "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
    "decoder_attention_heads": 2, "encoder_ffn_dim": 32,
    "decoder_ffn_dim": 32, "max_position_embeddings": 32,
    "activation_function": "relu", "eos_token_id": 0, "vocab_size": )" +
                       std::to_string(vocab) + R"(, "pad_token_id": )" +
                       std::to_string(vocab - 1) +
                       R"(, "decoder_start_token_id": )" +
                       std::to_string(vocab - 1) + "}";
  writeFile(dir + "/config.json", config);
  auto found = mlir::tfm::findTokenizerFiles(dir, vocab, /*eosTokenId=*/0, dir);
  if (!found) {
    std::string message = llvm::toString(found.takeError());
    TFM_FUZZ_CHECK(message.find(dir) != std::string::npos);
    if (tfm_fuzz::verbose())
      llvm::errs() << message << "\n";
  } else {
    TFM_FUZZ_CHECK(found->size() == 3);
  }

  // The translator's files: beside an empty weights file, or inside it.
  std::string weights = dir + "/model.tfmw";
  std::string executable;
  if (mode != 0) {
    const uint64_t filesAt = 4096;
    executable.assign(filesAt, 'x');
    llvm::raw_string_ostream out(executable);
    llvm::Error err = mlir::tfm::appendEmbeddedFiles(out, filesAt, embedded);
    TFM_FUZZ_CHECK(!err);
    out.flush();
    if (mode == 2) {
      // (position from the end, value) pairs patch the table.
      size_t tail = 3 * sizeof(tfm_runtime::EmbeddedFile) +
                    sizeof(tfm_runtime::EmbeddedFilesTrailer);
      llvm::StringRef patch = parts[3];
      for (size_t i = 0; i + 1 < patch.size() && i < 32; i += 2)
        executable[executable.size() - 1 - uint8_t(patch[i]) % tail] ^=
            patch[i + 1];
    }
    tfm_runtime::EmbedTrailer trailer{filesAt, 0, {}};
    std::memcpy(trailer.magic, tfm_runtime::kEmbedMagic, 8);
    executable.append(reinterpret_cast<const char *>(&trailer), sizeof trailer);
    for (const std::string &path : embedded)
      unlink(path.c_str());
  }
  writeFile(weights, executable);

  tfm_model_config cfg{};
  cfg.source_vocab_size = cfg.target_vocab_size = vocab;
  cfg.eos_token_id = 0;
  cfg.pad_token_id = vocab - 1;
  tfm_languages *languages = nullptr;
  if (tfm_status s = tfm_languages_open(weights.c_str(), &cfg, &languages)) {
    check(s, dir);
  } else if (languages) {
    tfm_language_tokens tokens;
    int32_t index = 0;
    if (tfm_status s = tfm_languages_find(languages, "de", &index))
      tfm_status_free(s);
    if (tfm_status s = tfm_languages_tokens(languages, nullptr, "de", &tokens))
      tfm_status_free(s);
    for (int32_t i = 0; i < tfm_languages_count(languages); ++i)
      TFM_FUZZ_CHECK(tfm_languages_token(languages, i) < vocab);
    tfm_languages_close(languages);
  }
  tfm_tokenizer *tok = nullptr;
  if (tfm_status s = tfm_tokenizer_open(weights.c_str(), &cfg, &tok)) {
    check(s, dir);
    return 0;
  }
  if (!tok) // no tokenizer at all: only when the files are absent
    return 0;
  int32_t *ids = nullptr, length = 0;
  if (tfm_status s = tfm_tokenizer_encode(tok, parts[3].data(), parts[3].size(),
                                          &ids, &length)) {
    tfm_status_free(s);
  } else {
    TFM_FUZZ_CHECK(length >= 1 && ids[length - 1] == cfg.eos_token_id);
    for (int32_t i = 0; i < length; ++i)
      TFM_FUZZ_CHECK(ids[i] >= 0 && ids[i] < vocab);
    char *text = nullptr;
    size_t textLength = 0;
    if (tfm_status s =
            tfm_tokenizer_decode(tok, ids, length, &text, &textLength))
      tfm_status_free(s);
    tfm_free(text);
  }
  tfm_free(ids);
  // Ids the model could never produce are refused, not looked up.
  std::vector<int32_t> raw;
  for (size_t i = 0; i + 2 <= parts[3].size() && raw.size() < 16; i += 2)
    raw.push_back(int32_t(
        int16_t(uint8_t(parts[3][i]) | (uint8_t(parts[3][i + 1]) << 8))));
  char *text = nullptr;
  size_t textLength = 0;
  if (tfm_status s = tfm_tokenizer_decode(tok, raw.data(), int32_t(raw.size()),
                                          &text, &textLength))
    tfm_status_free(s);
  tfm_free(text);
  tfm_tokenizer_close(tok);
  return 0;
}
