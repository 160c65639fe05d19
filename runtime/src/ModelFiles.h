//===- ModelFiles.h - The files that come with a model ----------*- C++ -*-===//
//
// A compiled model's other files (the tokenizer's, tfmc's description of
// it): beside its weights file, or inside a translator that embeds its
// weights (tfm/abi/EmbeddedFiles.h). Every message names the file.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_MODELFILES_H
#define TFM_RUNTIME_MODELFILES_H

#include "tfm/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfm_runtime {

/// One file's bytes, and what to call it in messages.
struct NamedBytes {
  std::string name;
  std::string bytes;
};

class ModelFiles {
public:
  /// The files of the model at `modelPath` (what tfm_model_open took).
  static tfm_status open(const std::string &modelPath, ModelFiles &out);

  /// Whether the model has file `name` ("vocab.json").
  bool has(const std::string &name) const;
  /// Reads file `name`, which the model has.
  tfm_status read(const std::string &name, NamedBytes &out) const;
  /// What to call file `name` in messages.
  std::string describe(const std::string &name) const;

  bool embedded = false;

private:
  struct Entry {
    std::string name;
    uint64_t offset, size;
  };
  std::string path; // the executable (embedded), else the directory + '/'
  std::vector<Entry> table;
};

} // namespace tfm_runtime

#endif // TFM_RUNTIME_MODELFILES_H
