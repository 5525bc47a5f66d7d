// expect: wrong_answer
// A CUTLASS GEMM that accumulates in fp16: its rounding error grows with k past the check's bound (fp32 is asked).
#include <cutlass/cutlass.h>
#include <cutlass/gemm/device/gemm.h>

#include <stdexcept>

using Gemm = cutlass::gemm::device::Gemm<cutlass::half_t, cutlass::layout::RowMajor, cutlass::half_t,
                                         cutlass::layout::RowMajor, cutlass::half_t, cutlass::layout::RowMajor,
                                         cutlass::half_t, cutlass::arch::OpClassSimt, cutlass::arch::Sm50>;

void matmul(const __half* a, const __half* b, __half* c, int m, int n, int k, cudaStream_t stream) {
    auto A = reinterpret_cast<const cutlass::half_t*>(a);
    auto B = reinterpret_cast<const cutlass::half_t*>(b);
    auto C = reinterpret_cast<cutlass::half_t*>(c);
    Gemm::Arguments args({m, n, k}, {A, k}, {B, n}, {C, n}, {C, n},
                         {cutlass::half_t(1.0f), cutlass::half_t(0.0f)});
    if (Gemm()(args, nullptr, stream) != cutlass::Status::kSuccess) throw std::runtime_error("CUTLASS GEMM failed");
}
