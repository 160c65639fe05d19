//===- Lines.cpp - The text library under its former name -------*- C++ -*-===//
//
// Empty: the text library is header-only (tools/common/Text.h). The fuzz
// targets compile this file; it goes with Lines.h.
//
//===----------------------------------------------------------------------===//

#include "tools/translator/Lines.h"
