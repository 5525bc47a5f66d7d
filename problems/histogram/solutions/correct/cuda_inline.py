# expect: accepted
# needs: cuda
# Each block keeps 8 copies of the histogram in shared memory (warp w updates copy w % 8, which spreads the
# atomics of a hot value), reads 16 bytes per load, and merges into the global counts once.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/types.h>

constexpr int COPIES = 8;

__global__ void histogram_kernel(const unsigned char* x, int* counts, long n) {
    __shared__ int local[COPIES][256];
    for (int i = threadIdx.x; i < COPIES * 256; i += blockDim.x) (&local[0][0])[i] = 0;
    __syncthreads();
    int* mine = local[(threadIdx.x / 32) % COPIES];
    long n16 = n / 16, stride = (long)gridDim.x * blockDim.x;
    const uint4* x16 = reinterpret_cast<const uint4*>(x);
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n16; i += stride) {
        uint4 v = __ldcs(x16 + i);
        unsigned int words[4] = {v.x, v.y, v.z, v.w};
        #pragma unroll
        for (int w = 0; w < 4; ++w) {
            #pragma unroll
            for (int b = 0; b < 4; ++b) atomicAdd(mine + ((words[w] >> (8 * b)) & 255), 1);
        }
    }
    for (long i = n16 * 16 + blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += stride) atomicAdd(mine + x[i], 1);
    __syncthreads();
    for (int bin = threadIdx.x; bin < 256; bin += blockDim.x) {
        int total = 0;
        #pragma unroll
        for (int c = 0; c < COPIES; ++c) total += local[c][bin];
        if (total) atomicAdd(counts + bin, total);
    }
}

torch::Tensor histogram(torch::Tensor x) {
    auto counts = torch::zeros({256}, x.options().dtype(torch::kInt32));
    long n = x.numel();
    long blocks = std::min<long>((n / 16 + 511) / 512 + 1, 132L * 4);
    histogram_kernel<<<blocks, 512>>>(x.data_ptr<unsigned char>(), counts.data_ptr<int>(), n);
    return counts;
}
"""

module = load_inline(
    name="histogram_shared",
    cpp_sources="torch::Tensor histogram(torch::Tensor x);",
    cuda_sources=CUDA_SOURCE,
    functions=["histogram"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    return module.histogram(data[0])
