//===- TfmToOneDnn.cpp - Lower tfm ops to calls of oneDNN kernels ---------===//
//
// Each op that oneDNN can run, and that tfm-select-backend did not give to
// LLVM, becomes a call of a runtime kernel (tfm/abi/OneDnnAbi.h):
//
//   %x = bufferization.to_memref %xt read_only : memref<..., strided<..>>
//   %out = memref.alloc(...)           // the result, dense
//   call @tfm_onednn_linear(%x*, %w*, ..., %out*, %code)   // * = memref<*xf32>
//   %r = bufferization.to_tensor %out restrict writable
//
// One-shot bufferization then joins the calls to the buffers of the rest of
// the program. Everything else (tfm.attention first: oneDNN 2.6 has no fused
// attention) stays for convert-tfm-to-linalg.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/TfmToOneDnn/TfmToOneDnn.h"
#include "passes/Passes.h"
#include "tfm/abi/OneDnnAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir {
namespace tfm {
#define GEN_PASS_DEF_CONVERTTFMTOONEDNNPASS
#include "passes/Passes.h.inc"
} // namespace tfm
} // namespace mlir

using namespace mlir;
using namespace mlir::tfm;
namespace abi = tfm_runtime::onednn;

static bool isF32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32();
}

static bool allF32(Operation *op) {
  return llvm::all_of(op->getOperandTypes(), isF32Tensor) &&
         llvm::all_of(op->getResultTypes(), isF32Tensor);
}

/// A gated linear's two halves meet in our kernel's epilogue only.
static bool isGated(LinearOp) { return false; }
static bool isGated(FusedLinearOp linear) { return linear.getGated(); }

static int64_t rankOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank();
}

bool mlir::tfm::isOneDnnCandidate(Operation *op) {
  if (!allF32(op))
    return false;
  return TypeSwitch<Operation *, bool>(op)
      // Rows the caller chose (tfm.caller_rows) arrive in our panels'
      // layout: only our kernel reads them.
      .Case<LinearOp, FusedLinearOp>([](auto linear) {
        return rankOf(linear.getInput()) >= 2 &&
               !linear.getWeight().template getDefiningOp<CallerRowsOp>() &&
               !isGated(linear);
      })
      .Case<MatmulOp>([](MatmulOp mm) { return rankOf(mm.getLhs()) >= 2; })
      // oneDNN 2.6's layer_normalization always subtracts the mean.
      .Case<LayerNormOp>([](LayerNormOp ln) {
        return rankOf(ln.getInput()) >= 2 && !ln.getRms();
      })
      .Case<SoftmaxOp>([](SoftmaxOp sm) {
        return static_cast<int64_t>(sm.getAxis()) == rankOf(sm.getInput()) - 1;
      })
      // The first operand must have the result's shape: oneDNN broadcasts
      // only the second.
      .Case<AddOp, SubOp, MulOp, DivOp>([](Operation *bin) {
        return bin->getOperand(0).getType() == bin->getResult(0).getType() &&
               rankOf(bin->getOperand(1)) <= rankOf(bin->getOperand(0));
      })
      .Case<ReluOp, GeluOp, GeluTanhOp, SiluOp, SqrtOp, RsqrtOp, ScaleOp>(
          [](Operation *) { return true; })
      .Default([](Operation *) { return false; });
}

namespace {

/// Builds one call: operands as unranked memrefs, the result in a new
/// buffer, the callee declared on first use.
class KernelCall {
public:
  KernelCall(IRRewriter &rewriter, ModuleOp module, Operation *op)
      : b(rewriter), module(module), op(op), loc(op->getLoc()) {
    b.setInsertionPoint(op);
  }

  /// `tensor`'s buffer, read only, as `memref<*xf32>`.
  void read(Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    SmallVector<int64_t> strides(type.getRank(), ShapedType::kDynamic);
    auto layout =
        StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic, strides);
    auto memrefType =
        MemRefType::get(type.getShape(), type.getElementType(), layout);
    auto buffer = b.create<bufferization::ToMemrefOp>(loc, memrefType, tensor);
    buffer.setReadOnly(true);
    operands.push_back(unranked(buffer));
  }

  /// A dense buffer for the result, the dynamic sizes taken from `like`'s
  /// dimensions as `sourceDims` says (one entry per result dimension).
  void result(ArrayRef<std::pair<Value, int64_t>> sourceDims) {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<Value> dynamic;
    for (auto [d, source] : llvm::enumerate(sourceDims))
      if (type.isDynamicDim(d))
        dynamic.push_back(
            b.create<tensor::DimOp>(loc, source.first, source.second));
    out = b.create<memref::AllocOp>(
        loc, MemRefType::get(type.getShape(), type.getElementType()), dynamic);
    operands.push_back(unranked(out));
  }

  void scalar(int64_t v) {
    operands.push_back(b.create<arith::ConstantIntOp>(loc, v, 64));
  }
  void scalar(float v) {
    operands.push_back(b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(v)));
  }
  /// A placeholder for an absent optional operand (the code says absent).
  void absent() { operands.push_back(operands.front()); }

  /// The call's result replaces `other` (same type, after the op) instead.
  void replacing(Operation *other) { replaced = other; }

  /// Emits the call and replaces the op by the result buffer as a tensor.
  func::CallOp finish(StringRef callee) {
    func::FuncOp decl = declare(callee);
    auto call = b.create<func::CallOp>(loc, decl, operands);
    Value tensor = b.create<bufferization::ToTensorOp>(
        loc, out, /*restrict=*/true, /*writable=*/true);
    b.replaceOp(replaced ? replaced : op, tensor);
    return call;
  }

private:
  Value unranked(Value memref) {
    auto type = mlir::UnrankedMemRefType::get(
        cast<MemRefType>(memref.getType()).getElementType(), 0);
    return b.create<memref::CastOp>(loc, type, memref);
  }

  func::FuncOp declare(StringRef name) {
    if (auto existing = module.lookupSymbol<func::FuncOp>(name))
      return existing;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto decl = b.create<func::FuncOp>(
        module.getLoc(), name,
        b.getFunctionType(ValueRange(operands).getTypes(), {}));
    decl.setPrivate();
    // Called as _mlir_ciface_<name>(descriptor pointers, scalars).
    decl->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    return decl;
  }

  IRRewriter &b;
  ModuleOp module;
  Operation *op;
  Operation *replaced = nullptr;
  Location loc;
  SmallVector<Value> operands;
  Value out;
};

/// The result's dimensions: those of `v` but the last, then `last`.
SmallVector<std::pair<Value, int64_t>>
leadingOf(Value v, std::pair<Value, int64_t> last) {
  SmallVector<std::pair<Value, int64_t>> dims;
  for (int64_t d = 0; d + 1 < rankOf(v); ++d)
    dims.push_back({v, d});
  dims.push_back(last);
  return dims;
}

SmallVector<std::pair<Value, int64_t>> sameAs(Value v) {
  SmallVector<std::pair<Value, int64_t>> dims;
  for (int64_t d = 0; d < rankOf(v); ++d)
    dims.push_back({v, d});
  return dims;
}

const char *activationName(Activation act) {
  switch (act) {
  case Activation::relu:
    return "relu";
  case Activation::gelu:
    return "gelu";
  case Activation::silu:
    return "silu";
  case Activation::gelu_tanh:
    return "gelu_tanh";
  case Activation::none:
    break;
  }
  return nullptr;
}

/// act(x·Wᵀ + b) + r: bias on the matmul, act as an eltwise post-op, the
/// residual as a sum post-op (into the result, prefilled with r).
/// `precision` is the module's: with bf16, x and W are rounded to bf16 and
/// their products summed in f32, as by our bf16 kernel; with int8, both are
/// quantized as for our int8 kernel and their integer products summed
/// exactly (the kernel's epilogue then does the scaling and post-ops).
void lowerLinear(KernelCall &call, Value input, Value weight, Value bias,
                 Activation act, Value residual, Precision precision) {
  assert(precision != Precision::Int4 &&
         "tfm-select-backend gives no int4 linear to oneDNN");
  int64_t code = static_cast<int64_t>(act);
  if (precision == Precision::Bf16) {
    code |= abi::kBf16Products;
    if (auto stored = weight.getDefiningOp<WeightOp>())
      stored->setAttr(kBf16ProductsAttr, UnitAttr::get(stored.getContext()));
  } else if (precision == Precision::Int8) {
    code |= abi::kInt8Products;
  }
  call.read(input);
  call.read(weight);
  if (bias) {
    call.read(bias);
    code |= abi::kHasBias;
  } else {
    call.absent();
  }
  if (residual) {
    call.read(residual);
    code |= abi::kHasResidual;
  } else {
    call.absent();
  }
  call.result(leadingOf(input, {weight, 0}));
  call.scalar(code);
  func::CallOp emitted = call.finish("tfm_onednn_linear");
  // What the kernel attaches to the matmul, for readers of the IR.
  SmallVector<StringRef> postOps;
  if (bias)
    postOps.push_back("bias");
  if (const char *name = activationName(act))
    postOps.push_back(name);
  if (residual)
    postOps.push_back("sum");
  if (precision != Precision::Fp32)
    emitted->setAttr("tfm.products", StringAttr::get(emitted.getContext(),
                                                     precisionName(precision)));
  if (!postOps.empty())
    emitted->setAttr("tfm.post_ops", StringAttr::get(emitted.getContext(),
                                                     llvm::join(postOps, ",")));
}

/// The scale op that is the sole user of a matmul's result, if any and not
/// given to LLVM.
ScaleOp scaleOfProduct(Operation *op) {
  auto mm = dyn_cast<MatmulOp>(op);
  if (!mm || !mm->hasOneUse())
    return nullptr;
  auto scale = dyn_cast<ScaleOp>(*mm->user_begin());
  if (!scale)
    return nullptr;
  // The pass checked every op's tfm.backend before it lowers any.
  llvm::Expected<std::optional<Backend>> backend = opBackend(scale);
  if (!backend) {
    llvm::consumeError(backend.takeError());
    return nullptr;
  }
  return *backend == Backend::Llvm ? nullptr : scale;
}

/// Lowers `op`; `scale` is scaleOfProduct(op), folded into the call;
/// `precision` is the module's.
void lower(IRRewriter &rewriter, ModuleOp module, Operation *op, ScaleOp scale,
           Precision precision) {
  KernelCall call(rewriter, module, op);
  TypeSwitch<Operation *>(op)
      .Case([&](LinearOp linear) {
        lowerLinear(call, linear.getInput(), linear.getWeight(),
                    linear.getBias(), Activation::none, Value(), precision);
      })
      .Case([&](FusedLinearOp linear) {
        lowerLinear(call, linear.getInput(), linear.getWeight(),
                    linear.getBias(), linear.getActivation(),
                    linear.getResidual(), precision);
      })
      .Case([&](MatmulOp mm) {
        int64_t rank = rankOf(mm.getLhs());
        call.read(mm.getLhs());
        call.read(mm.getRhs());
        SmallVector<std::pair<Value, int64_t>> dims;
        for (int64_t d = 0; d < rank - 2; ++d)
          dims.push_back({mm.getLhs(), d});
        dims.push_back(
            {mm.getLhs(), mm.getTransposeLhs() ? rank - 1 : rank - 2});
        dims.push_back(
            {mm.getRhs(), mm.getTransposeRhs() ? rank - 2 : rank - 1});
        call.result(dims);
        // A scale of the product (attention scores) rides along as an
        // eltwise post-op: the call replaces it and the matmul.
        float alpha = 1.f;
        if (scale) {
          alpha = static_cast<float>(scale.getFactor().convertToDouble());
          call.replacing(scale);
        }
        call.scalar(alpha);
        call.scalar((mm.getTransposeLhs() ? abi::kTransposeLhs : 0) |
                    (mm.getTransposeRhs() ? abi::kTransposeRhs : 0));
        func::CallOp emitted = call.finish("tfm_onednn_matmul");
        if (scale) {
          emitted->setAttr("tfm.post_ops",
                           StringAttr::get(emitted.getContext(), "scale"));
          rewriter.eraseOp(mm);
        }
      })
      .Case([&](LayerNormOp ln) {
        int64_t code = 0;
        call.read(ln.getInput());
        for (auto [value, flag] :
             {std::pair{ln.getResidual(), abi::kHasResidual},
              std::pair{ln.getScale(), abi::kHasScale},
              std::pair{ln.getBias(), abi::kHasBias}}) {
          if (value) {
            call.read(value);
            code |= flag;
          } else {
            call.absent();
          }
        }
        call.result(sameAs(ln.getInput()));
        call.scalar(static_cast<float>(ln.getEpsilon().convertToDouble()));
        call.scalar(code);
        call.finish("tfm_onednn_layer_norm");
      })
      .Case([&](SoftmaxOp sm) {
        call.read(sm.getInput());
        call.result(sameAs(sm.getInput()));
        call.finish("tfm_onednn_softmax");
      })
      .Case<AddOp, SubOp, MulOp, DivOp>([&](Operation *bin) {
        int64_t kind = isa<AddOp>(bin)   ? abi::kAdd
                       : isa<SubOp>(bin) ? abi::kSub
                       : isa<MulOp>(bin) ? abi::kMul
                                         : abi::kDiv;
        call.read(bin->getOperand(0));
        call.read(bin->getOperand(1));
        call.result(sameAs(bin->getOperand(0)));
        call.scalar(kind);
        call.finish("tfm_onednn_binary");
      })
      .Case<ReluOp, GeluOp, GeluTanhOp, SiluOp, SqrtOp, RsqrtOp, ScaleOp>(
          [&](Operation *unary) {
            int64_t kind = isa<ReluOp>(unary)       ? abi::kEltRelu
                           : isa<GeluOp>(unary)     ? abi::kEltGelu
                           : isa<GeluTanhOp>(unary) ? abi::kEltGeluTanh
                           : isa<SiluOp>(unary)     ? abi::kEltSilu
                           : isa<SqrtOp>(unary)     ? abi::kEltSqrt
                           : isa<RsqrtOp>(unary)    ? abi::kEltRsqrt
                                                    : abi::kEltLinear;
            float alpha = 1.f;
            if (auto scale = dyn_cast<ScaleOp>(unary))
              alpha = static_cast<float>(scale.getFactor().convertToDouble());
            call.read(unary->getOperand(0));
            call.result(sameAs(unary->getOperand(0)));
            call.scalar(kind);
            call.scalar(alpha);
            call.finish("tfm_onednn_eltwise");
          });
}

struct ConvertTfmToOneDnnPass
    : public tfm::impl::ConvertTfmToOneDnnPassBase<ConvertTfmToOneDnnPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::Expected<Precision> precision = modulePrecision(module);
    if (!precision) {
      module.emitError(llvm::toString(precision.takeError()));
      return signalPassFailure();
    }
    // Ops tfm-select-backend gave oneDNN, or all it can run without it.
    SmallVector<Operation *> ops;
    WalkResult walked = module.walk([&](Operation *op) {
      llvm::Expected<std::optional<Backend>> backend = opBackend(op);
      if (!backend) {
        op->emitOpError(llvm::toString(backend.takeError()));
        return WalkResult::interrupt();
      }
      if (*backend != Backend::Llvm && isOneDnnCandidate(op))
        ops.push_back(op);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return signalPassFailure();
    IRRewriter rewriter(&getContext());
    llvm::SmallPtrSet<Operation *, 8> folded;
    for (Operation *op : ops) {
      if (folded.contains(op))
        continue;
      ScaleOp scale = scaleOfProduct(op);
      if (scale)
        folded.insert(scale);
      lower(rewriter, module, op, scale, *precision);
    }
  }
};

} // namespace
