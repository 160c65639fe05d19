//===- KernelConfig.h - The kernels' sizes, chosen once ---------*- C++ -*-===//
//
// Every size and threshold of the kernels convert-tfm-to-linalg builds, and
// the panel width tfm-layout-weights stores the linears' weights in, chosen
// in one place from the target's vector unit (IREE's KernelDispatch does
// the same), apart from the code that emits the kernels. A compilation
// fills one KernelConfig (tfmc from its target, tfm-opt from the pass
// options) and hands it to every kernel builder. Why each value is what it
// is, with the measurements: docs/Design/WeightPanels.md (panels),
// docs/Design/AttentionKernel.md (attention), docs/Design/Lowering.md (the
// rest).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_KERNELCONFIG_H
#define TFM_PASSES_KERNELCONFIG_H

#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <utility>

namespace mlir {
namespace tfm {

/// What the lowering needs to know of the target's vector unit.
struct VectorTarget {
  /// Floats per SIMD register: 16 with AVX-512, 8 with AVX2.
  int64_t width = 16;
  /// AVX512-BF16's dot product of bf16 pairs (vdpbf16ps).
  bool bf16Dot = false;
  /// AVX512-VNNI's dot product of byte quads (vpdpbusd).
  bool int8Dot = false;
};

/// This host's vector unit.
VectorTarget hostVectorTarget();

/// A register tile of the panel kernel: R rows by C vectors of columns.
using TileShape = std::pair<int64_t, int64_t>;

/// The panel kernel of the linears (PanelKernel.cpp).
struct PanelKernelConfig {
  /// Vectors per panel: a panel holds P = vectors · L output features.
  int64_t vectors = 4;
  /// The tile shapes, largest first (the rows left by one go to the next;
  /// the last has one row), for few rows and for many; int4's, whose tiles
  /// hold a group's i32 sums beside the f32 ones, for each.
  llvm::SmallVector<TileShape, 3> fewRowTiles, manyRowTiles;
  llvm::SmallVector<TileShape, 3> int4FewRowTiles, int4ManyRowTiles;
  /// Rows of x up to which the few-row tiles run (decoding).
  int64_t fewRows = 8;
  /// Rows of a panel per K block with few rows of x (also how far ahead
  /// their tiles prefetch), and with many.
  int64_t fewRowsKBlock = 64, manyRowsKBlock = 128;
  /// Rows of x up to which the many-row tiles prefetch the next panel.
  int64_t prefetchRows = 64;
  /// Whether the kernel takes AVX512-BF16's and AVX512-VNNI's dot
  /// products (the target has them, on vectors of 16 floats).
  bool bf16Dot = false, int8Dot = false;
};

/// The kernels of tfm.attention (Attention.cpp, OneQueryKernel.cpp,
/// TiledKernel.cpp).
struct AttentionKernelConfig {
  /// Queries per iteration of the loop nest's forall: each block of
  /// queries is one kernel's work, and the tiled kernel's largest.
  int64_t queryBlock = 64;
  /// Keys per block of the linalg kernel (head sizes that are not static,
  /// elements that are not f32).
  int64_t linalgKeyBlock = 64;
  /// Keys per block of the one-query kernel (rounded to whole vectors): a
  /// block of K and V rows of 64 floats is 16 KiB, which stays in L1 while
  /// the block's queries visit it, and its 32 scores give the exp, the max
  /// and the products enough independent work to hide their latencies.
  int64_t oneQueryKeyBlock = 32;
  /// Keys per block of the tiled kernel: the block's scores (64 x 64
  /// floats for a query block of 64) and its rows of V stay in L1 while the
  /// block's queries visit them.
  int64_t tiledKeyBlock = 64;
  /// The tiled kernel's score tile: keys by vectors of queries (forTarget
  /// chooses the keys to fit the registers).
  int64_t scoreTileKeys = 8, scoreTileVectors = 2;
  /// Blocks of fewer queries take the one-query kernel: a score tile is
  /// scoreTileVectors vectors of queries wide.
  int64_t tiledMinQueries = 16;
  /// Vector registers the tiled kernel's P·V accumulators may take (of 32).
  int64_t tiledAccumulators = 24;
  /// Keys per step of the tiled kernel's softmax loops, each into its own
  /// partial max or sum; divides tiledKeyBlock and scoreTileKeys.
  int64_t softmaxUnroll = 4;
};

/// The vector layer norm (Normalization.cpp).
struct LayerNormKernelConfig {
  /// Rows per iteration of the forall (the unit a thread takes).
  int64_t rowBlock = 8;
  /// The most elements (rows x C) normalized on the calling thread.
  int64_t serialElements = 64 * 512;
  /// Vectors per iteration of the loops over a row, each summed into an
  /// accumulator of its own.
  int64_t unroll = 4;
};

/// The sizes of every kernel, for one target.
struct KernelConfig {
  /// Floats per vector, L.
  int64_t vectorWidth = 16;
  /// 32 vector registers (AVX-512) rather than 16 (AVX2): the tile shapes
  /// are chosen to fit them.
  bool avx512 = true;
  PanelKernelConfig panels;
  AttentionKernelConfig attention;
  LayerNormKernelConfig layerNorm;
  /// Elements of a linear's input (rows x K) up to which its int8
  /// quantization or bf16 rounding runs on the calling thread.
  int64_t serialActivationElements = 32 * 512;
  /// Rows (batch x sequence) up to which a copy of heads runs on the
  /// calling thread.
  int64_t serialHeadCopyRows = 256;

  /// Output features per panel of a linear's weight.
  int64_t panelWidth() const { return panels.vectors * vectorWidth; }

  /// The configuration for `target`'s vector unit.
  static KernelConfig forTarget(const VectorTarget &target);
};

} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_KERNELCONFIG_H
