// RUN: tfm-opt %s -tfm-layout-weights="panel-width=0" | FileCheck %s --check-prefix=LAYOUT
// RUN: tfm-opt %s -tfm-layout-weights="panel-width=0" -convert-tfm-to-linalg | FileCheck %s --check-prefix=LOWER
// RUN: sed 's/ {tfm.weights_prefix = "layers.1."}//' %s | not tfm-opt -tfm-layout-weights 2>&1 | FileCheck %s --check-prefix=UNBOUND

// A layer called for two layers and a third time with the first's prefix
// (its weights shared): each prefix gets one block of the layer's weights,
// in the layer's one layout (w at 0, b at 64 of the block, 64-byte
// aligned), after the weights outside layers; the entries name each
// block's tensors in full. The layer's weights get the offsets within the
// block, each call its block's.
// LAYOUT: tfm.weights_layout = [{name = "embed", offset = 0 : i64, shape = array<i64: 4, 4>},
// LAYOUT-SAME: {name = "layers.0.w", offset = 64 : i64, shape = array<i64: 4, 4>}, {name = "layers.0.b", offset = 128 : i64, shape = array<i64: 4>},
// LAYOUT-SAME: {name = "layers.1.w", offset = 192 : i64, shape = array<i64: 4, 4>}, {name = "layers.1.b", offset = 256 : i64, shape = array<i64: 4>}]
// LAYOUT-SAME: tfm.weights_size = 272 : i64
// LAYOUT-LABEL: func.func private @layer
// LAYOUT: tfm.weight "w" at 0 : tensor<4x4xf32>
// LAYOUT: tfm.weight "b" at 64 : tensor<4xf32>
// LAYOUT-LABEL: func.func @run
// LAYOUT: tfm.weight "embed" at 0
// LAYOUT: call @layer({{.+}}) {tfm.weights_offset = 64 : i64, tfm.weights_prefix = "layers.0."}
// LAYOUT: call @layer({{.+}}) {tfm.weights_offset = 192 : i64, tfm.weights_prefix = "layers.1."}
// LAYOUT: call @layer({{.+}}) {tfm.weights_offset = 64 : i64, tfm.weights_prefix = "layers.0."}

// Lowered: the layer takes the weights as its first argument and views its
// tensors at their offsets in it; each call hands it the caller's weights
// from the call's block on.
// LOWER-LABEL: func.func private @layer(
// LOWER-SAME: %[[LW:[a-z0-9]+]]: memref<?xi8> {tfm.name = "weights"}
// LOWER: memref.view %[[LW]][%c0{{.*}}][] : memref<?xi8> to memref<4x4xf32>
// LOWER: memref.view %[[LW]][%c64{{.*}}][] : memref<?xi8> to memref<4xf32>
// LOWER-LABEL: func.func @run(
// LOWER-SAME: %[[W:[a-z0-9]+]]: memref<?xi8> {tfm.name = "weights"}
// LOWER: call @layer(
// LOWER: %[[AT:.+]] = arith.constant 192 : index
// LOWER: %[[SIZE:.+]] = memref.dim %[[W]]
// LOWER: %[[REST:.+]] = arith.subi %[[SIZE]], %[[AT]]
// LOWER: %[[BLOCK:.+]] = memref.view %[[W]][%[[AT]]][%[[REST]]] : memref<?xi8> to memref<?xi8>
// LOWER: call @layer(%[[BLOCK]],

// UNBOUND: error: 'func.call' op calls the layer @layer without 'tfm.weights_prefix': its weights are bound to no checkpoint tensors

func.func private @layer(%x: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {tfm.layer} {
  %w = tfm.weight "w" : tensor<4x4xf32>
  %b = tfm.weight "b" : tensor<4xf32>
  %y = tfm.linear %x, %w, %b : (tensor<?x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

func.func @run(%ids: tensor<?xi32>) -> tensor<?x4xf32> {
  %e = tfm.weight "embed" : tensor<4x4xf32>
  %x = tfm.embedding %e[%ids] : tensor<4x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %0 = call @layer(%x) {tfm.weights_prefix = "layers.0."} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %1 = call @layer(%0) {tfm.weights_prefix = "layers.1."} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = call @layer(%1) {tfm.weights_prefix = "layers.0."} : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %2 : tensor<?x4xf32>
}
