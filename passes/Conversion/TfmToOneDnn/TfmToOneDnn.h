//===- TfmToOneDnn.h - convert-tfm-to-onednn's API --------------*- C++ -*-===//
//
// Which ops the conversion to oneDNN calls can lower, which
// tfm-select-backend asks when it chooses.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_CONVERSION_TFMTOONEDNN_TFMTOONEDNN_H
#define TFM_PASSES_CONVERSION_TFMTOONEDNN_TFMTOONEDNN_H

namespace mlir {
class Operation;
namespace tfm {

/// Whether oneDNN can run `op` (convert-tfm-to-onednn lowers it).
bool isOneDnnCandidate(Operation *op);

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_CONVERSION_TFMTOONEDNN_TFMTOONEDNN_H
