//===- TextTest.cpp - The tools' text library -------------------*- C++ -*-===//
//
// Blank lines and the line reader of tools/common/Text.h, which tfm-serve
// shares with the translator and the Python module (its UTF-8 repair is
// test/unit/Utf8Test.cpp's).
//
//===----------------------------------------------------------------------===//

#include "tools/common/Text.h"

#include "gtest/gtest.h"

#include <fstream>
#include <unistd.h>

using namespace tfm_tools;

TEST(Text, BlankIsNothingButWhitespace) {
  EXPECT_TRUE(isBlank(""));
  EXPECT_TRUE(isBlank(" \t\r\n\v\f"));
  EXPECT_FALSE(isBlank(" a "));
  EXPECT_FALSE(isBlank("\xC2\xA0")) << "a no-break space is text";
}

TEST(Text, LinesOfSeveralInputsInTurn) {
  char path[] = "/tmp/tfm-text-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "one\n\ntwo";
  LineReader reader({path, path});
  std::vector<std::string> lines;
  std::vector<size_t> numbers;
  std::string line;
  Location where{};
  while (reader.next(line, where)) {
    lines.push_back(line);
    numbers.push_back(where.line);
  }
  EXPECT_EQ(lines,
            (std::vector<std::string>{"one", "", "two", "one", "", "two"}));
  EXPECT_EQ(numbers, (std::vector<size_t>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(where.str(), std::string(path) + ":3");
  EXPECT_EQ(reader.bytesRead, 16u);
  unlink(path);
}

TEST(Text, AnInputThatCannotBeOpenedIsNamed) {
  LineReader reader({"/nonexistent/tfm-input"});
  EXPECT_FALSE(reader.checkReadable());
  EXPECT_EQ(reader.error(),
            "/nonexistent/tfm-input: cannot open: No such file or directory");
  std::string line;
  Location where{};
  EXPECT_FALSE(reader.next(line, where)) << "reading ended with the error";
}
