// RUN: tfm-opt %s --tfm-write-results-in-place --split-input-file | FileCheck %s

// A result computed in a temporary and copied into its out-param: the kernel
// writes the out-param, and neither the temporary nor the copy remain.
// CHECK-LABEL: func.func @direct
// CHECK-SAME: %[[X:.*]]: memref<?x8xf32>, %[[OUT:.*]]: memref<?x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK: call @kernel(%[[X]], %[[OUT]])
// CHECK-NOT: memref.copy
// CHECK: return
func.func private @kernel(memref<?x8xf32>, memref<?x8xf32>)
func.func @direct(%x: memref<?x8xf32>, %out: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %tmp = memref.alloc(%n) : memref<?x8xf32>
  call @kernel(%x, %tmp) : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  memref.copy %tmp, %out : memref<?x8xf32> to memref<?x8xf32>
  return
}

// -----

// The copy sees the temporary through a reshape (rows back into batch x
// length): the out-param, reinterpreted with the temporary's shape and
// row-major strides, takes its place.
// CHECK-LABEL: func.func @through_a_reshape
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x?x8xf32>)
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[OUT]] to offset: [0], sizes: [%{{.*}}, 8], strides: [8, 1] : memref<?x?x8xf32> to memref<?x8xf32, strided<[8, 1]>>
// CHECK: %[[ROWS:.*]] = memref.cast %[[VIEW]] : memref<?x8xf32, strided<[8, 1]>> to memref<?x8xf32>
// CHECK: call @kernel(%{{.*}}, %[[ROWS]])
// CHECK: memref.reshape %[[ROWS]]
// CHECK-NOT: memref.copy
func.func private @kernel(memref<?x8xf32>, memref<?x8xf32>)
func.func @through_a_reshape(%x: memref<?x8xf32>, %shape: memref<3xindex>,
                             %out: memref<?x?x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %tmp = memref.alloc(%n) : memref<?x8xf32>
  call @kernel(%x, %tmp) : (memref<?x8xf32>, memref<?x8xf32>) -> ()
  %r = memref.reshape %tmp(%shape) : (memref<?x8xf32>, memref<3xindex>) -> memref<?x?x8xf32>
  memref.copy %r, %out : memref<?x?x8xf32> to memref<?x?x8xf32>
  return
}

// -----

// Two dynamic sizes, the result their rows: the outer stride is a product.
// CHECK-LABEL: func.func @dynamic_strides
// CHECK-SAME: %[[N:[^:]*]]: index, %[[M:[^:]*]]: index, %[[OUT:[^:]*]]: memref<?x4xf32>)
// CHECK: %[[STRIDE:.*]] = arith.muli %[[M]], %{{.*}} : index
// CHECK: memref.reinterpret_cast %[[OUT]] to offset: [0], sizes: [%[[N]], %[[M]], 4], strides: [%[[STRIDE]], 4, 1]
// CHECK-NOT: memref.copy
func.func private @fill(memref<?x?x4xf32>)
func.func @dynamic_strides(%n: index, %m: index, %out: memref<?x4xf32>) {
  %tmp = memref.alloc(%n, %m) : memref<?x?x4xf32>
  call @fill(%tmp) : (memref<?x?x4xf32>) -> ()
  %c = memref.collapse_shape %tmp [[0, 1], [2]] : memref<?x?x4xf32> into memref<?x4xf32>
  memref.copy %c, %out : memref<?x4xf32> to memref<?x4xf32>
  return
}

// -----

// Two results of one temporary: the last copy's out-param takes its place
// and the first result is copied from there.
// CHECK-LABEL: func.func @one_temporary_two_results
// CHECK-SAME: %[[A:[^:]*]]: memref<16xf32>, %[[B:[^:]*]]: memref<16xf32>)
// CHECK-NEXT: call @fill(%[[B]])
// CHECK-NEXT: memref.copy %[[B]], %[[A]]
// CHECK-NEXT: return
func.func private @fill(memref<16xf32>)
func.func @one_temporary_two_results(%a: memref<16xf32>, %b: memref<16xf32>) {
  %tmp = memref.alloc() : memref<16xf32>
  call @fill(%tmp) : (memref<16xf32>) -> ()
  memref.copy %tmp, %a : memref<16xf32> to memref<16xf32>
  memref.copy %tmp, %b : memref<16xf32> to memref<16xf32>
  return
}

// -----

// The temporary is written after the copy: the out-param must keep the
// value it had at the copy, so both stay.
// CHECK-LABEL: func.func @written_after_the_copy
// CHECK: memref.alloc
// CHECK: memref.copy
// CHECK: call @fill
func.func private @fill(memref<16xf32>)
func.func @written_after_the_copy(%out: memref<16xf32>) {
  %tmp = memref.alloc() : memref<16xf32>
  call @fill(%tmp) : (memref<16xf32>) -> ()
  memref.copy %tmp, %out : memref<16xf32> to memref<16xf32>
  call @fill(%tmp) : (memref<16xf32>) -> ()
  return
}

// -----

// The out-param is read before the copy (so it is not only an out-param),
// a result is a view that reorders elements (a subview of a wider buffer),
// and one is an argument: all three copies stay.
// CHECK-LABEL: func.func @not_in_place
// CHECK-COUNT-3: memref.copy
func.func private @read(memref<16xf32>)
func.func @not_in_place(%x: memref<16xf32>, %a: memref<16xf32>,
                        %b: memref<16xf32>, %c: memref<16xf32>) {
  call @read(%a) : (memref<16xf32>) -> ()
  %t = memref.alloc() : memref<16xf32>
  memref.copy %t, %a : memref<16xf32> to memref<16xf32>
  %wide = memref.alloc() : memref<32xf32>
  %part = memref.subview %wide[0] [16] [1] : memref<32xf32> to memref<16xf32, strided<[1]>>
  memref.copy %part, %b : memref<16xf32, strided<[1]>> to memref<16xf32>
  memref.copy %x, %c : memref<16xf32> to memref<16xf32>
  return
}

// -----

// A result made in either branch of an scf.if, each branch allocating its
// own buffer (a kernel chosen by the size): both branches write the
// out-param.
// CHECK-LABEL: func.func @either_branch
// CHECK-SAME: %[[OUT:[^:]*]]: memref<?x8xf32>)
// CHECK: scf.if
// CHECK-NEXT: call @kernel(%{{.*}}, %[[OUT]])
// CHECK-NEXT: scf.yield %[[OUT]]
// CHECK: else
// CHECK-NEXT: call @other_kernel(%{{.*}}, %[[OUT]])
// CHECK-NEXT: scf.yield %[[OUT]]
// CHECK-NOT: memref.copy
func.func private @kernel(memref<?x8xf32>, memref<?x8xf32>)
func.func private @other_kernel(memref<?x8xf32>, memref<?x8xf32>)
func.func @either_branch(%x: memref<?x8xf32>, %few: i1, %out: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %y = scf.if %few -> (memref<?x8xf32>) {
    %a = memref.alloc(%n) : memref<?x8xf32>
    func.call @kernel(%x, %a) : (memref<?x8xf32>, memref<?x8xf32>) -> ()
    scf.yield %a : memref<?x8xf32>
  } else {
    %b = memref.alloc(%n) : memref<?x8xf32>
    func.call @other_kernel(%x, %b) : (memref<?x8xf32>, memref<?x8xf32>) -> ()
    scf.yield %b : memref<?x8xf32>
  }
  memref.copy %y, %out : memref<?x8xf32> to memref<?x8xf32>
  return
}
