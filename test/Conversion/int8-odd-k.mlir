// RUN: tfm-opt %s -tfm-layout-weights="precision=int8" -convert-tfm-to-linalg="int8-dot=true" | FileCheck %s
// RUN: tfm-opt %s -tfm-layout-weights="precision=int8" -convert-tfm-to-linalg | FileCheck %s --check-prefix=WIDEN

// int8 panels group K in quads; K = 15 takes 4 quads, the last k a zero:
// 1 panel x 4 x 256 bytes = 1024, then the 64 features' scales (f32, at
// 1024) and sums of integers (i32, at 1280): 1536 bytes. x is quantized
// per row over its range with 0 (min and max from 0; round to even, plus
// the zero point, clamped to [0, 255]) in vectors, whose reads past K = 15
// are masked, into 16 bytes a row (the 16th k meets a zero weight): in
// parallel over rows when rows x K passes 32 x 512 (an encoder's batch),
// each row into its own slice, else in one loop (a decoder step). The
// kernel sums in i32 with VNNI's dot product of quads (4 row tiles by 4
// vectors from one broadcast word each), or widens the bytes by shifts, and
// scales back after taking out zero point x sums.
// CHECK: tfm.weights_layout = [{element_type = i8, name = "odd", offset = 0 : i64, panel_width = 64 : i64, shape = array<i64: 50, 15>}], tfm.weights_size = 1536 : i64
// CHECK-LABEL: func.func @odd(
// CHECK: memref.view %{{.+}}[%c0{{.*}}][] : memref<?xi8> to memref<1x4x256xi8>
// CHECK: memref.view %{{.+}}[%c1024{{.*}}][] : memref<?xi8> to memref<64xf32>
// CHECK: memref.view %{{.+}}[%c1280{{.*}}][] : memref<?xi8> to memref<64xi32>
// CHECK: tensor.empty(%{{.+}}) : tensor<?x16xi8>
// CHECK: %[[ELEMENTS:.+]] = arith.muli %{{.+}}, %c15{{.*}} : index
// CHECK: %[[MANY:.+]] = arith.cmpi ugt, %[[ELEMENTS]], %c16384{{.*}} : index
// CHECK-NEXT: scf.if %[[MANY]]
// CHECK-NEXT: scf.forall (%[[ROW:.+]]) in (%{{.+}}) shared_outs(%[[U:.+]] = %{{.+}}, %[[Z:.+]] = %{{.+}}, %[[S:.+]] = %{{.+}})
// CHECK-NEXT: tensor.extract_slice %[[U]][%[[ROW]], 0] [1, 16] [1, 1] : tensor<?x16xi8> to tensor<1x16xi8>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[U]][%[[ROW]], 0] [1, 16] [1, 1]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[Z]][%[[ROW]]] [1] [1]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.+}} into %[[S]][%[[ROW]]] [1] [1]
// CHECK: } else {
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<?x16xi8>, tensor<?xf32>, tensor<?xf32>)
// lo and hi as compares and selects (vminps / vmaxps), not minimumf /
// maximumf, whose expansion for NaNs and signed zeros is slower:
// CHECK: %[[V:.+]] = vector.transfer_read %{{.+}} : tensor<?x15xf32>, vector<16xf32>
// CHECK-NEXT: %[[LT:.+]] = arith.cmpf olt, %[[V]], %[[LO:.+]] : vector<16xf32>
// CHECK-NEXT: arith.select %[[LT]], %[[V]], %[[LO]]
// CHECK-NEXT: %[[GT:.+]] = arith.cmpf ogt, %[[V]], %[[HI:.+]] : vector<16xf32>
// CHECK-NEXT: arith.select %[[GT]], %[[V]], %[[HI]]
// CHECK-NEXT: vector.reduction <minimumf>
// CHECK-NEXT: vector.reduction <maximumf>
// CHECK: math.roundeven %{{.+}} : f32
// CHECK: vector.transfer_read %{{.+}} : tensor<?x15xf32>, vector<16xf32>
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: math.roundeven %{{.+}} : vector<16xf32>
// CHECK-NEXT: arith.addf
// CHECK: arith.cmpf ogt
// CHECK-NEXT: arith.select
// CHECK: arith.cmpf olt
// CHECK-NEXT: arith.select
// CHECK-NEXT: arith.fptosi
// CHECK-NEXT: arith.trunci %{{.+}} : vector<16xi32> to vector<16xi8>
// CHECK: scf.for %{{.+}} = %{{.+}} to %c4{{.*}} step %c1
// CHECK-COUNT-16: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: arith.muli %{{.+}} : vector<16xi32>
// CHECK-NEXT: arith.subi %{{.+}} : vector<16xi32>
// CHECK-NEXT: arith.sitofp %{{.+}} : vector<16xi32> to vector<16xf32>
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: arith.mulf
// WIDEN-LABEL: func.func @odd(
// WIDEN: tensor<?x16xi8>
// WIDEN-NOT: llvm.call_intrinsic
// WIDEN: arith.shli %{{.+}} : vector<16xi32>
// WIDEN: arith.shrsi %{{.+}} : vector<16xi32>
// WIDEN: arith.extui %{{.+}} : i8 to i32
// WIDEN: arith.muli %{{.+}} : vector<16xi32>
// WIDEN: arith.addi %{{.+}} : vector<16xi32>
// WIDEN-NOT: llvm.call_intrinsic
func.func @odd(%x: tensor<?x15xf32>) -> tensor<?x50xf32> {
  %w = tfm.weight "odd" : tensor<50x15xf32>
  %y = tfm.linear %x, %w : (tensor<?x15xf32>, tensor<50x15xf32>) -> tensor<?x50xf32>
  return %y : tensor<?x50xf32>
}
