// RUN: tfm-opt %s --tfm-outline-kernels --split-input-file | FileCheck %s
// RUN: tfm-opt %s --tfm-outline-kernels=profile=true --split-input-file | FileCheck %s --check-prefix=PROFILE

// Two layers' linears: the same loop over weight views at other offsets of
// the weights buffer. Both call one kernel, which takes the views and the
// row count and has its own constants (static bounds stay static); the
// scaling loop differs (another constant) and gets a kernel of its own.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[W:.*]]: memref<?xi8>, %[[X:.*]]: memref<?x4xf32>, %[[Y:.*]]: memref<?x4xf32>)
// CHECK-DAG: %[[ROWS:.*]] = memref.dim %[[X]]
// CHECK-DAG: %[[W0:.*]] = memref.view %[[W]][%c0{{.*}}] : memref<?xi8> to memref<4x4xf32>
// CHECK-DAG: %[[W1:.*]] = memref.view %[[W]][%c64{{.*}}] : memref<?xi8> to memref<4x4xf32>
// CHECK: call @tfm_kernel_0(%[[ROWS]], %[[X]], %[[W0]], %[[Y]])
// CHECK-NEXT: call @tfm_kernel_0(%[[ROWS]], %[[Y]], %[[W1]], %[[X]])
// CHECK-NEXT: call @tfm_kernel_1(%[[ROWS]], %[[X]])
// CHECK-NOT: scf.parallel
// CHECK: return
//
// CHECK: func.func private @tfm_kernel_0(%[[N:.*]]: index, %{{.*}}: memref<?x4xf32>, %{{.*}}: memref<4x4xf32>, %{{.*}}: memref<?x4xf32>)
// CHECK-SAME: llvm.linkage = #llvm.linkage<internal>
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%[[N]], %[[C4]])
// CHECK: scf.for {{.*}} to %[[C4]]
// CHECK: return
// CHECK: func.func private @tfm_kernel_1(
// CHECK: arith.constant 2.0{{.*}} : f32
// CHECK-NOT: func.func private
func.func @step(%w: memref<?xi8>, %x: memref<?x4xf32>, %y: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  %rows = memref.dim %x, %c0 : memref<?x4xf32>
  %w0 = memref.view %w[%c0][] : memref<?xi8> to memref<4x4xf32>
  %w1 = memref.view %w[%c64][] : memref<?xi8> to memref<4x4xf32>
  // y = x · w0ᵀ
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %c4) step (%c1, %c1) {
    %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
      %a = memref.load %x[%i, %k] : memref<?x4xf32>
      %b = memref.load %w0[%j, %k] : memref<4x4xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      scf.yield %s : f32
    }
    memref.store %sum, %y[%i, %j] : memref<?x4xf32>
    scf.reduce
  }
  // x = y · w1ᵀ: the same loop on the next layer's weights
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %c4) step (%c1, %c1) {
    %sum = scf.for %k = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
      %a = memref.load %y[%i, %k] : memref<?x4xf32>
      %b = memref.load %w1[%j, %k] : memref<4x4xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      scf.yield %s : f32
    }
    memref.store %sum, %x[%i, %j] : memref<?x4xf32>
    scf.reduce
  }
  // x *= 2
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %c4) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x4xf32>
    %s = arith.mulf %v, %two : f32
    memref.store %s, %x[%i, %j] : memref<?x4xf32>
    scf.reduce
  }
  return
}

// -----

// Serial loop nests and branches are kernels too (a layer norm of few rows
// runs on the calling thread): twice the same scf.for over two layers' γ,
// and an scf.if, outlined whole with the loop it holds.
// CHECK-LABEL: func.func @serial
// CHECK: call @tfm_kernel_0(%{{.*}}, %[[G0:.*]]) :
// CHECK-NEXT: call @tfm_kernel_0(%{{.*}}, %[[G1:.*]]) :
// CHECK-NEXT: call @tfm_kernel_1(
// CHECK-NOT: scf.
// CHECK: func.func private @tfm_kernel_0
// CHECK: scf.for
// CHECK: func.func private @tfm_kernel_1
// CHECK: scf.if
// CHECK: scf.parallel
func.func @serial(%w: memref<?xi8>, %x: memref<4xf32>, %few: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %g0 = memref.view %w[%c0][] : memref<?xi8> to memref<4xf32>
  %g1 = memref.view %w[%c16][] : memref<?xi8> to memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %g = memref.load %g0[%i] : memref<4xf32>
    %p = arith.mulf %a, %g : f32
    memref.store %p, %x[%i] : memref<4xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %g = memref.load %g1[%i] : memref<4xf32>
    %p = arith.mulf %a, %g : f32
    memref.store %p, %x[%i] : memref<4xf32>
  }
  scf.if %few {
    scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
      %a = memref.load %x[%i] : memref<4xf32>
      %p = arith.addf %a, %a : f32
      memref.store %p, %x[%i] : memref<4xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A loop with results (a parallel reduction) stays where it is, as do loops
// of private functions and loops nested in a kernel's loop.
// CHECK-LABEL: func.func @sum
// CHECK: scf.parallel {{.*}} -> f32
// CHECK-LABEL: func.func private @helper
// CHECK: scf.parallel
// CHECK-NOT: func.func private @tfm_kernel
func.func @sum(%x: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  %total = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %v = memref.load %x[%i] : memref<?xf32>
    scf.reduce(%v : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  return %total : f32
}

func.func private @helper(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %zero, %x[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A kernel is named after what its loop's location says (the tfm op's kind
// that the lowering named it with, then the model's name for the place,
// its last dotted part); one body at two places keeps the kind alone.
// CHECK-LABEL: func.func @named
// CHECK: call @tfm_kernel_0_scale(
// CHECK-NEXT: call @tfm_kernel_0_scale(
// CHECK-NEXT: call @tfm_kernel_1_scale_lm_head(
// CHECK-NEXT: call @tfm_kernel_2_layer_norm_self_attn(
// CHECK: func.func private @tfm_kernel_0_scale(
// CHECK: func.func private @tfm_kernel_1_scale_lm_head(
// CHECK: func.func private @tfm_kernel_2_layer_norm_self_attn(
//
// With profile, each call between the runtime's clock and
// tfm_kernel_ended(began, name); one name global a kernel.
// PROFILE-LABEL: func.func private @tfm_kernel_clock() -> i64
// PROFILE-NEXT: func.func private @tfm_kernel_ended(i64, memref<?xi8>)
// PROFILE-DAG: memref.global "private" constant @tfm_kernel_0_scale_name : memref<18xi8> = dense<[116, 102, 109, 95, 107, 101, 114, 110, 101, 108, 95, 48, 95, 115, 99, 97, 108, 101]>
// PROFILE-DAG: memref.global "private" constant @tfm_kernel_1_scale_lm_head_name : memref<26xi8>
// PROFILE-LABEL: func.func @named
// PROFILE: %[[BEGAN:.*]] = call @tfm_kernel_clock() : () -> i64
// PROFILE-NEXT: call @tfm_kernel_0_scale(
// PROFILE-NEXT: %[[NAME:.*]] = memref.get_global @tfm_kernel_0_scale_name : memref<18xi8>
// PROFILE-NEXT: %[[CAST:.*]] = memref.cast %[[NAME]] : memref<18xi8> to memref<?xi8>
// PROFILE-NEXT: call @tfm_kernel_ended(%[[BEGAN]], %[[CAST]]) : (i64, memref<?xi8>) -> ()
func.func @named(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %p = arith.mulf %a, %two : f32
    memref.store %p, %x[%i] : memref<4xf32>
  } loc("scale"("model.encoder.layers.0.ffn"))
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %y[%i] : memref<4xf32>
    %p = arith.mulf %a, %two : f32
    memref.store %p, %y[%i] : memref<4xf32>
  } loc("scale"("model.decoder.layers.0.self_attn"))
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %p = arith.mulf %a, %three : f32
    memref.store %p, %x[%i] : memref<4xf32>
  } loc("scale"(fused["lm_head", "decode_step"]))
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %y[%i] : memref<4xf32>
    %p = arith.addf %a, %three : f32
    memref.store %p, %y[%i] : memref<4xf32>
  } loc("layer_norm"("self_attn"))
  return
}
