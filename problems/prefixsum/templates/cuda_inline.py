# Starter for prefixsum in CUDA C++ (load_inline): each block scans 1024 elements in shared memory
# (Hillis-Steele) and writes its total; the totals are scanned with torch.cumsum; a second kernel adds them.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/types.h>

constexpr int BLOCK = 1024;

__global__ void block_scan(const float* x, float* y, float* totals, long n) {
    __shared__ float buf[BLOCK];
    long i = blockIdx.x * (long)BLOCK + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int offset = 1; offset < BLOCK; offset *= 2) {
        float add = threadIdx.x >= offset ? buf[threadIdx.x - offset] : 0.0f;
        __syncthreads();
        buf[threadIdx.x] += add;
        __syncthreads();
    }
    if (i < n) y[i] = buf[threadIdx.x];
    if (threadIdx.x == BLOCK - 1) totals[blockIdx.x] = buf[threadIdx.x];
}

__global__ void add_carry(float* y, const float* carry, long n) {
    long i = blockIdx.x * (long)BLOCK + threadIdx.x;
    if (blockIdx.x > 0 && i < n) y[i] += carry[blockIdx.x - 1];
}

torch::Tensor prefix_sum(torch::Tensor x) {
    long n = x.numel(), blocks = (n + BLOCK - 1) / BLOCK;
    auto y = torch::empty_like(x);
    auto totals = torch::empty({blocks}, x.options());
    block_scan<<<blocks, BLOCK>>>(x.data_ptr<float>(), y.data_ptr<float>(), totals.data_ptr<float>(), n);
    auto carry = torch::cumsum(totals, 0);  // carry[b] = sum of blocks 0..b
    add_carry<<<blocks, BLOCK>>>(y.data_ptr<float>(), carry.data_ptr<float>(), n);
    return y;
}
"""

module = load_inline(
    name="prefixsum_starter",
    cpp_sources="torch::Tensor prefix_sum(torch::Tensor x);",
    cuda_sources=CUDA_SOURCE,
    functions=["prefix_sum"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    return module.prefix_sum(data[0])
