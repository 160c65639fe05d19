// RUN: tfm-opt %s -convert-tfm-to-linalg="vector-width=16" -canonicalize | FileCheck %s
// RUN: tfm-opt %s -convert-tfm-to-linalg="vector-width=16" -canonicalize | FileCheck %s --check-prefix=ODD

// Heads of 64 floats: copied as 4 vectors of 16 per (b, s, h) in a loop
// over the heads (not unrolled: bufferization's analysis of one chain of
// H·4 writes would cost its square), in one loop over b up to 256 rows of
// (b, s), else in parallel over b (scf.forall, each b's slice of the
// result). Heads of 8 floats: linalg.transpose.

// CHECK-LABEL: func.func @split(
// CHECK: %[[B:.+]] = tensor.dim %{{.+}}, %c0 : tensor<?x?x128xf32>
// CHECK: %[[S:.+]] = tensor.dim %{{.+}}, %c1 : tensor<?x?x128xf32>
// CHECK: %[[ROWS:.+]] = arith.muli %[[B]], %[[S]]
// CHECK: %[[FEW:.+]] = arith.cmpi ule, %[[ROWS]], %c256
// CHECK: scf.if %[[FEW]]
// CHECK: scf.for %[[BI:.+]] = %c0 to %[[B]]
// CHECK: scf.for %[[SI:.+]] = %c0 to %[[S]]
// CHECK: scf.for %[[H:.+]] = %c0 to %c2
// CHECK: %[[FIRST:.+]] = arith.muli %[[H]], %c64
// CHECK: %[[V:.+]] = vector.transfer_read %{{.+}}[%[[BI]], %[[SI]], %[[FIRST]]]{{.*}} : tensor<?x?x128xf32>, vector<16xf32>
// CHECK: vector.transfer_write %[[V]], %{{.+}}[%[[BI]], %[[H]], %[[SI]], %c0]
// CHECK: %[[AT:.+]] = arith.addi %[[FIRST]], %c16
// CHECK: %[[V1:.+]] = vector.transfer_read %{{.+}}[%[[BI]], %[[SI]], %[[AT]]]
// CHECK: vector.transfer_write %[[V1]], %{{.+}}[%[[BI]], %[[H]], %[[SI]], %c16]
// CHECK-COUNT-2: vector.transfer_write
// CHECK-NEXT: scf.yield
// CHECK: } else {
// CHECK: scf.forall (%[[BP:.+]]) in (%[[B]])
// CHECK: tensor.extract_slice %{{.+}}[%[[BP]], 0, 0, 0] [1, 2, %[[S]], 64] [1, 1, 1, 1] : tensor<?x2x?x64xf32> to tensor<2x?x64xf32>
// CHECK: scf.for %[[HP:.+]] = %c0 to %c2
// CHECK: %[[W:.+]] = vector.transfer_read %{{.+}}[%[[BP]], %{{.+}}, %{{.+}}]
// CHECK: vector.transfer_write %[[W]], %{{.+}}[%[[HP]], %{{.+}}, %c0]
// CHECK: tensor.parallel_insert_slice
// CHECK-NOT: linalg.transpose
func.func @split(%x: tensor<?x?x128xf32>) -> tensor<?x2x?x64xf32> {
  %y = tfm.split_heads %x into 2 heads : tensor<?x?x128xf32> -> tensor<?x2x?x64xf32>
  return %y : tensor<?x2x?x64xf32>
}

// CHECK-LABEL: func.func @merge(
// CHECK: scf.for %[[BI:.+]] = %c0
// CHECK: scf.for %[[SI:.+]] = %c0
// CHECK: scf.for %[[H:.+]] = %c0 to %c2
// CHECK: %[[FIRST:.+]] = arith.muli %[[H]], %c64
// CHECK: %[[V:.+]] = vector.transfer_read %{{.+}}[%[[BI]], %[[H]], %[[SI]], %c0]{{.*}} : tensor<?x2x?x64xf32>, vector<16xf32>
// CHECK: vector.transfer_write %[[V]], %{{.+}}[%[[BI]], %[[SI]], %[[FIRST]]]
// CHECK: %[[AT:.+]] = arith.addi %[[FIRST]], %c16
// CHECK: %[[V1:.+]] = vector.transfer_read %{{.+}}[%[[BI]], %[[H]], %[[SI]], %c16]
// CHECK: vector.transfer_write %[[V1]], %{{.+}}[%[[BI]], %[[SI]], %[[AT]]]
// CHECK: scf.forall
// CHECK: tensor.extract_slice %{{.+}} : tensor<?x?x128xf32> to tensor<?x128xf32>
// CHECK-NOT: linalg.transpose
func.func @merge(%x: tensor<?x2x?x64xf32>) -> tensor<?x?x128xf32> {
  %y = tfm.merge_heads %x : tensor<?x2x?x64xf32> -> tensor<?x?x128xf32>
  return %y : tensor<?x?x128xf32>
}

// CHECK-LABEL: func.func @odd(
// ODD-LABEL: func.func @odd(
// ODD-NOT: vector.transfer_read
// ODD: linalg.transpose
// ODD-NOT: scf.forall
func.func @odd(%x: tensor<?x?x24xf32>) -> tensor<?x3x?x8xf32> {
  %y = tfm.split_heads %x into 3 heads : tensor<?x?x24xf32> -> tensor<?x3x?x8xf32>
  return %y : tensor<?x3x?x8xf32>
}
