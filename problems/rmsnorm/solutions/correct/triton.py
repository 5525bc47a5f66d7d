# expect: accepted
# Memory-bound: one program per row with the row in registers (read once, written once); rows longer than
# 16384 loop over chunks twice (sum of squares, then scale and store).
import torch
import triton
import triton.language as tl

MAX_SINGLE_PASS = 16384
CHUNK = 4096


@triton.jit
def _bf16(x):
    """fp32 -> bf16, round to nearest even, spelled out: Triton's CPU interpreter truncates in .to(tl.bfloat16)."""
    bits = x.to(tl.uint32, bitcast=True)
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)


@triton.jit
def _rmsnorm_row(x_ptr, w_ptr, y_ptr, hidden, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < hidden
    x = tl.load(x_ptr + row * hidden + offsets, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / hidden + eps)
    tl.store(y_ptr + row * hidden + offsets, _bf16(x * inv * w), mask=mask)


@triton.jit
def _rmsnorm_chunks(x_ptr, w_ptr, y_ptr, hidden, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((CHUNK,), tl.float32)
    for start in range(0, hidden, CHUNK):
        offsets = start + tl.arange(0, CHUNK)
        x = tl.load(x_ptr + row * hidden + offsets, mask=offsets < hidden, other=0.0).to(tl.float32)
        acc += x * x
    inv = tl.rsqrt(tl.sum(acc, axis=0) / hidden + eps)
    for start in range(0, hidden, CHUNK):
        offsets = start + tl.arange(0, CHUNK)
        mask = offsets < hidden
        x = tl.load(x_ptr + row * hidden + offsets, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * hidden + offsets, _bf16(x * inv * w), mask=mask)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    rows, hidden = x.shape
    y = torch.empty_like(x)
    if hidden <= MAX_SINGLE_PASS:
        block = max(triton.next_power_of_2(hidden), 16)
        warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
        _rmsnorm_row[(rows,)](x, weight, y, hidden, 1e-6, BLOCK=block, num_warps=warps)
    else:
        _rmsnorm_chunks[(rows,)](x, weight, y, hidden, 1e-6, CHUNK=CHUNK, num_warps=8)
    return y
