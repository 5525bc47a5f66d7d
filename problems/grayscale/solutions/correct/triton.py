# expect: accepted
# Loads a (BLOCK, 4) tile of the interleaved image (the 4th column masked off) so that each thread reads
# contiguous memory, then reduces the channels with the weights.
import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def _gray(image_ptr, out_ptr, pixels, BLOCK: tl.constexpr):
    p = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c = tl.arange(0, 4)
    mask = (p[:, None] < pixels) & (c[None, :] < 3)
    rgb = tl.load(image_ptr + 3 * p[:, None] + c[None, :], mask=mask, other=0.0, eviction_policy="evict_first")
    weights = tl.where(c == 0, 0.2989, tl.where(c == 1, 0.5870, tl.where(c == 2, 0.1140, 0.0)))
    tl.store(out_ptr + p, tl.sum(rgb * weights[None, :], axis=1), mask=p < pixels)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (image,) = data
    height, width, _ = image.shape
    out = torch.empty(height, width, device=image.device, dtype=torch.float32)
    pixels = height * width
    _gray[(triton.cdiv(pixels, BLOCK),)](image, out, pixels, BLOCK=BLOCK, num_warps=8)
    return out
