// RUN: tfm-opt %s -convert-tfm-to-linalg | FileCheck %s

// T5's relative position bias: one linalg.generic over [1, H, Sq, Sk] that
// looks each distance's bucket up in a constant and reads the table there.
// 8 buckets, bidirectional: 4 a side, 2 exact (distances 0 and 1), then
// 2 + trunc(log(r / 2) / log(8 / 2) · 2): r = 2, 3 -> 2; 4 .. 7 -> 3;
// r = 8 -> 4, kept in the side's last bucket, 3. Keys after the query take
// the upper side (+ 4).

// CHECK-LABEL: func.func @bidirectional(
// CHECK-SAME: %[[T:[a-z0-9]+]]: tensor<8x2xf32>, %[[Q:[a-z0-9]+]]: index, %[[K:[a-z0-9]+]]: index, %[[OFF:[a-z0-9]+]]: index)
// CHECK: %[[LUT:.+]] = arith.constant dense<[0, 1, 2, 2, 3, 3, 3, 3, 3]> : tensor<9xi32>
// CHECK: tensor.empty(%[[Q]], %[[K]]) : tensor<1x2x?x?xf32>
// CHECK: linalg.generic
// CHECK: %[[I:.+]] = linalg.index 2 : index
// CHECK: %[[QP:.+]] = arith.addi %[[OFF]], %[[I]] : index
// CHECK: %[[J:.+]] = linalg.index 3 : index
// CHECK: %[[REL:.+]] = arith.subi %[[J]], %[[QP]] : index
// CHECK: %[[NEG:.+]] = arith.subi %c0, %[[REL]] : index
// CHECK: %[[ABS:.+]] = arith.maxsi %[[NEG]], %[[REL]] : index
// CHECK: %[[R:.+]] = arith.minsi %[[ABS]], %c8 : index
// CHECK: %[[B:.+]] = tensor.extract %[[LUT]][%[[R]]] : tensor<9xi32>
// CHECK: %[[AFTER:.+]] = arith.cmpi sgt, %[[REL]], %c0 : index
// CHECK: %[[UP:.+]] = arith.addi %{{.+}}, %c4 : index
// CHECK: %[[BUCKET:.+]] = arith.select %[[AFTER]], %[[UP]], %{{.+}} : index
// CHECK: %[[H:.+]] = linalg.index 1 : index
// CHECK: tensor.extract %[[T]][%[[BUCKET]], %[[H]]] : tensor<8x2xf32>
func.func @bidirectional(%t: tensor<8x2xf32>, %q: index, %k: index, %o: index) -> tensor<1x2x?x?xf32> {
  %0 = tfm.relative_position_bias %t, %q, %k, %o bidirectional max_distance 8 : tensor<8x2xf32> -> tensor<1x2x?x?xf32>
  return %0 : tensor<1x2x?x?xf32>
}

// Causal: 4 buckets, 2 exact, the past only (max(-rel, 0)); r = 2, 3 ->
// 2 + trunc(log(r / 2) / log(4 / 2) · 2) = 2, 3; r = 4 -> 4, kept at 3.
// CHECK-LABEL: func.func @causal(
// CHECK: arith.constant dense<[0, 1, 2, 3, 3]> : tensor<5xi32>
// CHECK: %[[NEG:.+]] = arith.subi %c0, %{{.+}} : index
// CHECK: arith.maxsi %[[NEG]], %c0{{.*}} : index
// CHECK-NOT: arith.cmpi sgt
// CHECK: tensor.extract %{{.+}}[%{{.+}}, %{{.+}}] : tensor<4x2xf32>
func.func @causal(%t: tensor<4x2xf32>, %q: index, %k: index, %o: index) -> tensor<1x2x?x?xf32> {
  %0 = tfm.relative_position_bias %t, %q, %k, %o max_distance 4 : tensor<4x2xf32> -> tensor<1x2x?x?xf32>
  return %0 : tensor<1x2x?x?xf32>
}
