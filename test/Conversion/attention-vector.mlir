// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg="vector-width=8" --canonicalize --cse | FileCheck %s --check-prefixes=CHECK,AVX2
// RUN: tfm-opt %s -split-input-file --convert-tfm-to-linalg="vector-width=16" --canonicalize --cse | FileCheck %s --check-prefixes=CHECK,AVX512

// A decode step over a cache (static head size 64) takes the vector kernel:
// parallel over heads, key blocks of 32 that a query visits only if it sees
// one of their keys, scores from vector FMAs summed by shuffles, the online
// softmax with vector exps (one per vector of 32 scores, and the
// correction), the weighted sum of V in vector FMAs, then O / l. Q, K and
// V are read in their own shapes (a cache's valid prefix is a strided view:
// collapsing its batch and head dimensions would copy it every step).
// CHECK-LABEL: func.func @decode
// CHECK-NOT: tensor.collapse_shape {{.*}} : tensor<?x8x?x64xf32>
// CHECK: scf.forall
// CHECK: arith.remui %{{.*}}, %c8
// CHECK: arith.divui %{{.*}}, %c8
// CHECK: linalg.fill
// CHECK: scf.for {{.*}} step %c32
// CHECK: scf.if
// AVX2: vector.transfer_read {{.*}} {in_bounds = [true]} : tensor<?x8x1x64xf32>, vector<8xf32>
// AVX512: vector.transfer_read {{.*}} {in_bounds = [true]} : tensor<?x8x1x64xf32>, vector<16xf32>
// AVX2: vector.transfer_read {{.*}} {in_bounds = [true]} : tensor<?x8x?x64xf32>, vector<8xf32>
// AVX512: vector.transfer_read {{.*}} {in_bounds = [true]} : tensor<?x8x?x64xf32>, vector<16xf32>
// CHECK: vector.fma
// CHECK: vector.shuffle
// AVX2: %[[HALF:.+]] = vector.shuffle %[[MAX8:.+]], %[[MAX8]] [4, 5, 6, 7] : vector<8xf32>, vector<8xf32>
// AVX512: %[[HALF:.+]] = vector.shuffle %[[MAX16:.+]], %[[MAX16]] [8, 9, 10, 11, 12, 13, 14, 15] : vector<16xf32>, vector<16xf32>
// CHECK: arith.cmpf ugt
// AVX2-COUNT-5: math.exp {{.*}} : vector<8xf32>
// AVX512-COUNT-3: math.exp {{.*}} : vector<16xf32>
// CHECK: vector.fma
// CHECK: scf.yield
// CHECK: vector.reduction <add>
// CHECK: arith.divf
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.matmul
func.func @decode(%q: tensor<?x8x1x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x1x64xf32> {
  %o = tfm.attention %q, %k, %v causal scale 0.125
      : tensor<?x8x1x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32> -> tensor<?x8x1x64xf32>
  return %o : tensor<?x8x1x64xf32>
}

// -----

// A block of 64 queries takes the register-tiled kernel, the queries along
// the lanes of its score vectors: Qᵀ packed once (squares transposed by
// shuffles); per block of 64 keys (up to the last key seen, in whole
// tiles), Sᵀ in tiles of 8 keys (4 with AVX2, for its 16 registers) x 2
// vectors of queries fed by broadcasts of K as it is; the online softmax
// lane-wise, masked only in blocks past the first query's end, its max,
// sums and exps (2^n from shifted bits) with no reduction across lanes; P·V
// in groups of R rows (6 with AVX-512, 3 with AVX2, 64 rows rounded up to
// 66) with 24 accumulators; then O / l.
// CHECK-LABEL: func.func @encoder
// CHECK: scf.forall
// CHECK: vector.shuffle
// CHECK: scf.for {{.*}} step %c64 iter_args
// AVX512: %[[TILES:.+]] = arith.ceildivui %{{.*}}, %c8
// AVX512: %[[KEYS:.+]] = arith.muli %[[TILES]], %c8
// AVX2: %[[TILES:.+]] = arith.ceildivui %{{.*}}, %c4
// AVX2: %[[KEYS:.+]] = arith.muli %[[TILES]], %c4
// AVX512: scf.for {{.*}} to %c64 step %c32
// AVX2: scf.for {{.*}} to %c64 step %c16
// AVX512-NEXT: scf.for {{.*}} to %[[KEYS]] step %c8
// AVX2-NEXT: scf.for {{.*}} to %[[KEYS]] step %c4
// AVX512: :16 = scf.for {{.*}} step %c1
// AVX2: :8 = scf.for {{.*}} step %c1
// AVX512-COUNT-8: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<64x64xf32>
// AVX2-COUNT-4: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<64x64xf32>
// CHECK: scf.if
// AVX512: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<16xi32>
// AVX2: arith.cmpi slt, %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK-NOT: vector.reduction
// CHECK: arith.shli
// CHECK-NOT: vector.reduction
// AVX512: scf.for {{.*}} to %c66 step %c6
// AVX2: scf.for {{.*}} to %c66 step %c3
// CHECK: scf.if
// CHECK: :24 = scf.for {{.*}} step %c1
// CHECK-COUNT-4: vector.fma
// CHECK-NOT: vector.reduction
// CHECK: arith.divf
// CHECK: scf.forall.in_parallel
func.func @encoder(%q: tensor<?x8x64x64xf32>, %k: tensor<?x8x64x64xf32>, %v: tensor<?x8x64x64xf32>, %len: tensor<?xi32>) -> tensor<?x8x64x64xf32> {
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) scale 0.125
      : tensor<?x8x64x64xf32>, tensor<?x8x64x64xf32>, tensor<?x8x64x64xf32> -> tensor<?x8x64x64xf32>
  return %o : tensor<?x8x64x64xf32>
}

// -----

// A head size that the vector width does not divide: the last chunk of
// each row is read masked (zeros past 7) and written masked: no in_bounds.
// CHECK-LABEL: func.func @odd
// CHECK: vector.transfer_read {{[^{]*}} : tensor<?x?x7xf32>, vector<{{8|16}}xf32>
// CHECK: vector.shuffle
// CHECK: vector.transfer_write {{[^{]*}} : vector<{{8|16}}xf32>, tensor<?x7xf32>
func.func @odd(%q: tensor<?x?x7xf32>, %k: tensor<?x?x7xf32>, %v: tensor<?x?x7xf32>, %len: tensor<?xi32>) -> tensor<?x?x7xf32> {
  %o = tfm.attention %q, %k, %v lengths(%len : tensor<?xi32>) scale 0.4
      : tensor<?x?x7xf32>, tensor<?x?x7xf32>, tensor<?x?x7xf32> -> tensor<?x?x7xf32>
  return %o : tensor<?x?x7xf32>
}

// -----

// A dynamic head size keeps the tiled linalg form (matmuls of 64 x 64
// tiles), not the vector kernel.
// CHECK-LABEL: func.func @dynamic
// CHECK: linalg.matmul_transpose_b
// CHECK-NOT: vector.shuffle
// CHECK: linalg.matmul
func.func @dynamic(%q: tensor<?x?x?xf32>, %k: tensor<?x?x?xf32>, %v: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %o = tfm.attention %q, %k, %v scale 0.4
      : tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x?xf32> -> tensor<?x?x?xf32>
  return %o : tensor<?x?x?xf32>
}
