// RUN: not tfm-opt %s -split-input-file -convert-tfm-to-linalg 2>&1 | FileCheck %s

// Weights in panels, and rows chosen of them, are legal until the linears'
// lowering reads them; anything else that reads them is an error naming
// the op and its reader (tfm-layout-weights never makes such IR).

// CHECK: error: 'tfm.weight' op is stored in panels for linears but read by tensor.extract
func.func @embedded(%ids: tensor<?x?xi32>) -> tensor<?x?x16xf32> {
  %w = tfm.weight "table" at 0 {tfm.panel_width = 64 : i64} : tensor<50x16xf32>
  %e = tfm.embedding %w[%ids] : tensor<50x16xf32>, tensor<?x?xi32> -> tensor<?x?x16xf32>
  return %e : tensor<?x?x16xf32>
}

// -----

// CHECK: error: 'tfm.caller_rows' op chooses rows of panels for linears but is read by linalg.generic
func.func @rows_read(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %w = tfm.weight "table" at 0 {tfm.panel_width = 64 : i64} : tensor<50x16xf32>
  %r = tfm.caller_rows %w from "output_panels" : tensor<50x16xf32> -> tensor<?x16xf32>
  %s = tfm.add %r, %x : tensor<?x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
  return %s : tensor<?x16xf32>
}
