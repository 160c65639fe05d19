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
#include "fuzz/FuzzUtil.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir::tfm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tfm_fuzz::MemFile file;
  file.set(data, size);
  llvm::Expected<MarianCheckpointFile> model =
      MarianCheckpointFile::open(file.path());
  if (!model) {
    std::string message = llvm::toString(model.takeError());
    TFM_FUZZ_CHECK(llvm::StringRef(message).starts_with(file.path()) ||
                   llvm::StringRef(message).starts_with("/proc/self/fd/"));
    if (tfm_fuzz::verbose())
      llvm::errs() << message << "\n";
    return 0;
  }
  const ModelConfig &c = model->config();
  TFM_FUZZ_CHECK(c.dModel >= 1 && c.encoderHeads >= 1 &&
                 c.dModel % c.encoderHeads == 0 && c.encoderLayers >= 1 &&
                 c.decoderLayers >= 1 && c.padTokenId == c.vocabSize - 1);
  uint64_t sum = 0;
  for (const TensorInfo &t : model->tensors()) {
    llvm::ArrayRef<char> bytes = model->bytes(t);
    TFM_FUZZ_CHECK(uint64_t(t.numElements()) * dtypeSize(t.dtype) ==
                   bytes.size());
    if (!bytes.empty())
      sum += uint8_t(bytes.front()) + uint8_t(bytes.back());
    TFM_FUZZ_CHECK(model->lookup(t.name) == &t);
  }
  return sum == 0xdeadbeef ? 0 : 0; // keeps `sum` alive
}
