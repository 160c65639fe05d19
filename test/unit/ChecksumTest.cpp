//===- ChecksumTest.cpp - The weights file's checksum -----------*- C++ -*-===//
//
// tfmc and the translator agree on tfm_runtime::checksum (ModelInfo.h); what
// it must do is notice damage: any one flipped bit, at any position of any
// length (the word lanes and the byte tail alike), and a change of length.
//
//===----------------------------------------------------------------------===//

#include "runtime/src/ModelInfo.h"

#include "gtest/gtest.h"

#include <set>
#include <vector>

using tfm_runtime::checksum;

TEST(Checksum, EveryFlippedBitChangesIt) {
  for (size_t size = 1; size <= 80; ++size) {
    std::vector<unsigned char> bytes(size);
    for (size_t i = 0; i < size; ++i)
      bytes[i] = static_cast<unsigned char>(i * 37 + size);
    uint64_t intact = checksum(bytes.data(), size);
    for (size_t i = 0; i < size; ++i)
      for (int bit = 0; bit < 8; ++bit) {
        bytes[i] ^= 1u << bit;
        EXPECT_NE(checksum(bytes.data(), size), intact)
            << "size " << size << ", byte " << i << ", bit " << bit;
        bytes[i] ^= 1u << bit;
      }
  }
}

TEST(Checksum, ZerosOfEveryLengthDiffer) {
  std::vector<unsigned char> zeros(200, 0);
  std::set<uint64_t> seen;
  for (size_t size = 0; size <= zeros.size(); ++size)
    EXPECT_TRUE(seen.insert(checksum(zeros.data(), size)).second)
        << "size " << size;
}

TEST(Checksum, SwappedWordsDiffer) {
  // A block moved within a region (e.g. two rows exchanged) is damage too.
  std::vector<uint64_t> words = {1, 2, 3, 4, 5, 6, 7, 8};
  uint64_t intact = checksum(words.data(), words.size() * 8);
  std::swap(words[0], words[4]); // the same lane, other iterations
  EXPECT_NE(checksum(words.data(), words.size() * 8), intact);
  std::swap(words[0], words[4]);
  std::swap(words[0], words[1]); // other lanes
  EXPECT_NE(checksum(words.data(), words.size() * 8), intact);
}
