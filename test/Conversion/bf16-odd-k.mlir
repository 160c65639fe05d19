// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" -convert-tfm-to-linalg="bf16-dot=true" | FileCheck %s
// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" -convert-tfm-to-linalg | FileCheck %s --check-prefix=WIDEN

// bf16 panels pair K; an odd K (15) takes 8 pairs, the last k's partner a
// zero: 1 panel x 8 x 128 bf16 = 2048 bytes. x gets a zero column, in
// bf16 for the dot product, in f32 for the widening kernel.
// CHECK: tfm.weights_layout = [{element_type = bf16, name = "odd", offset = 0 : i64, panel_width = 64 : i64, shape = array<i64: 50, 15>}], tfm.weights_size = 2048 : i64
// CHECK-LABEL: func.func @odd(
// CHECK: memref.view %{{.+}} : memref<?xi8> to memref<1x8x128xbf16>
// CHECK: tensor.pad %{{.+}} low[0, 0] high[0, 1]
// CHECK: tensor<?x15xbf16> to tensor<?x16xbf16>
// CHECK: scf.for %{{.+}} = %{{.+}} to %c8{{.*}} step %c1
// CHECK: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// WIDEN-LABEL: func.func @odd(
// WIDEN: tensor.pad %{{.+}} low[0, 0] high[0, 1]
// WIDEN: tensor<?x15xf32> to tensor<?x16xf32>
// WIDEN-NOT: llvm.call_intrinsic
func.func @odd(%x: tensor<?x15xf32>) -> tensor<?x50xf32> {
  %w = tfm.weight "odd" : tensor<50x15xf32>
  %y = tfm.linear %x, %w : (tensor<?x15xf32>, tensor<50x15xf32>) -> tensor<?x50xf32>
  return %y : tensor<?x50xf32>
}
