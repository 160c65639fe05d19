// tfm.split_heads and tfm.merge_heads: the vector copy (head size a
// multiple of the vector: 8 floats with --vector-width=8) against the
// linalg.transpose lowering (8 is not a multiple of 16), on the same
// inputs; a batch of few rows (one loop) and one of more than 256 (b on
// threads). Their outputs must be the same floats.

// RUN: tfm-run %s --entry=split --shapes="2x5x24 -> 2x3x5x8" --vector-width=8 --print > %t.split.copy
// RUN: tfm-run %s --entry=split --shapes="2x5x24 -> 2x3x5x8" --vector-width=16 --print > %t.split.transpose
// RUN: diff %t.split.copy %t.split.transpose
// RUN: FileCheck %s --check-prefix=SPLIT < %t.split.copy
// RUN: tfm-run %s --entry=split --shapes="3x100x24 -> 3x3x100x8" --vector-width=8 --print > %t.splitmany.copy
// RUN: tfm-run %s --entry=split --shapes="3x100x24 -> 3x3x100x8" --vector-width=16 --print > %t.splitmany.transpose
// RUN: diff %t.splitmany.copy %t.splitmany.transpose
// RUN: tfm-run %s --entry=merge --shapes="2x3x5x8 -> 2x5x24" --vector-width=8 --print > %t.merge.copy
// RUN: tfm-run %s --entry=merge --shapes="2x3x5x8 -> 2x5x24" --vector-width=16 --print > %t.merge.transpose
// RUN: diff %t.merge.copy %t.merge.transpose
// RUN: tfm-run %s --entry=merge --shapes="3x3x100x8 -> 3x100x24" --vector-width=8 --print > %t.mergemany.copy
// RUN: tfm-run %s --entry=merge --shapes="3x3x100x8 -> 3x100x24" --vector-width=16 --print > %t.mergemany.transpose
// RUN: diff %t.mergemany.copy %t.mergemany.transpose
// SPLIT: result 0: {{[-0-9.]+ [-0-9.]+}}

func.func @split(%x: tensor<?x?x24xf32>) -> tensor<?x3x?x8xf32> {
  %y = tfm.split_heads %x into 3 heads : tensor<?x?x24xf32> -> tensor<?x3x?x8xf32>
  return %y : tensor<?x3x?x8xf32>
}

func.func @merge(%x: tensor<?x3x?x8xf32>) -> tensor<?x?x24xf32> {
  %y = tfm.merge_heads %x : tensor<?x3x?x8xf32> -> tensor<?x?x24xf32>
  return %y : tensor<?x?x24xf32>
}
