// RUN: tfm-opt %s -split-input-file -tfm-fuse-linear-epilogue | FileCheck %s

// The feed-forward's first layer: relu(x·W1ᵀ + b1).
// CHECK-LABEL: func @relu
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[W:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[Y:.+]] = tfm.fused_linear relu %[[X]], %[[W]] bias(%[[B]] : tensor<256xf32>) : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x256xf32>
// CHECK-NEXT: return %[[Y]]
func.func @relu(%x: tensor<?x?x64xf32>, %w: tensor<256x64xf32>, %b: tensor<256xf32>) -> tensor<?x?x256xf32> {
  %h = tfm.linear %x, %w, %b : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %a = tfm.relu %h : tensor<?x?x256xf32>
  return %a : tensor<?x?x256xf32>
}

// -----

// Negative twin: the pre-activation value is used elsewhere.
// CHECK-LABEL: func @preactivation_has_another_user
// CHECK-NOT: tfm.fused_linear
// CHECK: tfm.linear
// CHECK-NEXT: tfm.relu
func.func @preactivation_has_another_user(%x: tensor<?x?x64xf32>, %w: tensor<256x64xf32>) -> (tensor<?x?x256xf32>, tensor<?x?x256xf32>) {
  %h = tfm.linear %x, %w : (tensor<?x?x64xf32>, tensor<256x64xf32>) -> tensor<?x?x256xf32>
  %a = tfm.relu %h : tensor<?x?x256xf32>
  return %a, %h : tensor<?x?x256xf32>, tensor<?x?x256xf32>
}

// -----

// A bias added after a bias-less linear, gelu, then a residual (pre-norm).
// CHECK-LABEL: func @bias_gelu_residual
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[W:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]: {{.+}}, %[[R:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[Y:.+]] = tfm.fused_linear gelu %[[X]], %[[W]] bias(%[[B]] : tensor<64xf32>) residual(%[[R]] : tensor<?x?x64xf32>) : tensor<?x?x32xf32>, tensor<64x32xf32> -> tensor<?x?x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @bias_gelu_residual(%x: tensor<?x?x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %r: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %h = tfm.linear %x, %w : (tensor<?x?x32xf32>, tensor<64x32xf32>) -> tensor<?x?x64xf32>
  %hb = tfm.add %b, %h : tensor<64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %a = tfm.gelu %hb : tensor<?x?x64xf32>
  %y = tfm.add %r, %a : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Residual alone, no activation (the attention output projection, pre-norm).
// CHECK-LABEL: func @residual_only
// CHECK-NEXT: %[[Y:.+]] = tfm.fused_linear none %{{.+}}, %{{.+}} bias(%{{.+}} : tensor<64xf32>) residual(%{{.+}} : tensor<?x?x64xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @residual_only(%x: tensor<?x?x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>, %r: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %h = tfm.linear %x, %w, %b : (tensor<?x?x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %y = tfm.add %h, %r : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Negative twin: an add that broadcasts (a [?, 1, 64] tensor, not the
// result's shape, nor an [N] bias) is neither residual nor bias.
// CHECK-LABEL: func @broadcasting_add
// CHECK-NOT: tfm.fused_linear
// CHECK: tfm.linear
// CHECK-NEXT: tfm.add
func.func @broadcasting_add(%x: tensor<?x?x64xf32>, %w: tensor<64x64xf32>, %r: tensor<?x1x64xf32>) -> tensor<?x?x64xf32> {
  %h = tfm.linear %x, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %y = tfm.add %h, %r : tensor<?x?x64xf32>, tensor<?x1x64xf32> -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Negative twin: a linear followed by nothing it can absorb stays a linear.
// CHECK-LABEL: func @plain_linear
// CHECK-NOT: tfm.fused_linear
// CHECK: tfm.linear
func.func @plain_linear(%x: tensor<?x?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x?x64xf32> {
  %h = tfm.linear %x, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %y = tfm.sqrt %h : tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// The output projection plus final_logits_bias, stored [1, V] as in the
// checkpoints: the bias is collapsed to [V] and joins the epilogue, so the
// logits are written once.
// CHECK-LABEL: func @logits_bias
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[E:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[V:.+]] = tensor.collapse_shape %[[B]] {{\[\[}}0, 1]] : tensor<1x96xf32> into tensor<96xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.fused_linear none %[[X]], %[[E]] bias(%[[V]] : tensor<96xf32>)
// CHECK-NEXT: return %[[Y]]
func.func @logits_bias(%x: tensor<?x?x64xf32>, %e: tensor<96x64xf32>, %b: tensor<1x96xf32>) -> tensor<?x?x96xf32> {
  %h = tfm.linear %x, %e : (tensor<?x?x64xf32>, tensor<96x64xf32>) -> tensor<?x?x96xf32>
  %y = tfm.add %h, %b : tensor<?x?x96xf32>, tensor<1x96xf32> -> tensor<?x?x96xf32>
  return %y : tensor<?x?x96xf32>
}


// -----

// Negative twin: a [1, 1, V] addend would widen a 2-D result to 3-D.
// CHECK-LABEL: func @widening_bias
// CHECK: tfm.linear
// CHECK-NEXT: tfm.add
func.func @widening_bias(%x: tensor<?x64xf32>, %e: tensor<96x64xf32>, %b: tensor<1x1x96xf32>) -> tensor<1x?x96xf32> {
  %h = tfm.linear %x, %e : (tensor<?x64xf32>, tensor<96x64xf32>) -> tensor<?x96xf32>
  %y = tfm.add %h, %b : tensor<?x96xf32>, tensor<1x1x96xf32> -> tensor<1x?x96xf32>
  return %y : tensor<1x?x96xf32>
}
