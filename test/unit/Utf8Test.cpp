//===- Utf8Test.cpp - The translator's repair of invalid UTF-8 --*- C++ -*-===//
//
// One U+FFFD per maximal invalid subsequence, byte for byte what Python's
// bytes.decode("utf-8", errors="replace") gives (the reference's rule).
//
//===----------------------------------------------------------------------===//

#include "tools/common/Text.h"

#include "gtest/gtest.h"

using tfm_tools::replaceInvalidUtf8;

static const std::string kFFFD = "\xEF\xBF\xBD";

/// `input` repaired, and whether it needed it.
static std::pair<std::string, bool> repaired(std::string input) {
  bool changed = replaceInvalidUtf8(input);
  return {input, changed};
}

TEST(Utf8, ValidTextIsUntouched) {
  for (const std::string &valid : std::vector<std::string>{
           "", "plain ASCII", "\xC3\xA9t\xC3\xA9", "\xE2\x82\xAC 5",
           "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF", std::string("nul\0byte", 8)})
    EXPECT_EQ(repaired(valid), std::make_pair(valid, false)) << valid;
}

TEST(Utf8, BytesThatCannotStartASequenceAreOneEach) {
  EXPECT_EQ(repaired("a\xFF"
                     "b")
                .first,
            "a" + kFFFD + "b");
  EXPECT_EQ(repaired("\x80\xBF").first, kFFFD + kFFFD);
  // Overlong lead bytes C0, C1 and leads past U+10FFFF (F5..FF).
  EXPECT_EQ(repaired("\xC0\xAF").first, kFFFD + kFFFD);
  EXPECT_EQ(repaired("\xF5\x80").first, kFFFD + kFFFD);
}

TEST(Utf8, ATruncatedSequenceIsOne) {
  EXPECT_EQ(repaired("\xE2\x82").first, kFFFD);
  EXPECT_EQ(repaired("\xE2\x82 x").first, kFFFD + " x");
  EXPECT_EQ(repaired("x\xF0\x9F\x98").first, "x" + kFFFD);
  EXPECT_EQ(repaired("\xF0\x9F\x98\xC3\xA9").first, kFFFD + "\xC3\xA9");
}

TEST(Utf8, RestrictedSecondBytesEndTheSequenceAtTheLead) {
  // Surrogates (ED A0..BF), overlong three- and four-byte forms (E0 80..9F,
  // F0 80..8F), beyond U+10FFFF (F4 90..BF): the lead alone is invalid,
  // then each continuation byte.
  EXPECT_EQ(repaired("\xED\xA0\x80").first, kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(repaired("\xE0\x80\x80").first, kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(repaired("\xF0\x80\x80\x80").first, kFFFD + kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(repaired("\xF4\x90\x80\x80").first, kFFFD + kFFFD + kFFFD + kFFFD);
}
