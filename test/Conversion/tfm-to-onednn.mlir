// convert-tfm-to-onednn: linears become oneDNN matmul calls with the bias
// attached and activation / residual as post-ops; layer norm, softmax and
// elementwise ops become their primitives' calls; tfm.attention (no oneDNN
// kernel) and ops tfm-select-backend gave to LLVM stay.

// RUN: tfm-opt %s --convert-tfm-to-onednn | FileCheck %s
// RUN: tfm-opt %s --tfm-select-backend=backend=llvm --convert-tfm-to-onednn | FileCheck %s --check-prefix=LLVM
// RUN: tfm-opt %s --tfm-select-backend="backend=auto report=true" --convert-tfm-to-onednn 2>&1 | FileCheck %s --check-prefix=AUTO
// RUN: tfm-opt %s --tfm-select-backend=backend=auto --convert-tfm-to-onednn | FileCheck %s --check-prefix=OURS
// RUN: not tfm-opt %s --tfm-select-backend=backend=gpu 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: tfm-opt %s --tfm-select-backend="backend=onednn precision=bf16" --convert-tfm-to-onednn | FileCheck %s --check-prefix=BF16
// RUN: tfm-opt %s --tfm-select-backend="backend=onednn precision=int8" --convert-tfm-to-onednn | FileCheck %s --check-prefix=INT8

// --precision bf16 on oneDNN: the linears' code gains bf16 products (8192),
// and their weights are marked for the weights file's bf16 range check.
// BF16: tfm.weight "fc1.weight" {tfm.bf16_products}
// BF16: %[[CODE1:.*]] = arith.constant 8449 : i64
// BF16: call @tfm_onednn_linear({{.*}}, %[[CODE1]]) {tfm.post_ops = "bias,relu", tfm.products = "bf16"}
// BF16: %[[CODE2:.*]] = arith.constant 8704 : i64
// BF16: call @tfm_onednn_linear({{.*}}, %[[CODE2]]) {tfm.post_ops = "sum", tfm.products = "bf16"}
// --precision int8 on oneDNN: int8 products (16384); the weights stay f32
// in the file (the kernel quantizes them once, as our panels are), with no
// range to check.
// INT8-NOT: tfm.bf16_products
// INT8: %[[CODE1:.*]] = arith.constant 16641 : i64
// INT8: call @tfm_onednn_linear({{.*}}, %[[CODE1]]) {tfm.post_ops = "bias,relu", tfm.products = "int8"}
// INT8: %[[CODE2:.*]] = arith.constant 16896 : i64
// INT8: call @tfm_onednn_linear({{.*}}, %[[CODE2]]) {tfm.post_ops = "sum", tfm.products = "int8"}

// CHECK-DAG: func.func private @tfm_onednn_linear(memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, i64) attributes {llvm.emit_c_interface}
// CHECK-DAG: func.func private @tfm_onednn_layer_norm(memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, memref<*xf32>, f32, i64) attributes {llvm.emit_c_interface}

// CHECK-LABEL: func.func @feed_forward
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[R:.*]]: tensor<?x?x64xf32>
// CHECK: %[[XB:.*]] = bufferization.to_memref %[[X]] read_only : memref<?x?x64xf32, strided<[?, ?, ?], offset: ?>>
// CHECK: %[[XU:.*]] = memref.cast %[[XB]] {{.*}} to memref<*xf32>
// CHECK: %[[OUT1:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x256xf32>
// relu = 1, has bias = 256
// CHECK: %[[CODE1:.*]] = arith.constant 257 : i64
// CHECK: call @tfm_onednn_linear(%[[XU]], %{{.*}}, %{{.*}}, %[[XU]], %{{.*}}, %[[CODE1]]) {tfm.post_ops = "bias,relu"}
// CHECK: %[[H:.*]] = bufferization.to_tensor %[[OUT1]] restrict writable : memref<?x?x256xf32>
// CHECK: bufferization.to_memref %[[H]] read_only
// CHECK: bufferization.to_memref %[[R]] read_only
// has residual = 512
// CHECK: %[[CODE2:.*]] = arith.constant 512 : i64
// CHECK: call @tfm_onednn_linear({{.*}}, %[[CODE2]]) {tfm.post_ops = "sum"}
// has scale = 1024, has shift = 256
// CHECK: %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK: %[[CODE3:.*]] = arith.constant 1280 : i64
// CHECK: call @tfm_onednn_layer_norm({{.*}}, %[[EPS]], %[[CODE3]])
// CHECK-NOT: tfm.
// CHECK: return

// LLVM-LABEL: func.func @feed_forward
// LLVM-NOT: call
// LLVM: tfm.fused_linear relu {{.*}} {tfm.backend = "llvm"}
// LLVM: tfm.fused_linear none {{.*}} {tfm.backend = "llvm"}
// LLVM: tfm.layer_norm {{.*}} {tfm.backend = "llvm"}

// auto keeps an attention with static head sizes fused (our vector
// kernel beats the spelled-out graph) and spells one with dynamic head
// sizes out for oneDNN's matmuls.
// AUTO: backend auto:
// AUTO-NEXT: tfm.attention tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32> -> llvm (1 op)
// AUTO-NEXT: tfm.attention tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32> -> decomposed, onednn (1 op)
// AUTO-NEXT: tfm.fused_linear tensor<?x?x64xf32>, tensor<256x64xf32>, tensor<256xf32> -> llvm (1 op)
// AUTO-NEXT: tfm.fused_linear tensor<?x?x256xf32>, tensor<64x256xf32>, tensor<?x?x64xf32> -> llvm (1 op)
// AUTO-NEXT: tfm.layer_norm tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32> -> llvm (1 op)
// AUTO-NEXT: tfm.matmul tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32> -> onednn (2 ops)
// AUTO-NEXT: tfm.scale tensor<?x?x?x?xf32> -> onednn (1 op)
// AUTO-NEXT: tfm.softmax tensor<?x?x?x?xf32> -> llvm (1 op)
// AUTO-NEXT: tfm.matmul tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32> -> onednn (1 op)
// AUTO-NEXT: tfm.scale tensor<?x8x?x?xf32> -> onednn (1 op)
// AUTO: tfm.layer_norm tensor<?x?xf32> -> onednn (1 op)
// AUTO-NEXT: module attributes {tfm.backend_choice = "tfm.attention

// auto: linears are ours at every row count (the panel kernel beats
// oneDNN's matmul up to 128 rows and is within 10% at 1024); so is a layer
// norm over a static f32 last axis (the vector kernel beats oneDNN's
// layer_normalization); over a dynamic one it is a oneDNN call.
// OURS-LABEL: func.func @feed_forward
// OURS-NOT: call @tfm_onednn_
// OURS: tfm.fused_linear relu {{.*}} {tfm.backend = "llvm"}
// OURS: tfm.fused_linear none {{.*}} {tfm.backend = "llvm"}
// OURS: tfm.layer_norm {{.*}} {tfm.backend = "llvm"}
// OURS-NOT: call @tfm_onednn_
// OURS: return
// OURS-LABEL: func.func @dynamic_width_norm
// OURS: call @tfm_onednn_layer_norm

// BAD: error: unknown backend 'gpu': expected llvm, onednn or auto
func.func @feed_forward(%x: tensor<?x?x64xf32>, %r: tensor<?x?x64xf32>,
                        %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<?x?x64xf32> {
  %w1 = tfm.weight "fc1.weight" : tensor<256x64xf32>
  %b1 = tfm.weight "fc1.bias" : tensor<256xf32>
  %w2 = tfm.weight "fc2.weight" : tensor<64x256xf32>
  %h = tfm.fused_linear relu %x, %w1 bias(%b1 : tensor<256xf32>)
      : tensor<?x?x64xf32>, tensor<256x64xf32> -> tensor<?x?x256xf32>
  %y = tfm.fused_linear none %h, %w2 residual(%r : tensor<?x?x64xf32>)
      : tensor<?x?x256xf32>, tensor<64x256xf32> -> tensor<?x?x64xf32>
  %n = tfm.layer_norm %y scale(%g : tensor<64xf32>) bias(%b : tensor<64xf32>) epsilon 1.0e-5 : tensor<?x?x64xf32>
  return %n : tensor<?x?x64xf32>
}

// Attention stays for the LLVM path; the batched products, scale, softmax
// over the last axis and the add of the unfused form become calls, a
// softmax over another axis does not.
// CHECK-LABEL: func.func @attention
// CHECK: %[[O:.*]] = tfm.attention
// CHECK: return %[[O]]
func.func @attention(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32> {
  %o = tfm.attention %q, %k, %v causal scale 0.125
      : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32> -> tensor<?x8x?x64xf32>
  return %o : tensor<?x8x?x64xf32>
}

// With dynamic head sizes (no vector kernel) auto spells the block out.
// AUTO-LABEL: func.func @attention_dynamic_heads
// AUTO-NOT: tfm.attention
// AUTO: call @tfm_onednn_matmul
// AUTO: return
func.func @attention_dynamic_heads(%q: tensor<?x?x?x?xf32>, %k: tensor<?x?x?x?xf32>, %v: tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32> {
  %o = tfm.attention %q, %k, %v causal scale 0.125
      : tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32>, tensor<?x?x?x?xf32> -> tensor<?x?x?x?xf32>
  return %o : tensor<?x?x?x?xf32>
}

// The scale of Q·Kᵀ rides on the matmul as a post-op; a scale of anything
// else is an eltwise call.
// CHECK-LABEL: func.func @unfused
// CHECK: %[[ALPHA:.*]] = arith.constant 1.250000e-01 : f32
// transpose_rhs = 4096
// CHECK: %[[T:.*]] = arith.constant 4096 : i64
// CHECK: call @tfm_onednn_matmul(%{{.*}}, %{{.*}}, %{{.*}}, %[[ALPHA]], %[[T]]) {tfm.post_ops = "scale"}
// CHECK-NOT: tfm.scale
// CHECK: %[[LINEAR:.*]] = arith.constant 5 : i64
// CHECK: %[[FACTOR:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: call @tfm_onednn_eltwise(%{{.*}}, %{{.*}}, %[[LINEAR]], %[[FACTOR]])
// CHECK: call @tfm_onednn_binary
// CHECK: call @tfm_onednn_softmax
// CHECK: tfm.softmax %{{.*}} axis 2
// CHECK: call @tfm_onednn_matmul
func.func @unfused(%q: tensor<?x8x?x64xf32>, %k: tensor<?x8x?x64xf32>, %v: tensor<?x8x?x64xf32>, %m: tensor<?x8x?x?xf32>) -> (tensor<?x8x?x64xf32>, tensor<?x8x?x?xf32>) {
  %s = tfm.matmul %q, %k {transpose_rhs = true} : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32> -> tensor<?x8x?x?xf32>
  %scaled = tfm.scale %s by 0.125 : tensor<?x8x?x?xf32>
  %m2 = tfm.scale %m by 2.0 : tensor<?x8x?x?xf32>
  %masked = tfm.add %scaled, %m2 : tensor<?x8x?x?xf32>, tensor<?x8x?x?xf32> -> tensor<?x8x?x?xf32>
  %p = tfm.softmax %masked axis 3 : tensor<?x8x?x?xf32>
  %other = tfm.softmax %masked axis 2 : tensor<?x8x?x?xf32>
  %o = tfm.matmul %p, %v : tensor<?x8x?x?xf32>, tensor<?x8x?x64xf32> -> tensor<?x8x?x64xf32>
  return %o, %other : tensor<?x8x?x64xf32>, tensor<?x8x?x?xf32>
}

// A layer norm over a dynamic last axis: no vector kernel, so auto keeps
// oneDNN's (the last line of the AUTO report).
// CHECK-LABEL: func.func @dynamic_width_norm
// CHECK: call @tfm_onednn_layer_norm
func.func @dynamic_width_norm(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %y = tfm.layer_norm %x epsilon 1.0e-5 : tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
