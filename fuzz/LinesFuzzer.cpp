//===- LinesFuzzer.cpp - Fuzz the translator's line input -------*- C++ -*-===//
//
// Input: what a user pipes into the translator. LineReader must give back
// exactly the input's lines, however long or binary (NUL bytes, no final
// newline), over two inputs in turn; replaceInvalidUtf8 must leave valid
// UTF-8 alone and produce valid UTF-8 (its own check finds nothing left to
// replace), never more than three bytes per input byte.
//
//===----------------------------------------------------------------------===//

#include "fuzz/FuzzUtil.h"
#include "tools/common/Text.h"

#include <string>

using namespace tfm_tools;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static tfm_fuzz::MemFile file;
  file.set(data, size);
  std::string input(reinterpret_cast<const char *>(data), size);

  // The same file twice: the second input's lines number from 1 again.
  LineReader reader({file.path(), file.path()});
  std::string line, joined;
  Location where{};
  size_t lines = 0, lastLineNo = 0;
  const std::string *firstInput = nullptr;
  while (reader.next(line, where)) {
    ++lines;
    lastLineNo = where.line;
    TFM_FUZZ_CHECK(line.find('\n') == std::string::npos);
    if (!firstInput)
      firstInput = where.input;
    if (where.input == firstInput)
      joined += line + "\n";

    std::string repaired = line;
    bool replaced = replaceInvalidUtf8(repaired);
    if (!replaced)
      TFM_FUZZ_CHECK(repaired == line);
    std::string again = repaired;
    TFM_FUZZ_CHECK(!replaceInvalidUtf8(again) && again == repaired);
    TFM_FUZZ_CHECK(repaired.size() <= 3 * line.size());
    (void)isBlank(repaired);
  }
  TFM_FUZZ_CHECK(reader.bytesRead == 2 * size);
  TFM_FUZZ_CHECK(lines % 2 == 0 && lastLineNo == lines / 2);
  // Lines joined with '\n' are the input, up to the newline the last line
  // may lack.
  if (!input.empty() && input.back() != '\n')
    input += '\n';
  TFM_FUZZ_CHECK(joined == input);
  return 0;
}
