from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
__global__ void add_kernel(const float* a, const float* b, float* out, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
torch::Tensor add(torch::Tensor a, torch::Tensor b, torch::Tensor out) {
    int64_t n = out.numel();
    add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
_DECL = "torch::Tensor add(torch::Tensor a, torch::Tensor b, torch::Tensor out);"
_mod = load_inline(name="fixture_add", cpp_sources=_DECL, cuda_sources=_SRC, functions=["add"])


def custom_kernel(data):
    a, b, out = data
    return _mod.add(a, b, out)
