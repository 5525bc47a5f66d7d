// The native CUDA harness of vectoradd_cu: compiled by nvcc (through torch.utils.cpp_extension) together
// with the submission, which it includes. It binds `custom_kernel(data)` for the Python harness, so the
// same input generation (secret seeds in ranked runs), timing and checking apply as for Python submissions;
// tensors stay on the device and the submission's `vectoradd` gets raw device pointers and the stream.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_fp16.h>

#include "submission.cu"

static torch::Tensor custom_kernel(py::tuple data) {
    TORCH_CHECK(data.size() == 3, "vectoradd_cu: data must be (a, b, out)");
    auto a = data[0].cast<torch::Tensor>();
    auto b = data[1].cast<torch::Tensor>();
    auto out = data[2].cast<torch::Tensor>();
    for (const auto& t : {a, b, out}) {
        TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == torch::kHalf,
                    "vectoradd_cu: inputs must be contiguous fp16 CUDA tensors");
    }
    TORCH_CHECK(a.numel() == b.numel() && a.numel() == out.numel(), "vectoradd_cu: size mismatch");
    vectoradd(reinterpret_cast<const __half*>(a.data_ptr<at::Half>()),
              reinterpret_cast<const __half*>(b.data_ptr<at::Half>()),
              reinterpret_cast<__half*>(out.data_ptr<at::Half>()), out.numel(),
              at::cuda::getCurrentCUDAStream().stream());
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("custom_kernel", &custom_kernel, "vectoradd_cu: out = a + b (fp16), written into out");
}
