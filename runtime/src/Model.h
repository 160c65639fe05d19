//===- Model.h - A compiled model's weights, mapped and checked -*- C++ -*-===//
//
// tfm_model is opaque in the C API; the runtime's sources share its
// definition here. Model.cpp maps a weights file and checks it against the
// compiled model it was written for (tfm/abi/ModelInfo.h).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_MODEL_H
#define TFM_RUNTIME_MODEL_H

#include "runtime/src/Buffer.h"
#include "runtime/src/Shortlist.h"
#include "tfm/abi/Panels.h"
#include "tfm/runtime.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <sys/mman.h>
#include <vector>

struct tfm_model_t {
  void *mapping = MAP_FAILED;
  size_t mappingSize = 0;
  int8_t *weights = nullptr; // 64-byte aligned tensor data
  int64_t weightsSize = 0;
  tfm_model_config config{};
  std::string path; // for messages
  struct Region {
    std::string name;
    uint64_t offset, size, checksum;
  };
  std::vector<Region> regions; // the weights file's table
  /// The checkpoint's bad_words_ids: token sequences never generated.
  std::vector<std::vector<int32_t>> badWords;
  /// The output projection that decode_step's caller chooses rows from
  /// (tfm/abi/ModelInfo.h): all target vocabulary rows as panels of
  /// `outputPanelWidth` features, `outputPanelBytes` bytes each (holding
  /// `outputElements`: f32, bf16, int8 or int4), and the logits bias
  /// padded with zeros to whole panels (empty: none).
  const uint8_t *outputPanels = nullptr;
  int64_t outputPanelCount = 0, outputPanelWidth = 0, outputPanelBytes = 0;
  tfm_runtime::PanelElements outputElements = tfm_runtime::PanelElements::F32;
  tfm_runtime::Buffer outputBias;
  /// The vocabulary shortlist: stored with the model (tfmc compile --vmap)
  /// or read from a vmap file (tfm_model_read_vmap).
  std::optional<tfm_runtime::Shortlist> shortlist;

  ~tfm_model_t() {
    if (mapping != MAP_FAILED)
      munmap(mapping, mappingSize);
  }
};

namespace tfm_runtime {

/// Maps the weights file at `path` (or the weights embedded in the
/// executable at `path`) and checks its header and tensor table against
/// the compiled model; with `verify`, every tensor's bytes too
/// (verifyWeights).
tfm_status openModel(const char *path, bool verify, tfm_model **out_model);

/// Checks every tensor's bytes against the checksum tfmc recorded; the
/// error names the damaged tensors. On success, *out_tensors and
/// *out_bytes (if not null) say how much was checked.
tfm_status verifyWeights(const tfm_model &model, int64_t *out_tensors,
                         int64_t *out_bytes);

} // namespace tfm_runtime

#endif // TFM_RUNTIME_MODEL_H
