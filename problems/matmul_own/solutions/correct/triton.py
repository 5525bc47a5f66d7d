# expect: accepted
# timed: accepted (its one kernel, _gemm, is its own: coverage near 100%)
# Tensor-core tiles of 128 x 256 with an fp32 accumulator, three pipeline stages, and grouped tile order (programs
# that run together share rows of a and columns of b in L2). On the CPU interpreter, small tiles.
import torch
import triton
import triton.language as tl


@triton.jit
def _gemm(a_ptr, b_ptr, c_ptr, m, n, k, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(m, BM), tl.cdiv(n, BN)
    per_group = GROUP * tiles_n
    first = (pid // per_group) * GROUP
    rows_in_group = min(tiles_m - first, GROUP)
    tm = first + (pid % per_group) % rows_in_group
    tn = (pid % per_group) // rows_in_group
    rows = tm * BM + tl.arange(0, BM)
    cols = tn * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    pa = a_ptr + rows[:, None].to(tl.int64) * k + ks[None, :]
    pb = b_ptr + ks[:, None].to(tl.int64) * n + cols[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for start in range(0, k, BK):
        a = tl.load(pa, mask=(rows[:, None] < m) & (ks[None, :] < k - start), other=0.0)
        b = tl.load(pb, mask=(ks[:, None] < k - start) & (cols[None, :] < n), other=0.0)
        acc = tl.dot(a, b, acc)
        pa += BK
        pb += BK * n
    out = (rows[:, None] < m) & (cols[None, :] < n)
    tl.store(c_ptr + rows[:, None].to(tl.int64) * n + cols[None, :], acc.to(tl.float16), mask=out)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b = data
    (m, k), n = a.shape, b.shape[1]
    c = torch.empty(m, n, device=a.device, dtype=torch.float16)
    bm, bn, bk, warps, stages = (128, 256, 64, 8, 3) if a.is_cuda else (32, 32, 32, 4, 1)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    _gemm[grid](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=warps, num_stages=stages)
    return c
