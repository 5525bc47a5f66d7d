# expect: accepted
# Memory-bound: every byte is read once and written once when the row fits in registers (up to 16384 columns:
# one program per row, max, exp, sum and store from registers). Longer rows take an online pass (running max
# and rescaled sum over chunks) and a second pass that writes: 1.5x the ideal traffic.
import torch
import triton
import triton.language as tl

MAX_SINGLE_PASS = 16384
CHUNK = 8192


@triton.jit
def _softmax_row(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=-float("inf"), eviction_policy="evict_first")
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e * (1.0 / tl.sum(e, axis=0))
    tl.store(y_ptr + row * cols + offsets, y.to(tl.float16), mask=mask)


@triton.jit
def _softmax_online(x_ptr, y_ptr, cols, CHUNK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = row * cols
    m = tl.full((CHUNK,), -float("inf"), tl.float32)
    s = tl.zeros((CHUNK,), tl.float32)
    for start in range(0, cols, CHUNK):
        offsets = start + tl.arange(0, CHUNK)
        x = tl.load(x_ptr + base + offsets, mask=offsets < cols, other=-float("inf")).to(tl.float32)
        new_m = tl.maximum(m, x)
        # Lanes that have seen nothing yet stay at -inf; guard their rescale against inf - inf.
        scale = tl.where(new_m == -float("inf"), 0.0, tl.exp(m - new_m))
        s = s * scale + tl.where(new_m == -float("inf"), 0.0, tl.exp(x - new_m))
        m = new_m
    row_max = tl.max(m, axis=0)
    total = tl.sum(s * tl.where(m == -float("inf"), 0.0, tl.exp(m - row_max)), axis=0)
    inv = 1.0 / total
    for start in range(0, cols, CHUNK):
        offsets = start + tl.arange(0, CHUNK)
        mask = offsets < cols
        x = tl.load(x_ptr + base + offsets, mask=mask, other=-float("inf"), eviction_policy="evict_first")
        y = tl.exp(x.to(tl.float32) - row_max) * inv
        tl.store(y_ptr + base + offsets, y.to(tl.float16), mask=mask)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    rows, cols = x.shape
    y = torch.empty_like(x)
    if cols <= MAX_SINGLE_PASS:
        block = max(triton.next_power_of_2(cols), 16)
        warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
        _softmax_row[(rows,)](x, y, cols, BLOCK=block, num_warps=warps)
    else:
        _softmax_online[(rows,)](x, y, cols, CHUNK=CHUNK, num_warps=16)
    return y
