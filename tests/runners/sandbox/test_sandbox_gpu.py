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


# What CUDA, NVML and NCCL read of /sys must be bound (docs/sandbox.md, "What a run sees of /sys"); nothing else is.
NVML_AND_SYS = """
import ctypes, os
nvml = ctypes.CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit_v2() == 0, "NVML did not initialise"
count = ctypes.c_uint()
assert nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) == 0 and count.value > 0
handle = ctypes.c_void_p()
assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0
name = ctypes.create_string_buffer(96)
assert nvml.nvmlDeviceGetName(handle, name, 96) == 0
print("nvml", count.value, name.value.decode())
import torch
assert torch.cuda.is_available()
p = torch.cuda.get_device_properties(0)
bdf = f"{p.pci_domain_id:04x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0" if hasattr(p, "pci_bus_id") else ""
print("numa", open(f"/sys/bus/pci/devices/{bdf}/numa_node").read().strip() if bdf else "n/a")
print("sys", sorted(os.listdir("/sys")), os.path.exists("/sys/fs/cgroup"))
"""


def test_nvml_and_the_gpus_pci_device_inside_the_sandbox_but_no_cgroups(run_py) -> None:
    out = run_py(NVML_AND_SYS, allow_gpu=True, memory_mb=16384, timeout_s=120)
    assert out.returncode == 0, out.stderr
    assert "nvml " in out.stdout and "False" in out.stdout.split("sys ", 1)[1], out.stdout
    assert "'fs'" not in out.stdout and "'kernel'" not in out.stdout


NCCL_TWO_GPUS = """
import os, torch, torch.distributed as dist, torch.multiprocessing as mp

def rank(r):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    torch.cuda.set_device(r)
    dist.init_process_group("nccl", rank=r, world_size=2)
    x = torch.full((1024,), float(r + 1), device="cuda")
    dist.all_reduce(x)
    if r == 0:
        print("allreduce", int(x[0].item()), flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(rank, nprocs=2)
"""


def test_nccl_all_reduce_over_two_gpus_inside_one_sandbox(jobdir: Path) -> None:
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    script = jobdir / "nccl_check.py"
    script.write_text(textwrap.dedent(NCCL_TWO_GPUS))
    env = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
           "NCCL_SOCKET_IFNAME": "lo", "GLOO_SOCKET_IFNAME": "lo", "NCCL_DEBUG": "WARN"}  # fmt: skip
    spec = SandboxSpec(
        argv=[sys.executable, str(script)], workdir=jobdir, env=env, timeout_s=300, output_cap_bytes=16384,
        memory_mb=32768, allow_gpu=True,
    )  # fmt: skip
    out = run_sandboxed(spec)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "allreduce 3" in out.stdout
