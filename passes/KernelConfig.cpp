//===- KernelConfig.cpp - The kernels' sizes, chosen once -------*- C++ -*-===//

#include "passes/KernelConfig.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::tfm;

tfm::VectorTarget tfm::hostVectorTarget() {
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  return {features.lookup("avx512f") ? 16 : 8, features.lookup("avx512bf16"),
          features.lookup("avx512vnni")};
}

/// The panel kernel's tiles of R rows x C vectors, then the rows left in
/// smaller tiles. The accumulators, a broadcast and the weight vectors fit
/// the registers: of 32 zmm with AVX-512, 4 x 4 for few rows (a beam of 4
/// reads each weight once) and 6 x 4 for many: 24 accumulators, 4 weight
/// loads and 6 broadcasts per 24 FMAs, where 4 x 4 had 8 loads per 16
/// (7 x 4 spills). With 16 ymm (AVX2), 2 x 4 for few rows, whose reads of
/// the panel are contiguous, and 6 x 2 (two column groups) for many: 12
/// accumulators hide the FMA latency (8 in flight needed), 2 weight loads
/// and 6 broadcasts per 12 FMAs.
/// int4 tiles hold two sums a vector (the group's i32, the f32 total) and
/// two unpacked weight rows: half the rows, 2 x 4 (25 zmm) and 3 x 4 for
/// many rows (AVX2: 1 x 4 and 3 x 2).
static void choosePanelTiles(PanelKernelConfig &panels, bool avx512) {
  panels.fewRowTiles = {{avx512 ? 4 : 2, 4}, {1, 4}};
  panels.manyRowTiles = {
      avx512 ? TileShape{6, 4} : TileShape{6, 2}, {2, 4}, {1, 4}};
  panels.int4FewRowTiles = {{avx512 ? 2 : 1, 4}, {1, 4}};
  panels.int4ManyRowTiles = {avx512 ? TileShape{3, 4} : TileShape{3, 2},
                             {1, 4}};
}

tfm::KernelConfig tfm::KernelConfig::forTarget(const VectorTarget &target) {
  KernelConfig config;
  config.vectorWidth = target.width;
  config.avx512 = target.width >= 16;
  choosePanelTiles(config.panels, config.avx512);
  // The dot products' intrinsics take vectors of 16 lanes.
  config.panels.bf16Dot = target.bf16Dot && target.width == 16;
  config.panels.int8Dot = target.int8Dot && target.width == 16;
  // The score tile: 8 keys x 2 vectors of queries, 16 accumulators (per
  // column of D, 2 loads of Qᵀ and 8 broadcasts of K), where AVX-512 has
  // 32 vector registers; 4 keys with AVX2's 16.
  config.attention.scoreTileKeys = config.avx512 ? 8 : 4;
  return config;
}
