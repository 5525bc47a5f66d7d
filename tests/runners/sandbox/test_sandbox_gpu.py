"""CUDA works inside the sandbox when allowed (device nodes, /sys, the driver's libraries), and is gone when not.
Run on a GPU machine: pytest -m gpu tests/runners/sandbox."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from runners.sandbox import SandboxSpec, run_sandboxed

pytestmark = pytest.mark.gpu

TORCH_CUDA = """
import torch
assert torch.cuda.is_available(), "no CUDA inside the sandbox"
x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
print("sum", int((x + 1).sum().item()), torch.cuda.get_device_name())
"""

TRITON_CUDA = """
import torch, triton, triton.language as tl

@triton.jit
def add(a, b, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)

a = torch.ones(5000, device="cuda"); b = torch.ones(5000, device="cuda"); out = torch.empty_like(a)
add[(triton.cdiv(5000, 1024),)](a, b, out, 5000, BLOCK=1024)
print("triton", int(out.sum().item()))
"""


def test_torch_cuda_inside_the_sandbox(run_py) -> None:
    out = run_py(TORCH_CUDA, allow_gpu=True, memory_mb=16384, timeout_s=120)
    assert out.returncode == 0, out.stderr
    assert f"sum {sum(range(1, (1 << 20) + 1))}" in out.stdout


def test_triton_compiles_and_runs_inside_the_sandbox(jobdir: Path) -> None:
    # Triton reads a @jit function's source from its file, so this one runs from a file (not `python -c`).
    script = jobdir / "triton_check.py"
    script.write_text(textwrap.dedent(TRITON_CUDA))
    spec = SandboxSpec(
        argv=[sys.executable, str(script)], workdir=jobdir, env={}, timeout_s=300, output_cap_bytes=4096,
        memory_mb=16384, allow_gpu=True,
    )  # fmt: skip
    out = run_sandboxed(spec)
    assert out.returncode == 0, out.stderr
    assert "triton 10000" in out.stdout


def test_no_gpu_when_not_allowed(run_py, sandboxed: None) -> None:
    out = run_py("import torch\nprint(torch.cuda.is_available())", allow_gpu=False, memory_mb=8192, timeout_s=120)
    assert out.stdout.strip() == "False", out.stderr
