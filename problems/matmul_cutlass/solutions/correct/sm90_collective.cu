// expect: accepted
// A CUTLASS 3.x GEMM for Hopper built from CuTe collectives: TMA loads into a multi-stage shared-memory pipeline,
// warp-specialised (a producer warp group feeds two consumer warp groups that issue wgmma), a persistent grid,
// fp32 accumulation, fp16 out. It needs 16-byte aligned rows (n and k multiples of 8) and an sm_90 device; any other
// shape or device takes a CUTLASS 2.x SIMT GEMM, which works for every size.
#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

#include <stdexcept>
#include <string>

namespace sm90 {
using namespace cute;
using Half = cutlass::half_t;
using Row = cutlass::layout::RowMajor;
constexpr int kAlign = 16 / sizeof(Half);  // elements per 16-byte TMA access
using Tile = Shape<_128, _256, _64>;
using Cluster = Shape<_2, _1, _1>;

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, Cluster,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    void, Row, kAlign,  // no C operand: d = a @ b
    Half, Row, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative>::CollectiveOp;

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Half, Row, kAlign, Half, Row, kAlign, float, Tile, Cluster,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;

using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
}  // namespace sm90

using SimtGemm = cutlass::gemm::device::Gemm<cutlass::half_t, cutlass::layout::RowMajor, cutlass::half_t,
                                             cutlass::layout::RowMajor, cutlass::half_t, cutlass::layout::RowMajor,
                                             float, cutlass::arch::OpClassSimt, cutlass::arch::Sm50>;

static void check(cutlass::Status status, const char* what) {
    if (status != cutlass::Status::kSuccess) {
        throw std::runtime_error(std::string("CUTLASS ") + what + ": " + cutlassGetStatusString(status));
    }
}

static bool is_hopper() {
    int device = 0, major = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    return major == 9;
}

static void* workspace(size_t bytes, cudaStream_t stream) {
    static void* buffer = nullptr;
    static size_t size = 0;
    if (bytes > size) {
        cudaStreamSynchronize(stream);
        cudaFree(buffer);
        if (cudaMalloc(&buffer, bytes) != cudaSuccess) throw std::runtime_error("CUTLASS workspace: out of memory");
        size = bytes;
    }
    return buffer;
}

void matmul(const __half* a, const __half* b, __half* c, int m, int n, int k, cudaStream_t stream) {
    auto A = reinterpret_cast<const cutlass::half_t*>(a);
    auto B = reinterpret_cast<const cutlass::half_t*>(b);
    auto C = reinterpret_cast<cutlass::half_t*>(c);
    if (n % sm90::kAlign == 0 && k % sm90::kAlign == 0 && is_hopper()) {
        using G = sm90::Gemm;
        auto sa = cutlass::make_cute_packed_stride(typename G::GemmKernel::StrideA{}, cute::make_shape(m, k, 1));
        auto sb = cutlass::make_cute_packed_stride(typename G::GemmKernel::StrideB{}, cute::make_shape(n, k, 1));
        auto sd = cutlass::make_cute_packed_stride(typename G::GemmKernel::StrideD{}, cute::make_shape(m, n, 1));
        typename G::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                   {m, n, k, 1},
                                   {A, sa, B, sb},
                                   {{1.0f, 0.0f}, nullptr, sd, C, sd}};
        G gemm;
        check(gemm.can_implement(args), "cannot run this shape");
        check(gemm.initialize(args, workspace(G::get_workspace_size(args), stream), stream), "initialize");
        check(gemm.run(stream), "run");
        return;
    }
    SimtGemm gemm;
    SimtGemm::Arguments args({m, n, k}, {A, k}, {B, n}, {C, n}, {C, n}, {1.0f, 0.0f});
    check(gemm(args, nullptr, stream), "SIMT GEMM");
}
