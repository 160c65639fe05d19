// The gated linear (tfm.fused_linear gated: T5's wi_0 and wi_1 in one
// kernel) against its decomposed graph (one linear over the stacked
// weights, the halves sliced, the activation, the product): random
// weights, so that a half read for the other shows. Halves of 192
// features (whole panels: 6 of 32 in 3 groups of 2, 3 of 64 one at a
// time) and of 128 (4 of 32 in one group), at row counts of decoding
// (single rows, pairs, tiles of 4) and of encoding (tiles of 6), K = 37
// (no multiple of a vector) and K = 150 (three blocks of K);
// each also with the oneDNN backend, which spells the op out. Halves of 40
// features (no whole panel) take the gate after the whole product.

// RUN: for m in 1 2 4 7 9 33 70; do for v in 8 16; do tfm-run %s --entry=gated_gelu --shapes="${m}x37,384x37,384,${m}x192 -> ${m}x192" --vector-width=$v --compare-decomposed; done; done | FileCheck %s --check-prefix=GATED
// GATED-COUNT-14: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
// GATED-NOT: result
// RUN: for m in 1 9; do tfm-run %s --entry=gated_long --shapes="${m}x150,256x150 -> ${m}x128" --compare-decomposed; done | FileCheck %s --check-prefix=LONG
// LONG-COUNT-2: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
// RUN: for b in onednn auto; do tfm-run %s --entry=gated_gelu --shapes="3x37,384x37,384,3x192 -> 3x192" --backend=$b --compare-decomposed; done | FileCheck %s --check-prefix=BACKENDS
// BACKENDS-COUNT-2: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
// RUN: for m in 1 7; do tfm-run %s --entry=gated_partial --shapes="${m}x16,80x16 -> ${m}x40" --compare-decomposed; done | FileCheck %s --check-prefix=PARTIAL
// PARTIAL-COUNT-2: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok

func.func @gated_gelu(%x: tensor<?x37xf32>, %w: tensor<384x37xf32>, %b: tensor<384xf32>, %r: tensor<?x192xf32>) -> tensor<?x192xf32> {
  %y = tfm.fused_linear gelu_tanh gated %x, %w bias(%b : tensor<384xf32>) residual(%r : tensor<?x192xf32>)
      : tensor<?x37xf32>, tensor<384x37xf32> -> tensor<?x192xf32>
  return %y : tensor<?x192xf32>
}
func.func @gated_long(%x: tensor<?x150xf32>, %w: tensor<256x150xf32>) -> tensor<?x128xf32> {
  %y = tfm.fused_linear silu gated %x, %w : tensor<?x150xf32>, tensor<256x150xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}
func.func @gated_partial(%x: tensor<?x16xf32>, %w: tensor<80x16xf32>) -> tensor<?x40xf32> {
  %y = tfm.fused_linear relu gated %x, %w : tensor<?x16xf32>, tensor<80x16xf32> -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}
