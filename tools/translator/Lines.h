//===- Lines.h - The text library under its former name ---------*- C++ -*-===//
//
// The translator's input lines now live in the tools' text library
// (tools/common/Text.h), which tfm-serve and the Python module share. The
// fuzz targets still include this header and compile Lines.cpp; this file
// goes once fuzz/ names tools/common/Text.h.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TRANSLATOR_LINES_H
#define TFM_TOOLS_TRANSLATOR_LINES_H

#include "tools/common/Text.h"

namespace tfm_translator {
using tfm_tools::isBlank;
using tfm_tools::LineReader;
using tfm_tools::Location;
using tfm_tools::replaceInvalidUtf8;
} // namespace tfm_translator

#endif // TFM_TOOLS_TRANSLATOR_LINES_H
