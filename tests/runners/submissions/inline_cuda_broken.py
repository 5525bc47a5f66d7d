from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
torch::Tensor add(torch::Tensor a) { return this_does_not_compile(a); }
"""
_mod = load_inline(name="fixture_broken", cpp_sources="torch::Tensor add(torch::Tensor a);",
                   cuda_sources=_SRC, functions=["add"])


def custom_kernel(data):
    return _mod.add(data[0])
