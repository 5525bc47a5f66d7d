# expect: accepted
# needs: cuda
# CUB's single-pass scan (cub::DeviceScan::InclusiveSum: decoupled look-back, each element read once and written
# once), on PyTorch's current stream, its temporary storage from PyTorch's allocator. fp32 partial sums per tile and
# across tiles: a blocked scan, which the check allows.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <torch/types.h>
#include <ATen/cuda/CUDAContext.h>
#include <cub/device/device_scan.cuh>
#include <climits>

torch::Tensor prefix_sum(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "a contiguous CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "an fp32 tensor");
    TORCH_CHECK(x.numel() < INT_MAX, "at most 2^31 - 1 elements");
    int n = static_cast<int>(x.numel());
    auto y = torch::empty_like(x);
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    size_t bytes = 0;
    cub::DeviceScan::InclusiveSum(nullptr, bytes, x.data_ptr<float>(), y.data_ptr<float>(), n, stream);
    auto temp = torch::empty({static_cast<long>(bytes)}, x.options().dtype(torch::kUInt8));
    cub::DeviceScan::InclusiveSum(temp.data_ptr(), bytes, x.data_ptr<float>(), y.data_ptr<float>(), n, stream);
    return y;
}
"""

module = load_inline(
    name="prefixsum_cub",
    cpp_sources="torch::Tensor prefix_sum(torch::Tensor x);",
    cuda_sources=CUDA_SOURCE,
    functions=["prefix_sum"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    return module.prefix_sum(data[0])
