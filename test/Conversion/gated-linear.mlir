// RUN: tfm-opt %s -split-input-file -tfm-layout-weights="panel-width=32" -convert-tfm-to-linalg="vector-width=8" -canonicalize | FileCheck %s

// A gated linear whose halves are whole panels (F = 192, panels of 32: 6
// a half, in groups of 2): one forall over the groups, j in [0, 3). The
// group's panels of the first half, 2j and 2j + 1, into the result's
// columns (each prefetching the panel after it, the last the second
// half's first of the group, 2j + 6), the same panels of the second half
// into a tile of their own (the last prefetching the next group's first,
// 2j + 2, at most 5), then per row and vector relu(h0) · h1 +
// r[row, 64 j + c] written into the result's columns.
// CHECK-LABEL: func.func @gated(
// CHECK: memref.view %{{.+}} to memref<12x40x32xf32>
// CHECK: scf.forall (%[[J:.+]]) in (3) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<?x192xf32>)
// CHECK: %[[FIRST:.+]] = arith.muli %[[J]], %c2
// CHECK: %[[C0:.+]] = arith.muli %[[J]], %c64
// CHECK: %[[COLUMNS:.+]] = tensor.extract_slice %[[OUT]][0, %[[C0]]] [%{{.+}}, 64] [1, 1]
// CHECK: %[[OWN:.+]] = tensor.empty(%{{.+}}) : tensor<?x64xf32>
// CHECK: %[[SECOND:.+]] = arith.addi %[[FIRST]], %c6
// CHECK: %[[NEXT0:.+]] = arith.addi %[[FIRST]], %c2
// CHECK: %[[NEXT:.+]] = arith.minui %[[NEXT0]], %c5
// CHECK: %[[H0:.+]] = scf.for %[[G:.+]] = %c0 to %c2 step %c1 iter_args(%{{.+}} = %[[COLUMNS]])
// CHECK: %[[P:.+]] = arith.addi %[[FIRST]], %[[G]]
// CHECK: %[[LAST:.+]] = arith.cmpi eq, %[[G]], %c1
// CHECK: %[[AFTER:.+]] = arith.addi %[[P]], %c1
// CHECK: arith.select %[[LAST]], %[[SECOND]], %[[AFTER]]
// CHECK: %[[H1:.+]] = scf.for %[[G1:.+]] = %c0 to %c2 step %c1 iter_args(%{{.+}} = %[[OWN]])
// CHECK: %[[P1:.+]] = arith.addi %[[SECOND]], %[[G1]]
// CHECK: %[[LAST1:.+]] = arith.cmpi eq, %[[G1]], %c1
// CHECK: %[[AFTER1:.+]] = arith.addi %[[P1]], %c1
// CHECK: arith.select %[[LAST1]], %[[NEXT]], %[[AFTER1]]
// CHECK: scf.for %[[ROW:.+]] = %c0 to %{{.+}} step %c1 iter_args(%[[T:.+]] = %[[H0]])
// CHECK: %[[A:.+]] = vector.transfer_read %[[T]][%[[ROW]], %c0]
// CHECK: %[[POSITIVE:.+]] = arith.cmpf ugt, %[[A]]
// CHECK: %[[RELU:.+]] = arith.select %[[POSITIVE]], %[[A]]
// CHECK: %[[B:.+]] = vector.transfer_read %[[H1]][%[[ROW]], %c0]
// CHECK: %[[GATED:.+]] = arith.mulf %[[RELU]], %[[B]]
// CHECK: %[[R:.+]] = vector.transfer_read %{{.+}}[%[[ROW]], %[[C0]]]
// CHECK: %[[Y:.+]] = arith.addf %[[GATED]], %[[R]]
// CHECK: vector.transfer_write %[[Y]], %[[T]][%[[ROW]], %c0]
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[OUT]][0, %[[C0]]] [%{{.+}}, 64] [1, 1]
func.func @gated(%x: tensor<?x40xf32>, %r: tensor<?x192xf32>) -> tensor<?x192xf32> {
  %w = tfm.weight "w0+w1" parts ["w0", "w1"] : tensor<384x40xf32>
  %b = tfm.weight "b0+b1" parts ["b0", "b1"] : tensor<384xf32>
  %y = tfm.fused_linear relu gated %x, %w bias(%b : tensor<384xf32>) residual(%r : tensor<?x192xf32>)
      : tensor<?x40xf32>, tensor<384x40xf32> -> tensor<?x192xf32>
  return %y : tensor<?x192xf32>
}

// -----

// Halves of 40 features, no whole panels: the product over all 80
// features (3 panels), then the gate over its two halves.
// CHECK-LABEL: func.func @partial(
// CHECK: scf.forall (%{{.+}}) in (3)
// CHECK: linalg.generic
// CHECK: arith.select
// CHECK-NEXT: arith.mulf
func.func @partial(%x: tensor<?x16xf32>) -> tensor<?x40xf32> {
  %w = tfm.weight "w0+w1" parts ["w0", "w1"] : tensor<80x16xf32>
  %y = tfm.fused_linear relu gated %x, %w : tensor<?x16xf32>, tensor<80x16xf32> -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}
