// RUN: tfm-opt %s -tfm-layout-weights | FileCheck %s --check-prefix=LAYOUT
// RUN: tfm-opt %s -tfm-layout-weights="panel-width=32" | FileCheck %s --check-prefix=PANEL32
// RUN: tfm-opt %s -tfm-layout-weights="panel-width=0" | FileCheck %s --check-prefix=PLAIN
// RUN: tfm-opt %s -tfm-layout-weights -convert-tfm-to-linalg | FileCheck %s --check-prefix=LOWER
// RUN: not tfm-opt %s -tfm-layout-weights="panel-width=6" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" -convert-tfm-to-linalg | FileCheck %s --check-prefix=LOWER-BF16
// RUN: not tfm-opt %s -tfm-layout-weights="precision=fp16" 2>&1 | FileCheck %s --check-prefix=BAD-PRECISION

// Weights are laid end to end in order of first use, 64-byte aligned. The
// matrix a linear reads is stored as panels of 64 output features with K
// contiguous: ceil(50 / 64) = 1 panel of 16 x 64 floats (4096 bytes), zero
// beyond row 50. The embedding reads the same tensor row by row: it gets a
// plain copy of its own. The same tensor read twice alike is stored once.
// LAYOUT: module attributes {tfm.precision = "fp32", tfm.weights_layout = [{name = "table", offset = 0 : i64, panel_width = 64 : i64, shape = array<i64: 50, 16>}, {name = "bias", offset = 4096 : i64, shape = array<i64: 50>}, {name = "table", offset = 4352 : i64, shape = array<i64: 50, 16>}], tfm.weights_size = 7552 : i64}
// LAYOUT-LABEL: func.func @logits
// LAYOUT: %[[W:.+]] = tfm.weight "table" at 0 {tfm.panel_width = 64 : i64} : tensor<50x16xf32>
// LAYOUT: tfm.weight "bias" at 4096 : tensor<50xf32>
// LAYOUT: tfm.linear %{{.+}}, %[[W]], %{{.+}} :
// LAYOUT-LABEL: func.func @again
// LAYOUT: tfm.weight "table" at 4352 : tensor<50x16xf32>
// LAYOUT-LABEL: func.func @shared
// LAYOUT: %[[ROWS:.+]] = tfm.weight "table" at 4352 : tensor<50x16xf32>
// LAYOUT: %[[PACKED:.+]] = tfm.weight "table" at 0 {tfm.panel_width = 64 : i64} : tensor<50x16xf32>
// LAYOUT: tfm.embedding %[[ROWS]]
// LAYOUT: tfm.linear %{{.+}}, %[[PACKED]] :

// Panels of 32: two of them, 2 x 16 x 32 floats (4096 bytes).
// PANEL32: tfm.weights_layout = [{name = "table", offset = 0 : i64, panel_width = 32 : i64, shape = array<i64: 50, 16>}, {name = "bias", offset = 4096 : i64

// Without panels, one plain copy serves every reader.
// PLAIN: module attributes {tfm.precision = "fp32", tfm.weights_layout = [{name = "table", offset = 0 : i64, shape = array<i64: 50, 16>}, {name = "bias", offset = 3200 : i64, shape = array<i64: 50>}], tfm.weights_size = 3400 : i64}

// BAD: error: panel-width must be 0 or a multiple of 4, found 6

// bf16: the panels (only) hold bfloat16, half the bytes: 1 x 16 x 64 x 2 =
// 2048; the bias and the embedding's plain copy stay f32.
// BF16: module attributes {tfm.precision = "bf16", tfm.weights_layout = [{element_type = bf16, name = "table", offset = 0 : i64, panel_width = 64 : i64, shape = array<i64: 50, 16>}, {name = "bias", offset = 2048 : i64, shape = array<i64: 50>}, {name = "table", offset = 2304 : i64, shape = array<i64: 50, 16>}], tfm.weights_size = 5504 : i64}
// BF16: tfm.weight "table" at 0 {tfm.panel_element_type = bf16, tfm.panel_width = 64 : i64} : tensor<50x16xf32>
// BF16: tfm.weight "bias" at 2048 : tensor<50xf32>

// BAD-PRECISION: error: unknown precision 'fp16': expected fp32 or bf16

// Lowered with bf16 panels: x rounded to bf16 and back once, the panels
// viewed as bf16, each pair of weight vectors (interleaved lane by lane in
// the file) read as one and widened by a shift (the low halves) and a mask
// (the high halves), the FMAs in f32.
// LOWER-BF16-LABEL: func.func @logits(
// LOWER-BF16: memref.view %{{.+}} : memref<?xi8> to memref<1x16x64xbf16>
// LOWER-BF16: %[[X:.+]] = linalg.generic
// LOWER-BF16: %[[NARROW:.+]] = arith.truncf %{{.+}} : f32 to bf16
// LOWER-BF16: arith.extf %[[NARROW]] : bf16 to f32
// LOWER-BF16: scf.forall
// LOWER-BF16-DAG: %[[SIXTEEN:.+]] = arith.constant dense<16> : vector<16xi32>
// LOWER-BF16-DAG: %[[HIGH:.+]] = arith.constant dense<-65536> : vector<16xi32>
// LOWER-BF16: %[[PAIR:.+]] = vector.transfer_read %{{.+}} : tensor<1x16x64xbf16>, vector<32xbf16>
// LOWER-BF16: %[[WORDS:.+]] = vector.bitcast %[[PAIR]] : vector<32xbf16> to vector<16xi32>
// LOWER-BF16: %[[LOW:.+]] = arith.shli %[[WORDS]], %[[SIXTEEN]] : vector<16xi32>
// LOWER-BF16: %[[W0:.+]] = vector.bitcast %[[LOW]] : vector<16xi32> to vector<16xf32>
// LOWER-BF16: %[[UPPER:.+]] = arith.andi %[[WORDS]], %[[HIGH]] : vector<16xi32>
// LOWER-BF16: %[[W1:.+]] = vector.bitcast %[[UPPER]] : vector<16xi32> to vector<16xf32>
// LOWER-BF16: %[[XS:.+]] = tensor.extract %[[X]]
// LOWER-BF16: %[[XB:.+]] = vector.broadcast %[[XS]] : f32 to vector<16xf32>
// LOWER-BF16: vector.fma %[[XB]], %[[W0]], %{{.+}} : vector<16xf32>
// LOWER-BF16: vector.fma %[[XB]], %[[W1]], %{{.+}} : vector<16xf32>
// LOWER-BF16-LABEL: func.func @again
// LOWER-BF16-NOT: bf16
// LOWER-BF16-LABEL: func.func @shared
// LOWER-BF16: memref.view %{{.+}} : memref<?xi8> to memref<50x16xf32>
// LOWER-BF16: memref.view %{{.+}} : memref<?xi8> to memref<1x16x64xbf16>

// The lowered linear reads the panels [1, 16, 64] through a view of the
// weights argument; in parallel over panels, 4 rows at a time (then one), 4
// vectors of 16 accumulate x[m, k] · panel[p, k, :] by FMAs over K; the bias
// is added on the registers (reads past 50 padded) before the store; the
// product's [M, 64] is cut to [M, 50]. (K blocks and the tiles per row
// count: panel-linear.mlir.)
// LOWER-LABEL: func.func @logits(
// LOWER-SAME: %[[WEIGHTS:.+]]: memref<?xi8> {tfm.name = "weights"}
// LOWER: %[[VIEW:.+]] = memref.view %[[WEIGHTS]][%{{.+}}][] : memref<?xi8> to memref<1x16x64xf32>
// LOWER: %[[PANELS:.+]] = bufferization.to_tensor %[[VIEW]] restrict : memref<1x16x64xf32>
// LOWER: scf.forall (%[[P:.+]]) in (1) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<?x64xf32>)
// LOWER: scf.for %{{.+}} step %c4{{.*}} iter_args(%{{.+}}) -> (tensor<?x64xf32>)
// LOWER: scf.for %[[K:.+]] = %{{.+}} to %c16{{.*}} step %c1{{.*}} iter_args({{.+}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// LOWER: %[[V0:.+]] = vector.transfer_read %[[PANELS]][%[[P]], %[[K]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<1x16x64xf32>, vector<16xf32>
// LOWER: %[[XS:.+]] = tensor.extract %{{.+}}[%{{.+}}, %[[K]]] : tensor<?x16xf32>
// LOWER: %[[XB:.+]] = vector.broadcast %[[XS]] : f32 to vector<16xf32>
// LOWER: vector.fma %[[XB]], %[[V0]], %{{.+}} : vector<16xf32>
// LOWER: %[[BIAS:.+]] = vector.transfer_read %{{.+}}[%{{.+}}], %{{.+}} : tensor<50xf32>, vector<16xf32>
// LOWER: arith.addf %{{.+}}, %[[BIAS]] : vector<16xf32>
// LOWER: vector.transfer_write %{{.+}} {in_bounds = [true]} : vector<16xf32>, tensor<?x64xf32>
// LOWER: scf.forall.in_parallel
// LOWER: tensor.parallel_insert_slice
// LOWER: tensor.extract_slice %{{.+}}[0, 0] [%{{.+}}, 50] [1, 1] : tensor<?x64xf32> to tensor<?x50xf32>
func.func @logits(%x: tensor<?x?x16xf32>) -> tensor<?x?x50xf32> {
  %w = tfm.weight "table" : tensor<50x16xf32>
  %b = tfm.weight "bias" : tensor<50xf32>
  %y = tfm.linear %x, %w, %b : (tensor<?x?x16xf32>, tensor<50x16xf32>, tensor<50xf32>) -> tensor<?x?x50xf32>
  return %y : tensor<?x?x50xf32>
}

// LOWER-LABEL: func.func @again
func.func @again(%ids: tensor<?x?xi32>) -> tensor<?x?x16xf32> {
  %w = tfm.weight "table" : tensor<50x16xf32>
  %e = tfm.embedding %w[%ids] : tensor<50x16xf32>, tensor<?x?xi32> -> tensor<?x?x16xf32>
  return %e : tensor<?x?x16xf32>
}

// A tied table: one tfm.weight read by the embedding and the output
// projection.
// LOWER-LABEL: func.func @shared
// LOWER: memref.view %{{.+}} : memref<?xi8> to memref<50x16xf32>
// LOWER: memref.view %{{.+}} : memref<?xi8> to memref<1x16x64xf32>
func.func @shared(%ids: tensor<?x?xi32>) -> tensor<?x?x50xf32> {
  %w = tfm.weight "table" : tensor<50x16xf32>
  %e = tfm.embedding %w[%ids] : tensor<50x16xf32>, tensor<?x?xi32> -> tensor<?x?x16xf32>
  %y = tfm.linear %e, %w : (tensor<?x?x16xf32>, tensor<50x16xf32>) -> tensor<?x?x50xf32>
  return %y : tensor<?x?x50xf32>
}
