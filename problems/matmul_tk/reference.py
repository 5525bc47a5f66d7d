"""matmul for native C++ library submissions (see harness.cu): c = a @ b for fp16 a (m x k) and b (k x n).

The same check as problems/matmul, with the output buffer ``c`` made here (NaN-filled) for the submission's
``matmul`` to write into, in device memory.
"""

from __future__ import annotations

import torch
from _lib import Inputs, compare

# See problems/matmul/reference.py: 10 units of 2**-11 times the spread of one product sum accepts split-K with
# fp16 partials (cuBLAS's default) and rejects bf16 inputs or an fp16 accumulator.
TOLERANCE = 10

Data = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def generate_input(m: int, k: int, n: int, seed: int) -> Data:
    inputs = Inputs(seed)
    a, b = inputs.randn(m, k, dtype=torch.float16), inputs.randn(k, n, dtype=torch.float16)
    return a, b, inputs.nans(m, n, dtype=torch.float16)


def _exact(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b in fp32. fp16 values are exact in TF32 and their products exact in fp32, so TF32 may stay on."""
    return a.float() @ b.float()


def ref_kernel(data: Data) -> torch.Tensor:
    a, b, c = data
    return c.copy_(_exact(a, b))


def cublas(data: Data) -> torch.Tensor:
    """cuBLAS's own fp16 GEMM (fp32 accumulation), written into c: the library a CUTLASS kernel should match."""
    a, b, c = data
    return torch.matmul(a, b, out=c)


def check_implementation(data: Data, output: object) -> tuple[bool, str]:
    a, b, _ = data
    expected = _exact(a, b)
    spread = a.float().norm(dim=1, keepdim=True) * b.float().norm(dim=0, keepdim=True) / max(a.shape[1], 1) ** 0.5
    return compare(output, expected, torch.float16, atol=TOLERANCE * 2**-11 * spread, rtol=2**-11)


def speed_of_light(m: int, k: int, n: int, **_: object) -> dict[str, int]:
    return {"bytes": 2 * (m * k + k * n + m * n), "flops": 2 * m * n * k}
