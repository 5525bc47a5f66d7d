// Starter for matmul_cutlass (CUTLASS / CuTe C++). Compiled with nvcc against the runner's CUTLASS headers,
// together with the problem's harness.cu. Implement matmul: c = a @ b (fp16 in and out, fp32 accumulation),
// launched on `stream`. This starter is correct for every shape but slow: a CUTLASS 2.x SIMT GEMM on the CUDA
// cores. Go faster with tensor cores: a CUTLASS 3.x kernel built from CuTe collectives (see
// cutlass/gemm/collective/collective_builder.hpp; on Hopper, KernelTmaWarpSpecializedCooperative).
#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm.h>

#include <stdexcept>
#include <string>

using Gemm = cutlass::gemm::device::Gemm<cutlass::half_t, cutlass::layout::RowMajor,   // a: m x k
                                         cutlass::half_t, cutlass::layout::RowMajor,   // b: k x n
                                         cutlass::half_t, cutlass::layout::RowMajor,   // c: m x n
                                         float,                                        // accumulator
                                         cutlass::arch::OpClassSimt, cutlass::arch::Sm50>;

void matmul(const __half* a, const __half* b, __half* c, int m, int n, int k, cudaStream_t stream) {
    auto A = reinterpret_cast<const cutlass::half_t*>(a);
    auto B = reinterpret_cast<const cutlass::half_t*>(b);
    auto C = reinterpret_cast<cutlass::half_t*>(c);
    // d = alpha * (a @ b) + beta * c with alpha 1 and beta 0; c is both the source and the destination.
    Gemm::Arguments args({m, n, k}, {A, k}, {B, n}, {C, n}, {C, n}, {1.0f, 0.0f});
    Gemm gemm;
    cutlass::Status status = gemm(args, nullptr, stream);
    if (status != cutlass::Status::kSuccess) {
        throw std::runtime_error(std::string("CUTLASS GEMM: ") + cutlassGetStatusString(status));
    }
}
