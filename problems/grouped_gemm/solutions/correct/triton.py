# expect: accepted
# One launch for all groups, no host synchronisation: a table of row tiles is built on the device (tiles per
# group = ceil(size / BLOCK_M), their running total, and for each tile slot the group it falls in, by
# searchsorted). The grid has an upper bound of tiles, ceil(tokens / BLOCK_M) + groups, and slots past the real
# tiles do nothing; an empty group has no tiles. Each program multiplies a BLOCK_M row tile of its group by one
# BLOCK_N column tile of that group's weights with an fp32 accumulator (tensor cores). Consecutive programs take
# consecutive row tiles of the same column tile, so a group's weight columns are read from L2 while its row
# tiles run. On a GPU a short autotune over the column tile and pipeline depth picks the best for each (k, n);
# on the CPU interpreter one small configuration is used.
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
def _grouped(
    a_ptr, w_ptr, c_ptr, offsets_ptr, tile_end_ptr, tile_group_ptr, groups, k, n,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ROUND: tl.constexpr,
):
    # ROUND: running under the CPU interpreter (bf16 conversions spelled out).
    slot = tl.program_id(0)
    g = tl.load(tile_group_ptr + slot).to(tl.int32)
    if g < groups:
        end = tl.load(offsets_ptr + g)
        start = tl.load(offsets_ptr + g - 1, mask=g > 0, other=0)
        first_tile = tl.load(tile_end_ptr + g).to(tl.int32) - tl.cdiv(end - start, BLOCK_M)
        rows = start + (slot - first_tile) * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
        ks = tl.arange(0, BLOCK_K)
        a_tile = a_ptr + rows[:, None].to(tl.int64) * k + ks[None, :]
        w_tile = w_ptr + g.to(tl.int64) * k * n + ks[:, None].to(tl.int64) * n + cols[None, :]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(0, k, BLOCK_K):
            a = tl.load(a_tile, mask=(rows[:, None] < end) & (ks[None, :] < k - kk), other=0.0)
            w = tl.load(w_tile, mask=(ks[:, None] < k - kk) & (cols[None, :] < n), other=0.0)
            if ROUND:  # the interpreter multiplies bf16 as raw integers: give it fp32 (exact for bf16 values)
                a, w = a.to(tl.float32), w.to(tl.float32)
            acc = tl.dot(a, w, acc)
            a_tile += BLOCK_K
            w_tile += BLOCK_K * n
        out = c_ptr + rows[:, None].to(tl.int64) * n + cols[None, :]
        mask = (rows[:, None] < end) & (cols[None, :] < n)
        if ROUND:
            tl.store(out, _bf16(acc), mask=mask)
        else:
            tl.store(out, acc.to(tl.bfloat16), mask=mask)


BLOCK_M = 128  # fixed: the tile table depends on it
_tuned = triton.autotune(
    configs=[
        triton.Config({"BLOCK_N": 256, "BLOCK_K": 64}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_N": 128, "BLOCK_K": 64}, num_stages=4, num_warps=8),
        triton.Config({"BLOCK_N": 128, "BLOCK_K": 64}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_N": 256, "BLOCK_K": 64}, num_stages=4, num_warps=8),
    ],
    key=["k", "n"],
)(_grouped)


def _tile_table(offsets: torch.Tensor, tokens: int, block_m: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(running total of row tiles per group, group of each tile slot, number of slots), all on the device."""
    sizes = torch.diff(offsets, prepend=offsets.new_zeros(1))
    tile_end = torch.cumsum(torch.div(sizes + block_m - 1, block_m, rounding_mode="floor"), 0).to(torch.int32)
    slots = triton.cdiv(tokens, block_m) + offsets.shape[0]
    ids = torch.arange(slots, device=offsets.device, dtype=torch.int32)
    tile_group = torch.searchsorted(tile_end, ids, right=True).to(torch.int32)  # == groups past the last tile
    return tile_end, tile_group, slots


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, weights, offsets = data
    groups, k, n = weights.shape
    c = torch.empty(a.shape[0], n, device=a.device, dtype=torch.bfloat16)
    if a.shape[0] == 0:
        return c
    block_m = BLOCK_M if a.is_cuda else 32
    tile_end, tile_group, slots = _tile_table(offsets, a.shape[0], block_m)
    if a.is_cuda:
        grid = lambda meta: (slots, triton.cdiv(n, meta["BLOCK_N"]))  # noqa: E731
        _tuned[grid](a, weights, c, offsets, tile_end, tile_group, groups, k, n, BLOCK_M=block_m, ROUND=False)
    else:
        _grouped[(slots, triton.cdiv(n, 32))](
            a, weights, c, offsets, tile_end, tile_group, groups, k, n, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, ROUND=True
        )
    return c
