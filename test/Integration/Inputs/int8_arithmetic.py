"""Checks the reference's int8 arithmetic (reference.py --precision int8):
the rounding of quantize_rows (weights) and quantize_activations (inputs),
zero rows, and that a product is the integer sums of the quantized operands
scaled back, within the quantization's error bound of the f32 product;
then the same of int4's groups (--precision int4). Prints one line per
check that holds."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reference"))
import reference  # noqa: E402

# Ties to even: with max |row| = 127 the scale is 1 and q = round(x).
q, s = reference.quantize_rows(torch.tensor([[127.0, 0.5, 1.5, 2.5, -0.5, -126.5]]))
assert q.tolist() == [[127.0, 0.0, 2.0, 2.0, -0.0, -126.0]], q
assert s.item() == 1.0
print("ties to even")

q, s = reference.quantize_rows(torch.zeros(2, 5))
assert q.abs().sum().item() == 0 and s.flatten().tolist() == [1.0, 1.0]
print("zero rows stay zero, scale 1")

# Inputs: all 256 levels over the row's range extended to 0, so a row of
# one sign (after a ReLU) has zero point 0 and twice the levels of a
# symmetric scale; a zero row stays zero.
u, z, s = reference.quantize_activations(torch.tensor([[0.0, 1.0, 2.0, 255.0], [0.0] * 4,
                                                       [-3.0, 1.0, 0.5, 0.0]]))
assert u[0].tolist() == [0.0, 1.0, 2.0, 255.0] and z[0].item() == 0 and s[0].item() == 1.0
assert u[1].abs().sum().item() == 0 and z[1].item() == 0 and s[1].item() == 1.0
assert z[2].item() == 191 and u[2].tolist() == [0.0, 255.0, 223.0, 191.0], (z[2], u[2])
print("inputs unsigned with a zero point, zero rows stay zero")

torch.manual_seed(0)
x, w = torch.randn(7, 300), torch.randn(33, 300)
x[:, 0] = torch.relu(x[:, 0])
x[3] = torch.relu(x[3])  # a row of one sign
w[5] = 0.0  # an all-zero output channel
u, z, sx = reference.quantize_activations(x)
qw, sw = reference.quantize_rows(w)
assert u.min().item() == 0 and u.max().item() == 255 and qw.abs().max().item() == 127
assert z[3].item() == 0 and u[3].max().item() == 255
qx = u - z
sums = qx.double() @ qw.double().T
assert torch.equal(sums, torch.round(sums)) and sums.abs().max().item() <= 255 * 127 * 300

model = reference.Model.__new__(reference.Model)
model.int8, model.int4, model.bf16, model.quantized = True, False, False, {}
got = model.product(x, w, "w")
assert torch.equal(got, (sums.float() * sx) * sw.T)
assert got[:, 5].abs().max().item() == 0
print("product = integer sums * s_x * s_w")

# |x·w - qx·qw sx sw| <= sum |x||w - qw sw| + |x - qx sx||qw sw|, each
# rounding error at most half a step.
bound = (x.abs() @ (0.5 * sw).expand(-1, 300).T) + (0.5 * sx) @ (qw * sw).abs().sum(1, keepdim=True).T
error = (got - x @ w.T).abs()
assert (error <= bound * 1.0001 + 1e-6).all(), (error - bound).max()
print(f"within the rounding bound (largest error {error.max().item():.3g}, f32 products up to {(x @ w.T).abs().max().item():.3g})")

# int4 (reference.py --precision int4): groups of 64 along K, each over
# its range extended to 0 with a zero point: integers q (less the zero
# point) spanning at most 15 levels that hold 0, in [-15, 15], a bfloat16
# scale; K = 300 leaves a short last group; a zero group stays zero with
# scale 1. Each weight within half a step of the f32 scale r / 15, plus
# |q| times the bf16 rounding of the scale (at most 2^-8 of it).
w4 = w.clone()
w4[2, 64:128] = 0.0
q4, s4, c4 = reference.quantize_groups(w4)
assert q4.shape == w4.shape and s4.shape == (33, 5) and q4.abs().max().item() <= 15
assert q4[2, 64:128].abs().sum().item() == 0 and s4[2, 1].item() == 1.0
assert torch.equal(s4, s4.bfloat16().float())
groups = torch.arange(300) // 64
for g in range(5):
    qg = q4[:, 64 * g:64 * (g + 1)]
    span = qg.amax(1) - qg.amin(1)
    assert (span <= 15).all() and (qg.amin(1) <= 0).all() and (qg.amax(1) >= 0).all()
step4 = (0.5 + 15 / 256) * s4[:, groups]
assert ((q4 * s4[:, groups] - w4).abs() <= step4 * 1.0001).all()
print("int4: groups of 64, 16 levels holding 0, bf16 scales, zero groups stay zero, scale 1")

model.int4, model.quantized = True, {}
got4 = model.product(x, w4, "w4")
acc = torch.zeros(7, 33)
for g in range(5):
    ks = slice(64 * g, 64 * (g + 1))
    acc = acc + (u[:, ks].double() @ q4[:, ks].double().T).float() * s4[:, g]
assert torch.equal(got4, (acc - z * c4) * sx)
bound4 = (x.abs() @ step4.T) + (0.5 * sx) @ (q4 * s4[:, groups]).abs().sum(1, keepdim=True).T
error4 = (got4 - x @ w4.T).abs()
assert (error4 <= bound4 * 1.0001 + 1e-5).all(), (error4 - bound4).max()
print("int4 product = group sums scaled in order, less z * correction, within the rounding bound")
