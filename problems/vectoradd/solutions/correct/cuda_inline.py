# expect: accepted
# needs: cuda
# Eight halves (16 bytes) per load; a scalar tail for sizes that are not a multiple of 8.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <cuda_fp16.h>
#include <torch/types.h>

__global__ void add_vec8(const uint4* a, const uint4* b, uint4* out, long n8) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n8; i += (long)gridDim.x * blockDim.x) {
        uint4 x = __ldcs(a + i), y = __ldcs(b + i), r;
        const __half2* hx = reinterpret_cast<const __half2*>(&x);
        const __half2* hy = reinterpret_cast<const __half2*>(&y);
        __half2* hr = reinterpret_cast<__half2*>(&r);
        #pragma unroll
        for (int k = 0; k < 4; ++k) hr[k] = __hadd2(hx[k], hy[k]);
        __stcs(out + i, r);
    }
}

__global__ void add_tail(const __half* a, const __half* b, __half* out, long start, long n) {
    long i = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd(a[i], b[i]);
}

torch::Tensor add(torch::Tensor a, torch::Tensor b, torch::Tensor out) {
    long n = a.numel(), n8 = n / 8;
    const __half* pa = reinterpret_cast<const __half*>(a.data_ptr<at::Half>());
    const __half* pb = reinterpret_cast<const __half*>(b.data_ptr<at::Half>());
    __half* po = reinterpret_cast<__half*>(out.data_ptr<at::Half>());
    if (n8 > 0) {
        long blocks = std::min<long>((n8 + 255) / 256, 132L * 16);
        add_vec8<<<blocks, 256>>>(reinterpret_cast<const uint4*>(pa), reinterpret_cast<const uint4*>(pb),
                                  reinterpret_cast<uint4*>(po), n8);
    }
    if (n8 * 8 < n) add_tail<<<1, 8>>>(pa, pb, po, n8 * 8, n);
    return out;
}
"""

module = load_inline(
    name="vectoradd_vec8",
    cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b, torch::Tensor out);",
    cuda_sources=CUDA_SOURCE,
    functions=["add"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    return module.add(a, b, out)
