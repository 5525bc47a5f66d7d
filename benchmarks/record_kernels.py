"""Record which kernels real submissions launch, as Nsight Compute and CUPTI name them (issue 30's fixtures).

    PYTHONPATH=. python3 benchmarks/record_kernels.py --out DIR

For each sample call below (cuBLAS and cuBLASLt GEMMs, a Triton GEMM, a decoy that launches a token Triton
kernel beside ``torch.matmul``, a GEMM on a side stream, cuDNN's convolution, attention, ATen's reductions and
element-wise kernels) it writes, under DIR:

- ``NAME.ncu.csv``: ``ncu --csv --page raw`` of one call (after warm-up), with the launch's identity, grid, block
  and ``gpu__time_duration.sum``, kernel names demangled;
- ``NAME.ncu-mangled.csv``: the same with mangled names;
- ``NAME.cupti.json``: torch.profiler's GPU operations of one call: ``[name, duration ns, kind]``.

The library policy's table of kernel-name patterns (issue 30) is tested on these files, committed as fixtures.
Needs a GPU; where ncu is missing only the CUPTI files are written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SAMPLES = r'''
import torch, triton, triton.language as tl
import torch.nn.functional as F

@triton.jit
def _token(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)

@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0); pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM); rn = pn * BN + tl.arange(0, BN); rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))

def triton_mm(a, b):
    M, K = a.shape; _, N = b.shape
    c = torch.empty(M, N, device=a.device, dtype=torch.float16)
    _mm[(M // 128, N // 128)](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                              c.stride(0), c.stride(1), BM=128, BN=128, BK=64)
    return c

side = torch.cuda.Stream()
def side_stream_mm(a, b):
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        c = a @ b
    torch.cuda.current_stream().wait_stream(side)
    return c

tok = torch.zeros(1, device="cuda")
def decoy(a, b):
    _token[(1,)](tok)
    return torch.matmul(a, b)

def make():
    g = torch.Generator(device="cuda").manual_seed(0)
    r = lambda *s, dt=torch.float16: torch.randn(*s, device="cuda", dtype=dt, generator=g)
    a, b = r(4096, 4096), r(4096, 4096)
    a32, b32 = r(2048, 2048, dt=torch.float32), r(2048, 2048, dt=torch.float32)
    x, w = r(32, 64, 56, 56), r(128, 64, 3, 3)
    q, k, v = r(8, 16, 1024, 64), r(8, 16, 1024, 64), r(8, 16, 1024, 64)
    s = r(8192, 8192, dt=torch.float32)
    return {
        "cublas_fp16_mm": lambda: a @ b,
        "cublas_fp32_mm": lambda: a32 @ b32,
        "cublas_linear_bias": lambda: F.linear(a, b, a[0]),
        "cublas_bmm": lambda: torch.bmm(a.view(16, 256, 4096), b.view(16, 4096, 256)),
        "triton_mm": lambda: triton_mm(a, b),
        "decoy_token_plus_matmul": lambda: decoy(a, b),
        "side_stream_mm": lambda: side_stream_mm(a, b),
        "cudnn_conv2d": lambda: F.conv2d(x, w, padding=1),
        "sdpa_attention": lambda: F.scaled_dot_product_attention(q, k, v),
        "aten_sum": lambda: s.sum(),
        "aten_softmax": lambda: torch.softmax(s, dim=-1),
        "aten_add": lambda: a + b,
        "aten_copy": lambda: a.t().contiguous(),
    }
'''

DRIVER = r"""
import importlib.util, json, sys
import torch, triton, triton.language as tl
spec = importlib.util.spec_from_file_location("kc_samples", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
mode = sys.argv[2]

@triton.jit
def kc_sample_marker(x_ptr):
    tl.store(x_ptr, 0)

mark = torch.zeros(1, device="cuda")
fns = mod.make()
for fn in fns.values():
    for _ in range(3):
        fn()
kc_sample_marker[(1,)](mark)
torch.cuda.synchronize()
print("ORDER " + json.dumps(list(fns)))

def once():
    for fn in fns.values():
        kc_sample_marker[(1,)](mark)
        fn()
        torch.cuda.synchronize()

if mode == "ncu":
    torch.cuda.cudart().cudaProfilerStart(); once(); torch.cuda.cudart().cudaProfilerStop()
else:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        once()
    path = sys.argv[3]
    prof.export_chrome_trace(path)
    ev = json.load(open(path))["traceEvents"]
    ops = sorted((e for e in ev if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")), key=lambda e: e["ts"])
    json.dump([[e["name"], round(e["dur"] * 1000), e["cat"]] for e in ops], open(path, "w"), indent=0)
"""

METRICS = "gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread"


def _split(rows: list[Any], is_marker: Callable[[Any], bool]) -> list[list[Any]]:
    """Rows cut into the samples' groups at each marker row (the marker itself left out)."""
    groups: list[list[Any]] = []
    for row in rows:
        if is_marker(row):
            groups.append([])
        elif groups:
            groups[-1].append(row)
    return groups


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    samples, driver = out / "_samples.py", out / "_driver.py"
    samples.write_text(SAMPLES)
    driver.write_text(DRIVER)
    env = dict(os.environ)
    base = [sys.executable, str(driver), str(samples)]
    trace = out / "_cupti.json"
    proc = subprocess.run([*base, "cupti", str(trace)], capture_output=True, text=True, env=env, timeout=600)
    order_line = next((x for x in proc.stdout.splitlines() if x.startswith("ORDER ")), None)
    if proc.returncode != 0 or order_line is None:
        print(f"CUPTI run failed: {proc.stderr[-2000:]}", file=sys.stderr)
        return 1
    order = json.loads(order_line[6:])
    ops = json.loads(trace.read_text())
    for name, group in zip(order, _split(ops, lambda op: "kc_sample_marker" in op[0]), strict=False):
        (out / f"{name}.cupti.json").write_text(json.dumps(group, indent=0) + "\n")
    print(f"CUPTI: {len(ops)} GPU operations, {len(order)} samples", flush=True)
    ncu = shutil.which("ncu")
    if ncu is None:
        print("ncu not found: CUPTI files only")
        return 0
    for base_name, suffix in (("demangled", "ncu.csv"), ("mangled", "ncu-mangled.csv")):
        cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--metrics", METRICS,
               "--print-kernel-base", base_name, "--csv", "--page", "raw", *base, "ncu"]  # fmt: skip
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        (out / f"_all.{suffix}").write_text(p.stdout + "\n=== stderr ===\n" + p.stderr[-4000:])
        lines = [line for line in p.stdout.splitlines() if line.startswith('"')]
        if len(lines) < 2:
            print(f"ncu ({base_name}) gave no table: rc {p.returncode} {p.stderr[-800:]}", file=sys.stderr)
            continue
        head, units, body = lines[0], lines[1], lines[2:]
        for name, group in zip(order, _split([[x] for x in body], lambda r: "kc_sample_marker" in r[0]), strict=False):
            (out / f"{name}.{suffix}").write_text("\n".join([head, units, *(r[0] for r in group)]) + "\n")
        print(f"ncu {base_name}: {len(body)} kernel rows", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
