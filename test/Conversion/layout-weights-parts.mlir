// RUN: tfm-opt %s -split-input-file -verify-diagnostics -tfm-layout-weights="panel-width=0" | FileCheck %s

// A stacked weight (tfm-fuse-sibling-linears) is one entry of the layout,
// which lists its parts for the weights file writer to read.
// CHECK: tfm.weights_layout = [{name = "a+b", offset = 0 : i64, parts = ["a", "b"], shape = array<i64: 6, 4>}]
// CHECK: tfm.weight "a+b" parts ["a", "b"] at 0 : tensor<6x4xf32>
func.func @stacked() -> tensor<6x4xf32> {
  %w = tfm.weight "a+b" parts ["a", "b"] : tensor<6x4xf32>
  return %w : tensor<6x4xf32>
}

// -----

// A name is the weights file's key: two weights of one name must stand for
// the same tensors.
func.func @same_name_other_parts() -> (tensor<6x4xf32>, tensor<6x4xf32>) {
  %w = tfm.weight "a+b" parts ["a", "b"] : tensor<6x4xf32>
  // expected-error @+1 {{names 'a+b' as another tfm.weight does, but with other parts}}
  %v = tfm.weight "a+b" parts ["b", "a"] : tensor<6x4xf32>
  return %w, %v : tensor<6x4xf32>, tensor<6x4xf32>
}
