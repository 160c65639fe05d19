// Layer norm (one-pass shifted statistics) and linears (the panel kernel:
// row tiles and single rows, N not a multiple of the panel) against their
// decomposed graphs. Each also with the oneDNN backend and with auto.

// RUN: tfm-run %s --entry=layer_norm --shapes="2x3x7,2x3x7,7,7 -> 2x3x7" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=layer_norm --shapes="2x3x7,2x3x7,7,7 -> 2x3x7" --compare-decomposed --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=layer_norm --shapes="2x3x7,2x3x7,7,7 -> 2x3x7" --compare-decomposed --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=layer_norm --shapes="1x1x512,1x1x512,512,512 -> 1x1x512" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=layer_norm --shapes="1x1x512,1x1x512,512,512 -> 1x1x512" --compare-decomposed --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=layer_norm --shapes="1x1x512,1x1x512,512,512 -> 1x1x512" --compare-decomposed --backend=auto | FileCheck %s
func.func @layer_norm(%x: tensor<?x?x?xf32>, %r: tensor<?x?x?xf32>, %g: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?x?x?xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x?x?xf32>) scale(%g : tensor<?xf32>) bias(%b : tensor<?xf32>) epsilon 1.0e-5 : tensor<?x?x?xf32>
  return %y : tensor<?x?x?xf32>
}

// RUN: tfm-run %s --entry=linear_relu --shapes="2x3x64,2x3x256 -> 2x3x256" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=linear_relu --shapes="2x3x64,2x3x256 -> 2x3x256" --compare-decomposed --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=linear_relu --shapes="2x3x64,2x3x256 -> 2x3x256" --compare-decomposed --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=linear_relu --shapes="4x3x64,4x3x256 -> 4x3x256" --compare-decomposed --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=linear_relu --shapes="1x1x64,1x1x256 -> 1x1x256" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=linear_relu --shapes="1x1x64,1x1x256 -> 1x1x256" --compare-decomposed --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=linear_relu --shapes="1x1x64,1x1x256 -> 1x1x256" --compare-decomposed --backend=auto | FileCheck %s
// Many rows in tiles of 6 rows (by 4 vectors with AVX-512, by 2 with AVX2),
// the rest in pairs and single rows: 33 rows (5 x 6 + 2 + 1) and 70
// (11 x 6 + 2 x 2).
// RUN: for s in 3x11 7x10; do for v in 8 16; do tfm-run %s --entry=linear_relu --shapes="${s}x64,${s}x256 -> ${s}x256" --vector-width=$v --compare-decomposed; done; done | FileCheck %s --check-prefix=MANY
// MANY-COUNT-4: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
// MANY-NOT: result
func.func @linear_relu(%x: tensor<?x?x64xf32>, %r: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
  %w = arith.constant dense<0.0625> : tensor<256x64xf32>
  %b = arith.constant dense<-0.5> : tensor<256xf32>
  %y = tfm.fused_linear relu %x, %w bias(%b : tensor<256xf32>) residual(%r : tensor<?x?x256xf32>)
      : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x256xf32>
  return %y : tensor<?x?x256xf32>
}

// N = 33 and K = 17 leave partial tiles.
// RUN: tfm-run %s --entry=linear_gelu_odd --shapes="5x17,33x17,33 -> 5x33" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=linear_gelu_odd --shapes="5x17,33x17,33 -> 5x33" --compare-decomposed --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=linear_gelu_odd --shapes="5x17,33x17,33 -> 5x33" --compare-decomposed --backend=auto | FileCheck %s
// RUN: tfm-run %s --entry=linear_silu_odd --shapes="1x17,33x17 -> 1x33" --compare-decomposed | FileCheck %s
// RUN: tfm-run %s --entry=linear_silu_odd --shapes="1x17,33x17 -> 1x33" --compare-decomposed --backend=onednn | FileCheck %s
// RUN: tfm-run %s --entry=linear_silu_odd --shapes="1x17,33x17 -> 1x33" --compare-decomposed --backend=auto | FileCheck %s
func.func @linear_gelu_odd(%x: tensor<?x17xf32>, %w: tensor<33x17xf32>, %b: tensor<33xf32>) -> tensor<?x33xf32> {
  %y = tfm.fused_linear gelu %x, %w bias(%b : tensor<33xf32>) : tensor<?x17xf32>, tensor<33x17xf32> -> tensor<?x33xf32>
  return %y : tensor<?x33xf32>
}
func.func @linear_silu_odd(%x: tensor<?x17xf32>, %w: tensor<33x17xf32>) -> tensor<?x33xf32> {
  %y = tfm.fused_linear silu %x, %w : tensor<?x17xf32>, tensor<33x17xf32> -> tensor<?x33xf32>
  return %y : tensor<?x33xf32>
}

// CHECK: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok

// The panel kernel, its epilogue fused, against oneDNN's matmul, GELU and
// add on odd sizes: K = 37 (no multiple of a vector), N = 70 (a partial
// panel), 1 to 33 rows (whole row tiles of each shape, pairs and single
// rows).
// RUN: for m in 1 2 3 4 5 7 8 9 13 33; do tfm-run %s --entry=panels_odd --shapes="${m}x37,${m}x70 -> ${m}x70" --compare-decomposed --reference-backend=onednn; done | FileCheck %s --check-prefix=PANELS
// PANELS-COUNT-10: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
// K = 150: three blocks of K (64, 64, 22), the epilogue after the last.
// RUN: for m in 1 4 7; do tfm-run %s --entry=panels_long --shapes="${m}x150,70x150,${m}x70 -> ${m}x70" --compare-decomposed --reference-backend=onednn; done | FileCheck %s --check-prefix=LONG
// LONG-COUNT-3: result 0: {{[0-9]+}} values, fused vs decomposed max difference {{.+}} relative (rtol 1e-05): ok
func.func @panels_long(%x: tensor<?x150xf32>, %w: tensor<70x150xf32>, %r: tensor<?x70xf32>) -> tensor<?x70xf32> {
  %b = arith.constant dense<-0.25> : tensor<70xf32>
  %y = tfm.fused_linear relu %x, %w bias(%b : tensor<70xf32>) residual(%r : tensor<?x70xf32>)
      : tensor<?x150xf32>, tensor<70x150xf32> -> tensor<?x70xf32>
  return %y : tensor<?x70xf32>
}
func.func @panels_odd(%x: tensor<?x37xf32>, %r: tensor<?x70xf32>) -> tensor<?x70xf32> {
  %w = arith.constant dense<[[0.25, -0.5, 0.125, 0.75, -0.0625, 0.5, -0.25, 1.0, -0.75, 0.375, 0.0, -0.125, 0.625, -0.375, 0.875, -1.0, 0.1875, -0.6875, 0.3125, 0.9375, -0.8125, 0.4375, -0.5625, 0.0625, 0.6875, -0.9375, 0.8125, -0.3125, 0.5625, -0.4375, 0.15625, -0.84375, 0.71875, -0.28125, 0.46875, -0.96875, 0.03125]]> : tensor<1x37xf32>
  %wide = tensor.collapse_shape %w [[0, 1]] : tensor<1x37xf32> into tensor<37xf32>
  %init = tensor.empty() : tensor<70x37xf32>
  %rows = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%wide : tensor<37xf32>) outs(%init : tensor<70x37xf32>) {
  ^bb0(%v: f32, %o: f32):
    %i = linalg.index 0 : index
    %i32 = arith.index_cast %i : index to i32
    %f = arith.sitofp %i32 : i32 to f32
    %s = arith.constant 0.03125 : f32
    %d = arith.mulf %f, %s : f32
    %y = arith.subf %v, %d : f32
    linalg.yield %y : f32
  } -> tensor<70x37xf32>
  %b = arith.constant dense<0.5> : tensor<70xf32>
  %y = tfm.fused_linear gelu %x, %rows bias(%b : tensor<70xf32>) residual(%r : tensor<?x70xf32>)
      : tensor<?x37xf32>, tensor<70x37xf32> -> tensor<?x70xf32>
  return %y : tensor<?x70xf32>
}
