// Layer norm (one-pass shifted statistics) and linears (vectorized 1x16
// tiles, split-K 16; remainders when N or K are not multiples of 16) against
// their decomposed graphs.
// Each also with the oneDNN backend and with auto (whose linears take
// oneDNN from 8 rows on and our code below: both sides are run).

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
