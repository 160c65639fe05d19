// RUN: tfm-opt %s -tfm-name-constant-globals | FileCheck %s

// Bufferization named these in the order it happened to visit the
// functions: @decoder_layer's table got the base name, @encoder_layer's
// (used first in the module) the _0. They are renamed, and placed, by
// their first use; a constant of another type keeps its base name, one
// never used comes last, and a global that is not a constant is left
// alone.
// CHECK: memref.global "private" constant @__constant_3xi32 : memref<3xi32> = dense<[1, 2, 3]>
// CHECK-NEXT: memref.global "private" constant @__constant_2xf32 : memref<2xf32>
// CHECK-NEXT: memref.global "private" constant @__constant_3xi32_0 : memref<3xi32> = dense<[4, 5, 6]>
// CHECK-NEXT: memref.global "private" constant @__constant_3xi32_1 : memref<3xi32> = dense<7>
// CHECK: memref.global "private" @state : memref<1xf32>
// CHECK-LABEL: func.func private @encoder_layer
// CHECK: memref.get_global @__constant_3xi32 :
// CHECK: memref.get_global @__constant_2xf32 :
// CHECK-LABEL: func.func private @decoder_layer
// CHECK: memref.get_global @__constant_3xi32_0 :
// CHECK: memref.get_global @__constant_3xi32_0 :

memref.global "private" constant @__constant_3xi32 : memref<3xi32> = dense<[4, 5, 6]>
memref.global "private" constant @__constant_3xi32_1 : memref<3xi32> = dense<7>
memref.global "private" @state : memref<1xf32> = dense<0.0>
memref.global "private" constant @__constant_2xf32 : memref<2xf32> = dense<[1.0, 2.0]>
memref.global "private" constant @__constant_3xi32_0 : memref<3xi32> = dense<[1, 2, 3]>

func.func private @encoder_layer() -> (memref<3xi32>, memref<2xf32>) {
  %a = memref.get_global @__constant_3xi32_0 : memref<3xi32>
  %b = memref.get_global @__constant_2xf32 : memref<2xf32>
  return %a, %b : memref<3xi32>, memref<2xf32>
}

func.func private @decoder_layer() -> (memref<3xi32>, memref<3xi32>) {
  %a = memref.get_global @__constant_3xi32 : memref<3xi32>
  %b = memref.get_global @__constant_3xi32 : memref<3xi32>
  return %a, %b : memref<3xi32>, memref<3xi32>
}
