# Starter for vectoradd in CUDA C++, compiled once by torch.utils.cpp_extension.load_inline.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <cuda_fp16.h>
#include <torch/types.h>

__global__ void add_kernel(const __half* a, const __half* b, __half* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd(a[i], b[i]);
}

torch::Tensor add(torch::Tensor a, torch::Tensor b, torch::Tensor out) {
    long n = a.numel();
    int threads = 256;
    long blocks = (n + threads - 1) / threads;
    add_kernel<<<blocks, threads>>>(reinterpret_cast<const __half*>(a.data_ptr<at::Half>()),
                                    reinterpret_cast<const __half*>(b.data_ptr<at::Half>()),
                                    reinterpret_cast<__half*>(out.data_ptr<at::Half>()), n);
    return out;
}
"""

module = load_inline(
    name="vectoradd_starter",
    cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b, torch::Tensor out);",
    cuda_sources=CUDA_SOURCE,
    functions=["add"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    a, b, out = data
    return module.add(a, b, out)
