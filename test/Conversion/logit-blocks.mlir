// RUN: tfm-opt %s -tfm-layout-weights -convert-tfm-to-linalg | FileCheck %s
// RUN: tfm-opt %s -tfm-layout-weights="panel-width=32" -convert-tfm-to-linalg="vector-width=8" | FileCheck %s --check-prefix=APART

// The logits' log-sum-exp terms per block of 64 where the output panels
// are 64 features wide: the panel kernel makes them with the logits, in
// the same parallel loop over panels, from each panel's finished tile,
// into the panel's [M, 1, 2] slice of the result (no buffer of their own):
// per row, the max of its 4 vectors (compares and selects), NaN found by
// unordered compares, then the sum of exp(y - max) across the lanes.
// CHECK-LABEL: func.func @projection(
// CHECK: %[[LOOP:.+]]:2 = scf.forall (%[[P:.+]]) in (%{{.+}}) shared_outs(%[[Y:.+]] = %{{.+}}, %[[T:.+]] = %{{.+}}) -> (tensor<?x?xf32>, tensor<?x?x2xf32>)
// CHECK: %[[SLICE:.+]] = tensor.extract_slice %[[T]][0, %[[P]], 0] [%{{.+}}, 1, 2] [1, 1, 1]
// CHECK: %[[TERMS:.+]] = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[SLICE]]) -> (tensor<?x1x2xf32>)
// CHECK-COUNT-3: arith.cmpf ugt, %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK-COUNT-2: arith.cmpf uno, %{{.+}}, %{{.+}} : vector<16xf32>
// CHECK: vector.reduction <or>, %{{.+}} : vector<16xi1> into i1
// CHECK: vector.reduction <maxnumf>, %{{.+}} fastmath<nnan> : vector<16xf32> into f32
// CHECK: arith.select %{{.+}}, %cst{{.*}}, %{{.+}} : f32
// CHECK: arith.cmpf oeq, %{{.+}}, %cst{{.*}} : f32
// CHECK-COUNT-4: math.exp %{{.+}} : vector<16xf32>
// CHECK: vector.reduction <add>, %{{.+}} fastmath<reassoc> : vector<16xf32> into f32
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.+}} into %[[Y]]
// CHECK: tensor.parallel_insert_slice %[[TERMS]] into %[[T]][0, %[[P]], 0] [%{{.+}}, 1, 2] [1, 1, 1]
// CHECK-NOT: tfm.logsumexp_blocks
// CHECK-NOT: linalg.generic
// CHECK: return

// Panels of 32 features (AVX2's) are not blocks of 64: the terms are a
// pass of their own over the logits, padded with -inf to whole blocks.
// APART-LABEL: func.func @projection(
// APART: scf.forall (%{{.+}}) in (%{{.+}}) shared_outs(%{{.+}} = %{{.+}}) -> (tensor<?x?xf32>)
// APART: tensor.pad
// APART: tensor.yield %cst{{.*}} : f32
// APART: linalg.generic
// APART: arith.maximumf
// APART: linalg.generic
// APART: math.exp
// APART: linalg.generic
// APART: arith.addf
func.func @projection(%x: tensor<?x?x16xf32>) -> (tensor<?x?x?xf32>, tensor<?x?x?x2xf32>) {
  %w = tfm.weight "table" : tensor<50x16xf32>
  %ws = tfm.caller_rows %w from "output_panels" : tensor<50x16xf32> -> tensor<?x16xf32>
  %y = tfm.linear %x, %ws : (tensor<?x?x16xf32>, tensor<?x16xf32>) -> tensor<?x?x?xf32>
  %t = tfm.logsumexp_blocks %y block 64 : tensor<?x?x?xf32> -> tensor<?x?x?x2xf32>
  return %y, %t : tensor<?x?x?xf32>, tensor<?x?x?x2xf32>
}
