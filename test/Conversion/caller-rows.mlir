// RUN: tfm-opt %s -tfm-layout-weights | FileCheck %s --check-prefix=LAYOUT
// RUN: tfm-opt %s -tfm-layout-weights -convert-tfm-to-linalg | FileCheck %s --check-prefix=LOWER
// RUN: tfm-opt %s -tfm-layout-weights="precision=int8" -convert-tfm-to-linalg | FileCheck %s --check-prefix=INT8

// An output projection over the vocabulary rows its caller chose (a
// shortlist). The weights file keeps all 50 rows, as panels for the
// caller to choose from; the module records where they are, and where
// the bias is (its offset, and 0: stored plain).
// LAYOUT: module attributes {tfm.caller_rows = {output_bias = array<i64: 4096, 0>, output_panels = array<i64: 0, 64>}
// LAYOUT: %[[W:.+]] = tfm.weight "table" at 0 {tfm.panel_width = 64 : i64} : tensor<50x16xf32>
// LAYOUT: tfm.caller_rows %[[W]] from "output_panels"

// Lowered, the function takes the chosen rows as bytes after its other
// arguments: as many whole panels of 16 x 64 floats (4096 bytes) as
// output_panels holds, in parallel over them; every column is kept (no
// cut to N), and the bias is as many floats as output_bias holds.
// LOWER-LABEL: func.func @chosen(
// LOWER-SAME: %{{.+}}: memref<?xi8> {tfm.name = "weights"}, %{{.+}}: tensor<?x?x16xf32>, %[[PANELS:.+]]: memref<?xi8> {tfm.name = "output_panels"}, %[[BIAS:.+]]: memref<?xi8> {tfm.name = "output_bias"})
// LOWER: %[[BIASBYTES:.+]] = memref.dim %[[BIAS]], %{{.+}} : memref<?xi8>
// LOWER: %[[FLOATS:.+]] = arith.divui %[[BIASBYTES]], %c4
// LOWER: memref.view %[[BIAS]][%{{.+}}][%[[FLOATS]]] : memref<?xi8> to memref<1x?xf32>
// LOWER: %[[BYTES:.+]] = memref.dim %[[PANELS]], %{{.+}} : memref<?xi8>
// LOWER: %[[COUNT:.+]] = arith.divui %[[BYTES]], %c4096
// LOWER: memref.view %[[PANELS]][%{{.+}}][%[[COUNT]]] : memref<?xi8> to memref<?x16x64xf32>
// LOWER: scf.forall (%{{.+}}) in (%{{.+}}) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<?x?xf32>)
// LOWER-NOT: tensor.extract_slice %{{.+}}[0, 0]
// LOWER: return

// int8: each panel is 4 quads of k by 64 features (1024 bytes) and 64
// scales and sums (512 bytes) in the weights file, so a chosen panel takes
// 1536 bytes; the scales and the sums of all chosen features follow the
// chosen panels.
// INT8-LABEL: func.func @chosen(
// INT8-SAME: %[[PANELS:[a-z0-9]+]]: memref<?xi8> {tfm.name = "output_panels"}
// INT8: %[[BYTES:.+]] = memref.dim %[[PANELS]], %{{.+}} : memref<?xi8>
// INT8: %[[COUNT:.+]] = arith.divui %[[BYTES]], %c1536
// INT8: memref.view %[[PANELS]][%{{.+}}][%[[COUNT]]] : memref<?xi8> to memref<?x4x256xi8>
// INT8: %[[FEATURES:.+]] = arith.muli %[[COUNT]], %c64
// INT8: %[[QUADS:.+]] = arith.muli %[[COUNT]], %c1024
// INT8: %[[SCALES:.+]] = arith.addi %{{.+}}, %[[QUADS]]
// INT8: %[[SUMOFFSET:.+]] = arith.muli %[[FEATURES]], %c4
// INT8: %[[SUMS:.+]] = arith.addi %[[SCALES]], %[[SUMOFFSET]]
// INT8: memref.view %[[PANELS]][%[[SCALES]]][%[[FEATURES]]] : memref<?xi8> to memref<?xf32>
// INT8: memref.view %[[PANELS]][%[[SUMS]]][%[[FEATURES]]] : memref<?xi8> to memref<?xi32>
func.func @chosen(%x: tensor<?x?x16xf32>) -> tensor<?x?x?xf32> {
  %w = tfm.weight "table" : tensor<50x16xf32>
  %ws = tfm.caller_rows %w from "output_panels" : tensor<50x16xf32> -> tensor<?x16xf32>
  %b = tfm.weight "bias" : tensor<1x50xf32>
  %bs = tfm.caller_rows %b from "output_bias" {axis = 1 : i64} : tensor<1x50xf32> -> tensor<1x?xf32>
  %bc = tensor.collapse_shape %bs [[0, 1]] : tensor<1x?xf32> into tensor<?xf32>
  %y = tfm.linear %x, %ws, %bc : (tensor<?x?x16xf32>, tensor<?x16xf32>, tensor<?xf32>) -> tensor<?x?x?xf32>
  return %y : tensor<?x?x?xf32>
}
