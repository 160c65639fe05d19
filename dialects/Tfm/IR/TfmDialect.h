//===- TfmDialect.h - tfm dialect -------------------------------*- C++ -*-===//

#ifndef TFM_DIALECTS_TFM_IR_TFMDIALECT_H
#define TFM_DIALECTS_TFM_IR_TFMDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dialect.h"

#include "dialects/Tfm/IR/TfmDialect.h.inc"

#endif // TFM_DIALECTS_TFM_IR_TFMDIALECT_H
