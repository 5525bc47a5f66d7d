# Starter for prefixsum in Triton: scan each block, then add the scanned block totals (computed with torch).
import torch
import triton
import triton.language as tl


@triton.jit
def block_scan(x_ptr, y_ptr, totals_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0.0)
    scanned = tl.cumsum(x, axis=0)
    tl.store(y_ptr + offsets, scanned, mask=offsets < n)
    tl.store(totals_ptr + pid, tl.sum(x, axis=0))


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    (x,) = data
    n, block = x.numel(), 1024
    blocks = triton.cdiv(n, block)
    y = torch.empty(blocks * block, device=x.device, dtype=torch.float32)  # padded to whole blocks
    totals = torch.empty(blocks, device=x.device, dtype=torch.float32)
    block_scan[(blocks,)](x, y, totals, n, BLOCK=block)
    offsets = torch.cumsum(totals, 0) - totals  # the sum of all blocks before each block
    return (y.view(blocks, block) + offsets[:, None]).view(-1)[:n]
