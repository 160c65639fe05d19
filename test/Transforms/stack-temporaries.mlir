// RUN: tfm-opt %s -tfm-stack-temporaries | FileCheck %s
// RUN: tfm-opt %s -tfm-inline-alloca-scopes | FileCheck %s --check-prefix=SCOPE

// A parallel iteration's small scratch of a static shape, used and freed
// within the iteration (directly, through a view, in a branch), goes on
// the stack; its deallocs go.
// CHECK-LABEL: func.func @scratch(
// CHECK: scf.parallel
// CHECK: %[[ROW:.+]] = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// CHECK-NOT: memref.dealloc
// CHECK: scf.if
// CHECK: %[[TILE:.+]] = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
// CHECK: memref.subview %[[TILE]]
// CHECK-NOT: memref.alloc(
// CHECK-NOT: memref.alloc()
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @scratch(%n: index, %out: memref<?x64xf32>, %flag: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %row = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
    memref.store %zero, %row[%c0] : memref<64xf32>
    %v = memref.load %row[%c0] : memref<64xf32>
    memref.store %v, %out[%i, %c0] : memref<?x64xf32>
    memref.dealloc %row : memref<64xf32>
    scf.if %flag {
      %tile = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
      %part = memref.subview %tile[0, 0] [1, 64] [1, 1] : memref<64x64xf32> to memref<64xf32, strided<[1]>>
      memref.store %zero, %part[%c1] : memref<64xf32, strided<[1]>>
      memref.dealloc %tile : memref<64x64xf32>
    }
    scf.reduce
  }
  return
}

// What stays on the heap: a dynamic shape, more than max-bytes, a buffer
// allocated in an inner loop (each of its iterations would grow the
// stack), one that outlives the iteration, and one outside any parallel
// loop.
// CHECK-LABEL: func.func @heap(
// CHECK: memref.alloc(%{{.+}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<128x256xf32>
// CHECK: scf.for
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<16xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<8xf32>
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK-NOT: memref.alloca()
// CHECK-LABEL: func.func @scoped(
func.func @heap(%n: index, %keep: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %dyn = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
    memref.store %zero, %dyn[%c0] : memref<?xf32>
    memref.dealloc %dyn : memref<?xf32>
    %big = memref.alloc() {alignment = 64 : i64} : memref<128x256xf32>
    memref.store %zero, %big[%c0, %c0] : memref<128x256xf32>
    memref.dealloc %big : memref<128x256xf32>
    scf.for %j = %c0 to %c4 step %c1 {
      %inner = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
      memref.store %zero, %inner[%j] : memref<16xf32>
      memref.dealloc %inner : memref<16xf32>
    }
    %escapes = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
    memref.copy %escapes, %keep : memref<8xf32> to memref<8xf32>
    scf.reduce
  }
  %outside = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  memref.store %zero, %outside[%c0] : memref<4xf32>
  memref.dealloc %outside : memref<4xf32>
  return
}

// convert-scf-to-openmp scopes each iteration's stack; the scope is
// inlined (its body must become several blocks), between a save of the
// stack pointer and its restore where the body allocates on the stack.
// SCOPE-LABEL: func.func @scoped(
// SCOPE: scf.for
// SCOPE: %[[SAVED:.+]] = llvm.intr.stacksave : !llvm.ptr
// SCOPE-NEXT: %[[ROW:.+]] = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// SCOPE-NEXT: memref.store %{{.+}}, %[[ROW]]
// SCOPE-NEXT: llvm.intr.stackrestore %[[SAVED]] : !llvm.ptr
// SCOPE-NEXT: }
// SCOPE-NOT: llvm.intr.stacksave
// SCOPE: memref.store
// SCOPE-NOT: memref.alloca_scope
// SCOPE: return
func.func @scoped(%n: index, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    memref.alloca_scope {
      %row = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
      memref.store %zero, %row[%i] : memref<64xf32>
    }
  }
  memref.alloca_scope {
    memref.store %zero, %out[%c0] : memref<4xf32>
  }
  return
}
