// Every tfm op prints and parses back to itself, in custom and generic form.
// RUN: tfm-opt %s | tfm-opt | FileCheck %s
// RUN: tfm-opt %s --mlir-print-op-generic | tfm-opt | FileCheck %s

// CHECK-LABEL: func @weights_and_embeddings
func.func @weights_and_embeddings(%ids: tensor<?x?xi32>, %step: index)
    -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) {
  // CHECK: %[[T:.+]] = tfm.weight "model.shared.weight" : tensor<1000x64xf32>
  %table = tfm.weight "model.shared.weight" : tensor<1000x64xf32>
  // CHECK: %[[P:.+]] = tfm.weight "model.encoder.embed_positions.weight" : tensor<512x64xf32>
  %pos = tfm.weight "model.encoder.embed_positions.weight" : tensor<512x64xf32>
  // CHECK: tfm.embedding %[[T]][%[[IDS:.+]]] : tensor<1000x64xf32>, tensor<?x?xi32> -> tensor<?x?x64xf32>
  %x = tfm.embedding %table[%ids] : tensor<1000x64xf32>, tensor<?x?xi32> -> tensor<?x?x64xf32>
  // CHECK: tfm.position_encoding learned %[[IDS]], %[[STEP:.+]] table(%[[P]] : tensor<512x64xf32>) : tensor<?x?xi32> -> tensor<?x?x64xf32>
  %pl = tfm.position_encoding learned %ids, %step table(%pos : tensor<512x64xf32>) : tensor<?x?xi32> -> tensor<?x?x64xf32>
  // CHECK: tfm.position_encoding sinusoidal_concat %[[IDS]], %[[STEP]] : tensor<?x?xi32> -> tensor<?x?x64xf32>
  %pc = tfm.position_encoding sinusoidal_concat %ids, %step : tensor<?x?xi32> -> tensor<?x?x64xf32>
  // CHECK: tfm.position_encoding sinusoidal_interleaved %[[IDS]], %[[STEP]] : tensor<?x?xi32> -> tensor<?x?x64xf32>
  %pi = tfm.position_encoding sinusoidal_interleaved %ids, %step : tensor<?x?xi32> -> tensor<?x?x64xf32>
  // CHECK: tfm.position_encoding sinusoidal_concat_half_minus_one %[[IDS]], %[[STEP]] : tensor<?x?xi32> -> tensor<?x?x64xf32>
  %pm = tfm.position_encoding sinusoidal_concat_half_minus_one %ids, %step : tensor<?x?xi32> -> tensor<?x?x64xf32>
  return %x, %pl, %pc, %pi, %pm : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>
}

// CHECK-LABEL: func @products
func.func @products(%x: tensor<?x?x64xf32>, %w: tensor<256x64xf32>, %b: tensor<256xf32>,
                    %q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>)
    -> (tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) {
  // CHECK: tfm.linear %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %0 = tfm.linear %x, %w, %b : (tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  // CHECK: tfm.linear %{{.+}}, %{{.+}} : (tensor<?x?x64xf32>, tensor<256x64xf32>) -> tensor<?x?x256xf32>
  %1 = tfm.linear %x, %w : (tensor<?x?x64xf32>, tensor<256x64xf32>) -> tensor<?x?x256xf32>
  // CHECK: tfm.matmul %{{.+}}, %{{.+}} {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %2 = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  // CHECK: tfm.matmul %{{.+}}, %{{.+}} {transpose_lhs = true} : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  %3 = tfm.matmul %2, %k {transpose_lhs = true} : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %0, %1, %2, %3 : tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>
}

// CHECK-LABEL: func @elementwise
func.func @elementwise(%x: tensor<?x?x64xf32>, %g: tensor<64xf32>, %m: tensor<?x?x1xf32>)
    -> tensor<?x?x64xf32> {
  // CHECK: tfm.add %{{.+}}, %{{.+}} : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  %0 = tfm.add %x, %g : tensor<?x?x64xf32>, tensor<64xf32> -> tensor<?x?x64xf32>
  // CHECK: tfm.sub %{{.+}}, %{{.+}} : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  %1 = tfm.sub %0, %m : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  // CHECK: tfm.mul %{{.+}}, %{{.+}} : tensor<64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  %2 = tfm.mul %g, %1 : tensor<64xf32>, tensor<?x?x64xf32> -> tensor<?x?x64xf32>
  // CHECK: tfm.div %{{.+}}, %{{.+}} : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  %3 = tfm.div %2, %m : tensor<?x?x64xf32>, tensor<?x?x1xf32> -> tensor<?x?x64xf32>
  // CHECK: tfm.rsqrt %{{.+}} : tensor<?x?x64xf32>
  %4 = tfm.rsqrt %3 : tensor<?x?x64xf32>
  // CHECK: tfm.sqrt %{{.+}} : tensor<?x?x64xf32>
  %5 = tfm.sqrt %4 : tensor<?x?x64xf32>
  // CHECK: tfm.relu %{{.+}} : tensor<?x?x64xf32>
  %6 = tfm.relu %5 : tensor<?x?x64xf32>
  // CHECK: tfm.gelu %{{.+}} : tensor<?x?x64xf32>
  %7 = tfm.gelu %6 : tensor<?x?x64xf32>
  // CHECK: tfm.silu %{{.+}} : tensor<?x?x64xf32>
  %8 = tfm.silu %7 : tensor<?x?x64xf32>
  // CHECK: tfm.gelu_tanh %{{.+}} : tensor<?x?x64xf32>
  %g8 = tfm.gelu_tanh %8 : tensor<?x?x64xf32>
  // CHECK: tfm.scale %{{.+}} by 1.250000e-01 : tensor<?x?x64xf32>
  %9 = tfm.scale %g8 by 0.125 : tensor<?x?x64xf32>
  return %9 : tensor<?x?x64xf32>
}

// CHECK-LABEL: func @reductions_and_masks
func.func @reductions_and_masks(%x: tensor<?x?x64xf32>, %s: tensor<?x4x?x?xf32>, %len: tensor<?xi32>)
    -> (tensor<?x?x1xf32>, tensor<?x4x?x?xf32>) {
  // CHECK: tfm.mean %{{.+}} axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  %0 = tfm.mean %x axis 2 : tensor<?x?x64xf32> -> tensor<?x?x1xf32>
  // CHECK: tfm.key_padding_mask %{{.+}}, %{{.+}} : tensor<?x4x?x?xf32>, tensor<?xi32>
  %1 = tfm.key_padding_mask %s, %len : tensor<?x4x?x?xf32>, tensor<?xi32>
  // CHECK: tfm.causal_mask %{{.+}} : tensor<?x4x?x?xf32>
  %2 = tfm.causal_mask %1 : tensor<?x4x?x?xf32>
  // CHECK: tfm.softmax %{{.+}} axis 3 : tensor<?x4x?x?xf32>
  %3 = tfm.softmax %2 axis 3 : tensor<?x4x?x?xf32>
  return %0, %3 : tensor<?x?x1xf32>, tensor<?x4x?x?xf32>
}

// CHECK-LABEL: func @heads_and_cache
func.func @heads_and_cache(%x: tensor<?x1x64xf32>, %cache: tensor<?x4x?x16xf32>, %step: index, %len: index)
    -> (tensor<?x1x64xf32>, tensor<?x4x?x16xf32>) {
  // CHECK: %[[H:.+]] = tfm.split_heads %{{.+}} into 4 heads : tensor<?x1x64xf32> -> tensor<?x4x1x16xf32>
  %h = tfm.split_heads %x into 4 heads : tensor<?x1x64xf32> -> tensor<?x4x1x16xf32>
  // CHECK: %[[C:.+]] = tfm.cache_update %[[H]] into %{{.+}}[%{{.+}}] axis 2 : tensor<?x4x1x16xf32> into tensor<?x4x?x16xf32>
  %c = tfm.cache_update %h into %cache[%step] axis 2 : tensor<?x4x1x16xf32> into tensor<?x4x?x16xf32>
  %c0 = arith.constant 0 : index
  // CHECK: tfm.slice %[[C]][%{{.+}}, %{{.+}}] axis 2 : tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  %k = tfm.slice %c[%c0, %len] axis 2 : tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  // CHECK: tfm.merge_heads %[[H]] : tensor<?x4x1x16xf32> -> tensor<?x1x64xf32>
  %m = tfm.merge_heads %h : tensor<?x4x1x16xf32> -> tensor<?x1x64xf32>
  return %m, %k : tensor<?x1x64xf32>, tensor<?x4x?x16xf32>
}

// CHECK-LABEL: func @history
func.func @history(%q: tensor<?x4x1x16xf32>, %cache: tensor<?x4x?x16xf32>, %rows: tensor<?x?xi32>)
    -> (tensor<?x4x?x16xf32>, tensor<?x4x1x16xf32>) {
  // CHECK: tfm.cache_rows %{{.+}}[%{{.+}}] axis 2 : tensor<?x4x?x16xf32>, tensor<?x?xi32> -> tensor<?x4x?x16xf32>
  %k = tfm.cache_rows %cache[%rows] axis 2 : tensor<?x4x?x16xf32>, tensor<?x?xi32> -> tensor<?x4x?x16xf32>
  // CHECK: tfm.attention %{{.+}}, %{{.+}}, %{{.+}} key_rows(%{{.+}} : tensor<?x?xi32>) causal scale 2.500000e-01
  %o = tfm.attention %q, %cache, %cache key_rows(%rows : tensor<?x?xi32>) causal scale 0.25
      : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x16xf32>
  return %k, %o : tensor<?x4x?x16xf32>, tensor<?x4x1x16xf32>
}

// CHECK-LABEL: func @fused
func.func @fused(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>,
                 %len: tensor<?xi32>, %x: tensor<?x?x64xf32>, %r: tensor<?x?x64xf32>,
                 %g: tensor<64xf32>, %b: tensor<64xf32>, %w: tensor<256x64xf32>, %wb: tensor<256xf32>,
                 %r2: tensor<?x?x256xf32>, %r3: tensor<?x?x128xf32>)
    -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>,
        tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x128xf32>) {
  // CHECK: tfm.attention %{{.+}}, %{{.+}}, %{{.+}} lengths(%{{.+}} : tensor<?xi32>) scale 2.500000e-01 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  %0 = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) scale 0.25
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  // CHECK: tfm.attention %{{.+}}, %{{.+}}, %{{.+}} causal scale 2.500000e-01 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  %1 = tfm.attention %q, %k, %v causal scale 0.25
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  // CHECK: tfm.layer_norm %{{.+}} residual(%{{.+}} : tensor<?x?x64xf32>) scale(%{{.+}} : tensor<64xf32>) bias(%{{.+}} : tensor<64xf32>) epsilon 9.9999997473787516E-6 : tensor<?x?x64xf32>
  %2 = tfm.layer_norm %x residual(%r : tensor<?x?x64xf32>) scale(%g : tensor<64xf32>) bias(%b : tensor<64xf32>) epsilon 9.9999997473787516E-6 : tensor<?x?x64xf32>
  // CHECK: tfm.layer_norm %{{.+}} epsilon 1.000000e-05 : tensor<?x?x64xf32>
  %3 = tfm.layer_norm %x epsilon 1.0e-5 : tensor<?x?x64xf32>
  // CHECK: tfm.layer_norm %{{.+}} scale(%{{.+}} : tensor<64xf32>) epsilon 9.9999999747524271E-7 rms : tensor<?x?x64xf32>
  %rms = tfm.layer_norm %x scale(%g : tensor<64xf32>) epsilon 9.9999999747524271E-7 rms : tensor<?x?x64xf32>
  // CHECK: tfm.fused_linear relu %{{.+}}, %{{.+}} bias(%{{.+}} : tensor<256xf32>) residual(%{{.+}} : tensor<?x?x256xf32>) : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x256xf32>
  %4 = tfm.fused_linear relu %x, %w bias(%wb : tensor<256xf32>) residual(%r2 : tensor<?x?x256xf32>)
      : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x256xf32>
  // CHECK: tfm.fused_linear none %{{.+}}, %{{.+}} : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x256xf32>
  %5 = tfm.fused_linear none %x, %w : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x256xf32>
  // CHECK: tfm.fused_linear gelu_tanh gated %{{.+}}, %{{.+}} bias(%{{.+}} : tensor<256xf32>) residual(%{{.+}} : tensor<?x?x128xf32>) : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x128xf32>
  %6 = tfm.fused_linear gelu_tanh gated %x, %w bias(%wb : tensor<256xf32>) residual(%r3 : tensor<?x?x128xf32>)
      : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x128xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x256xf32>, tensor<?x?x256xf32>, tensor<?x?x128xf32>
}

// Element types other than f32 are accepted throughout.
// CHECK-LABEL: func @half_precision
func.func @half_precision(%x: tensor<?x?x64xf16>, %w: tensor<64x64xf16>) -> tensor<?x?x64xf16> {
  // CHECK: tfm.linear %{{.+}}, %{{.+}} : (tensor<?x?x64xf16>, tensor<64x64xf16>) -> tensor<?x?x64xf16>
  %0 = tfm.linear %x, %w : (tensor<?x?x64xf16>, tensor<64x64xf16>) -> tensor<?x?x64xf16>
  return %0 : tensor<?x?x64xf16>
}

// CHECK-LABEL: func @select_and_masked_attention
func.func @select_and_masked_attention(%keep: tensor<?x1x1x?xi1>, %q: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %zero = arith.constant dense<0.0> : tensor<f32>
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  // CHECK: %[[M:.+]] = tfm.select %{{.+}}, %{{.+}}, %{{.+}} : tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32> -> tensor<?x1x1x?xf32>
  %m = tfm.select %keep, %zero, %ninf : tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32> -> tensor<?x1x1x?xf32>
  // CHECK: tfm.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<?x1x1x?xf32>) causal scale 2.500000e-01
  %o = tfm.attention %q, %q, %q mask(%m : tensor<?x1x1x?xf32>) causal scale 0.25
      : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// CHECK-LABEL: func @relative_position_bias
func.func @relative_position_bias(%t: tensor<32x8xf32>, %q: index, %k: index, %o: index)
    -> (tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>) {
  // CHECK: tfm.relative_position_bias %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} bidirectional max_distance 128 : tensor<32x8xf32> -> tensor<1x8x?x?xf32>
  %0 = tfm.relative_position_bias %t, %q, %k, %o bidirectional max_distance 128 : tensor<32x8xf32> -> tensor<1x8x?x?xf32>
  // CHECK: tfm.relative_position_bias %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} max_distance 64 : tensor<32x8xf32> -> tensor<1x8x?x?xf32>
  %1 = tfm.relative_position_bias %t, %q, %k, %o max_distance 64 : tensor<32x8xf32> -> tensor<1x8x?x?xf32>
  return %0, %1 : tensor<1x8x?x?xf32>, tensor<1x8x?x?xf32>
}

// CHECK-LABEL: func @logit_blocks
func.func @logit_blocks(%x: tensor<?x?x100xf32>, %y: tensor<3x128xf32>)
    -> (tensor<?x?x2x2xf32>, tensor<3x4x2xf32>) {
  // CHECK: tfm.logsumexp_blocks %{{.+}} block 64 : tensor<?x?x100xf32> -> tensor<?x?x2x2xf32>
  %0 = tfm.logsumexp_blocks %x block 64 : tensor<?x?x100xf32> -> tensor<?x?x2x2xf32>
  // CHECK: tfm.logsumexp_blocks %{{.+}} block 32 : tensor<3x128xf32> -> tensor<3x4x2xf32>
  %1 = tfm.logsumexp_blocks %y block 32 : tensor<3x128xf32> -> tensor<3x4x2xf32>
  return %0, %1 : tensor<?x?x2x2xf32>, tensor<3x4x2xf32>
}
