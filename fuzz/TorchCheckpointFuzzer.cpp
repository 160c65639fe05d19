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
#include "fuzz/FuzzUtil.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir::tfm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tfm_fuzz::MemFile file;
  file.set(data, size);
  llvm::Expected<TorchCheckpointFile> checkpoint =
      TorchCheckpointFile::open(file.path());
  if (!checkpoint) {
    std::string message = llvm::toString(checkpoint.takeError());
    TFM_FUZZ_CHECK(llvm::StringRef(message).starts_with(file.path() + ":"));
    if (tfm_fuzz::verbose())
      llvm::errs() << message << "\n";
    return 0;
  }
  uint64_t sum = 0;
  for (const TensorInfo &t : checkpoint->tensors()) {
    llvm::ArrayRef<char> bytes = checkpoint->bytes(t);
    TFM_FUZZ_CHECK(t.begin <= t.end && t.end <= size);
    TFM_FUZZ_CHECK(uint64_t(t.numElements()) * dtypeSize(t.dtype) ==
                   bytes.size());
    if (!bytes.empty())
      sum += uint8_t(bytes.front()) + uint8_t(bytes.back());
    TFM_FUZZ_CHECK(checkpoint->lookup(t.name) == &t);
  }
  return sum == 0xdeadbeef ? 0 : 0; // keeps `sum` alive
}
