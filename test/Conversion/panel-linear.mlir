// RUN: tfm-opt %s -tfm-layout-weights="panel-width=32" -convert-tfm-to-linalg="vector-width=8" -canonicalize | FileCheck %s

// The panel kernel for AVX2 (vectors of 8, panels of 32): K = 150, N = 70
// (3 panels, the last part padding). With at most 8 rows, K goes in blocks
// of 64 (64, 64, 22) over sums zeroed first: tiles of 2 rows by the whole
// panel (8 accumulators), then single rows, the epilogue after the last
// block. With more rows, blocks of 128 (128, 22), likewise: tiles of 6
// rows by 2 vectors (12 accumulators) in two column groups, then pairs of
// rows by the whole panel, then single rows. The few-row tiles prefetch the
// panel 64 rows (a block) ahead of each row they read, past the panel's end
// in the next one (the last panel: its own last row). Up to 64 rows each of
// the others prefetches the line of the next panel (the last panel:
// itself) matching each line it reads; those of more than 64 rows prefetch
// nothing.
// CHECK-LABEL: func.func @ffn(
// CHECK: %[[VIEW:.+]] = memref.view %{{.+}} to memref<3x150x32xf32>
// CHECK: scf.forall (%[[P:.+]]) in (3)
// CHECK: %[[NEXT0:.+]] = arith.addi %[[P]], %c1
// CHECK: %[[NEXT:.+]] = arith.minui %[[NEXT0]], %c2
// CHECK: %[[FEW:.+]] = arith.cmpi ule, %{{.+}}, %c8
// CHECK: scf.if %[[FEW]] -> (tensor<?x32xf32>) {
// CHECK: %[[ZEROS:.+]] = linalg.fill
// CHECK: scf.for %[[K0:.+]] = %c0 to %c150 step %c64 iter_args(%{{.+}} = %[[ZEROS]])
// CHECK: %[[K1:.+]] = arith.minui %{{.+}}, %c150
// CHECK: %[[LAST:.+]] = arith.cmpi eq, %[[K1]], %c150
// CHECK: scf.for %{{.+}} step %c2
// CHECK: scf.for %[[KF:.+]] = %[[K0]] to %[[K1]] step %c1 iter_args({{[^)]+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: %[[AHEAD:.+]] = arith.addi %[[KF]], %c64
// CHECK: %[[INSIDE:.+]] = arith.cmpi ult, %[[AHEAD]], %c150
// CHECK: %[[PANEL:.+]] = arith.select %[[INSIDE]], %[[P]], %[[NEXT]]
// CHECK: %[[WRAPPED:.+]] = arith.addi %[[KF]], %c-86
// CHECK: %[[CLAMPED:.+]] = arith.minui %[[WRAPPED]], %c149
// CHECK: %[[ROW:.+]] = arith.select %[[INSIDE]], %[[AHEAD]], %[[CLAMPED]]
// CHECK: memref.prefetch %[[VIEW]][%[[PANEL]], %[[ROW]], %c0], read, locality<3>, data : memref<3x150x32xf32>
// CHECK-NEXT: memref.prefetch %[[VIEW]][%[[PANEL]], %[[ROW]], %c16], read, locality<3>, data : memref<3x150x32xf32>
// CHECK: vector.fma
// CHECK: %[[POSITIVE:.+]] = arith.cmpf ugt, %[[Y:.+]], %{{.+}} : vector<8xf32>
// CHECK: %[[RELU:.+]] = arith.select %[[POSITIVE]], %[[Y]], %{{.+}} : vector<8xi1>, vector<8xf32>
// CHECK: %[[WITH:.+]] = arith.addf %[[RELU]], %{{.+}} : vector<8xf32>
// CHECK: arith.select %[[LAST]], %[[WITH]], %{{.+}} : vector<8xf32>
// CHECK: } else {
// CHECK: %[[MEDIUM:.+]] = arith.cmpi ule, %{{.+}}, %c64
// CHECK: scf.if %[[MEDIUM]] -> (tensor<?x32xf32>) {
// CHECK: %[[MZEROS:.+]] = linalg.fill
// CHECK: scf.for %[[MK0:.+]] = %c0 to %c150 step %c128 iter_args(%{{.+}} = %[[MZEROS]])
// CHECK: %[[MK1:.+]] = arith.minui %{{.+}}, %c150
// CHECK: %[[MLAST:.+]] = arith.cmpi eq, %[[MK1]], %c150
// CHECK: scf.for %{{.+}} step %c6
// CHECK: scf.for %[[KA:.+]] = %[[MK0]] to %[[MK1]] step %c1 iter_args({{[^)]+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.transfer_read %{{.+}}[%[[P]], %{{.+}}, %c0], {{.+}} : tensor<3x150x32xf32>, vector<8xf32>
// CHECK: vector.transfer_read %{{.+}}[%[[P]], %{{.+}}, %c8], {{.+}} : tensor<3x150x32xf32>, vector<8xf32>
// CHECK: memref.prefetch %[[VIEW]][%[[NEXT]], %[[KA]], %c0], read, locality<3>, data : memref<3x150x32xf32>
// CHECK-NOT: memref.prefetch
// CHECK: arith.select %[[MLAST]]
// CHECK: scf.for %[[KB:.+]] = %[[MK0]] to %[[MK1]] step %c1 iter_args({{[^)]+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.transfer_read %{{.+}}[%[[P]], %{{.+}}, %c16], {{.+}} : tensor<3x150x32xf32>, vector<8xf32>
// CHECK: vector.transfer_read %{{.+}}[%[[P]], %{{.+}}, %c24], {{.+}} : tensor<3x150x32xf32>, vector<8xf32>
// CHECK: memref.prefetch %[[VIEW]][%[[NEXT]], %[[KB]], %c16], read, locality<3>, data : memref<3x150x32xf32>
// CHECK: scf.for %{{.+}} step %c2
// CHECK: scf.for %{{.+}} = %[[MK0]] to %[[MK1]] step %c1 iter_args({{[^)]+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: scf.for %{{.+}} step %c1
// CHECK: memref.prefetch
// CHECK: } else {
// CHECK-NOT: memref.prefetch
// CHECK: linalg.fill
// CHECK: scf.for %{{.+}} = %c0 to %c150 step %c128
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
