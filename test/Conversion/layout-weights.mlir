// RUN: tfm-opt %s -tfm-layout-weights | FileCheck %s --check-prefix=LAYOUT
// RUN: tfm-opt %s -tfm-layout-weights -convert-tfm-to-linalg | FileCheck %s --check-prefix=LOWER

// Weights are laid end to end in order of first use, 64-byte aligned; a
// matrix of 50 rows is stored with 14 zero rows (64), so linears over it
// tile into whole 16-row tiles; the same tensor used twice is stored once.
// LAYOUT: module attributes {tfm.weights_layout = [{name = "table", offset = 0 : i64, padded_rows = 64 : i64, shape = array<i64: 50, 16>}, {name = "bias", offset = 4096 : i64, shape = array<i64: 50>}], tfm.weights_size = 4296 : i64}
// LAYOUT: tfm.weight "table" at 0 {tfm.padded_rows = 64 : i64} : tensor<50x16xf32>
// LAYOUT: tfm.weight "bias" at 4096 : tensor<50xf32>

// The lowered linear multiplies by all 64 rows and keeps the first 50
// results; the function takes the weights file as its first argument.
// LOWER-LABEL: func.func @logits(
// LOWER-SAME: %[[W:.+]]: memref<?xi8> {tfm.name = "weights"}
// LOWER: %[[VIEW:.+]] = memref.view %[[W]][%{{.+}}][] : memref<?xi8> to memref<64x16xf32>
// LOWER: %[[T:.+]] = bufferization.to_tensor %[[VIEW]] restrict : memref<64x16xf32>
// LOWER: linalg.matmul_transpose_b ins(%{{.+}}, %[[T]] : tensor<?x16xf32>, tensor<64x16xf32>)
// LOWER: tensor.extract_slice %{{.+}}[0, 0] [%{{.+}}, 50] [1, 1] : tensor<?x64xf32> to tensor<?x50xf32>
func.func @logits(%x: tensor<?x?x16xf32>) -> tensor<?x?x50xf32> {
  %w = tfm.weight "table" : tensor<50x16xf32>
  %b = tfm.weight "bias" : tensor<50xf32>
  %y = tfm.linear %x, %w, %b : (tensor<?x?x16xf32>, tensor<50x16xf32>, tensor<50xf32>) -> tensor<?x?x50xf32>
  return %y : tensor<?x?x50xf32>
}

// LAYOUT-LABEL: func.func @again
// LAYOUT: tfm.weight "table" at 0 {tfm.padded_rows = 64 : i64} : tensor<50x16xf32>
// LOWER-LABEL: func.func @again
func.func @again(%ids: tensor<?x?xi32>) -> tensor<?x?x16xf32> {
  %w = tfm.weight "table" : tensor<50x16xf32>
  %e = tfm.embedding %w[%ids] : tensor<50x16xf32>, tensor<?x?xi32> -> tensor<?x?x16xf32>
  return %e : tensor<?x?x16xf32>
}
