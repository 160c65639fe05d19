// RUN: tfm-opt %s -tfm-layout-weights="panel-width=32" -convert-tfm-to-linalg="vector-width=8" -canonicalize | FileCheck %s

// The panel kernel for AVX2 (vectors of 8, panels of 32): K = 150, N = 70
// (3 panels, the last part padding). With at most 8 rows, K goes in blocks
// of 64 (64, 64, 22): tiles of 2 rows by the whole panel (8 accumulators),
// then single rows; a tile's sums start at zero in the first block, else
// from what the block before stored, and get the epilogue after the last
// block, else are stored as they are (no fill of the output, no epilogue
// computed and thrown away). With more rows, blocks of 128 (128, 22),
// likewise: tiles of 6 rows by 2 vectors (12 accumulators) in two column
// groups, then pairs of rows by the whole panel, then single rows. The
// few-row tiles prefetch the panel 64 rows (a block) ahead of each row they
// read, past the panel's end in the next one (the last panel: its own last
// row), into L1. Up to 64 rows the first row tile of each block prefetches
// the lines of the next panel (the last panel: itself) matching the lines
// it reads, into L2, and the other tiles nothing; with more than 64 rows
// nothing is prefetched.
// CHECK-LABEL: func.func @ffn(
// CHECK-NOT: linalg.fill
// CHECK: %[[VIEW:.+]] = memref.view %{{.+}} to memref<3x150x32xf32>
// CHECK: scf.forall (%[[P:.+]]) in (3) shared_outs(%[[OUT:.+]] = %{{.+}})
// CHECK: %[[NEXT0:.+]] = arith.addi %[[P]], %c1
// CHECK: %[[NEXT:.+]] = arith.minui %[[NEXT0]], %c2
// CHECK: %[[FEW:.+]] = arith.cmpi ule, %{{.+}}, %c8
// CHECK: scf.if %[[FEW]] -> (tensor<?x32xf32>) {
// CHECK: scf.for %[[K0:.+]] = %c0 to %c150 step %c64 iter_args(%{{.+}} = %[[TILE:[^)]+]])
// CHECK: %[[K1:.+]] = arith.minui %{{.+}}, %c150
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[K0]], %c0
// CHECK: %[[LAST:.+]] = arith.cmpi eq, %[[K1]], %c150
// CHECK: scf.for %[[M0:.+]] = %c0 to %{{.+}} step %c2 iter_args(%[[SUMS:.+]] = %{{.+}})
// CHECK: %[[START:.+]]:8 = scf.if %[[FIRST]] -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-NEXT: scf.yield %[[ZERO:.+]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]], %[[ZERO]] :
// CHECK-NEXT: } else {
// CHECK-NEXT: vector.transfer_read %[[SUMS]][%[[M0]], %c0]
// CHECK: %[[DOT:.+]]:8 = scf.for %[[KF:.+]] = %[[K0]] to %[[K1]] step %c1 iter_args(%{{.+}} = %[[START]]#0, {{[^)]+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: %[[AHEAD:.+]] = arith.addi %[[KF]], %c64
// CHECK: %[[INSIDE:.+]] = arith.cmpi ult, %[[AHEAD]], %c150
// CHECK: %[[PANEL:.+]] = arith.select %[[INSIDE]], %[[P]], %[[NEXT]]
// CHECK: %[[WRAPPED:.+]] = arith.addi %[[KF]], %c-86
// CHECK: %[[CLAMPED:.+]] = arith.minui %[[WRAPPED]], %c149
// CHECK: %[[ROW:.+]] = arith.select %[[INSIDE]], %[[AHEAD]], %[[CLAMPED]]
// CHECK: memref.prefetch %[[VIEW]][%[[PANEL]], %[[ROW]], %c0], read, locality<3>, data : memref<3x150x32xf32>
// CHECK-NEXT: memref.prefetch %[[VIEW]][%[[PANEL]], %[[ROW]], %c16], read, locality<3>, data : memref<3x150x32xf32>
// CHECK: vector.fma
// CHECK: %[[DONE:.+]]:8 = scf.if %[[LAST]] -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK: %[[Y:.+]] = arith.addf %[[DOT]]#0, %{{.+}} : vector<8xf32>
// CHECK: %[[POSITIVE:.+]] = arith.cmpf ugt, %[[Y]], %{{.+}} : vector<8xf32>
// CHECK: %[[RELU:.+]] = arith.select %[[POSITIVE]], %[[Y]], %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK: %[[WITH:.+]] = arith.addf %[[RELU]], %{{.+}} : vector<8xf32>
// CHECK: scf.yield %[[WITH]],
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[DOT]]#0, %[[DOT]]#1, %[[DOT]]#2, %[[DOT]]#3, %[[DOT]]#4, %[[DOT]]#5, %[[DOT]]#6, %[[DOT]]#7 :
// CHECK: vector.transfer_write %[[DONE]]#0, %[[SUMS]][%[[M0]], %c0]
// CHECK: } else {
// CHECK: %[[MEDIUM:.+]] = arith.cmpi ule, %{{.+}}, %c64
// CHECK: scf.if %[[MEDIUM]] -> (tensor<?x32xf32>) {
// CHECK: scf.for %[[MK0:.+]] = %c0 to %c150 step %c128 iter_args(%{{.+}} = %[[TILE]])
// CHECK: %[[MK1:.+]] = arith.minui %{{.+}}, %c150
// CHECK: %[[MFIRST:.+]] = arith.cmpi eq, %[[MK0]], %c0
// CHECK: %[[MLAST:.+]] = arith.cmpi eq, %[[MK1]], %c150
// CHECK: %[[TILED:.+]] = arith.muli %{{.+}}, %c6
// CHECK: %[[FIRSTEND:.+]] = arith.minui %[[TILED]], %c6
// CHECK: scf.for %{{.+}} = %c0 to %[[FIRSTEND]] step %c6
// CHECK: scf.if %[[MFIRST]]
// CHECK: scf.for %[[KA:.+]] = %[[MK0]] to %[[MK1]] step %c1 iter_args({{[^)]+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.transfer_read %{{.+}}[%[[P]], %{{.+}}, %c0], {{.+}} : tensor<3x150x32xf32>, vector<8xf32>
// CHECK: vector.transfer_read %{{.+}}[%[[P]], %{{.+}}, %c8], {{.+}} : tensor<3x150x32xf32>, vector<8xf32>
// CHECK: memref.prefetch %[[VIEW]][%[[NEXT]], %[[KA]], %c0], read, locality<2>, data : memref<3x150x32xf32>
// CHECK-NOT: memref.prefetch
// CHECK: scf.if %[[MLAST]]
// CHECK: scf.for %[[KB:.+]] = %[[MK0]] to %[[MK1]] step %c1 iter_args({{[^)]+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.transfer_read %{{.+}}[%[[P]], %{{.+}}, %c16], {{.+}} : tensor<3x150x32xf32>, vector<8xf32>
// CHECK: vector.transfer_read %{{.+}}[%[[P]], %{{.+}}, %c24], {{.+}} : tensor<3x150x32xf32>, vector<8xf32>
// CHECK: memref.prefetch %[[VIEW]][%[[NEXT]], %[[KB]], %c16], read, locality<2>, data : memref<3x150x32xf32>
// CHECK-NOT: memref.prefetch
// CHECK: scf.for %{{.+}} = %[[FIRSTEND]] to %[[TILED]] step %c6
// CHECK-NOT: memref.prefetch
// CHECK: scf.for %{{.+}} step %c2
// CHECK: scf.for %{{.+}} = %[[MK0]] to %[[MK1]] step %c1 iter_args({{[^)]+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: memref.prefetch
// CHECK: scf.for %{{.+}} step %c1
// CHECK-NOT: memref.prefetch
// CHECK: } else {
// CHECK-NOT: memref.prefetch
// CHECK: scf.for %{{.+}} = %c0 to %c150 step %c128 iter_args(%{{.+}} = %[[TILE]])
// CHECK: scf.for %{{.+}} step %c6
// CHECK: scf.for %{{.+}} step %c2
// CHECK: scf.for %{{.+}} step %c1
// CHECK-NOT: memref.prefetch
// CHECK: tensor.extract_slice %{{.+}}[0, 0] [%{{.+}}, 70] [1, 1] : tensor<?x96xf32> to tensor<?x70xf32>
func.func @ffn(%x: tensor<?x150xf32>, %r: tensor<?x70xf32>) -> tensor<?x70xf32> {
  %w = tfm.weight "fc.weight" : tensor<70x150xf32>
  %b = tfm.weight "fc.bias" : tensor<70xf32>
  %y = tfm.fused_linear relu %x, %w bias(%b : tensor<70xf32>) residual(%r : tensor<?x70xf32>)
      : tensor<?x150xf32>, tensor<70x150xf32> -> tensor<?x70xf32>
  return %y : tensor<?x70xf32>
}
