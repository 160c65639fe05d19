//===- Passes.td - tfm passes ------------------------------*- tablegen -*-===//

#ifndef TFM_PASSES_TD
#define TFM_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfmFuseAttentionPass : Pass<"tfm-fuse-attention"> {
  let summary = "Fuse matmul -> scale -> mask -> softmax -> matmul into tfm.attention";
  let description = [{
    Finds scaled dot-product attention, `softmax(scale · Q·Kᵀ + M) · V`, in
    the forms real graphs take and replaces it with one `tfm.attention`:

    - the scale applied to Q, to K or to the scores, as `tfm.scale` or as a
      multiply or divide by a constant splat (no scale: 1, folded into the
      weights);
    - masks as `tfm.causal_mask`, `tfm.key_padding_mask`, an additive mask
      (`tfm.add` of 0 / -inf or a large negative) or
      `tfm.select(keep, scores, -inf)`, in any combination and order;
    - the softmax over the last (key) axis, per head or batched over heads.

    It leaves the block alone when an intermediate (scores, probabilities)
    has another user, when the softmax is not over the key axis, when a mask
    would change the scores' shape, when a scale follows an additive mask or
    a negative scale follows a -inf mask, or when shapes do not line up.
  }];
  let dependentDialects = ["::mlir::tfm::TfmDialect"];
}

def TfmFuseLayerNormPass : Pass<"tfm-fuse-layer-norm"> {
  let summary = "Fuse mean/variance/normalize/affine chains into tfm.layer_norm";
  let description = [{
    Recognises layer normalization over the last axis,
    `(x - E[x]) / sqrt(Var[x] + eps) · γ + β`, written as
    mean -> sub -> mul -> mean -> add eps -> rsqrt -> mul (or div by sqrt),
    with the variance either centered, `E[(x - E[x])^2]`, or as
    `E[x^2] - E[x]^2`, and γ, β each optional. A residual add
    `x = a + b` that feeds only the normalization is folded in.
  }];
  let dependentDialects = ["::mlir::tfm::TfmDialect"];
}

def TfmFuseLinearEpiloguePass : Pass<"tfm-fuse-linear-epilogue"> {
  let summary = "Fold bias, activation and residual add into tfm.fused_linear";
  let description = [{
    `residual + act(x·Wᵀ + b)`: the bias add (a `[N]` vector, or `[1, N]`
    as checkpoints store `final_logits_bias`), the activation (relu, gelu,
    silu) and a residual add of the result's shape that follow a
    `tfm.linear` become its epilogue, so one kernel applies them while the
    tile is in registers. An intermediate with another user
    stops the folding there.
  }];
  let dependentDialects = ["::mlir::tfm::TfmDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TfmFuseSiblingLinearsPass : Pass<"tfm-fuse-sibling-linears"> {
  let summary = "Make linears that read the same input one wider linear";
  let description = [{
    `tfm.linear` ops of one input (a layer's queries, keys and values; every
    decoder layer's cross-attention keys and values of the encoder's output)
    whose weights and biases come from the checkpoint become one linear over
    the stacked weights (`tfm.weight` with `parts`), and each old result a
    `tfm.slice` of its features. The products are the same, in fewer and
    wider kernels. Linears with and without a bias are not mixed.

    First, a gated feed-forward's halves, `tfm.mul` of an activated
    `tfm.fused_linear` (no residual) and a `tfm.linear` of the same input
    and shapes (T5's `wi_0` and `wi_1`), each used only there, become one
    `tfm.fused_linear gated` over the two weights stacked, where each half
    has a multiple of 64 features (whole panels on every target).
  }];
  let dependentDialects = ["::mlir::tfm::TfmDialect",
                           "::mlir::arith::ArithDialect"];
}

def TfmMergeEqualLayersPass
    : Pass<"tfm-merge-equal-layers", "::mlir::ModuleOp"> {
  let summary = "Make layers that compute alike one function";
  let description = [{
    Each call of a layer (`tfm.layer`) equal to an earlier one (the same
    signature and argument names, the same ops over the same relative
    weight names) calls that one instead, and the layer goes: its calls'
    `tfm.weights_prefix` still bind each call's own tensors. The importer
    builds layers this way; the pass does it for graphs written or edited
    by hand.
  }];
}

def TfmDecomposePass : Pass<"tfm-decompose"> {
  let summary = "Spell fused tfm ops out in primitive ops";
  let description = [{
    The inverse of the fusion passes: `tfm.attention`, `tfm.layer_norm` and
    `tfm.fused_linear` become the primitive ops that define them (through
    their AggregatedOpInterface), and a linear over stacked weights whose
    slices tile it one per part becomes the linears of its parts. Used to
    test that fusion keeps meaning.
  }];
  let dependentDialects = ["::mlir::tfm::TfmDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}


//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

def TfmLayoutWeightsPass : Pass<"tfm-layout-weights", "::mlir::ModuleOp"> {
  let summary = "Give every tfm.weight its offset in the weights file";
  let description = [{
    Lays the checkpoint tensors the module uses end to end, in order of first
    use, as f32, each aligned to `alignment` bytes, sets each `tfm.weight`'s
    `offset`, and records the layout on the module as `tfm.weights_layout`
    (name, offset, shape per tensor) for the compiler to write the file by.

    Weights that linears run by our code read are stored in the layout
    their kernel reads: panels of `panel-width` output features with K
    contiguous, `[ceil(N / P), K, P]`, zero rows padding N to whole panels
    (`panel_width` in the layout, `tfm.panel_width` on the op). A weight
    that other ops read too (a tied embedding table, a oneDNN call) is
    stored twice: plain for them, in panels for the linears.

    With `precision=bf16` the panels hold bfloat16 (rounded to nearest
    even when the file is written; `element_type` in the layout,
    `tfm.panel_element_type` on the op): half the bytes that a decoder step
    streams. With `precision=int8` they hold each output channel's
    integers (symmetric, K in quads), then its scale and the sum of its
    integers, with which the kernel takes out the zero point of its
    unsigned inputs (tfm/abi/Panels.h): a quarter of the bytes.
    Everything else stays f32. The module records its precision as
    `tfm.precision`.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "Byte alignment of each tensor in the weights file">,
    Option<"panelWidth", "panel-width", "int64_t", "64",
           "Output features per panel of a linear's weight, a multiple of 4; "
           "convert-tfm-to-linalg takes panels of 4 of its vectors "
           "(vector-width), which the lowering pipeline sets from its "
           "kernel configuration (0: no panels)">,
    Option<"precision", "precision", "std::string", "\"fp32\"",
           "Element type of the linears' panels: fp32, bf16 or int8">
  ];
}

def ConvertTfmToLinalgPass : Pass<"convert-tfm-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower tfm ops to linalg, tensor, arith, math and scf";
  let description = [{
    Elementwise ops, reductions and masks become `linalg.generic`s, linears
    a register-tiled kernel over their weight's panels (vector FMAs,
    parallel over panels, the epilogue applied before the store), layer norm one statistics
    pass and one normalizing pass over each row, and `tfm.attention` a tiled
    online-softmax loop nest (FlashAttention): for each batch row and block
    of queries, key/value blocks are visited in turn keeping a running max
    and sum per query, so the scores matrix is never materialized; the causal
    mask comes from loop indices and key padding bounds the key loop.

    Functions that use weights get a leading `memref<?xi8>` argument, the
    weights file mapped in memory; each `tfm.weight` becomes a view of it at
    its offset (see `tfm-layout-weights`).

    The kernels' sizes (panel width, tile shapes, K blocks, attention
    blocks, the thresholds below which a kernel runs on one thread) are one
    configuration chosen from the target (passes/KernelConfig.h): the
    lowering pipeline passes tfmc's; here the options below fill it.
    Weights stored in panels must be 4 vectors wide.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::vector::VectorDialect", "::mlir::LLVM::LLVMDialect"
  ];
  let options = [
    Option<"queryBlock", "query-block", "int64_t", "64",
           "Queries per block of tfm.attention's loop nest (the unit of its "
           "parallel loop, which one kernel computes; the most the "
           "register-tiled kernel takes)">,
    Option<"linalgKeyBlock", "linalg-key-block", "int64_t", "64",
           "Keys per block of the attention's linalg kernel (head sizes that "
           "are not static, elements that are not f32); the vector kernels' "
           "key blocks are fixed by the target">,
    Option<"vectorWidth", "vector-width", "int64_t", "16",
           "Floats per SIMD register, which every vector kernel uses; 16 "
           "takes AVX-512's tile shapes (32 registers), less AVX2's (16). "
           "Linears read panels of 4 such vectors">,
    Option<"bf16Dot", "bf16-dot", "bool", "false",
           "The target has AVX512-BF16: linears over bf16 panels take its "
           "dot product of pairs (vdpbf16ps) instead of widening the "
           "weights to f32 (with vector-width 16)">,
    Option<"int8Dot", "int8-dot", "bool", "false",
           "The target has AVX512-VNNI: linears over int8 panels take its "
           "dot product of quads (vpdpbusd) instead of widening the "
           "bytes to i32 (with vector-width 16)">
  ];
}


def TfmSelectBackendPass : Pass<"tfm-select-backend", "::mlir::ModuleOp"> {
  let summary = "Choose, per op, whether LLVM code or a oneDNN primitive runs it";
  let description = [{
    Sets `tfm.backend = "llvm"` or `"onednn"` on every op that oneDNN can
    run (linears, matmuls, layer norms, softmax over the last axis,
    elementwise ops; not `tfm.attention`: oneDNN 2.6 has no fused attention).
    `backend=llvm` and `backend=onednn` give every such op that backend;
    `backend=auto` picks per op kind and shape from a table of measurements
    (bench/micro), see `autoBackend` in SelectBackend.cpp: linears,
    attention (fused) and layer norms with a static f32 last axis stay ours,
    attention and layer norms the vector kernels cannot take go to oneDNN
    (the attention spelled out for its matmuls). The choice is
    recorded on the module as `tfm.backend_choice`, one line per op kind and
    shape, and printed to stderr with `report=true`.
  }];
  let options = [
    Option<"backend", "backend", "std::string", "\"llvm\"",
           "llvm, onednn or auto">,
    Option<"report", "report", "bool", "false",
           "Print which backend each op got">,
    Option<"precision", "precision", "std::string", "\"fp32\"",
           "fp32, bf16 or int8 (set on the module as tfm.precision): bf16 "
           "linears on oneDNN take its bf16 matmul, int8 ones its u8 x s8 "
           "matmul with the runtime's epilogue">
  ];
}

def ConvertTfmToOneDnnPass : Pass<"convert-tfm-to-onednn", "::mlir::ModuleOp"> {
  let summary = "Lower tfm ops to calls of oneDNN primitives in the runtime";
  let description = [{
    Each op oneDNN can run and that is not marked `tfm.backend = "llvm"`
    becomes a call of a runtime kernel (tfm/abi/OneDnnAbi.h): linears
    a oneDNN matmul with the bias attached and the activation and residual
    as post-ops (`tfm.post_ops` on the call says which), layer norm
    `layer_normalization`, softmax, binary and eltwise primitives. Operands
    cross as `memref<*xf32>` (`bufferization.to_memref`, read only); the
    result is a new buffer (`bufferization.to_tensor ... restrict
    writable`). The kernels cache primitives per shape and reorder each
    weight matrix once into oneDNN's preferred layout.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def TfmLowerVectorsPass : Pass<"tfm-lower-vectors", "::mlir::ModuleOp"> {
  let summary = "Lower vector ops to what convert-vector-to-llvm takes";
  let description = [{
    After bufferization: hoists redundant transfers, then lowers
    contractions, multi-reductions, transfers, broadcasts, transposes and
    shape casts to 1-D vector operations, each pattern group applied on its
    own (together with canonicalization they do not terminate).
  }];
}

def TfmNameConstantGlobalsPass
    : Pass<"tfm-name-constant-globals", "::mlir::ModuleOp"> {
  let summary = "Name and order bufferized constants by their first use";
  let description = [{
    One-shot bufferization names the `memref.global` of each tensor
    constant `__constant_<type>` (then `_0`, `_1`, ...) in the order it
    visits functions, which follows pointer values: two layers' constants
    of one type could swap names from run to run. This pass renames those
    globals, and moves them to the start of the module, in the order of
    their first `memref.get_global` in the module, so that the generated
    code is the same on every run.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def TfmMarkEntryPointsPass : Pass<"tfm-mark-entry-points", "::mlir::ModuleOp"> {
  let summary = "Give public functions C interface wrappers";
  let description = [{
    Sets `llvm.emit_c_interface` on every public function with a body, so
    that func-to-llvm emits `_mlir_ciface_<name>`, the entry point the
    runtime calls with memref descriptors.
  }];
}

def TfmInlineAllocaScopesPass
    : Pass<"tfm-inline-alloca-scopes", "::mlir::ModuleOp"> {
  let summary = "Inline memref.alloca_scope bodies that allocate nothing";
  let description = [{
    convert-scf-to-openmp wraps each parallel body in a
    `memref.alloca_scope`, which must stay one block, so scf-to-cf inside it
    fails verification. Bodies that allocate nothing on the stack (ours:
    temporaries are on the heap, vector transfers unrolled) need no scope:
    their operations are inlined in its place.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def TfmResolveTensorDimsPass
    : Pass<"tfm-resolve-tensor-dims", "::mlir::func::FuncOp"> {
  let summary = "Read each tensor.dim from the value its size was made from";
  let description = [{
    Before bufferization: a `tensor.dim` of a dynamic dimension is replaced
    by the value that size provably comes from, seen through destinations
    (linalg ops, `tensor.insert_slice`, `vector.transfer_write`), the
    results of `scf.forall` and `scf.for` (their inits; a loop only when
    each iteration keeps the size), `scf.if` (when both branches agree),
    `tensor.empty` and `tensor.extract_slice` sizes and `tensor.cast`; a
    size no rule sees through stays the `tensor.dim` of that tensor (an
    argument, a call's result). Each kernel's row count then reads the
    function's arguments instead of the kernel before it, and one-shot
    bufferization's comparisons of slice sizes, which would otherwise
    follow every kernel of a model back through its `scf.if` choices, stop
    there: compile time no longer grows geometrically with the depth of a
    pre-norm model.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def TfmWriteResultsInPlacePass
    : Pass<"tfm-write-results-in-place", "::mlir::func::FuncOp"> {
  let summary = "Compute results in their out-params instead of copying them there";
  let description = [{
    After buffer-results-to-out-params, which leaves each result computed in
    a temporary and copied into its out-param at the return: when the
    temporary is an allocation of the function's body (or one in each
    branch of an scf.if that yields it), seen by the copy through views that
    keep the elements' row-major order (reshape, expand and collapse shape,
    cast), and only copies into out-params follow, the out-param
    (reinterpreted with the allocation's shape) replaces the allocation and
    the copy goes. Out-params must not alias the other
    arguments, as for any function that bufferization gave out-params.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TfmFreeAfterLastUsePass : Pass<"tfm-free-after-last-use"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    After buffer deallocation, which frees a buffer at the end of the block
    that owns it (a function's temporaries all at its return): moves every
    `memref.dealloc` up to just after the last op of its block that uses,
    or holds a use of, a value that may alias the buffer (by
    BufferViewFlowAnalysis: views, casts, branch and loop results). A
    dealloc whose buffer has an alias used outside its block stays. The
    allocator can then reuse the memory, still in cache, for the ops that
    follow, and the peak memory of a function is what is live at once.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def TfmOutlineKernelsPass : Pass<"tfm-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outline loop nests into kernel functions, one per distinct body";
  let description = [{
    After bufferization: every outermost `scf.parallel`, `scf.for` or
    `scf.if` without results in a public function or a layer (`tfm.layer`)
    becomes a call to a private function that holds it; the values it reads
    from above become arguments, except constants, which are cloned in.
    Kernels with equivalent bodies (an encoder layer's and a decoder
    layer's layer norms, the cross-attention keys' head splits, which differ
    only in the views they are given) are one function, so the rest of the
    lowering and LLVM process each kernel once. The kernels get internal
    linkage (LLVM may inline the thin wrapper around a parallel region into
    its callers), and names that say what they compute, from the loop's
    location: `tfm_kernel_<n>_<kind>_<place>`, the tfm op's kind (which
    `convert-tfm-to-linalg` puts in each op's location) and the model's
    name for the place (`tfm_kernel_36_linear_lm_head`); a body shared by
    several places keeps the kind alone.

    With `profile`, each kernel call is timed: `tfm_kernel_clock()` before
    it, `tfm_kernel_ended(began, name)` after, the runtime's kernel
    profile (`tfmc compile --profile-kernels`, the translator's
    `--timing`); the names are constant globals.
  }];
  let options = [
    Option<"profile", "profile", "bool", "false",
           "Time each kernel call through the runtime's kernel profile">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect"];
}

def TfmApproximateVectorMathPass
    : Pass<"tfm-approximate-vector-math", "::mlir::ModuleOp"> {
  let summary = "Polynomial exp, erf and tanh on f32 vectors";
  let description = [{
    Rewrites `math.exp`, `math.erf` and `math.tanh` on vectors of f32 into
    upstream MLIR's polynomial approximations (exp: range reduction to
    2^k · exp(r) and a polynomial in r, inputs clamped to about
    [-87.8, 88.8]; erf: piecewise rational polynomials; tanh: a rational
    polynomial on inputs clamped to about [-7.9, 7.9], x itself near 0),
    built from vector arith and FMA. Without it LLVM scalarizes a vector
    exp, erf or tanh into one libm call per lane. Scalar ops keep libm's.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // TFM_PASSES_TD
