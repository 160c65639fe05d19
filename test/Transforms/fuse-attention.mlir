// RUN: tfm-opt %s -split-input-file -tfm-fuse-attention | FileCheck %s

// Encoder self-attention as the importer writes it: scale on the scores,
// key-padding mask, softmax over keys.
// CHECK-LABEL: func @padding_mask
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{.+}}, %[[K:[a-z0-9]+]]: {{.+}}, %[[V:[a-z0-9]+]]: {{.+}}, %[[L:[a-z0-9]+]]: tensor<?xi32>)
// CHECK-NEXT: %[[O:.+]] = tfm.attention %[[Q]], %[[K]], %[[V]] lengths(%[[L]] : tensor<?xi32>) scale 2.500000e-01 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
// CHECK-NEXT: return %[[O]]
func.func @padding_mask(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %len: tensor<?xi32>) -> tensor<?x4x?x16xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.scale %s by 0.25 : tensor<?x4x?x?xf32>
  %s2 = tfm.key_padding_mask %s1, %len : tensor<?x4x?x?xf32>, tensor<?xi32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Negative twin: the scores are also returned, so fusing would lose them.
// CHECK-LABEL: func @scores_have_another_user
// CHECK-NOT: tfm.attention
// CHECK: tfm.softmax
// CHECK: tfm.matmul
func.func @scores_have_another_user(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %len: tensor<?xi32>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x?xf32>) {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.scale %s by 0.25 : tensor<?x4x?x?xf32>
  %s2 = tfm.key_padding_mask %s1, %len : tensor<?x4x?x?xf32>, tensor<?xi32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o, %s1 : tensor<?x4x?x16xf32>, tensor<?x4x?x?xf32>
}

// -----

// Decoder self-attention over the KV cache: causal mask op, one query row.
// CHECK-LABEL: func @causal_over_cache
// CHECK: %[[KC:.+]] = tfm.cache_update
// CHECK: %[[KS:.+]] = tfm.slice %[[KC]]
// CHECK: %[[VS:.+]] = tfm.slice
// CHECK-NEXT: %[[O:.+]] = tfm.attention %{{.+}}, %[[KS]], %[[VS]] causal scale 2.500000e-01 : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x16xf32>
// CHECK-NEXT: return %[[O]]
func.func @causal_over_cache(%q: tensor<?x4x1x16xf32>, %k: tensor<?x4x1x16xf32>, %v: tensor<?x4x1x16xf32>,
                             %kc: tensor<?x4x?x16xf32>, %vc: tensor<?x4x?x16xf32>, %step: index, %len: index) -> tensor<?x4x1x16xf32> {
  %c0 = arith.constant 0 : index
  %k1 = tfm.cache_update %k into %kc[%step] axis 2 : tensor<?x4x1x16xf32> into tensor<?x4x?x16xf32>
  %v1 = tfm.cache_update %v into %vc[%step] axis 2 : tensor<?x4x1x16xf32> into tensor<?x4x?x16xf32>
  %ks = tfm.slice %k1[%c0, %len] axis 2 : tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  %vs = tfm.slice %v1[%c0, %len] axis 2 : tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  %s = tfm.matmul %q, %ks {transpose_rhs = true} : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x?xf32>
  %s1 = tfm.scale %s by 0.25 : tensor<?x4x1x?xf32>
  %s2 = tfm.causal_mask %s1 : tensor<?x4x1x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x1x?xf32>
  %o = tfm.matmul %p, %vs : tensor<?x4x1x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x16xf32>
  return %o : tensor<?x4x1x16xf32>
}

// -----

// A batch that sentences join: the start mask of each row's history
// becomes the attention's starts.
// CHECK-LABEL: func @key_starts
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<?xi32>)
// CHECK-NEXT: %[[O:.+]] = tfm.attention %{{.+}}, %{{.+}}, %{{.+}} starts(%[[B]] : tensor<?xi32>) causal scale 2.500000e-01
// CHECK-NEXT: return %[[O]]
func.func @key_starts(%q: tensor<?x4x1x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %starts: tensor<?xi32>) -> tensor<?x4x1x16xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x?xf32>
  %s1 = tfm.scale %s by 0.25 : tensor<?x4x1x?xf32>
  %s2 = tfm.key_start_mask %s1, %starts : tensor<?x4x1x?xf32>, tensor<?xi32>
  %s3 = tfm.causal_mask %s2 : tensor<?x4x1x?xf32>
  %p = tfm.softmax %s3 axis 3 : tensor<?x4x1x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x1x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x16xf32>
  return %o : tensor<?x4x1x16xf32>
}

// -----

// Negative twin: the probabilities have another user.
// CHECK-LABEL: func @probabilities_have_another_user
// CHECK-NOT: tfm.attention
// CHECK: tfm.causal_mask
func.func @probabilities_have_another_user(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x?xf32>) {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s2 = tfm.causal_mask %s : tensor<?x4x?x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o, %p : tensor<?x4x?x16xf32>, tensor<?x4x?x?xf32>
}

// -----

// Both masks, padding after causal, and a positive scale after both: -inf
// masks commute with it. No scale op at all would give scale 1.
// CHECK-LABEL: func @both_masks_scale_last
// CHECK-NEXT: %[[O:.+]] = tfm.attention %{{.+}}, %{{.+}}, %{{.+}} lengths(%{{.+}} : tensor<?xi32>) causal scale 1.250000e-01
// CHECK-NEXT: return %[[O]]
func.func @both_masks_scale_last(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %len: tensor<?xi32>) -> tensor<?x4x?x16xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.causal_mask %s : tensor<?x4x?x?xf32>
  %s2 = tfm.key_padding_mask %s1, %len : tensor<?x4x?x?xf32>, tensor<?xi32>
  %s3 = tfm.scale %s2 by 0.125 : tensor<?x4x?x?xf32>
  %p = tfm.softmax %s3 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Negative twin: a negative scale after a -inf mask turns it into +inf.
// CHECK-LABEL: func @negative_scale_after_mask
// CHECK-NOT: tfm.attention
// CHECK: tfm.softmax
func.func @negative_scale_after_mask(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.causal_mask %s : tensor<?x4x?x?xf32>
  %s3 = tfm.scale %s1 by -0.125 : tensor<?x4x?x?xf32>
  %p = tfm.softmax %s3 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Scale applied to Q before the product, as Hugging Face's Marian does.
// CHECK-LABEL: func @scale_on_query
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{.+}}, %[[K:[a-z0-9]+]]: {{.+}}, %[[V:[a-z0-9]+]]: {{.+}})
// CHECK-NEXT: %[[O:.+]] = tfm.attention %[[Q]], %[[K]], %[[V]] scale 2.500000e-01
// CHECK-NEXT: return %[[O]]
func.func @scale_on_query(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %qs = tfm.scale %q by 0.25 : tensor<?x4x?x16xf32>
  %s = tfm.matmul %qs, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Twin: the scaled Q has another user; it stays, and becomes the query.
// CHECK-LABEL: func @scaled_query_has_another_user
// CHECK-NEXT: %[[QS:.+]] = tfm.scale
// CHECK-NEXT: %[[O:.+]] = tfm.attention %[[QS]], %{{.+}}, %{{.+}} scale 1.000000e+00
// CHECK-NEXT: return %[[O]], %[[QS]]
func.func @scaled_query_has_another_user(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) {
  %qs = tfm.scale %q by 0.25 : tensor<?x4x?x16xf32>
  %s = tfm.matmul %qs, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o, %qs : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>
}

// -----

// Scale on K, as a multiply by a splat constant.
// CHECK-LABEL: func @scale_on_key
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{.+}}, %[[K:[a-z0-9]+]]: {{.+}}, %[[V:[a-z0-9]+]]: {{.+}})
// CHECK: %[[O:.+]] = tfm.attention %[[Q]], %[[K]], %[[V]] scale 2.500000e-01
// CHECK-NEXT: return %[[O]]
func.func @scale_on_key(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %c = arith.constant dense<0.25> : tensor<f32>
  %ks = tfm.mul %k, %c : tensor<?x4x?x16xf32>, tensor<f32> -> tensor<?x4x?x16xf32>
  %s = tfm.matmul %q, %ks {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Scores divided by sqrt(d_k) = 8.
// CHECK-LABEL: func @divide_by_sqrt_dk
// CHECK: tfm.attention %{{.+}}, %{{.+}}, %{{.+}} scale 1.250000e-01
func.func @divide_by_sqrt_dk(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>) -> tensor<?x4x?x64xf32> {
  %c = arith.constant dense<8.0> : tensor<f32>
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.div %s, %c : tensor<?x4x?x?xf32>, tensor<f32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s1 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x64xf32> -> tensor<?x4x?x64xf32>
  return %o : tensor<?x4x?x64xf32>
}

// -----

// Negative twin: dividing by a tensor that is not a constant is no scale.
// CHECK-LABEL: func @divide_by_tensor
// CHECK-NOT: tfm.attention
func.func @divide_by_tensor(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>, %c: tensor<f32>) -> tensor<?x4x?x64xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.div %s, %c : tensor<?x4x?x?xf32>, tensor<f32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s1 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x64xf32> -> tensor<?x4x?x64xf32>
  return %o : tensor<?x4x?x64xf32>
}

// -----

// Additive mask [B, 1, 1, Sk] (0 / -1e9), broadcast over heads and queries.
// CHECK-LABEL: func @additive_mask
// CHECK-SAME: %[[M:[a-z0-9]+]]: tensor<?x1x1x?xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<?x1x1x?xf32>) scale 2.500000e-01
// CHECK-NEXT: return %[[O]]
func.func @additive_mask(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %m: tensor<?x1x1x?xf32>) -> tensor<?x4x?x16xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.scale %s by 0.25 : tensor<?x4x?x?xf32>
  %s2 = tfm.add %m, %s1 : tensor<?x1x1x?xf32>, tensor<?x4x?x?xf32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Negative twin: the mask broadcasts the wrong way, growing one-query scores
// [B, 4, 1, Sk] to [B, 4, 7, Sk]: the result would not mean the same.
// CHECK-LABEL: func @mask_broadcasts_the_wrong_way
// CHECK-NOT: tfm.attention
func.func @mask_broadcasts_the_wrong_way(%q: tensor<?x4x1x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %m: tensor<?x1x7x?xf32>) -> tensor<?x4x7x16xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x?xf32>
  %s2 = tfm.add %s, %m : tensor<?x4x1x?xf32>, tensor<?x1x7x?xf32> -> tensor<?x4x7x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x7x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x7x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x7x16xf32>
  return %o : tensor<?x4x7x16xf32>
}

// -----

// Negative twin: a scale after an additive mask would scale the mask too.
// CHECK-LABEL: func @scale_after_additive_mask
// CHECK-NOT: tfm.attention
func.func @scale_after_additive_mask(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %m: tensor<?x1x1x?xf32>) -> tensor<?x4x?x16xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.add %s, %m : tensor<?x4x?x?xf32>, tensor<?x1x1x?xf32> -> tensor<?x4x?x?xf32>
  %s2 = tfm.scale %s1 by 0.25 : tensor<?x4x?x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// select(keep, scores, -inf) becomes the additive mask select(keep, 0, -inf).
// CHECK-LABEL: func @select_mask
// CHECK-SAME: %[[KEEP:[a-z0-9]+]]: tensor<?x1x1x?xi1>
// CHECK-DAG: %[[ZERO:.+]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[NINF:.+]] = arith.constant dense<0xFF800000> : tensor<f32>
// CHECK: %[[M:.+]] = tfm.select %[[KEEP]], %[[ZERO]], %[[NINF]] : tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32> -> tensor<?x1x1x?xf32>
// CHECK-NEXT: %[[O:.+]] = tfm.attention %{{.+}}, %{{.+}}, %{{.+}} mask(%[[M]] : tensor<?x1x1x?xf32>) scale 2.500000e-01
// CHECK-NEXT: return %[[O]]
func.func @select_mask(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %keep: tensor<?x1x1x?xi1>) -> tensor<?x4x?x16xf32> {
  %ninf = arith.constant dense<0xFF800000> : tensor<f32>
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s1 = tfm.scale %s by 0.25 : tensor<?x4x?x?xf32>
  %s2 = tfm.select %keep, %s1, %ninf : tensor<?x1x1x?xi1>, tensor<?x4x?x?xf32>, tensor<f32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Negative twin: select with a finite fill replaces the scores of a fully
// masked row by equal values (uniform weights); an additive mask would not.
// CHECK-LABEL: func @select_with_finite_fill
// CHECK-NOT: tfm.attention
func.func @select_with_finite_fill(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>, %v: tensor<?x4x?x16xf32>, %keep: tensor<?x1x1x?xi1>) -> tensor<?x4x?x16xf32> {
  %fill = arith.constant dense<-1.0e9> : tensor<f32>
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x?xf32>
  %s2 = tfm.select %keep, %s, %fill : tensor<?x1x1x?xi1>, tensor<?x4x?x?xf32>, tensor<f32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Batched over heads: [B·H, S, Dh], rank 3.
// CHECK-LABEL: func @batched_over_heads
// CHECK: tfm.attention %{{.+}}, %{{.+}}, %{{.+}} lengths(%{{.+}} : tensor<?xi32>) scale 1.250000e-01 : tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
func.func @batched_over_heads(%q: tensor<?x?x64xf32>, %k: tensor<?x?x64xf32>, %v: tensor<?x?x32xf32>, %len: tensor<?xi32>) -> tensor<?x?x32xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x?xf32>
  %s1 = tfm.scale %s by 0.125 : tensor<?x?x?xf32>
  %s2 = tfm.key_padding_mask %s1, %len : tensor<?x?x?xf32>, tensor<?xi32>
  %p = tfm.softmax %s2 axis 2 : tensor<?x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x?x?xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// -----

// Negative twin: softmax over queries (axis 1), not keys.
// CHECK-LABEL: func @softmax_over_queries
// CHECK-NOT: tfm.attention
func.func @softmax_over_queries(%q: tensor<?x?x64xf32>, %k: tensor<?x?x64xf32>, %v: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x?x64xf32>, tensor<?x?x64xf32> -> tensor<?x?x?xf32>
  %p = tfm.softmax %s axis 1 : tensor<?x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x?x?xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %o : tensor<?x?x32xf32>
}

// -----

// Negative twin: K given pre-transposed [.., D, Sk]: scores are not Q·Kᵀ in
// the layout tfm.attention takes.
// CHECK-LABEL: func @key_not_transposed
// CHECK-NOT: tfm.attention
func.func @key_not_transposed(%q: tensor<?x4x?x16xf32>, %kt: tensor<?x4x16x?xf32>, %v: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %s = tfm.matmul %q, %kt : tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32> -> tensor<?x4x?x?xf32>
  %p = tfm.softmax %s axis 3 : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Negative twin: rank 2 has no batch dimension for tfm.attention.
// CHECK-LABEL: func @unbatched
// CHECK-NOT: tfm.attention
func.func @unbatched(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %v: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x?xf32>
  %p = tfm.softmax %s axis 1 : tensor<?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x?xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return %o : tensor<?x16xf32>
}

// -----

// The decoder's self-attention over each beam's history: keys and values
// read through the same rows become the attention's key rows, read in
// place; the gathers go.
// CHECK-LABEL: func @history
// CHECK-SAME: (%[[Q:[a-z0-9]+]]: {{.+}}, %[[CK:[a-z0-9]+]]: {{.+}}, %[[CV:[a-z0-9]+]]: {{.+}}, %[[R:[a-z0-9]+]]: tensor<?x?xi32>)
// CHECK-NOT: tfm.cache_rows
// CHECK: tfm.attention %[[Q]], %[[CK]], %[[CV]] key_rows(%[[R]] : tensor<?x?xi32>) causal scale 2.500000e-01
// CHECK-NOT: tfm.cache_rows
func.func @history(%q: tensor<?x4x1x16xf32>, %ck: tensor<?x4x?x16xf32>, %cv: tensor<?x4x?x16xf32>, %rows: tensor<?x?xi32>) -> tensor<?x4x1x16xf32> {
  %k = tfm.cache_rows %ck[%rows] axis 2 : tensor<?x4x?x16xf32>, tensor<?x?xi32> -> tensor<?x4x?x16xf32>
  %v = tfm.cache_rows %cv[%rows] axis 2 : tensor<?x4x?x16xf32>, tensor<?x?xi32> -> tensor<?x4x?x16xf32>
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x?xf32>
  %s1 = tfm.scale %s by 0.25 : tensor<?x4x1x?xf32>
  %s2 = tfm.causal_mask %s1 : tensor<?x4x1x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x1x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x1x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x16xf32>
  return %o : tensor<?x4x1x16xf32>
}

// -----

// Negative twin: keys and values through different rows: the gathers stay
// and the attention reads what they made.
// CHECK-LABEL: func @history_rows_differ
// CHECK: %[[K:.+]] = tfm.cache_rows
// CHECK: %[[V:.+]] = tfm.cache_rows
// CHECK: tfm.attention %{{.+}}, %[[K]], %[[V]] causal scale
func.func @history_rows_differ(%q: tensor<?x4x1x16xf32>, %ck: tensor<?x4x?x16xf32>, %cv: tensor<?x4x?x16xf32>, %rk: tensor<?x?xi32>, %rv: tensor<?x?xi32>) -> tensor<?x4x1x16xf32> {
  %k = tfm.cache_rows %ck[%rk] axis 2 : tensor<?x4x?x16xf32>, tensor<?x?xi32> -> tensor<?x4x?x16xf32>
  %v = tfm.cache_rows %cv[%rv] axis 2 : tensor<?x4x?x16xf32>, tensor<?x?xi32> -> tensor<?x4x?x16xf32>
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x4x1x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x?xf32>
  %s1 = tfm.scale %s by 0.25 : tensor<?x4x1x?xf32>
  %s2 = tfm.causal_mask %s1 : tensor<?x4x1x?xf32>
  %p = tfm.softmax %s2 axis 3 : tensor<?x4x1x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x4x1x?xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x1x16xf32>
  return %o : tensor<?x4x1x16xf32>
}
