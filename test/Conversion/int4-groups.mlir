// RUN: tfm-opt %s -tfm-layout-weights="precision=int4" -convert-tfm-to-linalg="int8-dot=true" | FileCheck %s
// RUN: tfm-opt %s -tfm-layout-weights="precision=int4" -convert-tfm-to-linalg | FileCheck %s --check-prefix=WIDEN

// int4 panels hold eight k a word: K = 72 takes two groups of 64 (the
// second short, padded with zero integers), 16 rows of 64 words, then the
// groups' words of scale and zero point as 2 more rows: 1 panel x 18 x 256
// bytes = 4608, viewed as bytes and as f32 [1, 18, 64]; then the 64
// features' corrections (f32, at 4608): 4864 bytes. x is quantized as for
// int8, padded to whole groups (128). Per group of 8 rows (unrolled), the
// group's words (row 16 + g) are read once and their zero points spread to
// every byte, (g & 0xffff) | (g << 16); each row's words are unpacked into
// the low and the high nibbles less the zero points, two int8 rows for
// vpdpbusd; the group's i32 sums are then scaled by its scales, the words'
// high halves (g & 0xffff0000 as f32), into the f32 sums; the epilogue
// subtracts z x correction and scales by s_x. Without VNNI the unpacked
// bytes are widened instead.
// CHECK: tfm.weights_layout = [{element_type = i4, name = "short", offset = 0 : i64, panel_width = 64 : i64, shape = array<i64: 50, 72>}], tfm.weights_size = 4864 : i64
// CHECK-LABEL: func.func @short(
// CHECK: memref.view %{{.+}}[%c0{{.*}}][] : memref<?xi8> to memref<1x18x256xi8>
// CHECK: memref.view %{{.+}}[%c0{{.*}}][] : memref<?xi8> to memref<1x18x64xf32>
// CHECK: memref.view %{{.+}}[%c4608{{.*}}][] : memref<?xi8> to memref<64xf32>
// CHECK: tensor.empty(%{{.+}}) : tensor<?x128xi8>
// CHECK: scf.for %[[KK0:.+]] = %{{.+}} to %c16{{.*}} step %c8{{.*}} iter_args({{.+}}) -> (vector<16xf32>
// CHECK: %[[G:.+]] = arith.divui %[[KK0]], %c8{{.*}} : index
// CHECK-NEXT: %[[ROW:.+]] = arith.addi %c16{{.*}}, %[[G]] : index
// CHECK: %[[READ:.+]] = vector.transfer_read %{{.+}}[%{{.+}}, %[[ROW]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<1x18x64xf32>, vector<16xf32>
// CHECK-NEXT: %[[GW:.+]] = vector.bitcast %[[READ]] : vector<16xf32> to vector<16xi32>
// CHECK: %[[LOWHALF:.+]] = arith.constant dense<65535> : vector<16xi32>
// CHECK-NEXT: %[[ZLOW:.+]] = arith.andi %[[GW]], %[[LOWHALF]] : vector<16xi32>
// CHECK-NEXT: %[[SIXTEEN:.+]] = arith.constant dense<16> : vector<16xi32>
// CHECK-NEXT: %[[ZHIGH:.+]] = arith.shli %[[GW]], %[[SIXTEEN]] : vector<16xi32>
// CHECK-NEXT: %[[ZEROS:.+]] = arith.ori %[[ZLOW]], %[[ZHIGH]] : vector<16xi32>
// CHECK: %[[WORDS:.+]] = vector.bitcast %{{.+}} : vector<64xi8> to vector<16xi32>
// CHECK-NEXT: %[[MASK:.+]] = arith.constant dense<252645135> : vector<16xi32>
// CHECK-NEXT: arith.andi %[[WORDS]], %[[MASK]] : vector<16xi32>
// CHECK-NEXT: %[[FOUR:.+]] = arith.constant dense<4> : vector<16xi32>
// CHECK-NEXT: arith.shrui %[[WORDS]], %[[FOUR]] : vector<16xi32>
// CHECK: %[[ZB:.+]] = vector.bitcast %[[ZEROS]] : vector<16xi32> to vector<64xi8>
// CHECK-NEXT: arith.subi %{{.+}}, %[[ZB]] : vector<64xi8>
// CHECK: arith.subi %{{.+}}, %{{.+}} : vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
// CHECK: %[[HIGHHALF:.+]] = arith.constant dense<-65536> : vector<16xi32>
// CHECK-NEXT: %[[SBITS:.+]] = arith.andi %[[GW]], %[[HIGHHALF]] : vector<16xi32>
// CHECK-NEXT: %[[SCALE:.+]] = vector.bitcast %[[SBITS]] : vector<16xi32> to vector<16xf32>
// CHECK: %[[F:.+]] = arith.sitofp %{{.+}} : vector<16xi32> to vector<16xf32>
// CHECK-NEXT: %[[SCALED:.+]] = arith.mulf %[[F]], %[[SCALE]] : vector<16xf32>
// CHECK-NEXT: arith.addf %{{.+}}, %[[SCALED]] : vector<16xf32>
// CHECK: %[[C:.+]] = vector.transfer_read %{{.+}} : tensor<64xf32>, vector<16xf32>
// CHECK: %[[Z:.+]] = vector.broadcast %{{.+}} : f32 to vector<16xf32>
// CHECK-NEXT: %[[ZC:.+]] = arith.mulf %[[Z]], %[[C]] : vector<16xf32>
// CHECK-NEXT: %[[D:.+]] = arith.subf %{{.+}}, %[[ZC]] : vector<16xf32>
// CHECK: %[[SX:.+]] = vector.broadcast %{{.+}} : f32 to vector<16xf32>
// CHECK-NEXT: arith.mulf %[[D]], %[[SX]] : vector<16xf32>
// WIDEN-LABEL: func.func @short(
// WIDEN-NOT: llvm.call_intrinsic
// WIDEN: arith.ori %{{.+}}, %{{.+}} : vector<16xi32>
// WIDEN: arith.subi %{{.+}}, %{{.+}} : vector<64xi8>
// WIDEN: arith.shli %{{.+}} : vector<16xi32>
// WIDEN: arith.shrsi %{{.+}} : vector<16xi32>
// WIDEN-NOT: llvm.call_intrinsic

func.func @short(%x: tensor<?x72xf32>) -> tensor<?x50xf32> {
  %w = tfm.weight "short" : tensor<50x72xf32>
  %y = tfm.linear %x, %w : (tensor<?x72xf32>, tensor<50x72xf32>) -> tensor<?x50xf32>
  return %y : tensor<?x50xf32>
}
