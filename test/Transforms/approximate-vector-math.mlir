// RUN: tfm-opt %s --tfm-approximate-vector-math | FileCheck %s

// exp and erf of f32 vectors become polynomials in vector arith and FMA;
// exp clamps its input so that -inf gives ~0 (the kernels select exact
// zeros where that matters).
// CHECK-LABEL: func.func @vectors
// CHECK-NOT: math.exp
// CHECK-NOT: math.erf
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK: arith.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
// CHECK: return
func.func @vectors(%x: vector<8xf32>) -> (vector<8xf32>, vector<8xf32>) {
  %e = math.exp %x : vector<8xf32>
  %r = math.erf %x : vector<8xf32>
  return %e, %r : vector<8xf32>, vector<8xf32>
}

// Scalars keep libm's exp and erf; f64 vectors are left alone.
// CHECK-LABEL: func.func @scalars
// CHECK: math.exp %{{.*}} : f32
// CHECK: math.erf %{{.*}} : f32
// CHECK: math.exp %{{.*}} : vector<4xf64>
func.func @scalars(%x: f32, %y: vector<4xf64>) -> (f32, f32, vector<4xf64>) {
  %e = math.exp %x : f32
  %r = math.erf %x : f32
  %d = math.exp %y : vector<4xf64>
  return %e, %r, %d : f32, f32, vector<4xf64>
}

// tanh of f32 vectors (T5's GELU) becomes a rational polynomial: clamped
// input, a division, and x itself where |x| is tiny.
// CHECK-LABEL: func.func @tanh
// CHECK-NOT: math.tanh
// CHECK: arith.divf {{.*}} : vector<16xf32>
// CHECK: arith.select {{.*}} : vector<16xi1>, vector<16xf32>
// CHECK: return
func.func @tanh(%x: vector<16xf32>) -> vector<16xf32> {
  %t = math.tanh %x : vector<16xf32>
  return %t : vector<16xf32>
}
