// RUN: tfm-opt %s -split-input-file -tfm-fuse-sibling-linears | FileCheck %s
// tfm-decompose splits them back, weights where they were:
// RUN: tfm-opt %s -split-input-file -tfm-fuse-sibling-linears -tfm-decompose -canonicalize | FileCheck %s --check-prefix=BACK

// A layer's queries, keys and values: one linear over the stacked weights
// and biases (rows of q, then k, then v), each old result a slice of its
// features, in order; the weights that only they read are gone.
// CHECK-LABEL: func @qkv
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x8xf32>)
// CHECK-NEXT: %[[W:.+]] = tfm.weight "q.weight+k.weight+v.weight" parts ["q.weight", "k.weight", "v.weight"] : tensor<20x8xf32>
// CHECK-NEXT: %[[B:.+]] = tfm.weight "q.bias+k.bias+v.bias" parts ["q.bias", "k.bias", "v.bias"] : tensor<20xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.linear %[[X]], %[[W]], %[[B]] : (tensor<?x?x8xf32>, tensor<20x8xf32>, tensor<20xf32>) -> tensor<?x?x20xf32>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[Q:.+]] = tfm.slice %[[Y]][%[[C0]], %[[C8]]] axis 2 : tensor<?x?x20xf32> -> tensor<?x?x8xf32>
// CHECK-DAG: %[[K:.+]] = tfm.slice %[[Y]][%[[C8]], %[[C8]]] axis 2 : tensor<?x?x20xf32> -> tensor<?x?x8xf32>
// CHECK-DAG: %[[V:.+]] = tfm.slice %[[Y]][%[[C16]], %[[C4]]] axis 2 : tensor<?x?x20xf32> -> tensor<?x?x4xf32>
// CHECK-NOT: tfm.weight
// CHECK-NOT: tfm.linear
// CHECK: return %[[Q]], %[[K]], %[[V]]
// BACK-LABEL: func @qkv
// BACK-NEXT: %[[WQ:.+]] = tfm.weight "q.weight" : tensor<8x8xf32>
// BACK-NEXT: %[[BQ:.+]] = tfm.weight "q.bias" : tensor<8xf32>
// BACK-NEXT: %[[WK:.+]] = tfm.weight "k.weight" : tensor<8x8xf32>
// BACK-NEXT: %[[BK:.+]] = tfm.weight "k.bias" : tensor<8xf32>
// BACK-NEXT: %[[WV:.+]] = tfm.weight "v.weight" : tensor<4x8xf32>
// BACK-NEXT: %[[BV:.+]] = tfm.weight "v.bias" : tensor<4xf32>
// BACK-NEXT: %[[Q:.+]] = tfm.linear %{{.+}}, %[[WQ]], %[[BQ]] : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// BACK-NEXT: %[[K:.+]] = tfm.linear %{{.+}}, %[[WK]], %[[BK]] : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// BACK-NEXT: %[[V:.+]] = tfm.linear %{{.+}}, %[[WV]], %[[BV]] : (tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
// BACK-NEXT: return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x4xf32>) {
  %wq = tfm.weight "q.weight" : tensor<8x8xf32>
  %bq = tfm.weight "q.bias" : tensor<8xf32>
  %q = tfm.linear %x, %wq, %bq : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %wk = tfm.weight "k.weight" : tensor<8x8xf32>
  %bk = tfm.weight "k.bias" : tensor<8xf32>
  %k = tfm.linear %x, %wk, %bk : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %wv = tfm.weight "v.weight" : tensor<4x8xf32>
  %bv = tfm.weight "v.bias" : tensor<4xf32>
  %v = tfm.linear %x, %wv, %bv : (tensor<?x?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x?x4xf32>
  return %q, %k, %v : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x4xf32>
}

// -----

// Every decoder layer's cross-attention keys and values of the encoder's
// output, without biases. A weight read elsewhere too stays.
// CHECK-LABEL: func @cross_keys_values
// CHECK-NEXT: %[[W:.+]] = tfm.weight "k0+v0+k1" parts ["k0", "v0", "k1"] : tensor<24x8xf32>
// CHECK-NEXT: %[[K1:.+]] = tfm.weight "k1" : tensor<8x8xf32>
// CHECK-NEXT: tfm.linear %{{.+}}, %[[W]] : (tensor<2x3x8xf32>, tensor<24x8xf32>) -> tensor<2x3x24xf32>
// CHECK: tfm.embedding %[[K1]][
// CHECK-NOT: tfm.linear
func.func @cross_keys_values(%enc: tensor<2x3x8xf32>, %ids: tensor<2x3xi32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %k0 = tfm.weight "k0" : tensor<8x8xf32>
  %v0 = tfm.weight "v0" : tensor<8x8xf32>
  %k1 = tfm.weight "k1" : tensor<8x8xf32>
  %a = tfm.linear %enc, %k0 : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %b = tfm.linear %enc, %v0 : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %c = tfm.linear %enc, %k1 : (tensor<2x3x8xf32>, tensor<8x8xf32>) -> tensor<2x3x8xf32>
  %e = tfm.embedding %k1[%ids] : tensor<8x8xf32>, tensor<2x3xi32> -> tensor<2x3x8xf32>
  return %a, %b, %c, %e : tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>
}

// -----

// Negative: different inputs; a linear with a bias and one without; a weight
// that is an argument (not stacked at compile time); a lone linear.
// CHECK-LABEL: func @not_siblings
// CHECK-NOT: parts
// CHECK-NOT: tfm.slice
// CHECK-COUNT-5: tfm.linear
// CHECK-NOT: tfm.linear
func.func @not_siblings(%x: tensor<?x8xf32>, %z: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %w0 = tfm.weight "w0" : tensor<8x8xf32>
  %w1 = tfm.weight "w1" : tensor<8x8xf32>
  %b1 = tfm.weight "b1" : tensor<8xf32>
  %w2 = tfm.weight "w2" : tensor<8x8xf32>
  %a = tfm.linear %x, %w0 : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %b = tfm.linear %x, %w1, %b1 : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %c = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %d = tfm.linear %z, %w2 : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %e = tfm.linear %a, %w2 : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %a, %b, %c, %d, %e : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// A gated feed-forward (T5's wi_0, wi_1): act(x·W0ᵀ) · (x·W1ᵀ) becomes one
// gated linear over [W0; W1]; the halves' weights are gone. Back: the
// primitive graph as the importer wrote it.
// CHECK-LABEL: func @gated
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x16xf32>)
// CHECK-NEXT: %[[W:.+]] = tfm.weight "wi_0+wi_1" parts ["wi_0", "wi_1"] : tensor<256x16xf32>
// CHECK-NEXT: %[[Y:.+]] = tfm.fused_linear gelu_tanh gated %[[X]], %[[W]] : tensor<?x?x16xf32>, tensor<256x16xf32> -> tensor<?x?x128xf32>
// CHECK-NEXT: return %[[Y]]
// BACK-LABEL: func @gated
// BACK-NEXT: %[[W0:.+]] = tfm.weight "wi_0" : tensor<128x16xf32>
// BACK-NEXT: %[[W1:.+]] = tfm.weight "wi_1" : tensor<128x16xf32>
// BACK-NEXT: %[[H0:.+]] = tfm.linear %{{.+}}, %[[W0]] : (tensor<?x?x16xf32>, tensor<128x16xf32>) -> tensor<?x?x128xf32>
// BACK-NEXT: %[[A:.+]] = tfm.gelu_tanh %[[H0]]
// BACK-NEXT: %[[H1:.+]] = tfm.linear %{{.+}}, %[[W1]] : (tensor<?x?x16xf32>, tensor<128x16xf32>) -> tensor<?x?x128xf32>
// BACK-NEXT: %[[G:.+]] = tfm.mul %[[A]], %[[H1]]
// BACK-NEXT: return %[[G]]
func.func @gated(%x: tensor<?x?x16xf32>) -> tensor<?x?x128xf32> {
  %w0 = tfm.weight "wi_0" : tensor<128x16xf32>
  %w1 = tfm.weight "wi_1" : tensor<128x16xf32>
  %a = tfm.fused_linear gelu_tanh %x, %w0 : tensor<?x?x16xf32>, tensor<128x16xf32> -> tensor<?x?x128xf32>
  %h = tfm.linear %x, %w1 : (tensor<?x?x16xf32>, tensor<128x16xf32>) -> tensor<?x?x128xf32>
  %g = tfm.mul %h, %a : tensor<?x?x128xf32>, tensor<?x?x128xf32> -> tensor<?x?x128xf32>
  return %g : tensor<?x?x128xf32>
}

// -----

// Gated with biases: both stacked, in the same order.
// CHECK-LABEL: func @gated_biases
// CHECK-DAG: %[[W:.+]] = tfm.weight "w0+w1" parts ["w0", "w1"] : tensor<128x8xf32>
// CHECK-DAG: %[[B:.+]] = tfm.weight "b0+b1" parts ["b0", "b1"] : tensor<128xf32>
// CHECK: tfm.fused_linear relu gated %{{.+}}, %[[W]] bias(%[[B]] : tensor<128xf32>) : tensor<?x8xf32>, tensor<128x8xf32> -> tensor<?x64xf32>
func.func @gated_biases(%x: tensor<?x8xf32>) -> tensor<?x64xf32> {
  %w0 = tfm.weight "w0" : tensor<64x8xf32>
  %b0 = tfm.weight "b0" : tensor<64xf32>
  %w1 = tfm.weight "w1" : tensor<64x8xf32>
  %b1 = tfm.weight "b1" : tensor<64xf32>
  %a = tfm.fused_linear relu %x, %w0 bias(%b0 : tensor<64xf32>) : tensor<?x8xf32>, tensor<64x8xf32> -> tensor<?x64xf32>
  %h = tfm.linear %x, %w1, %b1 : (tensor<?x8xf32>, tensor<64x8xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %g = tfm.mul %a, %h : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %g : tensor<?x64xf32>
}

// -----

// Negative, no gated linear: halves of 32 features (not whole panels of
// 64); an activated half with a residual; a half used elsewhere too;
// halves of different inputs; a product of two plain linears (stacked as
// siblings instead).
// CHECK-LABEL: func @not_gated
// CHECK-NOT: gated
// CHECK-COUNT-4: tfm.mul
// CHECK-NOT: gated
func.func @not_gated(%x: tensor<?x8xf32>, %z: tensor<?x8xf32>, %r: tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %s0 = tfm.weight "s0" : tensor<32x8xf32>
  %s1 = tfm.weight "s1" : tensor<32x8xf32>
  %a = tfm.fused_linear relu %x, %s0 : tensor<?x8xf32>, tensor<32x8xf32> -> tensor<?x32xf32>
  %b = tfm.linear %x, %s1 : (tensor<?x8xf32>, tensor<32x8xf32>) -> tensor<?x32xf32>
  %g0 = tfm.mul %a, %b : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  %w0 = tfm.weight "w0" : tensor<64x8xf32>
  %w1 = tfm.weight "w1" : tensor<64x8xf32>
  %c = tfm.fused_linear relu %x, %w0 residual(%r : tensor<?x64xf32>) : tensor<?x8xf32>, tensor<64x8xf32> -> tensor<?x64xf32>
  %d = tfm.linear %x, %w1 : (tensor<?x8xf32>, tensor<64x8xf32>) -> tensor<?x64xf32>
  %g1 = tfm.mul %c, %d : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %w2 = tfm.weight "w2" : tensor<64x8xf32>
  %w3 = tfm.weight "w3" : tensor<64x8xf32>
  %e = tfm.fused_linear relu %x, %w2 : tensor<?x8xf32>, tensor<64x8xf32> -> tensor<?x64xf32>
  %f = tfm.linear %z, %w3 : (tensor<?x8xf32>, tensor<64x8xf32>) -> tensor<?x64xf32>
  %g2 = tfm.mul %e, %f : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %w4 = tfm.weight "w4" : tensor<64x8xf32>
  %w5 = tfm.weight "w5" : tensor<64x8xf32>
  %p = tfm.linear %z, %w4 : (tensor<?x8xf32>, tensor<64x8xf32>) -> tensor<?x64xf32>
  %q = tfm.linear %z, %w5 : (tensor<?x8xf32>, tensor<64x8xf32>) -> tensor<?x64xf32>
  %g3 = tfm.mul %p, %q : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %u = tfm.add %g3, %e : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %g0, %g1, %g2, %u, %c : tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}
