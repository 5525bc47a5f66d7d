"""conv2d: a 2-D convolution of fp32 NCHW input with KCRS weights, stride 1, no padding, no bias."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from _lib import Inputs, compare

# Allowed error of y[n, k, p, q]: RTOL * |y| plus TOLERANCE * 2**-11 * sqrt(sum of (x * w)^2 over the window),
# 2**-11 being TF32's rounding of an input. Measured (CPU emulation): TF32 inputs rounded to nearest err by at most
# 2.7 units, bf16 inputs (4x coarser) by 15-22; 8 sits between (tests/problems/test_problem_checks.py keeps both
# sides). Triton's tl.dot on Hopper truncates fp32 to TF32 instead: every product is then 2**-10 too small on
# average, a bias of 2**-10 * |y| that no spread term covers (measured on an H200: 1.08x the spread bound on 2 of
# 4M outputs without RTOL). RTOL = 2**-9 covers it twice over; bf16 inputs still fail.
TOLERANCE = 8
RTOL = 2**-9


def generate_input(
    batch: int, channels: int, height: int, width: int, out_channels: int, kernel_size: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor]:
    inputs = Inputs(seed)
    x = inputs.randn(batch, channels, height, width)
    w = inputs.randn(out_channels, channels, kernel_size, kernel_size)
    return x, w / (channels * kernel_size * kernel_size) ** 0.5


def _conv(x: torch.Tensor, w: torch.Tensor, tf32: bool) -> torch.Tensor:
    if x.is_cuda:
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=tf32):
            return F.conv2d(x, w)
    return F.conv2d(x, w)


def ref_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, w = data
    return _conv(x, w, tf32=False)


def check_implementation(data: tuple[torch.Tensor, torch.Tensor], output: object) -> tuple[bool, str]:
    x, w = data
    expected = _conv(x, w, tf32=False)
    spread = _conv(x.square(), w.square(), tf32=True).clamp_min(0).sqrt()
    return compare(output, expected, torch.float32, atol=TOLERANCE * 2**-11 * spread, rtol=RTOL)


def speed_of_light(
    batch: int, channels: int, height: int, width: int, out_channels: int, kernel_size: int, **_: object
) -> dict[str, int]:
    out_h, out_w = height - kernel_size + 1, width - kernel_size + 1
    x_bytes = 4 * batch * channels * height * width
    w_bytes = 4 * out_channels * channels * kernel_size * kernel_size
    y_bytes = 4 * batch * out_channels * out_h * out_w
    flops = 2 * batch * out_channels * out_h * out_w * channels * kernel_size * kernel_size
    return {"bytes": x_bytes + w_bytes + y_bytes, "flops": flops}
