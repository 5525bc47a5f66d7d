# Starter for sort in CUDA C++ (load_inline): thrust::sort on the device (a radix sort under the hood).
# Beat it with your own: an LSD radix sort with one-sweep digit counting, or a merge sort of sorted tiles.
import torch
from torch.utils.cpp_extension import load_inline

CUDA_SOURCE = r"""
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/sort.h>
#include <torch/types.h>

torch::Tensor sort(torch::Tensor x) {
    auto y = x.clone();
    thrust::device_ptr<float> p(y.data_ptr<float>());
    thrust::sort(thrust::device, p, p + y.numel());
    return y;
}
"""

module = load_inline(
    name="sort_starter",
    cpp_sources="torch::Tensor sort(torch::Tensor x);",
    cuda_sources=CUDA_SOURCE,
    functions=["sort"],
    extra_cuda_cflags=["-O3"],
)


def custom_kernel(data: tuple[torch.Tensor]) -> torch.Tensor:
    return module.sort(data[0])
