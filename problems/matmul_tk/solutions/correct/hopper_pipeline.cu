// expect: accepted
// A ThunderKittens GEMM for the H100, on TK's load-compute-finish (lcf) template: one producer warp group streams
// 64x64 tiles of a and b into a 4-stage shared-memory ring with TMA; two consumer warp groups each multiply a
// 64-row slice of a by a 64x256 panel of b with wgmma into fp32 registers, then write their 64x256 of c through
// shared memory and TMA. The grid is persistent (one block per SM), and consecutive tiles sweep 8 block-rows
// column by column, so that neighbouring blocks share panels of a and b in L2.
//
// The tiles need m a multiple of 128, n of 256 and k of 64, and an sm_90 device; other shapes take a plain CUDA
// kernel (shared-memory tiles, fp32 accumulation) that is correct for every size.
#include "kittens.cuh"
#include "prototype.cuh"

namespace tk_matmul {
using namespace kittens;
using namespace kittens::prototype;
using namespace kittens::prototype::lcf;

constexpr int SLICES = 2;   // consumer warp groups, each owning 64 rows of the block's output
constexpr int PANELS = 4;   // 64-column tiles of b per block: a block computes 128 x 256 of c
constexpr int SWEEP = 8;    // block-rows visited together before moving to the next columns

struct gemm_layout {
    using tile = st_hf<64, 64>;
    using matrix = gl<half, 1, 1, -1, -1, tile>;
    struct globals { matrix a, b, c; };
    struct input_block { tile a[SLICES], b[PANELS]; };
    struct finish_block { tile c[SLICES][PANELS]; };
    struct common_state { int2 coord; };  // (64-row tile of c, first 64-column tile of c)
    struct consumer_state { rt_fl<16, PANELS * 64> acc; };
};

struct gemm {
    using layout = gemm_layout;
    using panel = st_hf<64, 64 * PANELS>;  // the b tiles of one stage, side by side
    static constexpr int NUM_CONSUMER_WARPS = SLICES * 4, INPUT_PIPE_STAGES = 4, PRODUCER_BARRIER_ARRIVALS = 1;

    __device__ static inline void common_setup(common_setup_args<layout> args) {
        const int block_rows = args.globals.c.rows() / (SLICES * 64);
        const int block_cols = args.globals.c.cols() / (PANELS * 64);
        const int task = args.task_iter * gridDim.x + blockIdx.x;
        if (task >= block_rows * block_cols) {
            args.num_iters = -1;  // this block has no tile left
            return;
        }
        const int per_sweep = SWEEP * block_cols;
        const int first_row = (task / per_sweep) * SWEEP;
        const int height = min(SWEEP, block_rows - first_row);
        const int in_sweep = task % per_sweep;
        const int block_row = first_row + in_sweep % height, block_col = in_sweep / height;
        args.num_iters = args.globals.a.cols() / 64;
        // Each consumer works on its own 64-row slice; the producer (the last warp group) loads them all from 0.
        const int slice = warpgroup::groupid() == NUM_CONSUMER_WARPS / 4 ? 0 : warpgroup::groupid();
        args.common.coord = {block_row * SLICES + slice, block_col * PANELS};
    }

    struct producer {
        __device__ static void setup(producer_setup_args<layout> args) {
            warpgroup::decrease_registers<40>();  // hand registers to the consumers
        }
        __device__ static void load(producer_load_args<layout> args) {
            if (warpgroup::laneid() != 0) return;
            tma::expect(args.inputs_arrived, args.input);
            for (int i = 0; i < SLICES; i++) {
                tma::load_async(args.input.a[i], args.globals.a, {args.common.coord.x + i, args.iter},
                                args.inputs_arrived);
            }
            for (int j = 0; j < PANELS; j++) {
                tma::load_async(args.input.b[j], args.globals.b, {args.iter, args.common.coord.y + j},
                                args.inputs_arrived);
            }
        }
    };

    struct consumer {
        __device__ static void setup(consumer_setup_args<layout> args) {
            warpgroup::increase_registers<232>();
            kittens::warp::zero(args.state.acc);
        }
        __device__ static void compute(consumer_compute_args<layout> args) {
            const int slice = warpgroup::groupid();
            warpgroup::mma_AB(args.state.acc, args.input.a[slice], reinterpret_cast<panel&>(args.input.b));
            warpgroup::mma_async_wait();
            if (warp::laneid() == 0) arrive(args.inputs_finished);  // this stage's tiles may be overwritten
        }
        __device__ static void finish(consumer_finish_args<layout> args) {
            const int slice = warpgroup::groupid();
            warpgroup::store(reinterpret_cast<panel&>(args.finish.c[slice]), args.state.acc);
            warpgroup::sync(slice + 4);
            if (warpgroup::laneid() == 0) {
                for (int j = 0; j < PANELS; j++) {
                    tma::store_async(args.globals.c, args.finish.c[slice][j],
                                     {args.common.coord.x, args.common.coord.y + j});
                    tma::store_async_read_wait();
                }
            }
            kittens::warp::zero(args.state.acc);
            if (warp::laneid() == 0) arrive(args.finish_finished);
        }
    };
};
}  // namespace tk_matmul

// Any shape: 32x32 tiles of c, fp32 accumulation.
__global__ void matmul_any_shape(const __half* a, const __half* b, __half* c, int m, int n, int k) {
    __shared__ float as[32][33], bs[32][33];
    const int row = blockIdx.y * 32 + threadIdx.y, col = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += 32) {
        const int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = row < m && ka < k ? __half2float(a[(size_t)row * k + ka]) : 0.0f;
        bs[threadIdx.y][threadIdx.x] = kb < k && col < n ? __half2float(b[(size_t)kb * n + col]) : 0.0f;
        __syncthreads();
        for (int i = 0; i < 32; i++) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n) c[(size_t)row * n + col] = __float2half(acc);
}

void matmul(const __half* a, const __half* b, __half* c, int m, int n, int k, cudaStream_t stream) {
    using namespace tk_matmul;
    int device = 0, major = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (major != 9 || m % (SLICES * 64) || n % (PANELS * 64) || k % 64) {
        dim3 grid((n + 31) / 32, (m + 31) / 32);
        matmul_any_shape<<<grid, dim3(32, 32), 0, stream>>>(a, b, c, m, n, k);
        return;
    }
    using matrix = gemm_layout::matrix;
    auto A = reinterpret_cast<kittens::half*>(const_cast<__half*>(a));
    auto B = reinterpret_cast<kittens::half*>(const_cast<__half*>(b));
    auto C = reinterpret_cast<kittens::half*>(c);
    const size_t M = m, N = n, K = k;
    gemm_layout::globals g{matrix{A, nullptr, nullptr, M, K}, matrix{B, nullptr, nullptr, K, N},
                           matrix{C, nullptr, nullptr, M, N}};
    constexpr int smem = kittens::MAX_SHARED_MEMORY - 1024;
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(kernel<gemm>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        configured = true;
    }
    const int tiles = (m / (SLICES * 64)) * (n / (PANELS * 64));
    kernel<gemm><<<min(sms, tiles), kittens::prototype::detail::NUM_THREADS_v<gemm>, smem, stream>>>(g);
}
