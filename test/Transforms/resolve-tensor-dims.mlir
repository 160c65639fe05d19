// RUN: tfm-opt %s --tfm-resolve-tensor-dims --split-input-file | FileCheck %s

// A kernel's serial-or-parallel choice: both branches fill a tensor.empty of
// %m rows, so the next kernel's row count is %m itself.

// CHECK-LABEL: func.func @through_branches
//  CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[FEW:.*]]: i1)
//       CHECK:   %[[M:.*]] = tensor.dim %[[X]], %c0
//       CHECK:   return %[[M]], %[[M]]
func.func @through_branches(%x: tensor<?x8xf32>, %few: i1) -> (index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %x, %c0 : tensor<?x8xf32>
  %out = tensor.empty(%m) : tensor<?x8xf32>
  %y = scf.if %few -> tensor<?x8xf32> {
    %serial = scf.for %i = %c0 to %m step %c1 iter_args(%t = %out) -> tensor<?x8xf32> {
      %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<1x8xf32>
      %u = tensor.insert_slice %row into %t[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<?x8xf32>
      scf.yield %u : tensor<?x8xf32>
    }
    scf.yield %serial : tensor<?x8xf32>
  } else {
    %parallel = scf.forall (%i) in (%m) shared_outs(%t = %out) -> tensor<?x8xf32> {
      %row = tensor.extract_slice %x[%i, 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<1x8xf32>
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %row into %t[%i, 0] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<?x8xf32>
      }
    }
    scf.yield %parallel : tensor<?x8xf32>
  }
  %filled = linalg.fill ins(%zero : f32) outs(%y : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r0 = tensor.dim %y, %c0 : tensor<?x8xf32>
  %r1 = tensor.dim %filled, %c0 : tensor<?x8xf32>
  return %r0, %r1 : index, index
}

// -----

// Branches of different sizes, a loop that changes its tensor's size and a
// size made inside a branch (not visible after it) stay as they are; a
// tensor no rule sees through keeps its own dim.

// CHECK-LABEL: func.func @unproven
//       CHECK:   %[[A:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?xf32>
//       CHECK:   %[[B:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?xf32>
//       CHECK:   %[[C:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?xf32>
//       CHECK:   %[[D:.*]] = tensor.dim %{{.*}}, %c0 : tensor<?xf32>
//       CHECK:   return %[[A]], %[[B]], %[[C]], %[[D]]
func.func @unproven(%n: index, %k: index, %c: i1, %v: tensor<?xf32>)
    -> (index, index, index, index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = tensor.empty(%k) : tensor<?xf32>
  %differ = scf.if %c -> tensor<?xf32> {
    scf.yield %e : tensor<?xf32>
  } else {
    scf.yield %f : tensor<?xf32>
  }
  %grows = scf.for %i = %c0 to %k step %c1 iter_args(%t = %e) -> tensor<?xf32> {
    %s = arith.addi %i, %n : index
    %g = tensor.empty(%s) : tensor<?xf32>
    scf.yield %g : tensor<?xf32>
  }
  %inner = scf.if %c -> tensor<?xf32> {
    %s = arith.addi %n, %k : index
    %g = tensor.empty(%s) : tensor<?xf32>
    scf.yield %g : tensor<?xf32>
  } else {
    %s = arith.addi %n, %k : index
    %g = tensor.empty(%s) : tensor<?xf32>
    scf.yield %g : tensor<?xf32>
  }
  %a = tensor.dim %differ, %c0 : tensor<?xf32>
  %b = tensor.dim %grows, %c0 : tensor<?xf32>
  %d = tensor.dim %inner, %c0 : tensor<?xf32>
  %w = tensor.dim %v, %c0 : tensor<?xf32>
  return %a, %b, %d, %w : index, index, index, index
}

// -----

// Seen through a destination and a slice: the dim of a linalg result is
// the slice's size, and an argument's dim is read from the argument.

// CHECK-LABEL: func.func @through_slices
//  CHECK-SAME: (%[[X:.*]]: tensor<?x?xf32>, %[[R:.*]]: index)
//   CHECK-NOT:   tensor.dim
//       CHECK:   return %[[R]]
func.func @through_slices(%x: tensor<?x?xf32>, %r: index) -> index {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %s = tensor.extract_slice %x[0, 0] [%r, 4] [1, 1] : tensor<?x?xf32> to tensor<?x4xf32>
  %cast = tensor.cast %s : tensor<?x4xf32> to tensor<?x?xf32>
  %filled = linalg.fill ins(%zero : f32) outs(%cast : tensor<?x?xf32>) -> tensor<?x?xf32>
  %d = tensor.dim %filled, %c0 : tensor<?x?xf32>
  return %d : index
}
