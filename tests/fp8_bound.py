"""How far an FP8 (e4m3) matrix product on a Hopper tensor core may be from the exact product of
the same e4m3 values, and a model of that accumulation to check the bound against.

The derivation (nodeqc's, from the figures below; not a vendor's statement):
- e4m3 has a 4-bit significand, so each product a_ik * b_kj is exact in fp32 (8 bits): the only
  error is in adding the products up.
- Hopper's FP8 MMA does not accumulate in full fp32. Published measurements put its accumulator at
  about 22 bits, 1 sign, 8 exponent and 13 explicit mantissa bits, with the low bits dropped
  (truncation) rather than rounded: "FP22" in SageAttention2 (Zhang et al., arXiv:2411.10958), and
  "around 14 bits" of retained precision in the DeepSeek-V3 technical report (arXiv:2412.19437,
  section 3.3.2) -- both as recalled here, not re-checked (no search was available to this change).
  Truncating to 13 fraction bits errs by less than one unit in the last place, 2^-13 of the value.
- Each addition into the accumulator therefore errs by less than 2^-13 * |partial sum|, and every
  partial sum is at most S_ij = sum_k |a_ik| |b_kj|. The tensor core adds one MMA step of
  FP8_MMA_K = 32 products at a time (wgmma's K for 8-bit operands), so an n = K-long dot product
  takes K / 32 additions into the accumulator: |error_ij| <= (K / 32) * 2^-13 * S_ij. At n = 1024
  that is 32 * 2^-13 = 2^-8 = 3.9e-3 of S_ij.
- Measured on real GPUs (shared/measurements/2026-11-26, item 5; n = 1024, H200): max |error| 0.0335,
  max |error_ij| / S_ij = 5.1e-5, relative Frobenius error 1.26e-4. The bound is 76 times the
  worst element measured: margin for another chip, driver or cuBLAS kernel choice (cuBLAS may also
  promote the partial sums to fp32 between steps, which only makes the error smaller). Checked on
  an H100 SXM5 on 2026-11-26 with PyTorch's torch._scaled_mm (cuBLASLt too, not nodeqc's own FP8
  path, whose nvmath-python was not on that machine), the same random e4m3 operands: max |error| /
  S_ij 1.24e-4 at n = 256 (bound 9.8e-4), 5.12e-5 at n = 1024 (bound 3.9e-3), 2.27e-5 at n = 4096
  (bound 1.6e-2), relative Frobenius error 1.26e-4 at each; a transposed operand exceeded the bound
  on 99.5 %, 95.5 % and 65 % of the elements, by up to 0.57, 0.36 and 0.2 of S_ij.
- A genuinely wrong product is far outside it: a transposed or mis-laid operand, or a zeroed result,
  errs by about sqrt(K) against S_ij of about 0.64 K for random normal operands, i.e. 1/(0.64 sqrt(K))
  = 0.05 of S_ij at K = 1024, over ten times the bound, on nearly every element.
"""

from __future__ import annotations

import numpy as np

FP8_MMA_K = 32  # products per MMA step for 8-bit operands on Hopper (wgmma.mma_async ... k32)
ACCUMULATOR_FRACTION_BITS = 13  # the ~22-bit (1-8-13) accumulator of Hopper's FP8 MMA


def fp8_error_bound(k: int) -> float:
    """The largest |error_ij| / sum_k |a_ik||b_kj| the accumulation allows for a K = k product."""
    return max(1, -(-k // FP8_MMA_K)) * 2.0 ** -ACCUMULATOR_FRACTION_BITS


def fp8_product_error(got: np.ndarray, a: np.ndarray, bt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(|got - exact|, sum_k |a_ik||b_kj|), with a and bt the e4m3 *values* (bt transposed: B^T),
    the exact product in float64 (exact here: at most 2^10 products of 8-bit significands)."""
    a64, b64 = a.astype(np.float64), bt.astype(np.float64)
    return np.abs(got.astype(np.float64) - a64 @ b64.T), np.abs(a64) @ np.abs(b64).T


def truncate(x: np.ndarray, fraction_bits: int = ACCUMULATOR_FRACTION_BITS) -> np.ndarray:
    """x with its significand cut (toward zero) to 1 + fraction_bits bits."""
    m, e = np.frexp(x)  # m in [0.5, 1): 1 implicit bit + fraction_bits more = fraction_bits + 1 of m
    scale = 2.0 ** (fraction_bits + 1)
    return np.ldexp(np.trunc(m * scale) / scale, e)


def modelled_product(a: np.ndarray, bt: np.ndarray) -> np.ndarray:
    """The product as the model above accumulates it: each 32-product MMA step added exactly, then
    into a truncating 13-fraction-bit accumulator."""
    a64, b64 = a.astype(np.float64), bt.astype(np.float64)
    acc = np.zeros((a.shape[0], bt.shape[0]))
    for k in range(0, a.shape[1], FP8_MMA_K):
        acc = truncate(acc + a64[:, k:k + FP8_MMA_K] @ b64[:, k:k + FP8_MMA_K].T)
    return acc.astype(np.float32)
