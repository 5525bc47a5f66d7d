"""Near-clone detection (issue 34, ``leaderboards/similarity.py``): renaming identifiers, reformatting and rewriting
comments keep a file near its original; two honest, different solutions of one problem are far apart."""

from __future__ import annotations

from leaderboards.similarity import NEAR, fingerprint, similarity

TRITON = '''
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Each program adds one block."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def custom_kernel(data):
    a, b = data
    out = torch.empty_like(a)
    n = out.numel()
    grid = (triton.cdiv(n, 1024),)
    add_kernel[grid](a, b, out, n, BLOCK=1024)
    return out
'''

RENAMED = '''
import torch
import triton
import triton.language as tl

@triton.jit
def my_fast_add(p_a, p_b, p_c, size, BS: tl.constexpr):
    # my own kernel, honest
    i = tl.program_id(axis=0)
    idx = i * BS + tl.arange(0, BS)
    valid = idx < size
    lhs = tl.load(p_a + idx, mask=valid)
    rhs = tl.load(p_b + idx, mask=valid)
    tl.store(p_c + idx, lhs + rhs, mask=valid)

def custom_kernel(inputs):
    first, second = inputs
    result = torch.empty_like(first)
    total = result.numel()
    launch = (triton.cdiv(total, 1024),)
    my_fast_add[launch](first, second, result, total, BS=1024)
    return result
'''

TORCH = '''
import torch


def custom_kernel(data):
    """Add in place into a preallocated buffer, chunk by chunk, to stay in cache."""
    a, b = data
    out = torch.empty_like(a)
    flat_a, flat_b, flat_out = a.view(-1), b.view(-1), out.view(-1)
    for start in range(0, flat_a.numel(), 1 << 20):
        stop = min(start + (1 << 20), flat_a.numel())
        torch.add(flat_a[start:stop], flat_b[start:stop], out=flat_out[start:stop])
    return out
'''

CUDA = """
#include <torch/extension.h>
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // one element per thread
    if (i < n) c[i] = a[i] + b[i];
}
"""

CUDA_RENAMED = """
#include <torch/extension.h>
/* vector add */
__global__ void vadd(const float* x, const float* y, float* z, int count)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < count)
        z[k] = x[k] + y[k];
}
"""


def test_renaming_and_reformatting_keep_a_file_near() -> None:
    assert similarity(fingerprint(TRITON, "a.py"), fingerprint(RENAMED, "b.py")) >= NEAR
    assert similarity(fingerprint(CUDA, "a.cu"), fingerprint(CUDA_RENAMED, "b.cu")) >= NEAR
    assert similarity(fingerprint(TRITON, "a.py"), fingerprint(TRITON, "a.py")) == 1.0


def test_two_honest_different_solutions_are_far() -> None:
    assert similarity(fingerprint(TRITON, "a.py"), fingerprint(TORCH, "b.py")) < 0.3
    assert similarity(fingerprint(TRITON, "a.py"), fingerprint(CUDA, "c.cu")) < 0.3


def test_a_file_that_is_not_python_is_still_fingerprinted() -> None:
    broken = "def custom_kernel(data:\n    return (data\n"
    assert fingerprint(broken, "k.py") and similarity(fingerprint(broken, "k.py"), fingerprint(broken, "k.py")) == 1.0
