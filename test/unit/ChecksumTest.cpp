//===- ChecksumTest.cpp - The weights file's checksum -----------*- C++ -*-===//
//
// tfmc and the translator agree on tfm_runtime::checksum (ModelInfo.h); what
// it must do is notice damage: any one flipped bit, at any position of any
// length (the vector stripes, the words after them and the byte tail
// alike), and a change of length; its vector and scalar forms agree; a
// region's checksum over its blocks notices the same.
//
//===----------------------------------------------------------------------===//

#include "tfm/abi/ModelInfo.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <set>
#include <vector>

using tfm_runtime::checksum;

static std::vector<size_t> sizesToTry() {
  std::vector<size_t> sizes;
  for (size_t size = 1; size <= 80; ++size)
    sizes.push_back(size);
  for (size_t size : {255, 256, 257, 264, 300, 511, 512, 520, 777})
    sizes.push_back(size);
  return sizes;
}

TEST(Checksum, EveryFlippedBitChangesIt) {
  for (size_t size : sizesToTry()) {
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
  std::vector<uint64_t> words(100);
  for (size_t i = 0; i < words.size(); ++i)
    words[i] = i + 1;
  uint64_t intact = checksum(words.data(), words.size() * 8);
  for (auto [a, b] : {std::pair{0, 32}, {0, 1}, {3, 97}, {64, 96}}) {
    // The same lane in other stripes, other lanes, a stripe and the words
    // after the stripes.
    std::swap(words[a], words[b]);
    EXPECT_NE(checksum(words.data(), words.size() * 8), intact)
        << "words " << a << " and " << b;
    std::swap(words[a], words[b]);
  }
}

TEST(Checksum, VectorAndScalarStripesAgree) {
  if (!__builtin_cpu_supports("avx512dq") ||
      !__builtin_cpu_supports("avx512vl"))
    GTEST_SKIP() << "no AVX-512 on this CPU";
  using namespace tfm_runtime::checksum_detail;
  std::vector<unsigned char> bytes(4096 + 40);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<unsigned char>(i * 131 + 7);
  Words scalar[4] = {}, vector[4] = {};
  for (int v = 0; v < 4; ++v)
    for (int l = 0; l < 8; ++l)
      scalar[v][l] = vector[v][l] = uint64_t(8 * v + l + 1);
  EXPECT_EQ(stripes(scalar, bytes.data(), bytes.size()),
            stripesAvx512(vector, bytes.data(), bytes.size()));
  for (int v = 0; v < 4; ++v)
    for (int l = 0; l < 8; ++l)
      EXPECT_EQ(scalar[v][l], vector[v][l]) << "lane " << 8 * v + l;
}

TEST(Checksum, RegionBlocksNoticeDamageAndOrder) {
  // Three blocks and a part: a flipped bit in any block, or two blocks
  // exchanged, changes the region's checksum.
  uint64_t block = tfm_runtime::kChecksumBlockSize, size = 3 * block + 1000;
  std::vector<unsigned char> bytes(size);
  for (size_t i = 0; i < size; ++i)
    bytes[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
  uint64_t intact = tfm_runtime::regionChecksum(bytes.data(), size);
  for (uint64_t at : {uint64_t(0), block - 1, 2 * block + 5, size - 1}) {
    bytes[at] ^= 0x10;
    EXPECT_NE(tfm_runtime::regionChecksum(bytes.data(), size), intact)
        << "byte " << at;
    bytes[at] ^= 0x10;
  }
  std::swap_ranges(bytes.begin(), bytes.begin() + block, bytes.begin() + block);
  EXPECT_NE(tfm_runtime::regionChecksum(bytes.data(), size), intact);
}
