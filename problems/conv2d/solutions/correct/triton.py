# expect: accepted
# Implicit GEMM: rows are output pixels (image, p, q), columns output channels, the reduction runs over
# (channel, i, j) of the window. Each program gathers a (BLOCK_M, BLOCK_K) tile of the input and multiplies it
# with a (BLOCK_K, BLOCK_N) tile of the weights on the tensor cores (tl.dot in TF32, which the tolerance allows).
import torch
import triton
import triton.language as tl


@triton.jit
def _conv(
    x_ptr, w_ptr, y_ptr, batch, channels, height, width, out_channels, out_h, out_w,
    KS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)  # output pixels over all images
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)  # output channels
    pixels = out_h * out_w
    image, pix = rows // pixels, rows % pixels
    p, q = pix // out_w, pix % out_w
    row_base = image.to(tl.int64) * channels * height * width + p * width + q
    reduction = channels * KS * KS
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, reduction, BLOCK_K):
        r = start + tl.arange(0, BLOCK_K)
        c, ij = r // (KS * KS), r % (KS * KS)
        col_off = c * height * width + (ij // KS) * width + ij % KS
        x = tl.load(x_ptr + row_base[:, None] + col_off[None, :],
                    mask=(rows[:, None] < batch * pixels) & (r[None, :] < reduction), other=0.0)
        w = tl.load(w_ptr + cols[None, :].to(tl.int64) * reduction + r[:, None],
                    mask=(r[:, None] < reduction) & (cols[None, :] < out_channels), other=0.0)
        acc = tl.dot(x, w, acc)
    y_off = (image.to(tl.int64) * out_channels * pixels + pix)[:, None] + cols[None, :].to(tl.int64) * pixels
    tl.store(y_ptr + y_off, acc, mask=(rows[:, None] < batch * pixels) & (cols[None, :] < out_channels))


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, w = data
    batch, channels, height, width = x.shape
    out_channels, _, ks, _ = w.shape
    out_h, out_w = height - ks + 1, width - ks + 1
    y = torch.empty(batch, out_channels, out_h, out_w, device=x.device, dtype=torch.float32)
    block_m, block_n, block_k = (128, 64, 32) if x.is_cuda else (32, 32, 32)
    grid = (triton.cdiv(batch * out_h * out_w, block_m), triton.cdiv(out_channels, block_n))
    _conv[grid](x, w, y, batch, channels, height, width, out_channels, out_h, out_w,
                KS=ks, BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, num_warps=4, num_stages=3)
    return y
