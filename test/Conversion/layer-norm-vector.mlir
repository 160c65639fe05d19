// RUN: tfm-opt %s -split-input-file -convert-tfm-to-linalg="vector-width=8" -canonicalize | FileCheck %s
// RUN: tfm-opt %s -split-input-file -convert-tfm-to-linalg="vector-width=16" -canonicalize | FileCheck %s --check-prefix=AVX512

// The vector layer norm for AVX2 (vectors of 8) over rows of 513: up to 63
// rows (64 x 512 elements) on the calling thread, more in blocks of 8 rows
// in parallel; per row, three loops over 512 floats in steps of 4
// vectors (pass 1: sum, pass 2: centered squares, 4 accumulators each;
// pass 3: the normalized row into the block), each followed by the tail at
// column 512 with masked transfers (no in_bounds). The tail of pass 2 pads
// x with the mean so its lanes past the row add 0.
// CHECK-LABEL: func.func @vector_513(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x513xf32>, %[[R:[^:]+]]: tensor<?x513xf32>, %[[G:[^:]+]]: tensor<513xf32>, %[[B:[^:]+]]: tensor<513xf32>)
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[M:.+]] = tensor.dim %[[X]], %c0
// CHECK: %[[FEW:.+]] = arith.cmpi ule, %[[M]], %c63
// CHECK: scf.if %[[FEW]] -> (tensor<?x513xf32>) {
// CHECK-NOT: scf.forall
// CHECK: scf.for %[[SI:.+]] = %c0 to %[[M]] step %c1 iter_args(%{{.+}} = %{{.+}}) -> (tensor<?x513xf32>)
// CHECK: vector.transfer_read %[[X]][%[[SI]], %{{.+}}], %[[ZERO]] {in_bounds = [true]} : tensor<?x513xf32>, vector<8xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%[[SI]], %c512] : vector<8xf32>, tensor<?x513xf32>
// CHECK: } else {
// CHECK: %[[BLOCKS:.+]] = arith.ceildivui %[[M]], %c8
// CHECK: scf.forall (%[[BLOCK:.+]]) in (%[[BLOCKS]]) shared_outs(%[[OUT:.+]] = %{{.+}}) -> (tensor<?x513xf32>)
// CHECK: %[[R0:.+]] = arith.muli %[[BLOCK]], %c8
// CHECK: %[[ROWS:.+]] = arith.minui %{{.+}}, %c8
// CHECK: %[[TILE:.+]] = tensor.extract_slice %[[OUT]][%[[R0]], 0] [%[[ROWS]], 513] [1, 1]
// CHECK: scf.for %[[I:.+]] = %c0 to %[[ROWS]] step %c1 iter_args(%{{.+}} = %[[TILE]]) -> (tensor<?x513xf32>)
// CHECK: %[[ROW:.+]] = arith.addi %[[R0]], %[[I]]
// CHECK: scf.for %[[J:.+]] = %c0 to %c512 step %c32 iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.transfer_read %[[X]][%[[ROW]], %[[J]]], %[[ZERO]] {in_bounds = [true]} : tensor<?x513xf32>, vector<8xf32>
// CHECK: vector.transfer_read %[[R]][%[[ROW]], %[[J]]], %[[ZERO]] {in_bounds = [true]} : tensor<?x513xf32>, vector<8xf32>
// CHECK: vector.transfer_read %[[X]][%[[ROW]], %c512], %[[ZERO]] : tensor<?x513xf32>, vector<8xf32>
// CHECK: vector.transfer_read %[[R]][%[[ROW]], %c512], %[[ZERO]] : tensor<?x513xf32>, vector<8xf32>
// CHECK: vector.reduction <add>, %{{.+}} : vector<8xf32> into f32
// CHECK: %[[MEAN:.+]] = arith.divf %{{.+}}, %{{.+}} : f32
// CHECK: scf.for %{{.+}} = %c0 to %c512 step %c32 iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.fma
// CHECK: vector.transfer_read %[[X]][%[[ROW]], %c512], %[[MEAN]] : tensor<?x513xf32>, vector<8xf32>
// CHECK: vector.reduction <add>, %{{.+}} : vector<8xf32> into f32
// CHECK: math.rsqrt %{{.+}} : f32
// CHECK: scf.for %[[K:.+]] = %c0 to %c512 step %c32 iter_args(%{{.+}}) -> (tensor<?x513xf32>)
// CHECK: vector.transfer_read %[[G]][%[[K]]], %[[ZERO]] {in_bounds = [true]} : tensor<513xf32>, vector<8xf32>
// CHECK: vector.transfer_read %[[B]][%[[K]]], %[[ZERO]] {in_bounds = [true]} : tensor<513xf32>, vector<8xf32>
// CHECK: vector.fma
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%[[I]], %[[K]]] {in_bounds = [true]} : vector<8xf32>, tensor<?x513xf32>
// CHECK: vector.transfer_read %[[G]][%c512], %[[ZERO]] : tensor<513xf32>, vector<8xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%[[I]], %c512] : vector<8xf32>, tensor<?x513xf32>
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[OUT]][%[[R0]], 0] [%[[ROWS]], 513] [1, 1]
// CHECK-NOT: linalg.generic

// With AVX-512 (vectors of 16) the same row is 4 vectors of 16 per
// iteration and the tail a masked vector of 16 at column 512.
// AVX512-LABEL: func.func @vector_513(
// AVX512: scf.for %[[J:.+]] = %c0 to %c512 step %c64 iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// AVX512: vector.transfer_read %{{.+}}[%{{.+}}, %[[J]]], %{{.+}} {in_bounds = [true]} : tensor<?x513xf32>, vector<16xf32>
// AVX512: vector.transfer_read %{{.+}}[%{{.+}}, %c512], %{{.+}} : tensor<?x513xf32>, vector<16xf32>
// AVX512: vector.reduction <add>, %{{.+}} : vector<16xf32> into f32
// AVX512-LABEL: func.func @model_512(
func.func @vector_513(%x: tensor<?x513xf32>, %r: tensor<?x513xf32>, %g: tensor<513xf32>, %b: tensor<513xf32>) -> tensor<?x513xf32> {
  %y = tfm.layer_norm %x residual(%r : tensor<?x513xf32>) scale(%g : tensor<513xf32>) bias(%b : tensor<513xf32>) epsilon 1.0e-5 : tensor<?x513xf32>
  return %y : tensor<?x513xf32>
}

// -----

// The model's [batch, tokens, 512] without γ and β: leading dimensions
// collapsed for the kernel and restored after; 512 is whole vectors, so no
// transfer is masked.
// CHECK-LABEL: func.func @model_512(
// CHECK: tensor.collapse_shape %{{.+}} {{\[\[}}0, 1], [2]] : tensor<?x?x512xf32> into tensor<?x512xf32>
// CHECK: scf.forall
// CHECK: vector.transfer_read %{{.+}} {in_bounds = [true]} : tensor<?x512xf32>, vector<8xf32>
// CHECK-NOT: vector.transfer_read %{{.+}}, %{{[^{]+}} : tensor<?x512xf32>, vector<8xf32>
// CHECK-NOT: vector.transfer_write %{{[^{]+}} : vector<8xf32>, tensor<?x512xf32>
// CHECK: scf.forall.in_parallel
// CHECK: tensor.reshape %{{.+}} : (tensor<?x512xf32>, tensor<3xindex>) -> tensor<?x?x512xf32>
func.func @model_512(%x: tensor<?x?x512xf32>) -> tensor<?x?x512xf32> {
  %y = tfm.layer_norm %x epsilon 1.0e-5 : tensor<?x?x512xf32>
  return %y : tensor<?x?x512xf32>
}

// -----

// Negative: a dynamic last axis, f16 elements and a rank-1 input keep the
// generic lowering (statistics, then the normalization), with no vectors.
// CHECK-LABEL: func.func @dynamic_width(
// CHECK-NOT: vector.
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel"]
// CHECK-NOT: vector.
func.func @dynamic_width(%x: tensor<?x?xf32>, %g: tensor<?xf32>) -> tensor<?x?xf32> {
  %y = tfm.layer_norm %x scale(%g : tensor<?xf32>) epsilon 1.0e-5 : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @half_elements(
// CHECK-NOT: vector.
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @half_elements(%x: tensor<?x512xf16>) -> tensor<?x512xf16> {
  %y = tfm.layer_norm %x epsilon 1.0e-5 : tensor<?x512xf16>
  return %y : tensor<?x512xf16>
}

// -----

// CHECK-LABEL: func.func @one_row(
// CHECK-NOT: vector.
// CHECK: linalg.generic
// CHECK: linalg.generic
// CHECK-NOT: vector.
func.func @one_row(%x: tensor<512xf32>) -> tensor<512xf32> {
  %y = tfm.layer_norm %x epsilon 1.0e-5 : tensor<512xf32>
  return %y : tensor<512xf32>
}

// -----

// T5's RMS norm: the kernel's mean pass is skipped and nothing is centered
// (the layer norm above subtracts the mean in its variance and output
// passes); the sum of squares and rsqrt remain.
// CHECK-LABEL: func.func @rms_512(
// CHECK-NOT: arith.subf
// CHECK: scf.forall
// CHECK-NOT: arith.subf
// CHECK: vector.fma
// CHECK-NOT: arith.subf
// CHECK: math.rsqrt
// CHECK-NOT: arith.subf
// CHECK: return
func.func @rms_512(%x: tensor<?x512xf32>, %g: tensor<512xf32>) -> tensor<?x512xf32> {
  %y = tfm.layer_norm %x scale(%g : tensor<512xf32>) epsilon 1.0e-6 rms : tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}

// -----

// The generic lowering of an RMS norm: S2 = sum(x²) unshifted, var = S2 / n,
// x not centered.
// CHECK-LABEL: func.func @rms_dynamic(
// CHECK-NOT: arith.subf
// CHECK: linalg.generic
// CHECK-NOT: arith.subf
// CHECK: math.rsqrt
// CHECK-NOT: arith.subf
// CHECK: return
func.func @rms_dynamic(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %y = tfm.layer_norm %x epsilon 1.0e-6 rms : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
