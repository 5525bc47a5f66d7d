# expect: accepted
# needs: cuda
# A single-pass scan written out (decoupled look-back, Merrill & Garland 2016): each block takes the next tile of
# 8192 elements (a tile number from an atomic counter, so a tile's predecessors always started before it), loads it
# with 16-byte loads, all eight at once per thread (plain loads: streaming hints, __ldcs/__stcs, measured the same at
# 2^27 and 12% slower at 2^22 on the lent H200), scans it in registers (per thread, then per warp with shuffles,
# then across the block's 8 warps), publishes the tile's total, and one warp looks back over the 32 tiles before it
# at a time: the nearest one whose inclusive prefix is known ends the look-back, the totals of those closer are
# added. A status word packs the flag and the fp32 value in one 64-bit word, so a reader never sees one without the
# other. fp32 partial sums per tile and across tiles: a blocked scan, which the check allows. On the lent H200:
# 291 us at 2^27, 77% of the memory bound, against CUB's DeviceScan 343 us (65%) and torch.cumsum 412 us (54%).
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/types.h>
#include <ATen/cuda/CUDAContext.h>
#include <climits>

namespace {
constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
constexpr int ROUNDS = 8;                       // 16-byte loads per thread and tile
constexpr int TILE = THREADS * 4 * ROUNDS;      // 8192 elements
constexpr unsigned long long AGGREGATE = 1ull << 32;
constexpr unsigned long long PREFIX = 2ull << 32;

__device__ __forceinline__ float warp_inclusive(float v, int lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        float t = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += t;
    }
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ unsigned long long load_status(const unsigned long long* p) {
    return *reinterpret_cast<const volatile unsigned long long*>(p);
}

__global__ void __launch_bounds__(THREADS) lookback_scan(const float* __restrict__ x, float* __restrict__ y,
                                                         long long n, unsigned long long* status,
                                                         unsigned int* counter) {
    __shared__ float warp_totals[WARPS];
    __shared__ unsigned int tile_shared;
    __shared__ float prefix_shared;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    if (tid == 0) tile_shared = atomicAdd(counter, 1u);
    __syncthreads();
    const unsigned int tile = tile_shared;
    const long long base = static_cast<long long>(tile) * TILE;

    float4 v[ROUNDS];
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {          // every load in flight before any arithmetic
        const long long i = base + static_cast<long long>(r) * THREADS * 4 + tid * 4;
        if (i + 3 < n) {
            v[r] = *reinterpret_cast<const float4*>(x + i);
        } else {
            v[r].x = i < n ? x[i] : 0.f;
            v[r].y = i + 1 < n ? x[i + 1] : 0.f;
            v[r].z = i + 2 < n ? x[i + 2] : 0.f;
            v[r].w = 0.f;
        }
    }
    float carry = 0.f;                          // the tile's total over the rounds before this one
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        float4 a = v[r];
        a.y += a.x; a.z += a.y; a.w += a.z;
        const float inclusive = warp_inclusive(a.w, lane);
        if (lane == 31) warp_totals[warp] = inclusive;
        __syncthreads();
        float before = 0.f, round_total = 0.f;
#pragma unroll
        for (int w = 0; w < WARPS; ++w) {
            const float s = warp_totals[w];
            before += w < warp ? s : 0.f;
            round_total += s;
        }
        const float exclusive = carry + before + inclusive - a.w;
        a.x += exclusive; a.y += exclusive; a.z += exclusive; a.w += exclusive;
        v[r] = a;
        carry += round_total;
        __syncthreads();                        // warp_totals is written again in the next round
    }

    if (warp == 0) {
        float prefix = 0.f;
        if (tile == 0) {
            if (lane == 0) atomicExch(&status[0], PREFIX | __float_as_uint(carry));
        } else {
            if (lane == 0) atomicExch(&status[tile], AGGREGATE | __float_as_uint(carry));
            long long look = static_cast<long long>(tile) - 1 - lane;
            while (true) {
                unsigned long long s = PREFIX;  // before tile 0: a prefix of 0
                if (look >= 0) {
                    do {
                        s = load_status(&status[look]);
                    } while ((s >> 32) == 0);
                }
                const unsigned int prefixed = __ballot_sync(0xffffffffu, (s >> 32) == 2);
                const float value = __uint_as_float(static_cast<unsigned int>(s));
                if (prefixed) {
                    const int nearest = __ffs(prefixed) - 1;   // lane 0 is the tile just before this one
                    prefix += warp_sum(lane <= nearest ? value : 0.f);
                    break;
                }
                prefix += warp_sum(value);
                look -= 32;
            }
            if (lane == 0) atomicExch(&status[tile], PREFIX | __float_as_uint(prefix + carry));
        }
        if (lane == 0) prefix_shared = prefix;
    }
    __syncthreads();
    const float prefix = prefix_shared;
#pragma unroll
    for (int r = 0; r < ROUNDS; ++r) {
        const long long i = base + static_cast<long long>(r) * THREADS * 4 + tid * 4;
        float4 a = v[r];
        a.x += prefix; a.y += prefix; a.z += prefix; a.w += prefix;
        if (i + 3 < n) {
            *reinterpret_cast<float4*>(y + i) = a;
        } else {
            if (i < n) y[i] = a.x;
            if (i + 1 < n) y[i + 1] = a.y;
            if (i + 2 < n) y[i + 2] = a.z;
        }
    }
}
}  // namespace

torch::Tensor prefix_sum(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "a contiguous CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "an fp32 tensor");
    if (reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 != 0) x = x.clone();  // 16-byte loads need 16-byte alignment
    const long long n = x.numel();
    TORCH_CHECK(n < static_cast<long long>(UINT_MAX) * TILE, "too many elements");
    auto y = torch::empty_like(x);
    if (n == 0) return y;
    const long long tiles = (n + TILE - 1) / TILE;
    // One status word per tile and the tile counter after them, zeroed on the stream (a memset of 8 bytes a tile).
    auto state = torch::zeros({tiles + 1}, x.options().dtype(torch::kInt64));
    auto* status = reinterpret_cast<unsigned long long*>(state.data_ptr<int64_t>());
    auto* counter = reinterpret_cast<unsigned int*>(status + tiles);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    lookback_scan<<<static_cast<unsigned int>(tiles), THREADS, 0, stream>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n, status, counter);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

module = load_inline(
    name="prefixsum_lookback",
    cpp_sources="torch::Tensor prefix_sum(torch::Tensor x);",
    cuda_sources=CUDA_SOURCE,
    functions=["prefix_sum"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    return module.prefix_sum(data[0])
