# expect: accepted
# needs: cuda
# Each thread converts 4 pixels: three float4 loads (12 floats, 48 bytes) and one float4 store.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/types.h>

__device__ __forceinline__ float luma(float r, float g, float b) { return 0.2989f * r + 0.5870f * g + 0.1140f * b; }

__global__ void gray4(const float4* image, float4* out, long groups) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i >= groups) return;
    float4 a = __ldcs(image + 3 * i), b = __ldcs(image + 3 * i + 1), c = __ldcs(image + 3 * i + 2);
    __stcs(out + i, make_float4(luma(a.x, a.y, a.z), luma(a.w, b.x, b.y), luma(b.z, b.w, c.x), luma(c.y, c.z, c.w)));
}

__global__ void gray_tail(const float* image, float* out, long start, long pixels) {
    long p = start + blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (p < pixels) out[p] = luma(image[3 * p], image[3 * p + 1], image[3 * p + 2]);
}

torch::Tensor grayscale(torch::Tensor image) {
    auto out = torch::empty({image.size(0), image.size(1)}, image.options());
    long pixels = out.numel(), groups = pixels / 4;
    if (groups > 0)
        gray4<<<(groups + 255) / 256, 256>>>(reinterpret_cast<const float4*>(image.data_ptr<float>()),
                                              reinterpret_cast<float4*>(out.data_ptr<float>()), groups);
    if (groups * 4 < pixels) gray_tail<<<1, 4>>>(image.data_ptr<float>(), out.data_ptr<float>(), groups * 4, pixels);
    return out;
}
"""

module = load_inline(
    name="grayscale_float4",
    cpp_sources="torch::Tensor grayscale(torch::Tensor image);",
    cuda_sources=CUDA_SOURCE,
    functions=["grayscale"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    return module.grayscale(data[0])
