//===- SafetensorsTest.cpp - Safetensors header validation ------*- C++ -*-===//

#include "compiler/Safetensors.h"
#include "test/unit/TestFiles.h"

#include "gtest/gtest.h"

#include <cstring>

using namespace mlir::tfm;
using tfm_test::TempFile;

/// A safetensors file: length prefix, the header text as given, then data.
static std::string makeFile(const std::string &header, size_t dataBytes,
                            int64_t lengthOverride = -1) {
  uint64_t n = lengthOverride >= 0 ? lengthOverride : header.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i)
    out[i] = char((n >> (8 * i)) & 0xff);
  return out + header + std::string(dataBytes, '\x01');
}

static std::string errorOf(const std::string &contents) {
  TempFile file("model.safetensors", contents);
  auto result = SafetensorsFile::open(file.path);
  if (result)
    return "";
  return llvm::toString(result.takeError());
}

TEST(Safetensors, ReadsTensorsAndBytes) {
  std::string header =
      R"({"b":{"dtype":"F16","shape":[3],"data_offsets":[8,14]},)"
      R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("__metadata__":{"format":"pt"}})";
  TempFile file("model.safetensors", makeFile(header, 14));
  auto st = SafetensorsFile::open(file.path);
  ASSERT_TRUE(bool(st)) << llvm::toString(st.takeError());
  ASSERT_EQ(st->tensors().size(), 2u);
  // Sorted by offset.
  EXPECT_EQ(st->tensors()[0].name, "a");
  const TensorInfo *b = st->lookup("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::F16);
  EXPECT_EQ(b->numElements(), 3);
  EXPECT_EQ(st->bytes(*b).size(), 6u);
  EXPECT_EQ(st->lookup("c"), nullptr);
  EXPECT_EQ(st->metadata().lookup("format"), "pt");
}

TEST(Safetensors, RejectsHeaderLongerThanFile) {
  std::string err = errorOf(makeFile("{}", 0, 1000));
  EXPECT_NE(err.find("header length 1000 exceeds"), std::string::npos) << err;
}

TEST(Safetensors, RejectsShortFile) {
  EXPECT_NE(errorOf("abc").find("too short"), std::string::npos);
}

TEST(Safetensors, RejectsNonJsonHeader) {
  std::string err = errorOf(makeFile("{not json", 0));
  EXPECT_NE(err.find("header is not valid JSON"), std::string::npos) << err;
}

TEST(Safetensors, RejectsUnknownDType) {
  std::string err = errorOf(
      makeFile(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,1]}})", 1));
  EXPECT_NE(err.find("tensor 'w': unsupported dtype 'Q4'"), std::string::npos)
      << err;
}

TEST(Safetensors, RejectsSizeMismatch) {
  std::string err = errorOf(makeFile(
      R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,8]}})", 8));
  EXPECT_NE(err.find("hold 8 bytes, but shape [2, 2] of F32 needs 16"),
            std::string::npos)
      << err;
}

TEST(Safetensors, RejectsOffsetsPastTheEnd) {
  std::string err = errorOf(makeFile(
      R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8));
  EXPECT_NE(err.find("tensor 'w': data_offsets [0, 16] lie outside the 8-byte "
                     "data section"),
            std::string::npos)
      << err;
}

TEST(Safetensors, RejectsOverlap) {
  std::string err = errorOf(
      makeFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               12));
  EXPECT_NE(err.find("tensors 'a' [0, 8] and 'b' [4, 12] overlap"),
            std::string::npos)
      << err;
}

TEST(Safetensors, RejectsMissingFile) {
  auto result = SafetensorsFile::open("/nonexistent/model.safetensors");
  ASSERT_FALSE(bool(result));
  std::string err = llvm::toString(result.takeError());
  EXPECT_NE(err.find("/nonexistent/model.safetensors: cannot open"),
            std::string::npos)
      << err;
}
