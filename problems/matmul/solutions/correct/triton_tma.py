# expect: accepted
# needs: cuda
# Hopper's tensor memory accelerator: tiles of a and b arrive by TMA (tl.make_tensor_descriptor) into shared
# memory, pipelined over num_stages, and feed wgmma with an fp32 accumulator; grouped tile order for L2 reuse.
# TMA wants 16-byte aligned rows (k and n multiples of 8) and an sm_90+ GPU; other shapes and GPUs take a plain
# tiled kernel.
import torch
import triton
import triton.language as tl


@triton.jit
def _tile(pid, m, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    tiles_m, tiles_n = tl.cdiv(m, BLOCK_M), tl.cdiv(n, BLOCK_N)
    group = GROUP_M * tiles_n
    first_m = (pid // group) * GROUP_M
    group_m = min(tiles_m - first_m, GROUP_M)
    return first_m + (pid % group) % group_m, (pid % group) // group_m


@triton.jit
def _matmul_tma(
    a_ptr, b_ptr, c_ptr, m, n, k,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[m, k], strides=[k, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[k, n], strides=[n, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[m, n], strides=[n, 1], block_shape=[BLOCK_M, BLOCK_N])
    tile_m, tile_n = _tile(tl.program_id(0), m, n, BLOCK_M, BLOCK_N, GROUP_M)
    row, col = tile_m * BLOCK_M, tile_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, k, BLOCK_K):
        acc = tl.dot(a_desc.load([row, start]), b_desc.load([start, col]), acc)
    c_desc.store([row, col], acc.to(tl.float16))


@triton.jit
def _matmul_plain(a_ptr, b_ptr, c_ptr, m, n, k, BLOCK: tl.constexpr):
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ks = tl.arange(0, 32)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for start in range(0, k, 32):
        a = tl.load(a_ptr + rows[:, None] * k + start + ks[None, :],
                    mask=(rows[:, None] < m) & (start + ks[None, :] < k), other=0.0)
        b = tl.load(b_ptr + (start + ks[:, None]) * n + cols[None, :],
                    mask=(start + ks[:, None] < k) & (cols[None, :] < n), other=0.0)
        acc = tl.dot(a, b, acc)
    mask = (rows[:, None] < m) & (cols[None, :] < n)
    tl.store(c_ptr + rows[:, None] * n + cols[None, :], acc.to(tl.float16), mask=mask)


_tuned = triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=8),
    ],
    key=["m", "n", "k"],
)(_matmul_tma)


def _scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    return torch.empty(size, device="cuda", dtype=torch.int8)  # device-side descriptors live here


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty(m, n, device=a.device, dtype=torch.float16)
    if a.is_cuda and torch.cuda.get_device_capability(a.device)[0] >= 9 and k % 8 == 0 and n % 8 == 0:
        triton.set_allocator(_scratch)
        grid = lambda meta: (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)  # noqa: E731
        _tuned[grid](a, b, c, m, n, k)
    else:
        _matmul_plain[(triton.cdiv(m, 64), triton.cdiv(n, 64))](a, b, c, m, n, k, BLOCK=64)
    return c
