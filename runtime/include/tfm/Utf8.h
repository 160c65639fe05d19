//===- Utf8.h - A code point written as UTF-8 -------------------*- C++ -*-===//
//
// The one UTF-8 encoder of the tree: the runtime's vocabulary reader
// (JSON's \u escapes) and the Python module (a str's code points) both
// write code points with it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_UTF8_H
#define TFM_UTF8_H

#include <cstdint>
#include <string>

namespace tfm_runtime {

/// Appends code point `cp` (at most U+10FFFF; the caller has refused
/// surrogates where they are errors) to `out` in UTF-8.
inline void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

} // namespace tfm_runtime

#endif // TFM_UTF8_H
