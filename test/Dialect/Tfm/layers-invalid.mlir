// The layer attributes' rules: each must be rejected with a message that
// says what was expected.
// RUN: tfm-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{a layer (tfm.layer) must be private}}
func.func @layer(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tfm.layer} {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{'tfm.layer' must be a unit attribute of a function}}
func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tfm.layer = 1 : i64} {
  return %x : tensor<4xf32>
}

// -----

func.func private @inner(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tfm.layer} {
  return %x : tensor<4xf32>
}
// expected-error @+1 {{a layer must not call layers}}
func.func private @outer(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tfm.layer} {
  %y = call @inner(%x) {tfm.weights_prefix = "a."} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func private @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @run(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfm.weights_prefix' binds the weights of a layer, but @plain is not one (tfm.layer)}}
  %y = call @plain(%x) {tfm.weights_prefix = "a."} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tfm.layer} {
  return %x : tensor<4xf32>
}
func.func @run(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfm.weights_prefix' must be a non-empty string on a call}}
  %y = call @layer(%x) {tfm.weights_prefix = ""} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tfm.layer} {
  return %x : tensor<4xf32>
}
func.func @run(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'tfm.weights_offset' must be a non-negative integer on a call of a layer}}
  %y = call @layer(%x) {tfm.weights_prefix = "a.", tfm.weights_offset = -64 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}
