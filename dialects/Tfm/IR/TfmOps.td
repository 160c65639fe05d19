//===- TfmOps.td - tfm dialect operations ------------------*- tablegen -*-===//
//
// Primitive ops (what the importer emits, one per formula of the paper) and
// fused ops (what the fusion passes produce). Shapes use `?` for the dynamic
// batch and sequence dimensions; verifiers check every static dimension.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_OPS_TD
#define TFM_OPS_TD

include "dialects/Tfm/IR/TfmBase.td"
include "mlir/Dialect/Linalg/IR/LinalgInterfaces.td"

// Fused ops decompose back into primitive ops through upstream's
// AggregatedOpInterface (as linalg.softmax does), so `tfm-decompose` and
// fuse -> decompose round trips need no per-op pass code.
defvar Tfm_Decomposable =
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>;

//===----------------------------------------------------------------------===//
// Weights, embeddings and positions
//===----------------------------------------------------------------------===//

def Tfm_WeightOp : Tfm_Op<"weight"> {
  let summary = "a tensor of the checkpoint, referred to by name";
  let description = [{
    Stands for the checkpoint tensor called `name`. The IR never holds weight
    data: code generation resolves the name to an address in the weights file,
    so a module stays small whatever the model's size. The type is the
    tensor's shape with the element type computations use; the storage type
    (F32, F16, BF16) is the weights file's business.

    With `parts`, the tensor is those checkpoint tensors one after another
    along the first axis (their other dimensions equal), and `name` is only
    its key in the weights file: `tfm-fuse-sibling-linears` stacks the
    weights of linears that read the same input this way.

    `offset`, set by `tfm-layout-weights`, is the tensor's byte offset in the
    weights file that tfmc writes (f32, row-major, 64-byte aligned).

    ```mlir
    %w = tfm.weight "model.encoder.layers.0.fc1.weight" : tensor<2048x512xf32>
    %b = tfm.weight "model.encoder.layers.0.fc1.bias" at 4194304 : tensor<2048xf32>
    %kv = tfm.weight "k+v" parts ["k.weight", "v.weight"] : tensor<1024x512xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<StrArrayAttr>:$parts,
                       OptionalAttr<I64Attr>:$offset);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $name (`parts` $parts^)? (`at` $offset^)? attr-dict `:` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$type, "::llvm::StringRef":$name), [{
      build($_builder, $_state, type, name, ::mlir::ArrayAttr(),
            ::mlir::IntegerAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// The checkpoint tensors it stands for: its parts, or its name.
    ::llvm::SmallVector<::llvm::StringRef> getTensorNames();
  }];
  let hasVerifier = 1;
}

def Tfm_CallerRowsOp : Tfm_Op<"caller_rows"> {
  let summary = "the rows of a weight that the caller chose for this call";
  let description = [{
    `result[..., i, ...] = input[..., rows[i], ...]` along `axis` (0 unless
    given) for rows `rows` that the caller of the function chooses, in its
    order, and passes in the function's
    argument named `from`: not as ids but as the rows themselves, laid out
    as the weights file holds `input` (a linear's panels, tfm/abi/Panels.h,
    padded to whole panels; a bias as f32, padded alike). The caller picks
    them once and reuses them for many calls: a vocabulary shortlist's
    output projection is this over the tied embedding table, chosen per
    batch and read by every decoding step. `input` is a `tfm.weight`: the
    weights file keeps all of its rows for the caller to choose from.
    `tfm-convert-tfm-to-linalg` adds the argument (bytes, after the
    function's others, in order of first use); only linears read a
    weight stored in panels.

    ```mlir
    %w = tfm.weight "model.shared.weight" : tensor<32000x512xf32>
    %ws = tfm.caller_rows %w from "output_panels"
        : tensor<32000x512xf32> -> tensor<?x512xf32>
    %b = tfm.weight "final_logits_bias" : tensor<1x32000xf32>
    %bs = tfm.caller_rows %b from "output_bias" {axis = 1 : i64}
        : tensor<1x32000xf32> -> tensor<1x?xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, StrAttr:$from,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `from` $from attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_EmbeddingOp : Tfm_Op<"embedding"> {
  let summary = "token embedding lookup: result[..., :] = table[ids[...], :]";
  let description = [{
    Gathers one row of `table` (vocabulary × model dimension) per token id.
    The result has the shape of `ids` with the model dimension appended. Ids
    outside the table are an error the runtime checks on its inputs.

    ```mlir
    %x = tfm.embedding %table[%ids]
        : tensor<32000x512xf32>, tensor<?x?xi32> -> tensor<?x?x512xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$table, Tfm_IdTensor:$ids);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$table, "::mlir::Value":$ids)>
  ];
  let hasVerifier = 1;
}

def Tfm_PositionEncodingOp : Tfm_Op<"position_encoding",
    [AttrSizedOperandSegments]> {
  let summary = "position encodings for the positions offset + j";
  let description = [{
    For each element of `ids` at sequence index `j` (its last dimension), the
    encoding of position `p = offset + j`, a vector of the result's last
    dimension `d`. The ids themselves are not read; they give the shape.
    `offset` is 0 in the encoder and the decoding step in the incremental
    decoder (a model whose positions start elsewhere, as fairseq's at 2,
    adds its start to both). With `starts` (one per batch row, the first
    dimension of `ids`), row `b` began at step `starts[b]` and its position
    is `p = offset + j - starts[b]`: sentences that joined a running batch
    later are at earlier positions.

    - `sinusoidal_interleaved` (the paper):
      `PE[p, 2i] = sin(p / 10000^(2i/d))`, `PE[p, 2i+1] = cos(p / 10000^(2i/d))`
    - `sinusoidal_concat` (Hugging Face's MarianMT): the same sines in
      channels `[0, d/2)` and the same cosines in `[d/2, d)`
    - `sinusoidal_concat_half_minus_one` (tensor2tensor's, as Marian and
      fairseq compute it): the halves of `sinusoidal_concat` with the
      frequencies `10000^(-i/(d/2 - 1))`, `i < d/2`, the last one exactly
      `1/10000`: `PE[p, i] = sin(p / 10000^(i/(d/2 - 1)))`,
      `PE[p, d/2 + i] = cos(p / 10000^(i/(d/2 - 1)))`; `d >= 4`
    - `learned`: `PE[p, :] = table[p, :]`, with `table` read from the
      checkpoint

    A model is read with the sinusoids it was trained with: a Marian `.npz`
    release with `sinusoidal_concat_half_minus_one`; Hugging Face's
    MarianMT computes `sinusoidal_concat`, also for the checkpoints its
    converter makes from such releases.

    ```mlir
    %pe = tfm.position_encoding sinusoidal_concat %ids, %c0
        : tensor<?x?xi32> -> tensor<?x?x512xf32>
    %pm = tfm.position_encoding sinusoidal_concat_half_minus_one %ids, %c0
        : tensor<?x?xi32> -> tensor<?x?x512xf32>
    %pl = tfm.position_encoding learned %ids, %step table(%t : tensor<512x512xf32>)
        : tensor<?x1xi32> -> tensor<?x1x512xf32>
    %pr = tfm.position_encoding sinusoidal_concat %ids, %step starts(%s : tensor<?xi32>)
        : tensor<?x1xi32> -> tensor<?x1x512xf32>
    ```
  }];
  let arguments = (ins Tfm_PositionKind:$kind, Tfm_IdTensor:$ids, Index:$offset,
                       Optional<Tfm_LengthTensor>:$starts,
                       Optional<Tfm_FloatTensor>:$table);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $kind $ids `,` $offset (`starts` `(` $starts^ `:` type($starts) `)`)?
    (`table` `(` $table^ `:` type($table) `)`)?
    attr-dict `:` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_RelativePositionBiasOp : Tfm_Op<"relative_position_bias"> {
  let summary = "attention scores' bias from bucketed relative positions (T5)";
  let description = [{
    `result[0, h, i, j] = table[bucket(j - (query_offset + i)), h]` for
    `queries` query positions starting at `query_offset` and `keys` key
    positions starting at 0: an additive bias for the scores of every
    batch row (T5's relative attention bias, shared by all layers of a
    stack). With n = the table's rows, halved when `bidirectional` (the
    upper half for keys after the query), a relative distance r >= 0 (|rel|
    when bidirectional, max(-rel, 0) otherwise: a causal decoder sees only
    the past) falls in bucket r when r < n/2, else in
    `min(n/2 + trunc(log(r / (n/2)) / log(max_distance / (n/2)) · (n - n/2)),
    n - 1)`, in f32 as Hugging Face's T5 computes it.

    ```mlir
    %bias = tfm.relative_position_bias %table, %sq, %sk, %c0 bidirectional
        max_distance 128 : tensor<32x8xf32> -> tensor<1x8x?x?xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$table, Index:$queries, Index:$keys,
                       Index:$query_offset, UnitAttr:$bidirectional,
                       I64Attr:$max_distance);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $queries `,` $keys `,` $query_offset
    (`bidirectional` $bidirectional^)? `max_distance` $max_distance attr-dict
    `:` type($table) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The bucket of each distance r in [0, max_distance] (larger ones take
    /// the last), before the upper half's offset.
    ::llvm::SmallVector<int32_t> getDistanceBuckets();
  }];
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

def Tfm_MatmulOp : Tfm_Op<"matmul"> {
  let summary = "batched matrix product with optional transposes";
  let description = [{
    `result[b..., i, j] = sum_k A[b..., i, k] * B[b..., k, j]`, where
    `A = transpose_lhs ? lhsᵀ : lhs` and `B = transpose_rhs ? rhsᵀ : rhs`
    (transposes swap the two innermost dimensions). Both operands have the
    same rank and the same leading (batch) dimensions.

    ```mlir
    // attention scores Q·Kᵀ, per head
    %s = tfm.matmul %q, %k {transpose_rhs = true}
        : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32> -> tensor<?x8x?x?xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs,
                   "bool":$transposeLhs, "bool":$transposeRhs)>
  ];
  let hasVerifier = 1;
}

def Tfm_LinearOp : Tfm_Op<"linear"> {
  let summary = "affine layer: result = input · weightᵀ + bias";
  let description = [{
    `result[..., n] = sum_k input[..., k] * weight[n, k] + bias[n]`, with the
    weight in the checkpoint's `[out_features, in_features]` layout. The bias
    is optional.

    ```mlir
    %h = tfm.linear %x, %w1, %b1
        : (tensor<?x?x512xf32>, tensor<2048x512xf32>, tensor<2048xf32>)
          -> tensor<?x?x2048xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$weight,
                       Optional<Tfm_FloatTensor>:$bias);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$weight,
                   "::mlir::Value":$bias)>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

def Tfm_AddOp : Tfm_BinaryOp<"add", [Commutative]> {
  let summary = "elementwise lhs + rhs, broadcasting";
  let description = [{
    ```mlir
    %y = tfm.add %x, %b : tensor<?x?x512xf32>, tensor<512xf32> -> tensor<?x?x512xf32>
    ```
  }];
}

def Tfm_SubOp : Tfm_BinaryOp<"sub"> {
  let summary = "elementwise lhs - rhs, broadcasting";
  let description = [{
    ```mlir
    %c = tfm.sub %x, %mean : tensor<?x?x512xf32>, tensor<?x?x1xf32> -> tensor<?x?x512xf32>
    ```
  }];
}

def Tfm_MulOp : Tfm_BinaryOp<"mul", [Commutative]> {
  let summary = "elementwise lhs * rhs, broadcasting";
  let description = [{
    ```mlir
    %y = tfm.mul %x, %gamma : tensor<?x?x512xf32>, tensor<512xf32> -> tensor<?x?x512xf32>
    ```
  }];
}

def Tfm_DivOp : Tfm_BinaryOp<"div"> {
  let summary = "elementwise lhs / rhs, broadcasting";
  let description = [{
    ```mlir
    %y = tfm.div %c, %std : tensor<?x?x512xf32>, tensor<?x?x1xf32> -> tensor<?x?x512xf32>
    ```
  }];
}

def Tfm_SelectOp : Tfm_Op<"select"> {
  let summary = "elementwise condition ? true_value : false_value, broadcasting";
  let description = [{
    Picks from `true_value` where `condition` (i1) holds and from
    `false_value` elsewhere; all three broadcast NumPy-style. Graphs use it to
    mask attention scores: `select(keep, scores, -inf)`.

    ```mlir
    %m = tfm.select %keep, %s, %ninf
        : tensor<?x1x1x?xi1>, tensor<?x8x?x?xf32>, tensor<f32> -> tensor<?x8x?x?xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I1]>:$condition,
                       Tfm_FloatTensor:$true_value,
                       Tfm_FloatTensor:$false_value);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $condition `,` $true_value `,` $false_value attr-dict `:` type($condition)
    `,` type($true_value) `,` type($false_value) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$condition, "::mlir::Value":$trueValue,
                   "::mlir::Value":$falseValue)>
  ];
  let hasVerifier = 1;
}

def Tfm_RsqrtOp : Tfm_UnaryOp<"rsqrt"> {
  let summary = "elementwise 1 / sqrt(x)";
  let description = [{
    ```mlir
    %r = tfm.rsqrt %v : tensor<?x?x1xf32>
    ```
  }];
}

def Tfm_SqrtOp : Tfm_UnaryOp<"sqrt"> {
  let summary = "elementwise sqrt(x)";
  let description = [{
    ```mlir
    %s = tfm.sqrt %v : tensor<?x?x1xf32>
    ```
  }];
}

def Tfm_ReluOp : Tfm_UnaryOp<"relu"> {
  let summary = "elementwise max(x, 0)";
  let description = [{
    ```mlir
    %y = tfm.relu %x : tensor<?x?x2048xf32>
    ```
  }];
}

def Tfm_GeluOp : Tfm_UnaryOp<"gelu"> {
  let summary = "elementwise x * Φ(x) = x/2 * (1 + erf(x / sqrt(2)))";
  let description = [{
    The exact GELU (the erf form), as PyTorch's `gelu` and Hugging Face's
    `activation_function = "gelu"` compute it.

    ```mlir
    %y = tfm.gelu %x : tensor<?x?x2048xf32>
    ```
  }];
}

def Tfm_GeluTanhOp : Tfm_UnaryOp<"gelu_tanh"> {
  let summary = "elementwise x/2 * (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))";
  let description = [{
    GELU's tanh approximation, as Hugging Face's `gelu_new` (T5's
    `feed_forward_proj = "gated-gelu"`) and PyTorch's
    `gelu(approximate="tanh")` compute it.

    ```mlir
    %y = tfm.gelu_tanh %x : tensor<?x?x2048xf32>
    ```
  }];
}

def Tfm_SiluOp : Tfm_UnaryOp<"silu"> {
  let summary = "elementwise x * sigmoid(x) (swish)";
  let description = [{
    ```mlir
    %y = tfm.silu %x : tensor<?x?x2048xf32>
    ```
  }];
}

def Tfm_ScaleOp : Tfm_Op<"scale", [SameOperandsAndResultType]> {
  let summary = "multiplication by a constant: result = input * factor";
  let description = [{
    Scales by a compile-time constant, such as `1/sqrt(d_k)` for attention
    scores or `sqrt(d_model)` for embeddings. A factor of 1 folds away.

    ```mlir
    %s = tfm.scale %scores by 1.250000e-01 : tensor<?x8x?x?xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($input)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Reductions and normalization
//===----------------------------------------------------------------------===//

def Tfm_SoftmaxOp : Tfm_Op<"softmax", [SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = [{
    `result[..., i, ...] = exp(x_i - max_j x_j) / sum_j exp(x_j - max_j x_j)`
    along `axis`. Entries of -inf get probability 0.

    ```mlir
    %p = tfm.softmax %scores axis 3 : tensor<?x8x?x?xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input `axis` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tfm_LogSumExpBlocksOp : Tfm_Op<"logsumexp_blocks"> {
  let summary = "per block of the last axis: its max and sum of exp(x - max)";
  let description = [{
    For each block `b` of `block` consecutive entries of the last axis (the
    last block may be shorter), `result[..., b, 0] = m_b = max_{i in b} x_i`
    and `result[..., b, 1] = s_b = sum_{i in b} exp(x_i - m_b)` (a block
    all of -inf gives `s_b = 0`; a NaN gives `m_b = NaN`). These are the
    pieces of a row's log-sum-exp:
    `log sum_i exp(x_i) = M + log sum_b s_b exp(m_b - M)` with
    `M = max_b m_b`, and `m_b` bounds every entry of its block, so a search
    for the best entries reads only the blocks whose maximum can enter.
    decode_step returns them beside the logits; where the logits come from
    a linear whose panels are `block` features wide, the panel kernel
    produces both in one pass (the search in the output projection's
    epilogue).

    ```mlir
    %t = tfm.logsumexp_blocks %logits block 64
        : tensor<?x?x?xf32> -> tensor<?x?x?x2xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$block);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `block` $block attr-dict `:` type($input) `->` type($result)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "int64_t":$block)>
  ];
  let hasVerifier = 1;
}

def Tfm_MeanOp : Tfm_Op<"mean"> {
  let summary = "mean along one axis, keeping it with size 1";
  let description = [{
    `result[..., 0, ...] = (1/n) sum_i input[..., i, ...]` along `axis`. The
    reduced axis stays with size 1, so the result broadcasts against the
    input (PyTorch's `keepdim=True`).

    ```mlir
    %m = tfm.mean %x axis 2 : tensor<?x?x512xf32> -> tensor<?x?x1xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis attr-dict `:` type($input) `->` type($result)
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "int64_t":$axis)>];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention masks
//===----------------------------------------------------------------------===//

def Tfm_CausalMaskOp : Tfm_Op<"causal_mask", [SameOperandsAndResultType]> {
  let summary = "sets scores of future keys to -inf";
  let description = [{
    On scores `[..., Sq, Sk]`, query `i` sits at position `i + Sk - Sq` of the
    key sequence (queries are the last `Sq` positions, as in the incremental
    decoder, where the keys include the cache). Scores of keys after it
    become -inf: `result[..., i, j] = j > i + Sk - Sq ? -inf : scores[..., i, j]`.

    ```mlir
    %m = tfm.causal_mask %scores : tensor<?x8x?x?xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$scores);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$scores attr-dict `:` type($scores)";
  let hasVerifier = 1;
}

def Tfm_KeyPaddingMaskOp : Tfm_Op<"key_padding_mask",
    [AllTypesMatch<["scores", "result"]>]> {
  let summary = "sets scores of padding keys to -inf";
  let description = [{
    On scores `[B, ..., Sk]` and the true key lengths `[B]` of a padded
    batch: `result[b, ..., j] = j >= lengths[b] ? -inf : scores[b, ..., j]`.

    ```mlir
    %m = tfm.key_padding_mask %scores, %lengths : tensor<?x8x?x?xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$scores, Tfm_LengthTensor:$lengths);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $scores `,` $lengths attr-dict `:` type($scores) `,` type($lengths)
  }];
  let hasVerifier = 1;
}

def Tfm_KeyStartMaskOp : Tfm_Op<"key_start_mask",
    [AllTypesMatch<["scores", "result"]>]> {
  let summary = "sets scores of keys before a row's start to -inf";
  let description = [{
    On scores `[B, ..., Sk]` and the first key of each batch row `[B]`:
    `result[b, ..., j] = j < starts[b] ? -inf : scores[b, ..., j]`. In a
    batch that sentences join while it runs, the decoder's keys are the
    batch's steps, and row `b`'s history begins at the step it joined.

    ```mlir
    %m = tfm.key_start_mask %scores, %starts : tensor<?x8x1x?xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$scores, Tfm_LengthTensor:$starts);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $scores `,` $starts attr-dict `:` type($scores) `,` type($starts)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Heads and the key/value cache
//===----------------------------------------------------------------------===//

def Tfm_SplitHeadsOp : Tfm_Op<"split_heads"> {
  let summary = "[B, S, H·Dh] -> [B, H, S, Dh]";
  let description = [{
    Splits the model dimension into `num_heads` heads and moves the head axis
    before the sequence axis: `result[b, h, s, c] = input[b, s, h * Dh + c]`.

    ```mlir
    %qh = tfm.split_heads %q into 8 heads : tensor<?x?x512xf32> -> tensor<?x8x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, I64Attr:$num_heads);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `into` $num_heads `heads` attr-dict `:` type($input) `->` type($result)
  }];
  let builders = [OpBuilder<(ins "::mlir::Value":$input, "int64_t":$numHeads)>];
  let hasVerifier = 1;
}

def Tfm_MergeHeadsOp : Tfm_Op<"merge_heads"> {
  let summary = "[B, H, S, Dh] -> [B, S, H·Dh]";
  let description = [{
    The inverse of `tfm.split_heads`:
    `result[b, s, h * Dh + c] = input[b, h, s, c]`.

    ```mlir
    %o = tfm.merge_heads %oh : tensor<?x8x?x64xf32> -> tensor<?x?x512xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let builders = [OpBuilder<(ins "::mlir::Value":$input)>];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tfm_CacheUpdateOp : Tfm_Op<"cache_update",
    [AllTypesMatch<["cache", "result"]>]> {
  let summary = "writes new keys or values into a cache at an offset";
  let description = [{
    The cache as it is after writing `update` at `offset` along `axis`:
    `result = cache` except `result[..., offset + i, ...] = update[..., i, ...]`.
    The incremental decoder's self-attention caches are `[B, H, capacity, Dh]`
    and each step writes one position. At the function boundary the cache is
    a buffer the runtime owns, so after bufferization this is an in-place
    write, not a copy.

    ```mlir
    %kc = tfm.cache_update %k into %cache[%step] axis 2
        : tensor<?x8x1x64xf32> into tensor<?x8x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$update, Tfm_FloatTensor:$cache,
                       Index:$offset, I64Attr:$axis);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $update `into` $cache `[` $offset `]` `axis` $axis attr-dict
    `:` type($update) `into` type($cache)
  }];
  let hasVerifier = 1;
}

def Tfm_SliceOp : Tfm_Op<"slice"> {
  let summary = "a contiguous range along one axis";
  let description = [{
    `result[..., i, ...] = input[..., offset + i, ...]` for `i < size` along
    `axis`; the other dimensions are kept. The incremental decoder reads the
    first `step + 1` positions of its caches this way.

    ```mlir
    %k = tfm.slice %cache[%c0, %len] axis 2 : tensor<?x8x?x64xf32> -> tensor<?x8x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Index:$offset, Index:$size,
                       I64Attr:$axis);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `[` $offset `,` $size `]` `axis` $axis attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_CacheRowsOp : Tfm_Op<"cache_rows",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "each row's positions read from the rows that hold them";
  let description = [{
    `result[b, ..., p, ...] = input[rows[b, p], ..., p, ...]`, `p` along
    `axis` and `b` along the first axis. A beam's history is its parent's up
    to the last step: rather than copying the parent's cache rows at every
    reorder, the runtime passes for each row and position the row of the
    cache that wrote it (`rows` is `[B, P]`, `P` at least the positions
    read). Fused into `tfm.attention` (its `key_rows`), the cache is read in
    place; alone it lowers to a gather.

    ```mlir
    %k = tfm.cache_rows %keys[%rows] axis 2
        : tensor<?x8x?x64xf32>, tensor<?x?xi32> -> tensor<?x8x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, 2DTensorOf<[I32]>:$rows,
                       I64Attr:$axis);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `[` $rows `]` `axis` $axis attr-dict
    `:` type($input) `,` type($rows) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused ops
//===----------------------------------------------------------------------===//

def Tfm_AttentionOp : Tfm_Op<"attention",
    [AttrSizedOperandSegments, Tfm_Decomposable]> {
  let summary = "scaled dot-product attention, masked";
  let description = [{
    `result = softmax(scale · Q·Kᵀ + M) · V`, per batch and head, with the
    softmax over keys. Q is `[..., Sq, D]`, K `[..., Sk, D]`, V `[..., Sk, Dv]`
    with the same leading dimensions, and the result `[..., Sq, Dv]`. The mask
    M is the sum of:

    - `causal`: -inf where key `j > i + Sk - Sq` for query `i` (queries are
      the last positions of the key sequence);
    - `key_lengths` (one per batch row, the first dimension): -inf where
      `j >= key_lengths[b]`;
    - `key_starts` (one per batch row): -inf where `j < key_starts[b]`;
    - `mask`: an additive mask that broadcasts to the scores `[..., Sq, Sk]`
      without changing their shape (0 to keep, -inf or a large negative to
      hide).

    With `key_rows` (`[B, P]`, `P >= Sk`), key and value `j` of batch row `b`
    are those of row `key_rows[b, j]` of K and V (`tfm.cache_rows`): the
    decoder's self-attention reads each beam's history where it was written.

    ```mlir
    %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) scale 1.250000e-01
        : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>
          -> tensor<?x8x?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key,
                       Tfm_FloatTensor:$value,
                       Optional<Tfm_LengthTensor>:$key_lengths,
                       Optional<Tfm_LengthTensor>:$key_starts,
                       Optional<2DTensorOf<[I32]>>:$key_rows,
                       Optional<Tfm_FloatTensor>:$mask,
                       UnitAttr:$causal, F64Attr:$scale);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`lengths` `(` $key_lengths^ `:` type($key_lengths) `)`)?
    (`starts` `(` $key_starts^ `:` type($key_starts) `)`)?
    (`key_rows` `(` $key_rows^ `:` type($key_rows) `)`)?
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`causal` $causal^)? `scale` $scale attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The shape of the scores Q·Kᵀ: [..., Sq, Sk].
    ::llvm::SmallVector<int64_t> getScoresShape();
  }];
}

def Tfm_LayerNormOp : Tfm_Op<"layer_norm",
    [AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>,
     Tfm_Decomposable]> {
  let summary = "layer normalization over the last axis, residual folded in";
  let description = [{
    With `x = input + residual` (or `input` alone), over the last axis:
    `mean = (1/n) sum_i x_i`, `var = (1/n) sum_i (x_i - mean)^2`,
    `result = (x - mean) / sqrt(var + epsilon) * scale + bias`.
    `scale` (γ) and `bias` (β) are optional. With `rms` (T5's RMS norm) the
    mean is not subtracted: `result = x / sqrt((1/n) sum_i x_i^2 + epsilon)
    * scale + bias`.

    ```mlir
    %y = tfm.layer_norm %x residual(%r : tensor<?x?x512xf32>)
        scale(%g : tensor<512xf32>) bias(%b : tensor<512xf32>) epsilon 1.000000e-05
        : tensor<?x?x512xf32>
    %z = tfm.layer_norm %x scale(%g : tensor<512xf32>) epsilon 1.000000e-06 rms
        : tensor<?x?x512xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input,
                       Optional<Tfm_FloatTensor>:$residual,
                       Optional<Tfm_FloatTensor>:$scale,
                       Optional<Tfm_FloatTensor>:$bias,
                       F64Attr:$epsilon, UnitAttr:$rms);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`residual` `(` $residual^ `:` type($residual) `)`)?
    (`scale` `(` $scale^ `:` type($scale) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    `epsilon` $epsilon (`rms` $rms^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Tfm_FusedLinearOp : Tfm_Op<"fused_linear",
    [AttrSizedOperandSegments, Tfm_Decomposable]> {
  let summary = "linear layer with its epilogue: act(x·Wᵀ + b) + residual";
  let description = [{
    `result[..., n] = act(sum_k input[..., k] * weight[n, k] + bias[n]) + residual[..., n]`,
    where the bias and the residual are optional and `act` is `none`, `relu`,
    `gelu`, `silu` or `gelu_tanh`. One kernel computes the product and
    applies the epilogue while the tile is in registers.

    With `gated` (a gated feed-forward's two input projections, T5's `wi_0`
    and `wi_1`, stacked by `tfm-fuse-sibling-linears`), the weight stacks
    the two as `[W0; W1]`, `[2F, K]`, the bias likewise, and the result has
    F features: `result[..., n] = act(h[..., n]) * h[..., F + n] +
    residual[..., n]` with `h = input·weightᵀ + bias`.

    ```mlir
    %h = tfm.fused_linear relu %x, %w1 bias(%b1 : tensor<2048xf32>)
        : tensor<?x?x512xf32>, tensor<2048x512xf32> -> tensor<?x?x2048xf32>
    %g = tfm.fused_linear gelu_tanh gated %x, %w01
        : tensor<?x?x768xf32>, tensor<4096x768xf32> -> tensor<?x?x2048xf32>
    ```
  }];
  let arguments = (ins Tfm_Activation:$activation, Tfm_FloatTensor:$input,
                       Tfm_FloatTensor:$weight,
                       Optional<Tfm_FloatTensor>:$bias,
                       Optional<Tfm_FloatTensor>:$residual,
                       UnitAttr:$gated);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $activation (`gated` $gated^)? $input `,` $weight
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`residual` `(` $residual^ `:` type($residual) `)`)?
    attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // TFM_OPS_TD
