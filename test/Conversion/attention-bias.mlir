// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg="vector-width=16" --canonicalize --cse | FileCheck %s
// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg="vector-width=1" | FileCheck %s --check-prefix=SCALAR

// T5's attention: unscaled, with the relative position bias as its mask.
// The bias is finite, so the vector kernel adds it to each vector of scores
// (a masked read of the bias row: the last vector may pass Sk) before the
// online softmax; the block is not spelled out. Queries of any count take
// the one-query kernel (the tiled one lays queries along the lanes).
// CHECK-LABEL: func.func @relative_bias
// CHECK-NOT: linalg.softmax
// CHECK: scf.forall
// CHECK: scf.for {{.*}} step %c32
// CHECK: vector.fma
// CHECK: %[[B:.+]] = vector.transfer_read %{{.+}}[%c0, %{{.+}}, %{{.+}}, %{{.+}}], %{{.+}} : tensor<1x4x?x?xf32>, vector<16xf32>
// CHECK: arith.addf %{{.+}}, %[[B]] : vector<16xf32>
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK-NOT: vector.transfer_read {{.*}} : tensor<?x4x64x?xf32>
// Without vectors the bias makes the block spelled out.
// SCALAR-LABEL: func.func @relative_bias
// SCALAR-NOT: scf.forall
// SCALAR: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// SCALAR-LABEL: func.func @other_mask
func.func @relative_bias(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>,
                         %v: tensor<?x4x?x64xf32>, %len: tensor<?xi32>,
                         %t: tensor<32x4xf32>, %sq: index, %sk: index) -> tensor<?x4x?x64xf32> {
  %c0 = arith.constant 0 : index
  %bias = tfm.relative_position_bias %t, %sq, %sk, %c0 bidirectional max_distance 128 : tensor<32x4xf32> -> tensor<1x4x?x?xf32>
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) mask(%bias : tensor<1x4x?x?xf32>) scale 1.0
      : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32> -> tensor<?x4x?x64xf32>
  return %o : tensor<?x4x?x64xf32>
}

// -----

// Any other additive mask may hold -inf: the block is spelled out.
// CHECK-LABEL: func.func @other_mask
// CHECK-NOT: scf.forall
// CHECK: iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-NOT: scf.forall
func.func @other_mask(%q: tensor<?x4x?x64xf32>, %m: tensor<?x1x1x?xf32>) -> tensor<?x4x?x64xf32> {
  %o = tfm.attention %q, %q, %q mask(%m : tensor<?x1x1x?xf32>) scale 0.125
      : tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32> -> tensor<?x4x?x64xf32>
  return %o : tensor<?x4x?x64xf32>
}
