//===- TfmBase.td - tfm dialect, enums and shared op classes -*- tablegen -*-===//
//
// The `tfm` dialect describes an encoder-decoder Transformer as a graph of
// tensor operations. Everything here is shared by the op definitions in
// TfmOps.td: the dialect, its enums, its type constraints and the small class
// hierarchy that gives ops of one shape the same traits and syntax.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_BASE_TD
#define TFM_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tfm_Dialect : Dialect {
  let name = "tfm";
  let cppNamespace = "::mlir::tfm";
  let summary = "Encoder-decoder Transformer models as tensor graphs";
  let description = [{
    The `tfm` dialect is the model graph of tfmc. It works on builtin ranked
    tensors whose batch and sequence dimensions are dynamic
    (`tensor<?x?x512xf32>`), with value semantics.

    It has two tiers. *Primitive ops* are what the importer emits, one op per
    formula of "Attention is all you need": embedding lookups, position
    encodings, matmuls, linears, elementwise arithmetic, softmax, means, masks,
    head split/merge and key/value cache updates. *Fused ops* are what the
    fusion passes produce: `tfm.attention`, `tfm.layer_norm` and
    `tfm.fused_linear`, each of which lowers to one kernel.

    Weights are never dense constants: `tfm.weight` names a tensor of the
    checkpoint, and code generation resolves the name to an address.

    A layer that the model repeats is one private `func.func` marked
    `tfm.layer`, called once per layer: its `tfm.weight` names are relative,
    and each `func.call` of it binds them with its `tfm.weights_prefix` (the
    checkpoint prefix of that layer's tensors). `tfm-layout-weights` sets
    `tfm.weights_offset` on each call, where its layer's block of the
    weights file starts.

    ```mlir
    func.func private @encoder_layer(%x: tensor<?x?x512xf32>)
        -> tensor<?x?x512xf32> attributes {tfm.layer} {
      %w = tfm.weight "fc1.weight" : tensor<2048x512xf32>
      ...
    }
    %y = func.call @encoder_layer(%x)
        {tfm.weights_prefix = "model.encoder.layers.3."} : ...
    ```
  }];
  let hasOperationAttrVerify = 1;
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::tensor::TensorDialect"
  ];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Tfm_Activation : I32EnumAttr<"Activation",
    "activation function of a feed-forward layer", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"relu", 1>,
      I32EnumAttrCase<"gelu", 2>,
      I32EnumAttrCase<"silu", 3>,
      // x/2 · (1 + tanh(sqrt(2/π) · (x + 0.044715 x³))), T5's gated-gelu
      I32EnumAttrCase<"gelu_tanh", 4>,
    ]> {
  let cppNamespace = "::mlir::tfm";
}

def Tfm_PositionKind : I32EnumAttr<"PositionKind",
    "how position encodings are computed", [
      // sin at even channels, cos at odd ones, frequencies 10000^(-i/(d/2))
      // (Vaswani et al., sec. 3.5).
      I32EnumAttrCase<"sinusoidal_interleaved", 0>,
      // sin in the first half of the channels, cos in the second, the same
      // frequencies (Hugging Face's MarianMT).
      I32EnumAttrCase<"sinusoidal_concat", 1>,
      // rows of a table read from the checkpoint.
      I32EnumAttrCase<"learned", 2>,
      // the halves of sinusoidal_concat, frequencies 10000^(-i/(d/2 - 1))
      // (tensor2tensor's; Marian's own, fairseq's).
      I32EnumAttrCase<"sinusoidal_concat_half_minus_one", 3>,
    ]> {
  let cppNamespace = "::mlir::tfm";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Tfm_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Tfm_IdTensor : RankedTensorOf<[I32, I64]>;
def Tfm_LengthTensor : 1DTensorOf<[I32]>;

//===----------------------------------------------------------------------===//
// Op classes
//===----------------------------------------------------------------------===//

class Tfm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tfm_Dialect, mnemonic, !listconcat([Pure], traits)>;

// y = f(x) element by element; shape and element type are kept.
class Tfm_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Tfm_Op<mnemonic, !listconcat([SameOperandsAndResultType], traits)> {
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

// z = f(x, y) element by element, with NumPy broadcasting: shapes are aligned
// on their last dimension and a dimension of size 1 stretches to the other.
class Tfm_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Tfm_Op<mnemonic, traits> {
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs), [{
      build($_builder, $_state, inferBroadcastType(lhs.getType(), rhs.getType()),
            lhs, rhs);
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return verifyBroadcastOp(*this, getLhs().getType(), getRhs().getType(),
                               getResult().getType());
    }
  }];
}

#endif // TFM_BASE_TD
