// expect: wrong_answer
// Rounds the shape down to whole 64x64 tiles and never handles the rest: wherever m, n or k is no multiple of 64,
// the last rows and columns of c keep their NaN and the dropped part of k is missing from every sum.
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

void matmul(const __half* a, const __half* b, __half* c, int m, int n, int k, cudaStream_t stream) {
    // No whole tile, or rows that are no multiple of 16 bytes (the tiles are loaded 16 bytes at a time, which
    // would fault on such a row; a faulting kernel is a runtime error, and this file's mistake is a wrong answer):
    // nothing is written.
    if (m < 64 || n < 64 || k % 8 || n % 8) return;
    auto A = reinterpret_cast<half*>(const_cast<__half*>(a));
    auto B = reinterpret_cast<half*>(const_cast<__half*>(b));
    auto C = reinterpret_cast<half*>(c);
    const size_t M = m, N = n, K = k;
    matrix ga{A, nullptr, nullptr, M, K}, gb{B, nullptr, nullptr, K, N}, gc{C, nullptr, nullptr, M, N};
    matmul_tiles<<<dim3(n / 64, m / 64), WARPGROUP_THREADS, 0, stream>>>(ga, gb, gc);
}
