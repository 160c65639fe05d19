// The precision and backend names read back from the IR or a pipeline's
// options: a name that is none is refused, naming where it was and the
// names allowed (an op is given llvm or onednn, never auto).

// RUN: not tfm-opt %s -split-input-file --convert-tfm-to-onednn 2>&1 | FileCheck %s
// RUN: not tfm-opt %s -split-input-file --tfm-select-backend=precision=fp16 2>&1 | FileCheck %s --check-prefix=SELECT
// RUN: not tfm-opt %s -split-input-file --tfm-lower-to-llvm=backend=gpu 2>&1 | FileCheck %s --check-prefix=PIPELINE-BACKEND
// RUN: not tfm-opt %s -split-input-file --tfm-lower-to-llvm=precision=fp16 2>&1 | FileCheck %s --check-prefix=PIPELINE-PRECISION

// SELECT: error: unknown precision 'fp16': expected fp32, bf16, int8 or int4
// PIPELINE-BACKEND: unknown backend 'gpu': expected llvm, onednn or auto
// PIPELINE-PRECISION: unknown precision 'fp16': expected fp32, bf16, int8 or int4

// CHECK: error: unknown tfm.precision 'fp16': expected fp32, bf16, int8 or int4
module attributes {tfm.precision = "fp16"} {
  func.func @linear(%x: tensor<4x64xf32>) -> tensor<4x16xf32> {
    %w = tfm.weight "w" : tensor<16x64xf32>
    %y = tfm.linear %x, %w : (tensor<4x64xf32>, tensor<16x64xf32>) -> tensor<4x16xf32>
    return %y : tensor<4x16xf32>
  }
}

// -----

// CHECK: error: 'tfm.relu' op unknown tfm.backend 'gpu': expected llvm or onednn
func.func @relu(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = tfm.relu %x {tfm.backend = "gpu"} : tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// CHECK: error: 'tfm.relu' op unknown tfm.backend 'auto': expected llvm or onednn
func.func @relu(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %y = tfm.relu %x {tfm.backend = "auto"} : tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}
