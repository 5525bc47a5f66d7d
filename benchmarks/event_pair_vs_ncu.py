"""What a CUDA event pair around one kernel reads, less an empty pair, against Nsight Compute's gpu__time_duration of
the same kernel: the floor under the harness's agreement with ncu, without the harness (one process, no sandbox).

    python benchmarks/event_pair_vs_ncu.py            # needs a GPU and ncu on PATH; prints a markdown table

Each kernel runs 300 times after a read of 256 MiB (cold L2), between two events; the reading is the median less the
median of an empty pair (what the harness subtracts as ``event_ns``). The same script then runs itself under
``ncu --clock-control none`` (caches flushed by ncu) and takes the median of each kernel's ``gpu__time_duration.sum``
(ncu lists kernels only: a cuBLAS memset beside the GEMM is not in its figure). docs/measurement.md has the results.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable
from typing import Any

CALLS = 300


def kernels(torch: Any) -> dict[str, Callable[[], Any]]:
    dev = "cuda"
    a1, b1 = (torch.randn(1024, 1024, device=dev, dtype=torch.float16) for _ in range(2))
    a2, b2 = (torch.randn(16384, 16384, device=dev, dtype=torch.float16) for _ in range(2))
    o1, o2 = torch.empty_like(a1), torch.empty_like(a2)
    x = torch.randn(4096, 4096, device=dev)
    ma = torch.randn(4096, 4096, device=dev, dtype=torch.float16)
    mb = torch.randn(4096, 5120, device=dev, dtype=torch.float16)
    return {
        "spin 1k cycles": lambda: torch.cuda._sleep(1_000),
        "spin 20k cycles": lambda: torch.cuda._sleep(20_000),
        "add 1024² fp16": lambda: torch.add(a1, b1, out=o1),
        "mul 4096² fp32": lambda: torch.mul(x, 2.0),
        "add 16384² fp16": lambda: torch.add(a2, b2, out=o2),
        "matmul 4096×5120×4096 fp16": lambda: torch.mm(ma, mb),
    }


def run(profiled: str = "") -> dict[str, float]:
    import torch

    flush = torch.empty(64 * 1024 * 1024, device="cuda")  # 256 MiB of fp32: its sum is one reduce kernel
    fns = kernels(torch)
    if profiled:  # under ncu (--profile-from-start off): a few calls of that kernel, nothing of the set-up
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for _ in range(7):
            flush.sum()
            fns[profiled]()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        return {}
    for fn in fns.values():
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    medians = {}
    for name, fn in [("empty", lambda: None), *fns.items()]:
        reads = []
        for _ in range(CALLS):
            flush.sum()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            reads.append(start.elapsed_time(end) * 1e6)
        medians[name] = statistics.median(reads)
    return medians


def ncu_median(name: str) -> tuple[float, list[str]]:
    """The median over calls 3 to 7 of ncu's gpu__time_duration of the kernel ``name`` (the flush left out), and the
    kernels' names (one, except where a call launches several: then their durations are summed per call)."""
    cmd = ["ncu", "--clock-control", "none", "--profile-from-start", "off", "--metrics", "gpu__time_duration.sum",
           "--csv", "--page", "raw", sys.executable, __file__, "--profiled", name]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = list(csv.reader(io.StringIO(out[out.index('"ID"') :])))
    header, calls, names = rows[0], defaultdict(float), set()
    call = -1
    for row in rows[1:]:
        item = dict(zip(header, row, strict=False))
        try:
            ns = float(item["gpu__time_duration.sum"].replace(",", ""))
        except (KeyError, ValueError):
            continue  # the units row
        if "reduce_kernel" in item["Kernel Name"]:
            call += 1  # every call follows its flush
            continue
        calls[call] += ns
        names.add(item["Kernel Name"][:60])
    per_call = [calls[i] for i in sorted(calls)]
    return statistics.median(per_call[2:] or per_call), sorted(names)


def main() -> None:
    if "--profiled" in sys.argv:
        run(profiled=sys.argv[sys.argv.index("--profiled") + 1])
        return
    if shutil.which("ncu") is None:
        sys.exit("ncu is not on PATH (Nsight Compute): this script compares with it")
    medians = run()
    empty = medians.pop("empty")
    print(f"empty event pair: {empty:.0f} ns; GPU: {os.environ.get('CUDA_VISIBLE_DEVICES', 'default')}\n")
    print("| kernel | events − empty pair | ncu gpu__time_duration | difference | ncu's kernels |")
    print("|---|---|---|---|---|")
    for name, reading in medians.items():
        ncu_ns, names = ncu_median(name)
        ours = reading - empty
        change = f"{ours - ncu_ns:+.0f} ns ({(ours / ncu_ns - 1) * 100:+.1f}%)"
        print(f"| {name} | {ours / 1e3:.2f} µs | {ncu_ns / 1e3:.2f} µs | {change} | {', '.join(names)} |")


if __name__ == "__main__":
    main()
