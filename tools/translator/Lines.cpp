//===- Lines.cpp - The translator's input and output lines ------*- C++ -*-===//

#include "tools/translator/Lines.h"

bool tfm_translator::replaceInvalidUtf8(std::string &text) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  bool replaced = false;
  size_t i = 0, n = text.size(), copiedUpTo = 0;
  auto byte = [&](size_t k) { return (unsigned char)text[k]; };
  while (i < n) {
    unsigned char c = byte(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Sequence length, and the range allowed for the second byte (which
    // excludes overlong forms, surrogates and code points past U+10FFFF).
    size_t length = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0)
        lo = 0xA0;
      else if (c == 0xED)
        hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0)
        lo = 0x90;
      else if (c == 0xF4)
        hi = 0x8F;
    }
    size_t valid = 1; // bytes of the sequence seen valid so far
    if (length)
      for (; valid < length && i + valid < n; ++valid) {
        unsigned char next = byte(i + valid);
        unsigned char low = valid == 1 ? lo : 0x80,
                      high = valid == 1 ? hi : 0xBF;
        if (next < low || next > high)
          break;
      }
    if (length && valid == length) {
      i += length;
      continue;
    }
    out.append(text, copiedUpTo, i - copiedUpTo);
    out += kReplacement;
    i += valid;
    copiedUpTo = i;
    replaced = true;
  }
  if (replaced) {
    out.append(text, copiedUpTo, std::string::npos);
    text.swap(out);
  }
  return replaced;
}
