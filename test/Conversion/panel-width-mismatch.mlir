// RUN: not tfm-opt %s -tfm-layout-weights="panel-width=32" -convert-tfm-to-linalg="vector-width=16" 2>&1 | FileCheck %s --check-prefix=MISMATCH
// RUN: tfm-opt %s -tfm-layout-weights="panel-width=32" -convert-tfm-to-linalg="vector-width=8" | FileCheck %s --check-prefix=MATCH

// The panel kernel reads a panel as 4 of its vectors: panels of 32
// features fit vectors of 8 (AVX2), not of 16, and convert-tfm-to-linalg
// refuses them rather than build a kernel for another width.
// MISMATCH: error: 'tfm.weight' op is stored in panels of 32 features, but the kernels take panels of 64 (4 vectors of 16 floats)
// MATCH-LABEL: func.func @linear(
// MATCH: memref.view %{{.+}} to memref<2x16x32xf32>
// MATCH: vector.fma {{.+}} : vector<8xf32>
func.func @linear(%x: tensor<?x16xf32>) -> tensor<?x40xf32> {
  %w = tfm.weight "w" : tensor<40x16xf32>
  %y = tfm.linear %x, %w : (tensor<?x16xf32>, tensor<40x16xf32>) -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}
