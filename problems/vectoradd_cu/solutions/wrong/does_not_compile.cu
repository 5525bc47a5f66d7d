// expect: compile_error
// A typo: the kernel calls a function that does not exist.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

__global__ void add_kernel(const __half* a, const __half* b, __half* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = __hadd_typo(a[i], b[i]);
}

void vectoradd(const __half* a, const __half* b, __half* out, int64_t n, cudaStream_t stream) {
    add_kernel<<<(n + 255) / 256, 256, 0, stream>>>(a, b, out, n);
}
