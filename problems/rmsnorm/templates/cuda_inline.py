# Starter for rmsnorm in CUDA C++ (load_inline): one block per row, a shared-memory sum of squares, fp32 math.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <cuda_bf16.h>
#include <torch/types.h>

__global__ void rmsnorm_kernel(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y, int hidden,
                               float eps) {
    __shared__ float partial[256];
    const __nv_bfloat16* row = x + (long)blockIdx.x * hidden;
    __nv_bfloat16* out = y + (long)blockIdx.x * hidden;
    float s = 0.0f;
    for (int j = threadIdx.x; j < hidden; j += blockDim.x) {
        float v = __bfloat162float(row[j]);
        s += v * v;
    }
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    float inv = rsqrtf(partial[0] / hidden + eps);
    for (int j = threadIdx.x; j < hidden; j += blockDim.x)
        out[j] = __float2bfloat16(__bfloat162float(row[j]) * inv * __bfloat162float(w[j]));
}

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w) {
    auto y = torch::empty_like(x);
    rmsnorm_kernel<<<x.size(0), 256>>>(reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<at::BFloat16>()),
                                       reinterpret_cast<const __nv_bfloat16*>(w.data_ptr<at::BFloat16>()),
                                       reinterpret_cast<__nv_bfloat16*>(y.data_ptr<at::BFloat16>()), x.size(1), 1e-6f);
    return y;
}
"""

module = load_inline(
    name="rmsnorm_starter",
    cpp_sources="torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w);",
    cuda_sources=CUDA_SOURCE,
    functions=["rmsnorm"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    x, weight = data
    return module.rmsnorm(x, weight)
