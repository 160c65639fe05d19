//===- TorchCheckpointFuzzer.cpp - Fuzz the pytorch_model.bin reader ------===//
//
// Input: a whole pytorch_model.bin (torch.save's zip of a pickled
// state_dict). Either TorchCheckpointFile::open rejects it with an error
// naming the file, or every tensor it accepts lies inside the file, has as
// many bytes as its shape and dtype need, and is found by name. The
// unpickler runs no code whatever the pickle says.
//
//===----------------------------------------------------------------------===//

#include "compiler/TorchCheckpoint.h"
#include "fuzz/CompilerReaders.h"

using namespace mlir::tfm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::optional<TorchCheckpointFile> checkpoint = tfm_fuzz::openInput(
      data, size, TorchCheckpointFile::open, tfm_fuzz::startsWithPathThen(":"));
  if (!checkpoint)
    return 0;
  for (const TensorInfo &t : checkpoint->tensors())
    TFM_FUZZ_CHECK(t.begin <= t.end && t.end <= size);
  uint64_t sum = tfm_fuzz::checkTensors(*checkpoint);
  return sum == 0xdeadbeef ? 0 : 0; // keeps `sum` alive
}
