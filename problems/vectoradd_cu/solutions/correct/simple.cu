// expect: accepted
// The starter: one thread per element.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

__global__ void add_kernel(const __half* a, const __half* b, __half* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd(a[i], b[i]);
}

void vectoradd(const __half* a, const __half* b, __half* out, int64_t n, cudaStream_t stream) {
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    add_kernel<<<blocks, threads, 0, stream>>>(a, b, out, n);
}
