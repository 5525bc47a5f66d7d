"""grayscale: an RGB image (H x W x 3, fp32) to its luminance (H x W, fp32)."""

from __future__ import annotations

import torch
from _lib import Inputs, compare

WEIGHTS = (0.2989, 0.5870, 0.1140)


def generate_input(height: int, width: int, seed: int) -> tuple[torch.Tensor]:
    return (Inputs(seed).rand(height, width, 3),)


def ref_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (image,) = data
    r, g, b = image.unbind(-1)
    return WEIGHTS[0] * r + WEIGHTS[1] * g + WEIGHTS[2] * b


def check_implementation(data: tuple[torch.Tensor], output: object) -> tuple[bool, str]:
    (image,) = data
    expected = ref_kernel((image.double(),))
    # Three fp32 products and two sums in any order (with or without FMA) stay within ~3 ulp of the exact value.
    return compare(output, expected, torch.float32, atol=1e-6, rtol=4e-7)


def speed_of_light(height: int, width: int, **_: object) -> dict[str, int]:
    return {"bytes": height * width * (3 * 4 + 4), "flops": 5 * height * width}
