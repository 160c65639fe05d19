// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg="vector-width=16" --canonicalize --cse | FileCheck %s
// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg="vector-width=1" --canonicalize --cse | FileCheck %s --check-prefix=SCALAR

// A sentence that joined a running batch attends to the batch's steps
// from the one it joined at: the key loop of its batch row starts there,
// in the one-query kernel (which any block with starts takes) and in the
// linalg blocks alike; no mask is built.
// CHECK-LABEL: func.func @key_starts
// CHECK-SAME: %[[STARTS:[a-z0-9]+]]: tensor<?xi32>
// CHECK: scf.forall (%[[ROW:.+]], %{{.+}}) in
// CHECK: %[[B:.+]] = arith.divui %[[ROW]], %c4
// CHECK: %[[S:.+]] = tensor.extract %[[STARTS]][%[[B]]] : tensor<?xi32>
// CHECK: %[[SI:.+]] = arith.index_cast %[[S]] : i32 to index
// CHECK: scf.for %{{.+}} = %[[SI]] to
// CHECK-NOT: linalg.generic
// CHECK: vector.fma
// SCALAR-LABEL: func.func @key_starts
// SCALAR-SAME: %[[STARTS:[a-z0-9]+]]: tensor<?xi32>
// SCALAR: %[[S:.+]] = tensor.extract %[[STARTS]][%{{.+}}] : tensor<?xi32>
// SCALAR: %[[SI:.+]] = arith.index_cast %[[S]] : i32 to index
// SCALAR: scf.for %{{.+}} = %[[SI]] to
func.func @key_starts(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>,
                      %v: tensor<?x4x?x64xf32>, %starts: tensor<?xi32>) -> tensor<?x4x?x64xf32> {
  %o = tfm.attention %q, %k, %v starts(%starts : tensor<?xi32>) causal scale 0.125
      : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32> -> tensor<?x4x?x64xf32>
  return %o : tensor<?x4x?x64xf32>
}

// -----

// Alone, the start mask hides key j of batch row b where j < starts[b].
// CHECK-LABEL: func.func @start_mask
// CHECK: linalg.generic
// CHECK: %[[J:.+]] = linalg.index 3 : index
// CHECK: %[[S:.+]] = arith.index_cast %{{.+}} : i32 to index
// CHECK: %[[H:.+]] = arith.cmpi slt, %[[J]], %[[S]] : index
// CHECK: arith.select %[[H]], %cst{{.*}}, %{{.+}} : f32
func.func @start_mask(%s: tensor<?x4x1x?xf32>, %starts: tensor<?xi32>) -> tensor<?x4x1x?xf32> {
  %m = tfm.key_start_mask %s, %starts : tensor<?x4x1x?xf32>, tensor<?xi32>
  return %m : tensor<?x4x1x?xf32>
}

// -----

// Positions of rows that joined later: step + j - starts[b].
// CHECK-LABEL: func.func @position_starts
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: index
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.+}} : tensor<?xi32>)
// CHECK: ^bb0(%[[START:.+]]: i32, %{{.+}}: f32):
// CHECK: %[[J:.+]] = linalg.index 1 : index
// CHECK: %[[P:.+]] = arith.addi %[[STEP]], %[[J]] : index
// CHECK: %[[SI:.+]] = arith.index_cast %[[START]] : i32 to index
// CHECK: %[[Q:.+]] = arith.subi %[[P]], %[[SI]] : index
// CHECK: tensor.extract %{{.+}}[%[[Q]], %{{.+}}] : tensor<16x8xf32>
func.func @position_starts(%ids: tensor<?x1xi32>, %step: index, %starts: tensor<?xi32>, %t: tensor<16x8xf32>) -> tensor<?x1x8xf32> {
  %p = tfm.position_encoding learned %ids, %step starts(%starts : tensor<?xi32>) table(%t : tensor<16x8xf32>) : tensor<?x1xi32> -> tensor<?x1x8xf32>
  return %p : tensor<?x1x8xf32>
}
