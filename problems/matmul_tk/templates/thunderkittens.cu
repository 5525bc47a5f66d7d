// Starter for matmul_tk (ThunderKittens). Compiled with nvcc for the H100 (C++20, sm_90a, -DKITTENS_HOPPER)
// against the runner's ThunderKittens headers, together with the problem's harness.cu. Implement matmul:
// c = a @ b (fp16 in and out, fp32 accumulation), launched on `stream`.
//
// This starter is correct but slow: one warp group per 64x64 tile of c copies 64x64 tiles of a and b into shared
// memory and multiplies them with wgmma into fp32 registers, one tile at a time, with nothing overlapped. Shapes
// that are no multiple of 64 take a plain CUDA kernel. Go faster with a TMA-fed pipeline of several stages,
// bigger tiles, more warp groups and a persistent grid: see ThunderKittens' load-compute-finish template
// (prototype.cuh, kittens::prototype::lcf).
#include "kittens.cuh"

using namespace kittens;
using tile = st_hf<64, 64>;
using matrix = gl<half, 1, 1, -1, -1>;  // a row-major matrix in global memory

__global__ __launch_bounds__(WARPGROUP_THREADS) void matmul_tiles(const __grid_constant__ matrix a,
                                                                   const __grid_constant__ matrix b,
                                                                   const __grid_constant__ matrix c) {
    __shared__ __align__(1024) char smem[2 * sizeof(tile)];
    tile& a_tile = *reinterpret_cast<tile*>(smem);
    tile& b_tile = *reinterpret_cast<tile*>(smem + sizeof(tile));
    const int row = blockIdx.y, col = blockIdx.x;  // this block's 64x64 tile of c
    rt_fl<16, 64> acc;                            // each warp holds 16 of its rows
    warp::zero(acc);
    for (int t = 0; t < a.cols() / 64; t++) {
        warpgroup::load(a_tile, a, {0, 0, row, t});
        warpgroup::load(b_tile, b, {0, 0, t, col});
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // make the stores visible to wgmma
        __syncthreads();
        warpgroup::mma_AB(acc, a_tile, b_tile);
        warpgroup::mma_async_wait();
        __syncthreads();  // both tiles are read before the next ones overwrite them
    }
    warpgroup::store(c, acc, {0, 0, row, col});
}

// Any shape: one thread per element of c, fp32 accumulation.
__global__ void matmul_any_shape(const __half* a, const __half* b, __half* c, int m, int n, int k) {
    const int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int i = 0; i < k; i++) acc += __half2float(a[(size_t)row * k + i]) * __half2float(b[(size_t)i * n + col]);
    c[(size_t)row * n + col] = __float2half(acc);
}

void matmul(const __half* a, const __half* b, __half* c, int m, int n, int k, cudaStream_t stream) {
    if (m % 64 || n % 64 || k % 64) {
        matmul_any_shape<<<dim3((n + 15) / 16, (m + 15) / 16), dim3(16, 16), 0, stream>>>(a, b, c, m, n, k);
        return;
    }
    auto A = reinterpret_cast<half*>(const_cast<__half*>(a));
    auto B = reinterpret_cast<half*>(const_cast<__half*>(b));
    auto C = reinterpret_cast<half*>(c);
    const size_t M = m, N = n, K = k;
    matrix ga{A, nullptr, nullptr, M, K}, gb{B, nullptr, nullptr, K, N}, gc{C, nullptr, nullptr, M, N};
    matmul_tiles<<<dim3(n / 64, m / 64), WARPGROUP_THREADS, 0, stream>>>(ga, gb, gc);
}
