// RUN: tfm-opt %s -split-input-file -tfm-decompose | FileCheck %s
// Fusion and decomposition are inverses on the importer's graphs:
// RUN: tfm-opt %s -split-input-file -tfm-decompose -tfm-fusion-pipeline | FileCheck %s --check-prefix=REFUSE

// CHECK-LABEL: func @attention
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{.+}}, %[[K:[a-z0-9]+]]: {{.+}}, %[[V:[a-z0-9]+]]: {{.+}}, %[[L:[a-z0-9]+]]: {{.+}}, %[[M:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[S:.+]] = tfm.matmul %[[Q]], %[[K]] {transpose_rhs = true} : tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32> -> tensor<2x4x?x?xf32>
// CHECK-NEXT: %[[S1:.+]] = tfm.scale %[[S]] by 2.500000e-01
// CHECK-NEXT: %[[S2:.+]] = tfm.add %[[S1]], %[[M]] : tensor<2x4x?x?xf32>, tensor<2x1x1x?xf32> -> tensor<2x4x?x?xf32>
// CHECK-NEXT: %[[S3:.+]] = tfm.key_padding_mask %[[S2]], %[[L]]
// CHECK-NEXT: %[[S4:.+]] = tfm.causal_mask %[[S3]]
// CHECK-NEXT: %[[P:.+]] = tfm.softmax %[[S4]] axis 3
// CHECK-NEXT: %[[O:.+]] = tfm.matmul %[[P]], %[[V]] : tensor<2x4x?x?xf32>, tensor<2x4x?x16xf32> -> tensor<2x4x?x16xf32>
// CHECK-NEXT: return %[[O]]
// REFUSE-LABEL: func @attention
// REFUSE-NEXT: %[[O:.+]] = tfm.attention %{{.+}}, %{{.+}}, %{{.+}} lengths(%{{.+}} : tensor<2xi32>) mask(%{{.+}} : tensor<2x1x1x?xf32>) causal scale 2.500000e-01
// REFUSE-NEXT: return %[[O]]
func.func @attention(%q: tensor<2x4x?x16xf32>, %k: tensor<2x4x?x16xf32>, %v: tensor<2x4x?x16xf32>, %len: tensor<2xi32>, %m: tensor<2x1x1x?xf32>) -> tensor<2x4x?x16xf32> {
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<2xi32>) mask(%m : tensor<2x1x1x?xf32>) causal scale 0.25
      : tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32> -> tensor<2x4x?x16xf32>
  return %o : tensor<2x4x?x16xf32>
}

// -----

// Key starts: the start mask, after the padding mask.
// CHECK-LABEL: func @attention_starts
// CHECK: %[[S:.+]] = tfm.scale
// CHECK-NEXT: %[[M:.+]] = tfm.key_start_mask %[[S]], %{{.+}} : tensor<2x4x1x?xf32>, tensor<2xi32>
// CHECK-NEXT: tfm.causal_mask %[[M]]
// REFUSE-LABEL: func @attention_starts
// REFUSE-NEXT: tfm.attention %{{.+}}, %{{.+}}, %{{.+}} starts(%{{.+}} : tensor<2xi32>) causal scale 2.500000e-01
func.func @attention_starts(%q: tensor<2x4x1x16xf32>, %k: tensor<2x4x?x16xf32>, %v: tensor<2x4x?x16xf32>, %b: tensor<2xi32>) -> tensor<2x4x1x16xf32> {
  %o = tfm.attention %q, %k, %v starts(%b : tensor<2xi32>) causal scale 0.25
      : tensor<2x4x1x16xf32>, tensor<2x4x?x16xf32>, tensor<2x4x?x16xf32> -> tensor<2x4x1x16xf32>
  return %o : tensor<2x4x1x16xf32>
}

// -----

// Key rows: keys and values gathered through them first.
// CHECK-LABEL: func @attention_key_rows
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{.+}}, %[[K:[a-z0-9]+]]: {{.+}}, %[[V:[a-z0-9]+]]: {{.+}}, %[[R:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[GK:.+]] = tfm.cache_rows %[[K]][%[[R]]] axis 2
// CHECK-NEXT: %[[GV:.+]] = tfm.cache_rows %[[V]][%[[R]]] axis 2
// CHECK-NEXT: %[[S:.+]] = tfm.matmul %[[Q]], %[[GK]] {transpose_rhs = true}
// CHECK: tfm.matmul %{{.+}}, %[[GV]]
// REFUSE-LABEL: func @attention_key_rows
// REFUSE-NEXT: %[[O:.+]] = tfm.attention %{{.+}}, %{{.+}}, %{{.+}} key_rows(%{{.+}} : tensor<?x?xi32>) causal scale 2.500000e-01
// REFUSE-NEXT: return %[[O]]
func.func @attention_key_rows(%q: tensor<?x4x1x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %rows: tensor<?x?xi32>) -> tensor<?x4x1x16xf32> {
  %o = tfm.attention %q, %k, %v key_rows(%rows : tensor<?x?xi32>) causal scale 0.25
      : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x16xf32>
  return %o : tensor<?x4x1x16xf32>
}

// -----

// A result type that knows more than the operands is kept with a cast.
// CHECK-LABEL: func @attention_static_result
// CHECK: %[[O:.+]] = tfm.matmul {{.+}} -> tensor<?x4x?x16xf32>
// CHECK-NEXT: %[[C:.+]] = tensor.cast %[[O]] : tensor<?x4x?x16xf32> to tensor<2x4x3x16xf32>
// CHECK-NEXT: return %[[C]]
func.func @attention_static_result(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<2x4x3x16xf32> {
  %o = tfm.attention %q, %k, %v scale 1.0
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<2x4x3x16xf32>
  return %o : tensor<2x4x3x16xf32>
}

// -----

// CHECK-LABEL: func @layer_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[R:[a-z0-9]+]]: {{.+}}, %[[G:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[SUM:.+]] = tfm.add %[[X]], %[[R]]
// CHECK-NEXT: %[[MEAN:.+]] = tfm.mean %[[SUM]] axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
// CHECK-NEXT: %[[C:.+]] = tfm.sub %[[SUM]], %[[MEAN]]
// CHECK-NEXT: %[[SQ:.+]] = tfm.mul %[[C]], %[[C]]
// CHECK-NEXT: %[[VAR:.+]] = tfm.mean %[[SQ]] axis 2
// CHECK-NEXT: %[[EPS:.+]] = arith.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-NEXT: %[[D:.+]] = tfm.add %[[VAR]], %[[EPS]]
// CHECK-NEXT: %[[RS:.+]] = tfm.rsqrt %[[D]]
// CHECK-NEXT: %[[N:.+]] = tfm.mul %[[C]], %[[RS]]
// CHECK-NEXT: %[[Y:.+]] = tfm.mul %[[N]], %[[G]]
// CHECK-NEXT: %[[Z:.+]] = tfm.add %[[Y]], %[[B]]
// CHECK-NEXT: return %[[Z]]
// REFUSE-LABEL: func @layer_norm
// REFUSE-NEXT: %[[Y:.+]] = tfm.layer_norm %{{.+}} residual(%{{.+}}) scale(%{{.+}}) bias(%{{.+}}) epsilon 9.9999997473787516E-6
// REFUSE-NEXT: return %[[Y]]
func.func @layer_norm(%x: tensor<?x?x64xf32>, %r: tensor<?x?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x?x64xf32>) scale(%g : tensor<64xf32>) bias(%b : tensor<64xf32>) epsilon 9.9999997473787516E-6 : tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// T5's RMS norm: x · rsqrt(E[x·x] + eps) · γ, nothing centered.
// CHECK-LABEL: func @rms_norm
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[G:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[SQ:.+]] = tfm.mul %[[X]], %[[X]]
// CHECK-NEXT: %[[MS:.+]] = tfm.mean %[[SQ]] axis 2
// CHECK-NEXT: %[[EPS:.+]] = arith.constant dense<9.99999997E-7> : tensor<f32>
// CHECK-NEXT: %[[D:.+]] = tfm.add %[[MS]], %[[EPS]]
// CHECK-NEXT: %[[RS:.+]] = tfm.rsqrt %[[D]]
// CHECK-NEXT: %[[N:.+]] = tfm.mul %[[X]], %[[RS]]
// CHECK-NEXT: %[[Y:.+]] = tfm.mul %[[N]], %[[G]]
// CHECK-NEXT: return %[[Y]]
// REFUSE-LABEL: func @rms_norm
// REFUSE-NEXT: %[[Y:.+]] = tfm.layer_norm %{{.+}} scale(%{{.+}}) epsilon 9.9999999747524271E-7 rms
// REFUSE-NEXT: return %[[Y]]
func.func @rms_norm(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %y = tfm.layer_norm %x scale(%g : tensor<64xf32>) epsilon 9.9999999747524271E-7 rms : tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// CHECK-LABEL: func @fused_linear
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}}, %[[W:[a-z0-9]+]]: {{.+}}, %[[B:[a-z0-9]+]]: {{.+}}, %[[R:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[H:.+]] = tfm.linear %[[X]], %[[W]], %[[B]]
// CHECK-NEXT: %[[A:.+]] = tfm.silu %[[H]]
// CHECK-NEXT: %[[Y:.+]] = tfm.add %[[R]], %[[A]]
// CHECK-NEXT: return %[[Y]]
// REFUSE-LABEL: func @fused_linear
// REFUSE-NEXT: %[[Y:.+]] = tfm.fused_linear silu %{{.+}}, %{{.+}} bias(%{{.+}} : tensor<128xf32>) residual(%{{.+}} : tensor<?x128xf32>)
// REFUSE-NEXT: return %[[Y]]
func.func @fused_linear(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>, %r: tensor<?x128xf32>) -> tensor<?x128xf32> {
  %y = tfm.fused_linear silu %x, %w bias(%b : tensor<128xf32>) residual(%r : tensor<?x128xf32>) : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  return %y : tensor<?x128xf32>
}

// -----

// Gated: the halves' linears over their own weights, the activation of the
// first, the product; fusion stacks them back.
// CHECK-LABEL: func @gated_linear
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[W0:.+]] = tfm.weight "wi_0" : tensor<64x16xf32>
// CHECK-NEXT: %[[W1:.+]] = tfm.weight "wi_1" : tensor<64x16xf32>
// CHECK: %[[H0:.+]] = tfm.linear %[[X]], %[[W0]]
// CHECK-NEXT: %[[A:.+]] = tfm.gelu_tanh %[[H0]]
// CHECK-NEXT: %[[H1:.+]] = tfm.linear %[[X]], %[[W1]]
// CHECK-NEXT: %[[G:.+]] = tfm.mul %[[A]], %[[H1]]
// CHECK-NEXT: return %[[G]]
// REFUSE-LABEL: func @gated_linear
// REFUSE-NEXT: %[[W:.+]] = tfm.weight "wi_0+wi_1" parts ["wi_0", "wi_1"] : tensor<128x16xf32>
// REFUSE-NEXT: %[[Y:.+]] = tfm.fused_linear gelu_tanh gated %{{.+}}, %[[W]] : tensor<?x16xf32>, tensor<128x16xf32> -> tensor<?x64xf32>
// REFUSE-NEXT: return %[[Y]]
func.func @gated_linear(%x: tensor<?x16xf32>) -> tensor<?x64xf32> {
  %w = tfm.weight "wi_0+wi_1" parts ["wi_0", "wi_1"] : tensor<128x16xf32>
  %y = tfm.fused_linear gelu_tanh gated %x, %w : tensor<?x16xf32>, tensor<128x16xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Gated over one weight (no parts), to a result that leaves F `?`: the
// halves are slices of the product at 0 and F = 64, F from the weight's
// 2F = 128 rows.
// CHECK-LABEL: func @gated_linear_dynamic_features
// CHECK-SAME: (%[[X:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[W:.+]] = tfm.weight "w" : tensor<128x32xf32>
// CHECK-NEXT: %[[H:.+]] = tfm.linear %[[X]], %[[W]] : (tensor<?x32xf32>, tensor<128x32xf32>) -> tensor<?x128xf32>
// CHECK-DAG: %[[F:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[Z:.+]] = arith.constant 0 : index
// CHECK: %[[H0:.+]] = tfm.slice %[[H]][%[[Z]], %[[F]]] axis 1 : tensor<?x128xf32> -> tensor<?x?xf32>
// CHECK-NEXT: %[[H1:.+]] = tfm.slice %[[H]][%[[F]], %[[F]]] axis 1 : tensor<?x128xf32> -> tensor<?x?xf32>
// CHECK-NEXT: %[[A:.+]] = tfm.silu %[[H0]]
// CHECK-NEXT: %[[G:.+]] = tfm.mul %[[A]], %[[H1]]
// CHECK-NEXT: return %[[G]]
func.func @gated_linear_dynamic_features(%x: tensor<?x32xf32>) -> tensor<?x?xf32> {
  %w = tfm.weight "w" : tensor<128x32xf32>
  %y = tfm.fused_linear silu gated %x, %w : tensor<?x32xf32>, tensor<128x32xf32> -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
