// The vector kernels of tfm.attention (static head sizes: what every model
// has) against the decomposed graph (matmul, scale, masks, softmax, matmul)
// at rtol 1e-5, with the vectors of AVX2 (8 floats) and AVX-512 (16; on an
// AVX2 host LLVM runs them in halves): head sizes that the vector width
// does and does not divide, a value width unlike the key width, 1 to 513
// keys (partial and several key blocks of 32 and of 4 vectors), one query
// (decode steps), several query blocks of 64, causal with Sq < Sk, padding,
// both together. Query blocks of 16 or more (16, 20, 36, 40, 64) take the
// register-tiled kernel, with a last group of fewer rows than R; fewer (1,
// 5, 6, 9) the one-query kernel.

// RUN: tfm-run %s --entry=enc64 --shapes="3x2x70x64,3x2x130x64,3x2x130x64,3 -> 3x2x70x64" --int-max=130 --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=enc64 --shapes="3x2x70x64,3x2x130x64,3x2x130x64,3 -> 3x2x70x64" --int-max=130 --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=enc64 --shapes="1x8x1x64,1x8x513x64,1x8x513x64,1 -> 1x8x1x64" --int-max=513 --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=enc64 --shapes="1x8x1x64,1x8x513x64,1x8x513x64,1 -> 1x8x1x64" --int-max=513 --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=enc64 --shapes="2x3x20x64,2x3x513x64,2x3x513x64,2 -> 2x3x20x64" --int-max=513 --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=enc64 --shapes="2x3x20x64,2x3x513x64,2x3x513x64,2 -> 2x3x20x64" --int-max=513 --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="1x2x16x7,1x2x16x7,1x2x16x7 -> 1x2x16x7" --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="1x2x16x7,1x2x16x7,1x2x16x7 -> 1x2x16x7" --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="2x4x9x7,2x4x9x7,2x4x9x7 -> 2x4x9x7" --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="2x4x9x7,2x4x9x7,2x4x9x7 -> 2x4x9x7" --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="3x2x1x7,3x2x77x7,3x2x77x7 -> 3x2x1x7" --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="3x2x1x7,3x2x77x7,3x2x77x7 -> 3x2x1x7" --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="1x2x100x7,1x2x100x7,1x2x100x7 -> 1x2x100x7" --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="1x2x100x7,1x2x100x7,1x2x100x7 -> 1x2x100x7" --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="2x1x3x7,2x1x5x7,2x1x5x7 -> 2x1x3x7" --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=causal7 --shapes="2x1x3x7,2x1x5x7,2x1x5x7 -> 2x1x3x7" --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=rank3 --shapes="6x70x12,6x70x12,6x70x20,6 -> 6x70x20" --int-max=70 --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=rank3 --shapes="6x70x12,6x70x12,6x70x20,6 -> 6x70x20" --int-max=70 --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=rank3 --shapes="3x40x12,3x77x12,3x77x20,3 -> 3x40x20" --int-max=77 --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=rank3 --shapes="3x40x12,3x77x12,3x77x20,3 -> 3x40x20" --int-max=77 --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=rank3 --shapes="4x1x12,4x33x12,4x33x20,4 -> 4x1x20" --int-max=33 --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=rank3 --shapes="4x1x12,4x33x12,4x33x20,4 -> 4x1x20" --int-max=33 --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=padding33 --shapes="2x3x5x33,2x3x1x33,2x3x1x33,2 -> 2x3x5x33" --int-max=1 --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=padding33 --shapes="2x3x5x33,2x3x1x33,2x3x1x33,2 -> 2x3x5x33" --int-max=1 --vector-width=16 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=padding33 --shapes="1x1x65x33,1x1x65x33,1x1x65x33,1 -> 1x1x65x33" --int-max=65 --vector-width=8 --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=padding33 --shapes="1x1x65x33,1x1x65x33,1x1x65x33,1 -> 1x1x65x33" --int-max=65 --vector-width=16 --compare-decomposed | FileCheck %s

func.func @enc64(%q: tensor<?x?x?x64xf32>, %k: tensor<?x?x?x64xf32>, %v: tensor<?x?x?x64xf32>, %len: tensor<?xi32>) -> tensor<?x?x?x64xf32> {
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) scale 0.125
      : tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32> -> tensor<?x?x?x64xf32>
  return %o : tensor<?x?x?x64xf32>
}

func.func @causal7(%q: tensor<?x?x?x7xf32>, %k: tensor<?x?x?x7xf32>, %v: tensor<?x?x?x7xf32>) -> tensor<?x?x?x7xf32> {
  %o = tfm.attention %q, %k, %v causal scale 0.4
      : tensor<?x?x?x7xf32>, tensor<?x?x?x7xf32>, tensor<?x?x?x7xf32> -> tensor<?x?x?x7xf32>
  return %o : tensor<?x?x?x7xf32>
}

func.func @rank3(%q: tensor<?x?x12xf32>, %k: tensor<?x?x12xf32>, %v: tensor<?x?x20xf32>, %len: tensor<?xi32>) -> tensor<?x?x20xf32> {
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) causal scale 0.3
      : tensor<?x?x12xf32>, tensor<?x?x12xf32>, tensor<?x?x20xf32> -> tensor<?x?x20xf32>
  return %o : tensor<?x?x20xf32>
}

func.func @padding33(%q: tensor<?x?x?x33xf32>, %k: tensor<?x?x?x33xf32>, %v: tensor<?x?x?x33xf32>, %len: tensor<?xi32>) -> tensor<?x?x?x33xf32> {
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) scale 0.17
      : tensor<?x?x?x33xf32>, tensor<?x?x?x33xf32>, tensor<?x?x?x33xf32> -> tensor<?x?x?x33xf32>
  return %o : tensor<?x?x?x33xf32>
}

// CHECK: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
