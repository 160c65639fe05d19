// RUN: tfm-opt %s -tfm-merge-equal-layers --tfm-pass-statistics 2>&1 | FileCheck %s

// @a and @b are the same layer (other locations, same relative names): @b
// goes and its calls call @a, each keeping its own prefix. @c reads a
// wider FFN, @d another name: layers that differ stay, and so does the
// function that is not a layer.
// CHECK: (S) 1 layers-merged
// CHECK: func.func private @a(
// CHECK-NOT: func.func private @b(
// CHECK: func.func private @c(
// CHECK: func.func private @d(
// CHECK: func.func private @e(
// CHECK-LABEL: func.func @run
// CHECK: call @a({{.+}}) {tfm.weights_prefix = "layers.0."}
// CHECK-NEXT: call @a({{.+}}) {tfm.weights_prefix = "layers.1."}
// CHECK-NEXT: call @c({{.+}}) {tfm.weights_prefix = "layers.2."}
// CHECK-NEXT: call @d({{.+}}) {tfm.weights_prefix = "layers.3."}
// CHECK-NEXT: call @e(

func.func private @a(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {tfm.layer} {
  %w = tfm.weight "fc1.weight" : tensor<8x4xf32>
  %v = tfm.weight "fc2.weight" : tensor<4x8xf32>
  %h = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  %y = tfm.linear %h, %v : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
func.func private @b(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {tfm.layer} {
  %w = tfm.weight "fc1.weight" : tensor<8x4xf32> loc("layers.1")
  %v = tfm.weight "fc2.weight" : tensor<4x8xf32>
  %h = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  %y = tfm.linear %h, %v : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
func.func private @c(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {tfm.layer} {
  %w = tfm.weight "fc1.weight" : tensor<16x4xf32>
  %v = tfm.weight "fc2.weight" : tensor<4x16xf32>
  %h = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<16x4xf32>) -> tensor<?x16xf32>
  %y = tfm.linear %h, %v : (tensor<?x16xf32>, tensor<4x16xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
func.func private @d(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {tfm.layer} {
  %w = tfm.weight "fc1.weight" : tensor<8x4xf32>
  %v = tfm.weight "fc3.weight" : tensor<4x8xf32>
  %h = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  %y = tfm.linear %h, %v : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
func.func private @e(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  return %x : tensor<?x4xf32>
}
func.func @run(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = call @a(%x) {tfm.weights_prefix = "layers.0."} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = call @b(%0) {tfm.weights_prefix = "layers.1."} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = call @c(%1) {tfm.weights_prefix = "layers.2."} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %3 = call @d(%2) {tfm.weights_prefix = "layers.3."} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %4 = call @e(%3) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %4 : tensor<?x4xf32>
}
