// RUN: tfm-opt %s --tfm-free-after-last-use --split-input-file | FileCheck %s

// Two temporaries in a row, freed at the return as buffer deallocation
// leaves them: each is freed after its last use, so the second can reuse
// the first's memory.
// CHECK-LABEL: func.func @in_a_row
// CHECK: %[[A:.*]] = memref.alloc
// CHECK-NEXT: call @fill(%[[A]])
// CHECK-NEXT: %[[B:.*]] = memref.alloc
// CHECK-NEXT: call @add(%[[A]], %[[B]])
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: call @add(%[[B]], %{{.*}})
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: call @fill(%{{.*}})
// CHECK-NEXT: return
func.func private @fill(memref<16xf32>)
func.func private @add(memref<16xf32>, memref<16xf32>)
func.func @in_a_row(%out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  call @fill(%a) : (memref<16xf32>) -> ()
  %b = memref.alloc() : memref<16xf32>
  call @add(%a, %b) : (memref<16xf32>, memref<16xf32>) -> ()
  call @add(%b, %out) : (memref<16xf32>, memref<16xf32>) -> ()
  call @fill(%out) : (memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<16xf32>
  return
}

// -----

// A view of the buffer read later, and a loop that reads it: the buffer
// lives until the last of them.
// CHECK-LABEL: func.func @views_and_loops
// CHECK: %[[A:.*]] = memref.alloc
// CHECK: %[[V:.*]] = memref.collapse_shape %[[A]]
// CHECK: call @fill(%{{.*}})
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[V]]
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: call @fill(%{{.*}})
// CHECK-NEXT: return
func.func private @fill(memref<16xf32>)
func.func @views_and_loops(%out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %a = memref.alloc() : memref<4x4xf32>
  %v = memref.collapse_shape %a [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  call @fill(%v) : (memref<16xf32>) -> ()
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %v[%i] : memref<16xf32>
    memref.store %x, %out[%i] : memref<16xf32>
  }
  call @fill(%out) : (memref<16xf32>) -> ()
  memref.dealloc %a : memref<4x4xf32>
  return
}

// -----

// A buffer chosen by a branch, freed through the base of its strided
// metadata as deallocation lowering does: it lives until the last use of
// the branch's result, not only of the metadata.
// CHECK-LABEL: func.func @through_a_branch
// CHECK: %[[R:.*]] = scf.if
// CHECK: %[[BASE:[^,]*]], %{{.*}} = memref.extract_strided_metadata %[[R]]
// CHECK-NEXT: call @add(%[[R]], %{{.*}})
// CHECK-NEXT: memref.dealloc %[[BASE]]
// CHECK-NEXT: call @fill(%{{.*}})
// CHECK-NEXT: return
func.func private @fill(memref<16xf32>)
func.func private @add(memref<16xf32>, memref<16xf32>)
func.func @through_a_branch(%which: i1, %out: memref<16xf32>) {
  %r = scf.if %which -> (memref<16xf32>) {
    %a = memref.alloc() : memref<16xf32>
    scf.yield %a : memref<16xf32>
  } else {
    %b = memref.alloc() : memref<16xf32>
    scf.yield %b : memref<16xf32>
  }
  %base, %offset, %size, %stride = memref.extract_strided_metadata %r : memref<16xf32> -> memref<f32>, index, index, index
  call @add(%r, %out) : (memref<16xf32>, memref<16xf32>) -> ()
  call @fill(%out) : (memref<16xf32>) -> ()
  memref.dealloc %base : memref<f32>
  return
}

// -----

// A buffer never used is freed right after it is allocated.
// CHECK-LABEL: func.func @unused
// CHECK: %[[A:.*]] = memref.alloc
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK-NEXT: call @fill
func.func private @fill(memref<16xf32>)
func.func @unused(%out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  call @fill(%out) : (memref<16xf32>) -> ()
  memref.dealloc %a : memref<16xf32>
  return
}
