# expect: accepted
# needs: cuda
# One copy of the 256 bins per warp lane in shared memory, interleaved (bin b of lane l at b * 32 + l), shared by the
# block's warps: the 32 lanes of a warp always hit 32 different banks, whatever the bytes (a hot value included),
# so the shared atomics never serialise within a warp. 16 bytes per load, streamed; each block merges its 32 copies
# into the global counts once (256 atomics a block). On the lent H200 (2026-11-29): 68 µs for 2^28 bytes, uniform or
# 90% one value (82% of the memory bound); the earlier 8 copies shared by warps took 122 µs on the uniform case,
# where the lanes of a warp collided on banks.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/types.h>

constexpr int LANES = 32;
constexpr int THREADS = 1024;

__global__ void __launch_bounds__(THREADS) histogram_kernel(const unsigned char* x, int* counts, long n) {
    __shared__ int local[256 * LANES];
    for (int i = threadIdx.x; i < 256 * LANES; i += THREADS) local[i] = 0;
    __syncthreads();
    int* mine = local + (threadIdx.x % LANES);
    long n16 = n / 16, stride = (long)gridDim.x * THREADS;
    const uint4* x16 = reinterpret_cast<const uint4*>(x);
    for (long i = blockIdx.x * (long)THREADS + threadIdx.x; i < n16; i += stride) {
        uint4 v = __ldcs(x16 + i);
        unsigned int words[4] = {v.x, v.y, v.z, v.w};
        #pragma unroll
        for (int w = 0; w < 4; ++w) {
            #pragma unroll
            for (int b = 0; b < 4; ++b) atomicAdd(mine + ((words[w] >> (8 * b)) & 255) * LANES, 1);
        }
    }
    for (long i = n16 * 16 + blockIdx.x * (long)THREADS + threadIdx.x; i < n; i += stride) {
        atomicAdd(mine + x[i] * LANES, 1);
    }
    __syncthreads();
    for (int bin = threadIdx.x; bin < 256; bin += THREADS) {
        int total = 0;
        #pragma unroll
        for (int l = 0; l < LANES; ++l) total += local[bin * LANES + ((l + bin) % LANES)];
        if (total) atomicAdd(counts + bin, total);
    }
}

torch::Tensor histogram(torch::Tensor x) {
    auto counts = torch::zeros({256}, x.options().dtype(torch::kInt32));
    long n = x.numel();
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, x.device().index());
    long blocks = std::min<long>((n / 16 + THREADS - 1) / THREADS + 1, (long)sms * 2);
    histogram_kernel<<<blocks, THREADS>>>(x.data_ptr<unsigned char>(), counts.data_ptr<int>(), n);
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
