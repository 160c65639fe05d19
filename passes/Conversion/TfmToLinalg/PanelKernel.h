//===- PanelKernel.h - The panel kernel of linears --------------*- C++ -*-===//
//
// y = act(x·Wᵀ + b) + r on a weight packed in panels (tfm/abi/Panels.h), in
// f32, bf16, int8 or int4, and the integer kernels' quantized input. Linear.cpp
// lowers the linears onto these; PanelKernel.cpp and
// QuantizeActivations.cpp build them.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_CONVERSION_TFMTOLINALG_PANELKERNEL_H
#define TFM_PASSES_CONVERSION_TFMTOLINALG_PANELKERNEL_H

#include "passes/Conversion/TfmToLinalg/Common.h"

#include <tuple>

namespace mlir {
namespace tfm {
namespace lowering {

/// y = act(x + b) + r, the epilogue of a linear, on scalars or vectors; a
/// null `bias` or `residual` is left out.
Value linearEpilogue(OpBuilder &b, Location loc, Value y, Value bias,
                     Activation act, Value residual);

/// What the int8 and int4 panel kernels read besides x and the panels.
struct Int8Operands {
  Value xZeros, xScales; // [M] f32: z and s_x of the input's rows
  Value scales, sums;    // int8, [Np·P]: s_W (f32) and Σ_k q_W (i32)
  // int4: the panels' groups (0 for int8), their words of bf16 scale and
  // zero point (Panels.h, Int4Group) viewed as f32 over the panels' bytes
  // [Np, rows + groups, P] (rows [rows, rows + groups) hold them), and the
  // features' corrections [Np·P] (f32).
  int64_t int4Groups = 0;
  Value groupWords, corrections;
};

/// y[M, N] = act(x·Wᵀ + b) + r with W as panels (P = `config.panels.vectors`
/// vectors of L = `config.vectorWidth` lanes, the tiles and K blocks of
/// `config.panels`):
/// Wp[Np, K, P] of f32, or Wp[Np, K/2, 2P] of bf16 with K in pairs (each
/// 32-bit word holds W[j, 2q] and W[j, 2q + 1], tfm/abi/Panels.h) times x
/// rounded to bf16. In parallel over panels p; in a panel, for each tile
/// of R rows and C vectors of columns (C·L floats from column c0), R·C
/// vector accumulators stay in registers over all of K:
///   acc[r][c] += broadcast(x[m0 + r, k]) · Wp[p, k, c0 + c·L : ... + L]
/// and the epilogue (bias, activation, residual) is applied to them before
/// the one store of y[m0 + r, p·P + c0 + c·L : ...]. Each panel is a
/// contiguous stream; the column groups of a tile read disjoint cache lines
/// of it, and later row tiles re-read it from cache.
/// bf16: x is bf16 [M, K2] (K2 = K rounded up to even) where `dot`
/// (AVX512-BF16), whose dot product takes a pair of k at once:
///   acc[r][c] = vdpbf16ps(acc[r][c], broadcast(x[m0 + r, 2q : 2q + 2]),
///                         Wp[p, q, 2(c0 + c·L) : ... + 2L])
/// and else f32(bf16(x)) [M, K2], each word of the panel widened exactly
/// (a bf16 is the top half of an f32) by a mask and a shift:
///   acc = fma(x[.., 2q + 1], f32(u & 0xffff0000), acc)
///   acc = fma(x[.., 2q],     f32(u << 16),        acc)
/// in the order of vdpbf16ps's definition (the odd k first), so that both
/// round the same sums.
/// int8: Wp[Np, K/4, 4P] holds each feature's integers q_W with K in quads
/// (tfm/abi/Panels.h), x is u[M, K4] = q_x + z (unsigned bytes, see
/// quantizeActivations) and the accumulators are i32, where `dot`
/// (AVX512-VNNI) four k at once:
///   acc[r][c] = vpdpbusd(acc[r][c], broadcast(u[m0 + r, 4q : 4q + 4]),
///                        Wp[p, q, 4(c0 + c·L) : ... + 4L])
/// and else each byte of the panel's words sign-extended (a shift left,
/// then right) times u[.., 4q + h]: the same exact integer sums. The
/// epilogue takes out the zero point with the features' sums and scales
/// back:
///   y = (f32(acc − z[m] · Σ_k q_W[n, k]) · s_x[m]) · s_W[n]
/// before bias, activation and residual. Between K blocks the i32 sums
/// wait in the f32 tile as their bits.
/// int4 (`int8Operands.int4Groups` > 0): Wp[Np, rows + groups, 4P] bytes
/// whose word rows hold eight k each (tfm/abi/Panels.h, packInt4Panels):
/// the low nibbles less the group's zero point are the int8 quad of k
/// 8q .. 8q + 3, the high ones the quad after, each multiplied as an int8
/// panel row. A group's rows sum in i32 from zero; its sums are scaled
/// into the f32 accumulators, and the epilogue takes out the inputs' zero
/// point:
///   acc[r][c] = acc[r][c] + f32(Σ_{k in g} u·q) · s_W[g, n]   (g in order)
///   y = (acc − z[m] · c[n]) · s_x[m]
/// (c the features' corrections); between K blocks acc waits as f32.
/// `panels` is the panels as a tensor; `panelsMemref` the same as a view of
/// the weights file, which the kernel prefetches from (null for panels
/// packed in the function: no prefetches). `n` is N, the columns of y.
/// Where `blockTerms` is given (and N is whole panels), it is set to the
/// log-sum-exp terms of each panel's columns in each row, [M, Np, 2]
/// (tfm.logsumexp_blocks with blocks of P), computed from the panel's
/// tile while it is in L1: the search's pass over the logits, fused.
/// Where `gated` (tfm.fused_linear gated; the panels are two halves of
/// whole panels, W0's then W1's), y[M, N/2] = act(h0) · h1 + r with
/// h0 = x·W0ᵀ + b0 and h1 = x·W1ᵀ + b1, panel j of each half in turn in
/// one iteration of the forall and the gate applied to their tiles.
Value panelLinear(OpBuilder &b, Location loc, Value x, Value panels,
                  Value panelsMemref, int64_t n, Value bias, Activation act,
                  Value residual, bool dot, const KernelConfig &config,
                  const Int8Operands &int8Operands = {},
                  Value *blockTerms = nullptr, bool gated = false);

/// The int8 form of a linear's input x [M, K] (reference.py,
/// quantize_activations): each row as unsigned bytes u over the row's
/// range extended to 0, with a zero point z and a scale s_x, K padded to
/// a multiple of `padTo` (whole quads for int8, whole groups for int4):
///   lo = min(x[m, :], 0), hi = max(x[m, :], 0), r = hi − lo (255 if 0)
///   inverse = (1 / r) · 255, s_x[m] = r / 255
///   z[m] = round_even(−lo · inverse)
///   u[m, k] = clamp(round_even(x[m, k] · inverse) + z[m], 0, 255)
/// so that x[m, k] ≈ (u[m, k] − z[m]) · s_x[m] with all 256 levels in use.
/// Per row, one pass of vectors of `lanes` for lo and hi, one for u; the
/// lanes past K read 0, which changes neither lo nor hi, and give u = z
/// (the panels' padding is 0). Over rows in parallel where x has more than
/// `serialElements` elements, else in one loop. Returns u, z (as f32) and
/// s_x.
std::tuple<Value, Value, Value> quantizeActivations(OpBuilder &b, Location loc,
                                                    Value x, int64_t lanes,
                                                    int64_t serialElements,
                                                    int64_t padTo = 4);

/// The bf16 form of a linear's input x [M, K]: x rounded to nearest even,
/// bf16 [M, K2] where `dotPairs` (the kernel's dot product reads it in
/// pairs), else f32(bf16(x)) [M, K2]; K2 = K rounded up to even, the odd
/// K's extra column 0 (as the panels' extra row). Over rows in parallel
/// where x has more than `serialElements` elements (an encoder's batch),
/// else in one loop (a decoder step's few rows take less time than threads
/// to fork and join).
Value roundActivationsToBf16(OpBuilder &b, Location loc, Value x, bool dotPairs,
                             int64_t serialElements);

} // namespace lowering
} // namespace tfm
} // namespace mlir

#endif // TFM_PASSES_CONVERSION_TFMTOLINALG_PANELKERNEL_H
