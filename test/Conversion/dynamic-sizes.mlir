// RUN: tfm-opt %s -split-input-file -tfm-layout-weights -convert-tfm-to-linalg="vector-width=16" -canonicalize -cse | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-layout-weights="precision=bf16" -convert-tfm-to-linalg="vector-width=16" -canonicalize -cse | FileCheck %s --check-prefix=BF16
// RUN: tfm-opt %s -split-input-file -tfm-layout-weights="precision=int8" -convert-tfm-to-linalg="vector-width=16" -canonicalize -cse | FileCheck %s --check-prefix=INT8

// The verifiers let a `?` agree with a static size, so a graph may leave
// `?` in a result (or an operand) where another type fixes the size. The
// lowering takes such sizes from the type where they are static: a `?`
// read as a number is kDynamic (INT64_MIN), and became a static slice,
// view or tensor.empty size (invalid IR) or a factor. Each case below
// lowers to valid IR (tfm-opt verifies it) with the static size.

// caller_rows to a result that leaves the row width `?` too: the width,
// 3 floats, is the weight's, so a chosen row takes 12 bytes; the view has
// `?` rows only, cast to the result.
// CHECK-LABEL: func.func @caller_rows_width(
// CHECK-SAME: %[[BIAS:[a-z0-9]+]]: memref<?xi8> {tfm.name = "output_bias"}) -> tensor<?x?xf32>
// CHECK: %[[BYTES:.+]] = memref.dim %[[BIAS]], %{{.+}} : memref<?xi8>
// CHECK: %[[ROWS:.+]] = arith.divui %[[BYTES]], %c12 : index
// CHECK: %[[VIEW:.+]] = memref.view %[[BIAS]][%{{.+}}][%[[ROWS]]] : memref<?xi8> to memref<?x3xf32>
// CHECK: %[[T:.+]] = bufferization.to_tensor %[[VIEW]] restrict : memref<?x3xf32>
// CHECK: %[[C:.+]] = tensor.cast %[[T]] : tensor<?x3xf32> to tensor<?x?xf32>
// CHECK: return %[[C]] : tensor<?x?xf32>
func.func @caller_rows_width() -> tensor<?x?xf32> {
  %b = tfm.weight "bias" : tensor<50x3xf32>
  %bs = tfm.caller_rows %b from "output_bias" : tensor<50x3xf32> -> tensor<?x?xf32>
  return %bs : tensor<?x?xf32>
}

// -----

// relative_position_bias to [1, ?, Sq, Sk]: the 4 heads are the table's.
// CHECK-LABEL: func.func @relative_position_bias_heads(
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<8x4xf32>, %[[Q:[a-z0-9]+]]: index, %[[K:[a-z0-9]+]]: index, %{{.+}}: index) -> tensor<1x?x?x?xf32>
// CHECK: %[[INIT:.+]] = tensor.empty(%[[Q]], %[[K]]) : tensor<1x4x?x?xf32>
// CHECK: %[[BIAS:.+]] = linalg.generic {{.+}} outs(%[[INIT]] : tensor<1x4x?x?xf32>)
// CHECK: tensor.extract %[[T]][%{{.+}}, %{{.+}}] : tensor<8x4xf32>
// CHECK: } -> tensor<1x4x?x?xf32>
// CHECK: %[[C:.+]] = tensor.cast %[[BIAS]] : tensor<1x4x?x?xf32> to tensor<1x?x?x?xf32>
// CHECK: return %[[C]]
func.func @relative_position_bias_heads(%t: tensor<8x4xf32>, %q: index, %k: index, %o: index) -> tensor<1x?x?x?xf32> {
  %0 = tfm.relative_position_bias %t, %q, %k, %o bidirectional max_distance 8 : tensor<8x4xf32> -> tensor<1x?x?x?xf32>
  return %0 : tensor<1x?x?x?xf32>
}

// -----

// split_heads to [?, ?, ?, ?]: 8 heads from the op, 512 / 8 = 64 from the
// input's width; expand and transpose, then a cast to the result.
// CHECK-LABEL: func.func @split_heads_dynamic_result(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<?x?x512xf32>) -> tensor<?x?x?x?xf32>
// CHECK: %[[E:.+]] = tensor.expand_shape %[[X]] {{\[}}[0], [1], [2, 3]] output_shape [%{{.+}}, %{{.+}}, 8, 64] : tensor<?x?x512xf32> into tensor<?x?x8x64xf32>
// CHECK: %[[INIT:.+]] = tensor.empty(%{{.+}}, %{{.+}}) : tensor<?x8x?x64xf32>
// CHECK: %[[Y:.+]] = linalg.transpose ins(%[[E]] : tensor<?x?x8x64xf32>) outs(%[[INIT]] : tensor<?x8x?x64xf32>) permutation = [0, 2, 1, 3]
// CHECK: %[[C:.+]] = tensor.cast %[[Y]] : tensor<?x8x?x64xf32> to tensor<?x?x?x?xf32>
// CHECK: return %[[C]]
func.func @split_heads_dynamic_result(%x: tensor<?x?x512xf32>) -> tensor<?x?x?x?xf32> {
  %y = tfm.split_heads %x into 8 heads : tensor<?x?x512xf32> -> tensor<?x?x?x?xf32>
  return %y : tensor<?x?x?x?xf32>
}

// -----

// Attention whose keys leave D `?` (the queries' is 64): the tiled
// kernel's row of keys has its D from tensor.dim, the queries' and values'
// stay 64.
// CHECK-LABEL: func.func @attention_key_width(
// CHECK-SAME: %[[Q:[a-z0-9]+]]: tensor<?x8x?x64xf32>, %[[K:[a-z0-9]+]]: tensor<?x8x?x?xf32>, %[[V:[a-z0-9]+]]: tensor<?x8x?x64xf32>)
// CHECK: tensor.extract_slice %[[Q]][%{{.+}}, %{{.+}}, 0, 0] [1, 1, %{{.+}}, 64] [1, 1, 1, 1] : tensor<?x8x?x64xf32> to tensor<?x64xf32>
// CHECK: %[[D:.+]] = tensor.dim %[[K]], %c3 : tensor<?x8x?x?xf32>
// CHECK: tensor.extract_slice %[[K]][%{{.+}}, %{{.+}}, 0, 0] [1, 1, %{{.+}}, %[[D]]] [1, 1, 1, 1] : tensor<?x8x?x?xf32> to tensor<?x?xf32>
// CHECK: tensor.extract_slice %[[V]][%{{.+}}, %{{.+}}, 0, 0] [1, 1, %{{.+}}, 64] [1, 1, 1, 1] : tensor<?x8x?x64xf32> to tensor<?x64xf32>
func.func @attention_key_width(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x?xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %o = tfm.attention %q, %k, %v scale 0.125 : tensor<?x8x?x64xf32>, tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32> -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// -----

// x leaves K `?` (the weight's is 30). fp32 panels read x as it is; bf16
// and int8 panels first cast x to the panels' K, since its rounded or
// quantized form is sized by K.
// CHECK-LABEL: func.func @linear_dynamic_k(
// CHECK-NOT: tensor.cast
// CHECK: return
// BF16-LABEL: func.func @linear_dynamic_k(
// BF16-SAME: %[[X:[a-z0-9]+]]: tensor<?x?xf32>) -> tensor<?x64xf32>
// BF16: %[[XK:.+]] = tensor.cast %[[X]] : tensor<?x?xf32> to tensor<?x30xf32>
// BF16: memref.view {{.+}} to memref<1x15x128xbf16>
// BF16: tensor.empty(%{{.+}}) : tensor<?x30xf32>
// BF16: tensor.extract_slice %[[XK]][%{{.+}}, 0] [1, 30] [1, 1] : tensor<?x30xf32> to tensor<1x30xf32>
// BF16: arith.truncf %{{.+}} : f32 to bf16
// INT8-LABEL: func.func @linear_dynamic_k(
// INT8-SAME: %[[X:[a-z0-9]+]]: tensor<?x?xf32>) -> tensor<?x64xf32>
// INT8: %[[XK:.+]] = tensor.cast %[[X]] : tensor<?x?xf32> to tensor<?x30xf32>
// INT8: tensor.empty(%{{.+}}) : tensor<?x32xi8>
// INT8: vector.transfer_read %[[XK]][%{{.+}}, %c0], %{{.+}} : tensor<?x30xf32>, vector<16xf32>
func.func @linear_dynamic_k(%x: tensor<?x?xf32>) -> tensor<?x64xf32> {
  %w = tfm.weight "w" : tensor<64x30xf32>
  %y = tfm.linear %x, %w : (tensor<?x?xf32>, tensor<64x30xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// The same for a gated linear.
// CHECK-LABEL: func.func @gated_linear_dynamic_k(
// CHECK-NOT: tensor.cast
// CHECK: return
// BF16-LABEL: func.func @gated_linear_dynamic_k(
// BF16-SAME: %[[X:[a-z0-9]+]]: tensor<?x?xf32>) -> tensor<?x64xf32>
// BF16: %[[XK:.+]] = tensor.cast %[[X]] : tensor<?x?xf32> to tensor<?x30xf32>
// BF16: tensor.empty(%{{.+}}) : tensor<?x30xf32>
// BF16: tensor.extract_slice %[[XK]][%{{.+}}, 0] [1, 30] [1, 1] : tensor<?x30xf32> to tensor<1x30xf32>
// INT8-LABEL: func.func @gated_linear_dynamic_k(
// INT8-SAME: %[[X:[a-z0-9]+]]: tensor<?x?xf32>) -> tensor<?x64xf32>
// INT8: %[[XK:.+]] = tensor.cast %[[X]] : tensor<?x?xf32> to tensor<?x30xf32>
// INT8: tensor.empty(%{{.+}}) : tensor<?x32xi8>
// INT8: vector.transfer_read %[[XK]][%{{.+}}, %c0], %{{.+}} : tensor<?x30xf32>, vector<16xf32>
func.func @gated_linear_dynamic_k(%x: tensor<?x?xf32>) -> tensor<?x64xf32> {
  %w = tfm.weight "w" : tensor<128x30xf32>
  %y = tfm.fused_linear silu gated %x, %w : tensor<?x?xf32>, tensor<128x30xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// And for panels the caller chose (caller_rows): K = 16 from the table.
// CHECK-LABEL: func.func @chosen_dynamic_k(
// CHECK: memref.view {{.+}} to memref<?x16x64xf32>
// CHECK-NOT: tensor.cast
// CHECK: return
// BF16-LABEL: func.func @chosen_dynamic_k(
// BF16-SAME: %[[X:[a-z0-9]+]]: tensor<?x?xf32>, %{{.+}}: memref<?xi8> {tfm.name = "output_panels"})
// BF16: %[[XK:.+]] = tensor.cast %[[X]] : tensor<?x?xf32> to tensor<?x16xf32>
// BF16: memref.view {{.+}} to memref<?x8x128xbf16>
// BF16: tensor.extract_slice %[[XK]][%{{.+}}, 0] [1, 16] [1, 1] : tensor<?x16xf32> to tensor<1x16xf32>
// INT8-LABEL: func.func @chosen_dynamic_k(
// INT8-SAME: %[[X:[a-z0-9]+]]: tensor<?x?xf32>, %{{.+}}: memref<?xi8> {tfm.name = "output_panels"})
// INT8: %[[XK:.+]] = tensor.cast %[[X]] : tensor<?x?xf32> to tensor<?x16xf32>
// INT8: memref.view {{.+}} to memref<?x4x256xi8>
// INT8: tensor.empty(%{{.+}}) : tensor<?x16xi8>
// INT8: vector.transfer_read %[[XK]][%{{.+}}, %c0], %{{.+}} : tensor<?x16xf32>, vector<16xf32>
func.func @chosen_dynamic_k(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %w = tfm.weight "table" : tensor<50x16xf32>
  %ws = tfm.caller_rows %w from "output_panels" : tensor<50x16xf32> -> tensor<?x16xf32>
  %y = tfm.linear %x, %ws : (tensor<?x?xf32>, tensor<?x16xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// Heads copied sentence by sentence where the result knows the sequence
// length and the input does not: each sentence's slice has the shape of the
// copy's own tensor (sizes from the input), and the copy is cast to the
// result at the end.
// CHECK-LABEL: func.func @split_heads_static_length(
// CHECK: tensor.extract_slice %{{.+}} [1, 8, %{{.+}}, 64] [1, 1, 1, 1] : tensor<?x8x?x64xf32> to tensor<8x?x64xf32>
// CHECK: %[[Y:.+]] = tensor.cast %{{.+}} : tensor<?x8x?x64xf32> to tensor<?x8x5x64xf32>
// CHECK: return %[[Y]]
func.func @split_heads_static_length(%x: tensor<?x?x512xf32>) -> tensor<?x8x5x64xf32> {
  %y = tfm.split_heads %x into 8 heads : tensor<?x?x512xf32> -> tensor<?x8x5x64xf32>
  return %y : tensor<?x8x5x64xf32>
}

// -----

// CHECK-LABEL: func.func @merge_heads_static_length(
// CHECK: tensor.extract_slice %{{.+}} [1, %{{.+}}, 512] [1, 1, 1] : tensor<?x?x512xf32> to tensor<?x512xf32>
// CHECK: %[[Y:.+]] = tensor.cast %{{.+}} : tensor<?x?x512xf32> to tensor<?x5x512xf32>
// CHECK: return %[[Y]]
func.func @merge_heads_static_length(%x: tensor<?x8x?x64xf32>) -> tensor<?x5x512xf32> {
  %y = tfm.merge_heads %x : tensor<?x8x?x64xf32> -> tensor<?x5x512xf32>
  return %y : tensor<?x5x512xf32>
}
