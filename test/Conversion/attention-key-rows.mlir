// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg="vector-width=16" --canonicalize --cse | FileCheck %s
// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg="vector-width=1" | FileCheck %s --check-prefix=SCALAR

// The decoder's self-attention over each beam's history: the one-query
// kernel reads key j's row of the key rows (batch row b, position j) and
// then K and V at that row, in place; nothing is gathered first. Queries of
// any count take the one-query kernel (the tiled one reads K in tiles).
// CHECK-LABEL: func.func @key_rows
// CHECK-NOT: linalg.generic
// CHECK: scf.forall (%[[ROW:.+]], %{{.+}}) in
// the batch row of the flattened (batch, head) row: row / 4 heads
// CHECK: %[[B:.+]] = arith.divui %[[ROW]], %c4
// CHECK: scf.for
// CHECK: %[[R:.+]] = tensor.extract %{{.+}}[%[[B]], %[[J:.+]]] : tensor<?x?xi32>
// CHECK: %[[RI:.+]] = arith.index_cast %[[R]] : i32 to index
// CHECK: vector.transfer_read %{{.+}}[%[[RI]], %{{.+}}, %[[J]], %c0]
// CHECK-NOT: linalg.generic
// CHECK: vector.fma
// CHECK-NOT: vector.contract
// Without vectors: K and V gathered through the rows, then the block
// spelled out.
// SCALAR-LABEL: func.func @key_rows
// SCALAR: linalg.generic
// SCALAR: %[[R:.+]] = tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<?x?xi32>
// SCALAR: %[[RI:.+]] = arith.index_cast %[[R]] : i32 to index
// SCALAR: tensor.extract %{{.+}}[%[[RI]], %{{.+}}, %{{.+}}, %{{.+}}] : tensor<?x4x?x64xf32>
// SCALAR-NOT: scf.forall
func.func @key_rows(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>,
                    %v: tensor<?x4x?x64xf32>, %rows: tensor<?x?xi32>) -> tensor<?x4x?x64xf32> {
  %o = tfm.attention %q, %k, %v key_rows(%rows : tensor<?x?xi32>) causal scale 0.125
      : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32> -> tensor<?x4x?x64xf32>
  return %o : tensor<?x4x?x64xf32>
}

// -----

// Alone, tfm.cache_rows is a gather: position p of row b from row
// rows[b, p].
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: %[[B:.+]] = linalg.index 0
// CHECK: %[[P:.+]] = linalg.index 2
// CHECK: %[[R:.+]] = tensor.extract %{{.+}}[%[[B]], %[[P]]] : tensor<?x?xi32>
// CHECK: %[[RI:.+]] = arith.index_cast %[[R]] : i32 to index
// CHECK: tensor.extract %{{.+}}[%[[RI]], %{{.+}}, %[[P]], %{{.+}}] : tensor<?x4x?x16xf32>
func.func @gather(%c: tensor<?x4x?x16xf32>, %rows: tensor<?x?xi32>) -> tensor<?x4x?x16xf32> {
  %k = tfm.cache_rows %c[%rows] axis 2 : tensor<?x4x?x16xf32>, tensor<?x?xi32> -> tensor<?x4x?x16xf32>
  return %k : tensor<?x4x?x16xf32>
}
