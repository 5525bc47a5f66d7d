// expect: accepted
// 16-byte loads and stores (8 halves per thread, as __half2 pairs), grid-stride loop, scalar tail.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

__global__ void add8(const __half* __restrict__ a, const __half* __restrict__ b, __half* __restrict__ out,
                     int64_t n) {
    const int64_t vec = n / 8;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t start = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (int64_t i = start; i < vec; i += stride) {
        uint4 x = reinterpret_cast<const uint4*>(a)[i];
        uint4 y = reinterpret_cast<const uint4*>(b)[i];
        uint4 z;
        const __half2* xh = reinterpret_cast<const __half2*>(&x);
        const __half2* yh = reinterpret_cast<const __half2*>(&y);
        __half2* zh = reinterpret_cast<__half2*>(&z);
#pragma unroll
        for (int k = 0; k < 4; ++k) zh[k] = __hadd2(xh[k], yh[k]);
        reinterpret_cast<uint4*>(out)[i] = z;
    }
    for (int64_t i = vec * 8 + start; i < n; i += stride) out[i] = __hadd(a[i], b[i]);
}

void vectoradd(const __half* a, const __half* b, __half* out, int64_t n, cudaStream_t stream) {
    const int threads = 256;
    int64_t blocks = (n / 8 + threads - 1) / threads;
    if (blocks < 1) blocks = 1;
    if (blocks > 132 * 16) blocks = 132 * 16;
    add8<<<(unsigned)blocks, threads, 0, stream>>>(a, b, out, n);
}
