# expect: accepted
# needs: cuda
# float4 loads over a grid-stride loop, warp-shuffle then shared-memory reduction, one atomicAdd per block.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/types.h>

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
    return v;
}

__global__ void sum_kernel(const float* x, float* out, long n) {
    float acc = 0.0f;
    long n4 = n / 4, stride = (long)gridDim.x * blockDim.x;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = __ldcs(x4 + i);
        acc += (v.x + v.y) + (v.z + v.w);
    }
    for (long i = n4 * 4 + blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride) acc += x[i];
    __shared__ float warps[32];
    acc = warp_sum(acc);
    if (threadIdx.x % 32 == 0) warps[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < blockDim.x / 32 ? warps[threadIdx.x] : 0.0f;
        acc = warp_sum(acc);
        if (threadIdx.x == 0) atomicAdd(out, acc);
    }
}

torch::Tensor vector_sum(torch::Tensor x) {
    auto out = torch::zeros({1}, x.options());
    long n = x.numel();
    long blocks = std::min<long>((n / 4 + 511) / 512 + 1, 132L * 8);
    sum_kernel<<<blocks, 512>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

module = load_inline(
    name="vectorsum_float4",
    cpp_sources="torch::Tensor vector_sum(torch::Tensor x);",
    cuda_sources=CUDA_SOURCE,
    functions=["vector_sum"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    return module.vector_sum(data[0])
