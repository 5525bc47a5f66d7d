// The native harness of the fp16 matmul problems in C++ libraries (matmul_cutlass, matmul_tk): compiled by nvcc
// (through torch.utils.cpp_extension, with the language's headers and flags) together with the submission, which
// it includes. It binds `custom_kernel(data)` for the Python harness, so input generation (secret seeds in ranked
// runs), timing and checking are the same as for Python submissions; the submission's `matmul` gets raw device
// pointers and the current stream.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_fp16.h>

#include "submission.cu"

static torch::Tensor custom_kernel(py::tuple data) {
    TORCH_CHECK(data.size() == 3, "matmul: data must be (a, b, c)");
    auto a = data[0].cast<torch::Tensor>();
    auto b = data[1].cast<torch::Tensor>();
    auto c = data[2].cast<torch::Tensor>();
    for (const auto& t : {a, b, c}) {
        TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == torch::kHalf && t.dim() == 2,
                    "matmul: inputs must be contiguous 2-d fp16 CUDA tensors");
    }
    const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
    TORCH_CHECK(b.size(0) == k && c.size(0) == m && c.size(1) == n, "matmul: shapes do not agree");
    TORCH_CHECK(m < (1LL << 31) && n < (1LL << 31) && k < (1LL << 31), "matmul: a dimension is too large");
    matmul(reinterpret_cast<const __half*>(a.data_ptr<at::Half>()),
           reinterpret_cast<const __half*>(b.data_ptr<at::Half>()),
           reinterpret_cast<__half*>(c.data_ptr<at::Half>()), static_cast<int>(m), static_cast<int>(n),
           static_cast<int>(k), at::cuda::getCurrentCUDAStream().stream());
    return c;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("custom_kernel", &custom_kernel, "matmul: c = a @ b (fp16, fp32 accumulation), written into c");
}
