# Starter for rmsnorm in Triton: one program per row, the whole row in registers, fp32 arithmetic.
import torch
import triton
import triton.language as tl


@triton.jit
def _bf16(x):
    """fp32 -> bf16, round to nearest even, spelled out: Triton's CPU interpreter truncates in .to(tl.bfloat16)."""
    bits = x.to(tl.uint32, bitcast=True)
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < hidden
    x = tl.load(x_ptr + row * hidden + offsets, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / hidden + eps)
    tl.store(y_ptr + row * hidden + offsets, _bf16(x * inv * w), mask=mask)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    rows, hidden = x.shape
    y = torch.empty_like(x)
    rmsnorm_kernel[(rows,)](x, weight, y, hidden, 1e-6, BLOCK=triton.next_power_of_2(hidden))
    return y
