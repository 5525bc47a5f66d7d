# Starter for conv2d in Triton: a direct convolution, one program per (image, output channel, block of output
# pixels). For each position (i, j) of the window it loads a (pixels x channels) tile of the input and the
# matching weights, and sums over channels. Correct, but no tensor cores and no reuse of input tiles across
# output channels: try an implicit GEMM with tl.dot.
import torch
import triton
import triton.language as tl


@triton.jit
def conv_kernel(x_ptr, w_ptr, y_ptr, channels, height, width, out_channels, out_h, out_w, ks,
                BLOCK: tl.constexpr, BLOCK_C: tl.constexpr):
    image, k, block = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    pixels = block * BLOCK + tl.arange(0, BLOCK)
    mask = pixels < out_h * out_w
    p, q = pixels // out_w, pixels % out_w
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, channels, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        for i in range(ks):
            for j in range(ks):
                x_off = ((image * channels + c[None, :]) * height + p[:, None] + i) * width + q[:, None] + j
                x = tl.load(x_ptr + x_off, mask=mask[:, None] & (c[None, :] < channels), other=0.0)
                w = tl.load(w_ptr + ((k * channels + c) * ks + i) * ks + j, mask=c < channels, other=0.0)
                acc += tl.sum(x * w[None, :], axis=1)
    tl.store(y_ptr + (image * out_channels + k) * out_h * out_w + pixels, acc, mask=mask)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, w = data
    batch, channels, height, width = x.shape
    out_channels, _, ks, _ = w.shape
    out_h, out_w = height - ks + 1, width - ks + 1
    y = torch.empty(batch, out_channels, out_h, out_w, device=x.device, dtype=torch.float32)
    grid = (batch, out_channels, triton.cdiv(out_h * out_w, 128))
    conv_kernel[grid](x, w, y, channels, height, width, out_channels, out_h, out_w, ks, BLOCK=128, BLOCK_C=16)
    return y
