// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" -convert-tfm-to-linalg="bf16-dot=true" | FileCheck %s
// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" -convert-tfm-to-linalg | FileCheck %s --check-prefix=WIDEN

// bf16 panels pair K; an odd K (15) takes 8 pairs, the last k's partner a
// zero: 1 panel x 8 x 128 bf16 = 2048 bytes. x gets a zero column, in
// bf16 for the dot product, in f32 for the widening kernel. x is rounded
// into one tensor whichever way its rows go: over rows in parallel where
// there are many (M·15 > 32·512), else in one loop.
// CHECK: tfm.weights_layout = [{element_type = bf16, name = "odd", offset = 0 : i64, panel_width = 64 : i64, shape = array<i64: 50, 15>}], tfm.weights_size = 2048 : i64
// CHECK-LABEL: func.func @odd(
// CHECK: memref.view %{{.+}} : memref<?xi8> to memref<1x8x128xbf16>
// CHECK: %[[E:.+]] = tensor.empty(%[[M:.+]]) : tensor<?x16xbf16>
// CHECK: %[[COL:.+]] = tensor.extract_slice %[[E]][0, 15] [%[[M]], 1] [1, 1]
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : bf16) outs(%[[COL]] : tensor<?x1xbf16>)
// CHECK: %[[DEST:.+]] = tensor.insert_slice %[[ZERO]] into %[[E]][0, 15]
// CHECK: %[[MK:.+]] = arith.muli %[[M]], %c15
// CHECK: %[[MANY:.+]] = arith.cmpi ugt, %[[MK]], %c16384
// CHECK: scf.if %[[MANY]]
// CHECK: scf.forall (%[[ROW:.+]]) in (%[[M]]) shared_outs(%[[SHARED:.+]] = %[[DEST]])
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[SHARED]][%[[ROW]], 0] [1, 15]
// CHECK: } else {
// CHECK: %[[ALL:.+]] = tensor.extract_slice %[[DEST]][0, 0] [%[[M]], 15]
// CHECK: linalg.generic {{.*}} outs(%[[ALL]] : tensor<?x15xbf16>)
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK: tensor.insert_slice %{{.+}} into %[[DEST]][0, 0] [%[[M]], 15]
// CHECK: scf.for %{{.+}} = %{{.+}} to %c8{{.*}} step %c1
// CHECK: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// WIDEN-LABEL: func.func @odd(
// WIDEN: tensor.empty(%{{.+}}) : tensor<?x16xf32>
// WIDEN: linalg.fill ins(%{{.+}} : f32)
// WIDEN: arith.truncf %{{.+}} : f32 to bf16
// WIDEN-NEXT: arith.extf %{{.+}} : bf16 to f32
// WIDEN-NOT: llvm.call_intrinsic
func.func @odd(%x: tensor<?x15xf32>) -> tensor<?x50xf32> {
  %w = tfm.weight "odd" : tensor<50x15xf32>
  %y = tfm.linear %x, %w : (tensor<?x15xf32>, tensor<50x15xf32>) -> tensor<?x50xf32>
  return %y : tensor<?x50xf32>
}
