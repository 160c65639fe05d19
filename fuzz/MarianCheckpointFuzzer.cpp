//===- MarianCheckpointFuzzer.cpp - Fuzz the Marian .npz reader -----------===//
//
// Input: a whole Marian model.npz (numpy's zip of .npy arrays, the YAML
// config in special:model.yml). Either MarianCheckpointFile::open rejects
// it with an error naming the file (or its config entry), or it gives a
// config the importer can build (sizes >= 1, heads dividing d_model, the
// padding token after the vocabulary) and tensors that hold as many bytes
// as their shapes need.
//
//===----------------------------------------------------------------------===//

#include "compiler/MarianCheckpoint.h"
#include "fuzz/CompilerReaders.h"

using namespace mlir::tfm;

namespace {

/// An error names the file, or the config file the reader looks for beside
/// it (/proc/self/fd/decoder.yml).
bool namesFileOrItsConfig(llvm::StringRef message, const std::string &path) {
  return message.starts_with(path) || message.starts_with("/proc/self/fd/");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<MarianCheckpointFile> model = tfm_fuzz::openInput(
      data, size, MarianCheckpointFile::open, namesFileOrItsConfig);
  if (!model)
    return 0;
  const ModelConfig &c = model->config();
  TFM_FUZZ_CHECK(c.dModel >= 1 && c.encoderHeads >= 1 &&
                 c.dModel % c.encoderHeads == 0 && c.encoderLayers >= 1 &&
                 c.decoderLayers >= 1 && c.padTokenId == c.vocabSize - 1);
  uint64_t sum = tfm_fuzz::checkTensors(*model);
  return sum == 0xdeadbeef ? 0 : 0; // keeps `sum` alive
}
