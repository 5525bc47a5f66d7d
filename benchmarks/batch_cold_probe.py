"""Can many calls in one window each be timed as a lone cold call is? (issue 28: small kernels measured right)

    PYTHONPATH=. python3 benchmarks/batch_cold_probe.py [--json OUT.json] [--reps 30]

One process, no harness, no sandbox: for each kernel below it measures

- ``lone``: one call after a read of twice the L2 (the harness's cold-cache method), between a CUDA event pair,
  less the median of an empty pair;
- ``batch N``: N calls back to back between one event pair, each on inputs of its own written before the same
  flush (so every call reads its inputs from DRAM), the pair's time less an empty pair's, divided by N; for N in
  1, 2, 4, ..., up to what 8 GiB of inputs allows;
- ``ncu``: Nsight Compute's ``gpu__time_duration`` of the lone call (its cache control flushes before each kernel),
  summed over the call's kernels, where ncu runs;
- ``span``: CUPTI's (torch.profiler's) time from the call's first GPU operation's start to its last one's end, after
  the same flush: the kernels, the memsets beside them and the gaps between them, which ncu's sum leaves out.

It answers whether a window holding N calls, with the window's fixed cost amortised over them, can stand for N
lone calls: the per-call time of a batch against the lone call's, per kernel and N. docs/measurement.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

KERNELS = """
import torch, triton, triton.language as tl

@triton.jit
def _add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)

def triton_add(data):
    a, b = data
    out = torch.empty_like(a)
    n = a.numel()
    _add[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out

def torch_add(data):
    a, b = data
    return a + b

def torch_sum(data):
    (x,) = data
    return x.sum()

def torch_mm(data):
    a, b = data
    return a @ b

def torch_softmax(data):
    (x,) = data
    return torch.softmax(x, dim=-1)

def make(kind, size, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if kind in ("triton_add", "torch_add"):
        return [torch.randn(size, size, device="cuda", dtype=torch.float16, generator=g) for _ in range(2)]
    if kind == "torch_sum":
        return [torch.randn(size, size, device="cuda", dtype=torch.float32, generator=g)]
    if kind == "torch_mm":
        return [torch.randn(size, size, device="cuda", dtype=torch.float16, generator=g) for _ in range(2)]
    if kind == "torch_softmax":
        return [torch.randn(size, size, device="cuda", dtype=torch.float32, generator=g)]
    raise ValueError(kind)

FNS = {"triton_add": triton_add, "torch_add": torch_add, "torch_sum": torch_sum, "torch_mm": torch_mm,
       "torch_softmax": torch_softmax}
"""

MEASURE = r"""
import json, statistics, sys
import torch
import importlib.util
_spec = importlib.util.spec_from_file_location("kc_kernels", sys.argv[1])
_mod = importlib.util.module_from_spec(_spec); _spec.loader.exec_module(_mod)
FNS, make = _mod.FNS, _mod.make
kind, size, reps, mode = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
fn = FNS[kind]
data = make(kind, size, 1)
for _ in range(5):
    fn(data)
torch.cuda.synchronize()
l2 = torch.cuda.get_device_properties(0).L2_cache_size
flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
if mode == "ncu":
    torch.cuda.cudart().cudaProfilerStart()
    for _ in range(10):
        fn(data); torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    sys.exit(0)
if mode == "span":
    import triton, triton.language as tl

    @triton.jit
    def kc_mark_begin(x_ptr):
        tl.store(x_ptr, 0)

    @triton.jit
    def kc_mark_end(x_ptr):
        tl.store(x_ptr, 1)

    mark = torch.zeros(1, device="cuda")
    kc_mark_begin[(1,)](mark); kc_mark_end[(1,)](mark); torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(10):
            flush.sum(dtype=torch.int32)
            torch.cuda._sleep(2_000_000)
            kc_mark_begin[(1,)](mark)
            fn(data)
            kc_mark_end[(1,)](mark)
            torch.cuda.synchronize()
    path = sys.argv[6]
    prof.export_chrome_trace(path)
    sys.exit(0)
ev = lambda: torch.cuda.Event(enable_timing=True)
def pair_ns(work, calls=1):
    # An event pair around work, queued behind a sleep long enough for the host to queue all of it (a Triton
    # launch costs the host 10-20 us: without the gate the GPU would wait for the host between calls).
    flush.sum(dtype=torch.int32)
    torch.cuda._sleep(int(2e6 + calls * 60_000))
    s, e = ev(), ev()
    s.record(); work(); e.record(); e.synchronize()
    return s.elapsed_time(e) * 1e6
empty = statistics.median(pair_ns(lambda: None) for _ in range(reps))
per_bytes = sum(t.numel() * t.element_size() for t in data) + 1
out = {"empty_ns": empty, "lone": statistics.median(pair_ns(lambda: fn(data)) for _ in range(reps)) - empty}
n = 1
while n <= 256 and n * per_bytes <= (8 << 30):
    sets = [make(kind, size, 100 + j) for j in range(n)]
    torch.cuda.synchronize()
    def work():
        for d in sets:
            fn(d)
    times = [pair_ns(work, n) for _ in range(max(5, reps // 2))]
    out[f"batch{n}"] = (statistics.median(times) - empty) / n
    del sets
    torch.cuda.empty_cache()
    n *= 2
print("RESULT " + json.dumps(out))
"""

CASES = [
    ("triton_add", 1024), ("triton_add", 2048), ("torch_add", 1024), ("torch_sum", 5632),
    ("torch_softmax", 2048), ("torch_mm", 1024), ("triton_add", 8192),
]  # fmt: skip


def ncu_sum(ncu: str, args: list[str], env: dict[str, str]) -> float | None:
    cmd = [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--profile-from-start", "off",
           "--csv", "--page", "raw", "--print-units", "base", *args, "ncu"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    rows = [line for line in proc.stdout.splitlines() if line.startswith('"')]
    if len(rows) < 3:
        print(f"ncu: {proc.stdout[-500:]} {proc.stderr[-500:]}", file=sys.stderr)
        return None
    import csv

    reader = list(csv.DictReader(rows))
    values = [float(r["gpu__time_duration.sum"].replace(",", "")) for r in reader[1:]]
    per = len(values) // 10
    if per == 0:
        return None
    return statistics.median(sum(values[i * per : (i + 1) * per]) for i in range(10))


def span_ns(path: Path) -> tuple[float, float]:
    """(median span from the first start to the last end, median sum of durations) of the GPU operations between
    each pair of marker kernels in a chrome trace."""
    events = json.loads(path.read_text())["traceEvents"]
    gpu = sorted(
        (e for e in events if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy") and "dur" in e),
        key=lambda e: e["ts"],
    )
    calls: list[list[dict[str, Any]]] = []
    inside = False
    for e in gpu:
        name = e.get("name", "")
        if "kc_mark_begin" in name:
            calls.append([])
            inside = True
        elif "kc_mark_end" in name:
            inside = False
        elif inside:
            calls[-1].append(e)
    spans = [(c[-1]["ts"] + c[-1]["dur"] - c[0]["ts"]) * 1e3 for c in calls if c]
    sums = [sum(e["dur"] for e in c) * 1e3 for c in calls if c]
    return (statistics.median(spans) if spans else float("nan"), statistics.median(sums) if sums else float("nan"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--cases", default="")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kc-probe-"))
    kernels = work / "kernels.py"
    kernels.write_text(KERNELS)
    script = work / "measure.py"
    script.write_text(MEASURE)
    env = dict(os.environ)
    ncu = shutil.which("ncu")
    rows = []
    for kind, size in CASES:
        if args.cases and f"{kind}:{size}" not in args.cases.split(","):
            continue
        base = [sys.executable, str(script), str(kernels), kind, str(size), str(args.reps)]
        proc = subprocess.run([*base, "time"], capture_output=True, text=True, env=env, timeout=600)
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            print(f"{kind} {size}: failed: {proc.stderr[-1500:]}", file=sys.stderr)
            continue
        res = json.loads(line[7:])
        trace = work / f"{kind}_{size}.json"
        subprocess.run([*base, "span", str(trace)], capture_output=True, text=True, env=env, timeout=600)
        if trace.exists():
            res["span"], res["cupti_sum"] = span_ns(trace)
        if ncu:
            res["ncu"] = ncu_sum(ncu, base, env)
        res["kernel"], res["size"] = kind, size
        rows.append(res)
        print(json.dumps(res), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("\n| kernel | ncu | span | lone | " + " | ".join(f"batch {2**i}" for i in range(9)) + " |")
    for r in rows:
        cells = [f"{r.get(f'batch{2**i}', float('nan')) / 1e3:.2f}" for i in range(9)]
        ncu_v = r.get("ncu")
        head = [f"{r['kernel']} {r['size']}", f"{ncu_v / 1e3 if ncu_v else float('nan'):.2f}",
                f"{r.get('span', float('nan')) / 1e3:.2f}", f"{r['lone'] / 1e3:.2f}"]  # fmt: skip
        print("| " + " | ".join(head + cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
