// RUN: tfm-opt %s -tfm-layout-weights | FileCheck %s --check-prefix=LAYOUT
// RUN: tfm-opt %s -tfm-layout-weights="panel-width=32" | FileCheck %s --check-prefix=PANEL32
// RUN: tfm-opt %s -tfm-layout-weights="panel-width=0" | FileCheck %s --check-prefix=PLAIN
// RUN: tfm-opt %s -tfm-layout-weights -convert-tfm-to-linalg | FileCheck %s --check-prefix=LOWER
// RUN: not tfm-opt %s -tfm-layout-weights="panel-width=6" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" | FileCheck %s --check-prefix=BF16
// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" -convert-tfm-to-linalg | FileCheck %s --check-prefix=LOWER-BF16
// RUN: tfm-opt %s -tfm-layout-weights="precision=bf16" -convert-tfm-to-linalg="bf16-dot=true" | FileCheck %s --check-prefix=LOWER-DOT
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

// BAD-PRECISION: error: unknown precision 'fp16': expected fp32, bf16, int8 or int4

// Lowered with bf16 panels, K in pairs: the view is [1, 8, 128] (8 pairs
// of k, each of 64 features x 2). Without AVX512-BF16, x is rounded to
// bf16 and back once; each read of 32 bf16 (16 features, two k each) is
// widened by a mask (k odd) and a shift (k even), and the odd k's FMA
// comes first, as in vdpbf16ps.
// LOWER-BF16-LABEL: func.func @logits(
// LOWER-BF16: memref.view %{{.+}} : memref<?xi8> to memref<1x8x128xbf16>
// LOWER-BF16: %[[X:.+]] = scf.if
// LOWER-BF16: %[[NARROW:.+]] = arith.truncf %{{.+}} : f32 to bf16
// LOWER-BF16: arith.extf %[[NARROW]] : bf16 to f32
// LOWER-BF16: scf.forall
// LOWER-BF16: scf.for %[[Q:.+]] = %{{.+}} to %c8{{.*}} step %c1
// LOWER-BF16: %[[PAIR:.+]] = vector.transfer_read %{{.+}}[%{{.+}}, %[[Q]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<1x8x128xbf16>, vector<32xbf16>
// LOWER-BF16: %[[WORDS:.+]] = vector.bitcast %[[PAIR]] : vector<32xbf16> to vector<16xi32>
// LOWER-BF16: %[[SIXTEEN:.+]] = arith.constant dense<16> : vector<16xi32>
// LOWER-BF16: %[[LOW:.+]] = arith.shli %[[WORDS]], %[[SIXTEEN]] : vector<16xi32>
// LOWER-BF16: %[[W0:.+]] = vector.bitcast %[[LOW]] : vector<16xi32> to vector<16xf32>
// LOWER-BF16: %[[HIGH:.+]] = arith.constant dense<-65536> : vector<16xi32>
// LOWER-BF16: %[[UPPER:.+]] = arith.andi %[[WORDS]], %[[HIGH]] : vector<16xi32>
// LOWER-BF16: %[[W1:.+]] = vector.bitcast %[[UPPER]] : vector<16xi32> to vector<16xf32>
// LOWER-BF16: %[[EVEN:.+]] = arith.muli %[[Q]], %c2
// LOWER-BF16: %[[ODD:.+]] = arith.addi %[[EVEN]], %c1
// LOWER-BF16: %[[XODD:.+]] = tensor.extract %[[X]][%{{.+}}, %[[ODD]]]
// LOWER-BF16: %[[XB1:.+]] = vector.broadcast %[[XODD]] : f32 to vector<16xf32>
// LOWER-BF16: %[[ACC:.+]] = vector.fma %[[XB1]], %[[W1]], %{{.+}} : vector<16xf32>
// LOWER-BF16: %[[XEVEN:.+]] = tensor.extract %[[X]][%{{.+}}, %[[EVEN]]]
// LOWER-BF16: %[[XB0:.+]] = vector.broadcast %[[XEVEN]] : f32 to vector<16xf32>
// LOWER-BF16: vector.fma %[[XB0]], %[[W0]], %[[ACC]] : vector<16xf32>
// LOWER-BF16-LABEL: func.func @again
// LOWER-BF16-NOT: bf16
// LOWER-BF16-LABEL: func.func @shared
// LOWER-BF16: memref.view %{{.+}} : memref<?xi8> to memref<50x16xf32>
// LOWER-BF16: memref.view %{{.+}} : memref<?xi8> to memref<1x8x128xbf16>

// With AVX512-BF16 (bf16-dot), x is rounded to bf16 [M, 16] (a row at a
// time in parallel where there are many rows, else in one loop) and stays so;
// the kernel broadcasts each pair x[m, 2q : 2q + 2] as one 32-bit word and
// takes vdpbf16ps of it with the 32 bf16 of the panel row.
// LOWER-DOT-LABEL: func.func @logits(
// LOWER-DOT: memref.view %{{.+}} : memref<?xi8> to memref<1x8x128xbf16>
// LOWER-DOT: %[[X:.+]] = scf.if
// LOWER-DOT: arith.truncf %{{.+}} : f32 to bf16
// LOWER-DOT-NEXT: linalg.yield %{{.+}} : bf16
// LOWER-DOT-NEXT: } -> tensor<1x16xbf16>
// LOWER-DOT: } else {
// LOWER-DOT: arith.truncf %{{.+}} : f32 to bf16
// LOWER-DOT-NEXT: linalg.yield %{{.+}} : bf16
// LOWER-DOT-NEXT: } -> tensor<?x16xbf16>
// LOWER-DOT: scf.for %[[Q:.+]] = %{{.+}} to %c8{{.*}} step %c1
// LOWER-DOT: %[[W:.+]] = vector.transfer_read %{{.+}}[%{{.+}}, %[[Q]], %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<1x8x128xbf16>, vector<32xbf16>
// LOWER-DOT: %[[EVEN:.+]] = arith.muli %[[Q]], %c2
// LOWER-DOT: %[[XPAIR:.+]] = vector.transfer_read %[[X]][%{{.+}}, %[[EVEN]]], %{{.+}} {in_bounds = [true]} : tensor<?x16xbf16>, vector<2xbf16>
// LOWER-DOT: %[[XWORD1:.+]] = vector.bitcast %[[XPAIR]] : vector<2xbf16> to vector<1xi32>
// LOWER-DOT: %[[XWORD:.+]] = vector.extract %[[XWORD1]][0] : i32 from vector<1xi32>
// LOWER-DOT: %[[XWORDS:.+]] = vector.broadcast %[[XWORD]] : i32 to vector<16xi32>
// LOWER-DOT: %[[XB:.+]] = vector.bitcast %[[XWORDS]] : vector<16xi32> to vector<32xbf16>
// LOWER-DOT: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.+}}, %[[XB]], %[[W]]) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
// LOWER-DOT-NOT: vector.fma
// LOWER-DOT-LABEL: func.func @again

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

