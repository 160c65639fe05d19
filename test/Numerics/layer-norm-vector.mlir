// The vector layer norm (static f32 last axis) against its decomposed graph:
// widths 7 (only a masked tail), 37 (whole vectors, a tail), 512 (the
// model's), 513 (a one-float tail); 1, 3, 13 and 64 rows (one partial block
// of rows, several, and a last partial block); with and without the
// residual, γ and β. Inputs are uniform in [-1, 1).

// RUN: for w in 7 37 512 513; do for m in 1 3 13 64; do tfm-run %s --entry=full_$w --shapes="${m}x$w,${m}x$w,$w,$w -> ${m}x$w" --compare-decomposed; done; done | FileCheck %s --check-prefix=FULL
// FULL-COUNT-16: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
// FULL-NOT: result
func.func @full_7(%x: tensor<?x7xf32>, %r: tensor<?x7xf32>, %g: tensor<7xf32>, %b: tensor<7xf32>) -> tensor<?x7xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x7xf32>) scale(%g : tensor<7xf32>) bias(%b : tensor<7xf32>) epsilon 1.0e-5 : tensor<?x7xf32>
  return %y : tensor<?x7xf32>
}
func.func @full_37(%x: tensor<?x37xf32>, %r: tensor<?x37xf32>, %g: tensor<37xf32>, %b: tensor<37xf32>) -> tensor<?x37xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x37xf32>) scale(%g : tensor<37xf32>) bias(%b : tensor<37xf32>) epsilon 1.0e-5 : tensor<?x37xf32>
  return %y : tensor<?x37xf32>
}
func.func @full_512(%x: tensor<?x512xf32>, %r: tensor<?x512xf32>, %g: tensor<512xf32>, %b: tensor<512xf32>) -> tensor<?x512xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x512xf32>) scale(%g : tensor<512xf32>) bias(%b : tensor<512xf32>) epsilon 1.0e-5 : tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}
func.func @full_513(%x: tensor<?x513xf32>, %r: tensor<?x513xf32>, %g: tensor<513xf32>, %b: tensor<513xf32>) -> tensor<?x513xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x513xf32>) scale(%g : tensor<513xf32>) bias(%b : tensor<513xf32>) epsilon 1.0e-5 : tensor<?x513xf32>
  return %y : tensor<?x513xf32>
}

// No residual, γ or β: the bare normalization.
// RUN: for w in 7 37 512 513; do for m in 1 3 13 64; do tfm-run %s --entry=plain_$w --shapes="${m}x$w -> ${m}x$w" --compare-decomposed; done; done | FileCheck %s --check-prefix=PLAIN
// PLAIN-COUNT-16: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
// PLAIN-NOT: result
func.func @plain_7(%x: tensor<?x7xf32>) -> tensor<?x7xf32> {
  %y = tfm.layer_norm %x epsilon 1.0e-5 : tensor<?x7xf32>
  return %y : tensor<?x7xf32>
}
func.func @plain_37(%x: tensor<?x37xf32>) -> tensor<?x37xf32> {
  %y = tfm.layer_norm %x epsilon 1.0e-5 : tensor<?x37xf32>
  return %y : tensor<?x37xf32>
}
func.func @plain_512(%x: tensor<?x512xf32>) -> tensor<?x512xf32> {
  %y = tfm.layer_norm %x epsilon 1.0e-5 : tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}
func.func @plain_513(%x: tensor<?x513xf32>) -> tensor<?x513xf32> {
  %y = tfm.layer_norm %x epsilon 1.0e-5 : tensor<?x513xf32>
  return %y : tensor<?x513xf32>
}

// One of residual, γ, β at a time, and γ and β without a residual.
// RUN: for m in 1 3 13 64; do \
// RUN:   tfm-run %s --entry=residual_37 --shapes="${m}x37,${m}x37 -> ${m}x37" --compare-decomposed; \
// RUN:   tfm-run %s --entry=scale_513 --shapes="${m}x513,513 -> ${m}x513" --compare-decomposed; \
// RUN:   tfm-run %s --entry=bias_7 --shapes="${m}x7,7 -> ${m}x7" --compare-decomposed; \
// RUN:   tfm-run %s --entry=scale_bias_512 --shapes="${m}x512,512,512 -> ${m}x512" --compare-decomposed; \
// RUN: done | FileCheck %s --check-prefix=PARTS
// PARTS-COUNT-16: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
// PARTS-NOT: result
func.func @residual_37(%x: tensor<?x37xf32>, %r: tensor<?x37xf32>) -> tensor<?x37xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x37xf32>) epsilon 1.0e-5 : tensor<?x37xf32>
  return %y : tensor<?x37xf32>
}
func.func @scale_513(%x: tensor<?x513xf32>, %g: tensor<513xf32>) -> tensor<?x513xf32> {
  %y = tfm.layer_norm %x scale(%g : tensor<513xf32>) epsilon 1.0e-5 : tensor<?x513xf32>
  return %y : tensor<?x513xf32>
}
func.func @bias_7(%x: tensor<?x7xf32>, %b: tensor<7xf32>) -> tensor<?x7xf32> {
  %y = tfm.layer_norm %x bias(%b : tensor<7xf32>) epsilon 1.0e-5 : tensor<?x7xf32>
  return %y : tensor<?x7xf32>
}
func.func @scale_bias_512(%x: tensor<?x512xf32>, %g: tensor<512xf32>, %b: tensor<512xf32>) -> tensor<?x512xf32> {
  %y = tfm.layer_norm %x scale(%g : tensor<512xf32>) bias(%b : tensor<512xf32>) epsilon 1.0e-5 : tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}

// The model's shape [batch, tokens, 512] (leading dimensions collapsed and
// expanded back), on llvm, on oneDNN's layer_normalization and with auto.
// RUN: tfm-run %s --entry=model_512 --shapes="2x7x512,2x7x512,512,512 -> 2x7x512" --compare-decomposed | FileCheck %s --check-prefix=MODEL
// RUN: tfm-run %s --entry=model_512 --shapes="2x7x512,2x7x512,512,512 -> 2x7x512" --compare-decomposed --backend=onednn | FileCheck %s --check-prefix=MODEL
// RUN: tfm-run %s --entry=model_512 --shapes="2x7x512,2x7x512,512,512 -> 2x7x512" --compare-decomposed --backend=auto | FileCheck %s --check-prefix=MODEL
// RUN: tfm-run %s --entry=model_512 --shapes="1x1x512,1x1x512,512,512 -> 1x1x512" --compare-decomposed --reference-backend=onednn | FileCheck %s --check-prefix=MODEL
// MODEL: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
func.func @model_512(%x: tensor<?x?x512xf32>, %r: tensor<?x?x512xf32>, %g: tensor<512xf32>, %b: tensor<512xf32>) -> tensor<?x?x512xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x?x512xf32>) scale(%g : tensor<512xf32>) bias(%b : tensor<512xf32>) epsilon 1.0e-5 : tensor<?x?x512xf32>
  return %y : tensor<?x?x512xf32>
}

// Rows whose mean (about 100) is large against their spread (about 0.8).
// s itself is rounded to ulp(100) = 7.6e-6 on both sides, so fused and
// decomposed differ by up to ~5e-5 (rtol 1e-4); the centered second pass
// keeps the variance to float precision, where an unshifted one-pass
// E[s²] - E[s]² would lose about 4 of float's 7 digits (differences ~1e-3).
// RUN: for m in 1 13 64; do tfm-run %s --entry=offset_37 --shapes="${m}x37,${m}x37 -> ${m}x37" --compare-decomposed --rtol=1e-4; done | FileCheck %s --check-prefix=OFFSET
// OFFSET-COUNT-3: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-04): ok
func.func @offset_37(%x: tensor<?x37xf32>, %r: tensor<?x37xf32>) -> tensor<?x37xf32> {
  %c = arith.constant dense<100.0> : tensor<37xf32>
  %xo = tfm.add %c, %x : tensor<37xf32>, tensor<?x37xf32> -> tensor<?x37xf32>
  %y = tfm.layer_norm %xo residual(%r : tensor<?x37xf32>) epsilon 1.0e-5 : tensor<?x37xf32>
  return %y : tensor<?x37xf32>
}
