// The FlashAttention lowering of tfm.attention against the decomposed graph
// (matmul, scale, masks, softmax, matmul), across shapes that do and do not
// fill the 64-query x 64-key tiles, odd head sizes and one-query decode
// steps. Tolerance 1e-5 of the largest output.
// tfm.attention has no oneDNN kernel; each case also runs the decomposed
// graph (--decompose) with oneDNN running its matmuls, scale, softmax and
// elementwise ops, and with auto's mix, against our LLVM lowering.

// RUN: tfm-run %s --entry=padding --shapes="2x3x5x7,2x3x5x7,2x3x5x7,2 -> 2x3x5x7" --int-max=5 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=padding --shapes="2x3x5x7,2x3x5x7,2x3x5x7,2 -> 2x3x5x7" --int-max=5 --compare-decomposed --decompose --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=padding --shapes="2x3x5x7,2x3x5x7,2x3x5x7,2 -> 2x3x5x7" --int-max=5 --compare-decomposed --decompose --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=padding --shapes="3x2x70x16,3x2x130x16,3x2x130x16,3 -> 3x2x70x16" --int-max=130 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=padding --shapes="3x2x70x16,3x2x130x16,3x2x130x16,3 -> 3x2x70x16" --int-max=130 --compare-decomposed --decompose --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=padding --shapes="3x2x70x16,3x2x130x16,3x2x130x16,3 -> 3x2x70x16" --int-max=130 --compare-decomposed --decompose --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=padding --shapes="1x1x1x33,1x1x65x33,1x1x65x33,1 -> 1x1x1x33" --int-max=65 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=padding --shapes="1x1x1x33,1x1x65x33,1x1x65x33,1 -> 1x1x1x33" --int-max=65 --compare-decomposed --decompose --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=padding --shapes="1x1x1x33,1x1x65x33,1x1x65x33,1 -> 1x1x1x33" --int-max=65 --compare-decomposed --decompose --backend=auto | FileCheck %s
func.func @padding(%q: tensor<?x?x?x?xf32>, %k: tensor<?x?x?x?xf32>, %v: tensor<?x?x?x?xf32>, %len: tensor<?xi32>) -> tensor<?x?x?x?xf32> {
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) scale 0.35
      : tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32> -> tensor<?x?x?x?xf32>
  return %o : tensor<?x?x?x?xf32>
}

// Causal self-attention over a prefix (Sq = Sk) and the decode step over a
// cache (Sq = 1 query at the last position), with key padding too.
// RUN: tfm-run %s --entry=causal --shapes="2x4x9x8,2x4x9x8,2x4x9x8 -> 2x4x9x8" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="2x4x9x8,2x4x9x8,2x4x9x8 -> 2x4x9x8" --compare-decomposed --decompose --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="2x4x9x8,2x4x9x8,2x4x9x8 -> 2x4x9x8" --compare-decomposed --decompose --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="1x2x100x16,1x2x100x16,1x2x100x16 -> 1x2x100x16" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="1x2x100x16,1x2x100x16,1x2x100x16 -> 1x2x100x16" --compare-decomposed --decompose --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="1x2x100x16,1x2x100x16,1x2x100x16 -> 1x2x100x16" --compare-decomposed --decompose --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="3x2x1x16,3x2x77x16,3x2x77x16 -> 3x2x1x16" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="3x2x1x16,3x2x77x16,3x2x77x16 -> 3x2x1x16" --compare-decomposed --decompose --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="3x2x1x16,3x2x77x16,3x2x77x16 -> 3x2x1x16" --compare-decomposed --decompose --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="2x1x3x8,2x1x5x8,2x1x5x8 -> 2x1x3x8" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="2x1x3x8,2x1x5x8,2x1x5x8 -> 2x1x3x8" --compare-decomposed --decompose --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=causal --shapes="2x1x3x8,2x1x5x8,2x1x5x8 -> 2x1x3x8" --compare-decomposed --decompose --backend=auto | FileCheck %s
func.func @causal(%q: tensor<?x?x?x?xf32>, %k: tensor<?x?x?x?xf32>, %v: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %o = tfm.attention %q, %k, %v causal scale 0.25
      : tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32> -> tensor<?x?x?x?xf32>
  return %o : tensor<?x?x?x?xf32>
}

// Batched over heads (rank 3), value width unlike the key width.
// RUN: tfm-run %s --entry=rank3 --shapes="6x70x12,6x70x12,6x70x20,6 -> 6x70x20" --int-max=70 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=rank3 --shapes="6x70x12,6x70x12,6x70x20,6 -> 6x70x20" --int-max=70 --compare-decomposed --decompose --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=rank3 --shapes="6x70x12,6x70x12,6x70x20,6 -> 6x70x20" --int-max=70 --compare-decomposed --decompose --backend=auto | FileCheck %s
func.func @rank3(%q: tensor<?x?x12xf32>, %k: tensor<?x?x12xf32>, %v: tensor<?x?x20xf32>, %len: tensor<?xi32>) -> tensor<?x?x20xf32> {
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) causal scale 0.3
      : tensor<?x?x12xf32>, tensor<?x?x12xf32>, tensor<?x?x20xf32> -> tensor<?x?x20xf32>
  return %o : tensor<?x?x20xf32>
}

// CHECK: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
