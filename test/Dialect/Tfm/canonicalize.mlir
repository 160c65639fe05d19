// RUN: tfm-opt %s -split-input-file -canonicalize | FileCheck %s

// x * 1 = x
// CHECK-LABEL: func @scale_by_one
// CHECK-SAME: (%[[X:.+]]: tensor<?x8xf32>)
// CHECK-NOT: tfm.scale
// CHECK: return %[[X]]
func.func @scale_by_one(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = tfm.scale %x by 1.0 : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Any other factor stays.
// CHECK-LABEL: func @scale_by_half
// CHECK: %[[S:.+]] = tfm.scale %{{.+}} by 5.000000e-01
// CHECK: return %[[S]]
func.func @scale_by_half(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = tfm.scale %x by 0.5 : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// merge_heads(split_heads(x)) = x
// CHECK-LABEL: func @merge_of_split
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32>)
// CHECK-NOT: tfm.split_heads
// CHECK-NOT: tfm.merge_heads
// CHECK: return %[[X]]
func.func @merge_of_split(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %h = tfm.split_heads %x into 4 heads : tensor<?x?x64xf32> -> tensor<?x4x?x16xf32>
  %m = tfm.merge_heads %h : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  return %m : tensor<?x?x64xf32>
}

// -----

// A merge of heads that were computed, not split, stays.
// CHECK-LABEL: func @merge_of_other
// CHECK: %[[M:.+]] = tfm.merge_heads
// CHECK: return %[[M]]
func.func @merge_of_other(%x: tensor<?x4x?x16xf32>) -> tensor<?x?x64xf32> {
  %r = tfm.relu %x : tensor<?x4x?x16xf32>
  %m = tfm.merge_heads %r : tensor<?x4x?x16xf32> -> tensor<?x?x64xf32>
  return %m : tensor<?x?x64xf32>
}
