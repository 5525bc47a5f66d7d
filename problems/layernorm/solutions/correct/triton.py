# expect: accepted
# Memory-bound: one program per row with the row in registers (read once, written once), mean and then the
# variance of the centred row from registers (two passes over registers, none over memory, so no cancellation).
# Rows longer than 16384 loop over chunks three times (mean, variance, scale and store).
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
def _store(ptr, y, mask, BF16: tl.constexpr, ROUND: tl.constexpr):
    if BF16:
        if ROUND:  # under the interpreter
            tl.store(ptr, _bf16(y), mask=mask)
        else:
            tl.store(ptr, y.to(tl.bfloat16), mask=mask)
    else:
        tl.store(ptr, y.to(tl.float16), mask=mask)


@triton.jit
def _layernorm_row(
    x_ptr, w_ptr, b_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr, BF16: tl.constexpr, ROUND: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    mean = tl.sum(x, axis=0) / cols
    centred = tl.where(mask, x - mean, 0.0)
    inv = tl.rsqrt(tl.sum(centred * centred, axis=0) / cols + eps)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    _store(y_ptr + row * cols + offsets, centred * inv * w + b, mask, BF16, ROUND)


@triton.jit
def _layernorm_chunks(
    x_ptr, w_ptr, b_ptr, y_ptr, cols, eps, CHUNK: tl.constexpr, BF16: tl.constexpr, ROUND: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    base = x_ptr + row * cols
    acc = tl.zeros((CHUNK,), tl.float32)
    for start in range(0, cols, CHUNK):
        offsets = start + tl.arange(0, CHUNK)
        acc += tl.load(base + offsets, mask=offsets < cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / cols
    acc = tl.zeros((CHUNK,), tl.float32)
    for start in range(0, cols, CHUNK):
        offsets = start + tl.arange(0, CHUNK)
        mask = offsets < cols
        centred = tl.where(mask, tl.load(base + offsets, mask=mask, other=0.0).to(tl.float32) - mean, 0.0)
        acc += centred * centred
    inv = tl.rsqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, CHUNK):
        offsets = start + tl.arange(0, CHUNK)
        mask = offsets < cols
        x = tl.load(base + offsets, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        _store(y_ptr + row * cols + offsets, (x - mean) * inv * w + b, mask, BF16, ROUND)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight, bias = data
    rows, cols = x.shape
    y = torch.empty_like(x)
    bf16 = x.dtype == torch.bfloat16
    explicit = not x.is_cuda  # the interpreter truncates in .to(tl.bfloat16): round explicitly
    if cols <= MAX_SINGLE_PASS:
        block = max(triton.next_power_of_2(cols), 16)
        warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
        _layernorm_row[(rows,)](x, weight, bias, y, cols, 1e-5, BLOCK=block, BF16=bf16, ROUND=explicit, num_warps=warps)
    else:
        _layernorm_chunks[(rows,)](x, weight, bias, y, cols, 1e-5, CHUNK=CHUNK, BF16=bf16, ROUND=explicit, num_warps=8)
    return y
