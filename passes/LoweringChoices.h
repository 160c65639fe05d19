//===- LoweringChoices.h - The precision and the backend, typed -*- C++ -*-===//
//
// What a compilation chooses besides its target: the linears' arithmetic
// (tfmc --precision) and who runs the ops oneDNN can run (tfmc --backend).
// Their names are parsed once, where they come in (a tool's command line,
// a pass option, the module's tfm.precision or an op's tfm.backend read
// back), and the enums go everywhere inside.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_LOWERINGCHOICES_H
#define TFM_PASSES_LOWERINGCHOICES_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>

namespace mlir {
namespace tfm {

/// The linears' arithmetic; attention, layer norm, softmax and the
/// residual stream stay f32 at every precision (docs/Design/Precisions.md).
enum class Precision { Fp32, Bf16, Int8, Int4 };

/// Who runs the ops oneDNN can run: our generated code, oneDNN's
/// primitives, or per op kind and shape (tfm-select-backend). An op is
/// given Llvm or OneDnn, never Auto.
enum class Backend { Llvm, OneDnn, Auto };

/// Every value, in the order the names are listed.
inline constexpr Precision kAllPrecisions[] = {
    Precision::Fp32, Precision::Bf16, Precision::Int8, Precision::Int4};
inline constexpr Backend kAllBackends[] = {Backend::Llvm, Backend::OneDnn,
                                           Backend::Auto};

/// "fp32", "bf16", "int8" or "int4".
llvm::StringRef precisionName(Precision precision);

/// "llvm", "onednn" or "auto".
llvm::StringRef backendName(Backend backend);

/// `name` as a precision. An unknown name is an error naming `option` and
/// the names allowed: "unknown <option> 'fp16': expected fp32, bf16, int8
/// or int4".
llvm::Expected<Precision> parsePrecision(llvm::StringRef name,
                                         llvm::StringRef option);

/// `name` as a backend. An unknown name is an error naming `option` and
/// the names allowed: "unknown <option> 'gpu': expected llvm, onednn or
/// auto".
llvm::Expected<Backend> parseBackend(llvm::StringRef name,
                                     llvm::StringRef option);

/// On the module, set by tfm-select-backend and tfm-layout-weights: the
/// name of its linears' precision, which convert-tfm-to-onednn and the
/// weights file read back.
constexpr llvm::StringLiteral kPrecisionAttr = "tfm.precision";

/// The attribute tfm-select-backend sets on ops: "llvm" or "onednn".
constexpr llvm::StringLiteral kBackendAttr = "tfm.backend";

/// Records `precision` on the module (kPrecisionAttr).
void setModulePrecision(ModuleOp module, Precision precision);

/// The module's precision: fp32 if it records none; an unknown name is an
/// error naming kPrecisionAttr.
llvm::Expected<Precision> modulePrecision(ModuleOp module);

/// Records on `op` the backend that runs it (kBackendAttr): Llvm or
/// OneDnn.
void setOpBackend(Operation *op, Backend backend);

/// The backend recorded on `op`, if any: Llvm or OneDnn. Another name
/// (auto too) is an error naming kBackendAttr.
llvm::Expected<std::optional<Backend>> opBackend(Operation *op);

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_LOWERINGCHOICES_H
