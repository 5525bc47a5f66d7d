"""Does the roofline share in a result agree with what Nsight Compute measures on the same kernel?

    PYTHONPATH=. python3 benchmarks/roofline_vs_ncu.py [--json OUT.json] [PROBLEM:SOLUTION ...]

For each solution (default: the Triton solutions of vectoradd, softmax and matmul) it runs the harness in
benchmark mode (``runners.entry.run_request``, as a worker would) and reads every case's ``roofline_share`` and
its limit (memory or compute). It then runs the same solution on the largest case's inputs under
``ncu --clock-control none`` and reads, per kernel, the DRAM throughput (% of peak, elapsed) and the tensor pipe
utilisation (% of peak, active cycles), weighted by each kernel's duration. A memory-bound case should show a
share close to ncu's DRAM %, a compute-bound one close to its tensor %; the two differ where the datasheet peak
in ``runners/devices.py`` differs from the peak ncu divides by, and where the problem's byte or flop count is not
what the kernel really moves (docs/measurement.md has the figures). Needs a GPU and ncu.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from harness_accuracy import TARGET  # noqa: E402

from leaderboards.problems import load_problem  # noqa: E402
from runners.contract import Mode  # noqa: E402
from runners.entry import run_request  # noqa: E402
from runners.settings import RunnerSettings  # noqa: E402

DEFAULT = ["vectoradd:triton.py", "softmax:triton.py", "matmul:triton.py", "matmul:pytorch.py"]
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
DURATION = "gpu__time_duration.sum"
CLOCK = "sm__cycles_elapsed.avg.per_second"  # the SM clock while the kernel ran (Hz)


def tensor_metrics(ncu: str) -> list[str]:
    """The tensor-pipe utilisation metrics this GPU's ncu knows (their names differ by architecture)."""
    proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    names = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    return sorted(
        f"{n}.avg.pct_of_peak_sustained_active"
        for n in names
        if n.startswith("sm__pipe_tensor") and n.endswith("_cycles_active")
    )


def ncu_rows(text: str) -> list[dict[str, str]]:
    lines = [x for x in text.splitlines() if x.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    return [r for r in rows[1:] if r.get(DURATION)]  # the first row holds the units


def number(value: str | None) -> float | None:
    try:
        return float((value or "").replace(",", ""))
    except ValueError:
        return None


def weighted(kernels: list[dict[str, str]], durations: list[float], metric: str) -> float | None:
    """A per-kernel percentage averaged over the call's kernels, weighted by each kernel's duration."""
    values = [number(r.get(metric)) for r in kernels]
    total = sum(durations)
    if any(v is None for v in values) or total <= 0:
        return None
    return sum((v or 0.0) * d for v, d in zip(values, durations, strict=True)) / total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("solutions", nargs="*", default=DEFAULT, help="PROBLEM:SOLUTION under solutions/correct")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    ncu = shutil.which("ncu")
    if ncu is None:
        print("ncu is not on PATH", file=sys.stderr)
        return 2
    tensors = tensor_metrics(ncu)
    print("tensor metrics:", tensors)
    settings = RunnerSettings(time_baselines=False)
    report: list[dict[str, Any]] = []
    print(
        "| solution | case | harness median | share (limit) | ncu duration | share at ncu's time | ncu DRAM % | "
        "ncu tensor % | SM clock |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in args.solutions:
        name, sol = spec.split(":")
        problem = load_problem(REPO / "problems" / name)
        path = problem.path / "solutions" / "correct" / sol
        req = problem.request(path.name, path.read_bytes(), Mode.BENCHMARK, device="cuda", device_name="H100")
        result = run_request(req, settings=settings)
        if not result.benchmarks:
            print(f"{spec}: {result.verdict.value} {result.message[:300]}")
            continue
        bounded = [(i, b) for i, b in enumerate(result.benchmarks) if b.roofline_ns]
        i, largest = max(bounded, key=lambda x: x[1].roofline_ns or 0.0)
        case = dict(problem.task.benchmarks[i])
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "target.py"
            script.write_text(TARGET)
            cmd = [
                ncu,
                "--clock-control",
                "none",
                "--profile-from-start",
                "off",
                "--csv",
                "--page",
                "raw",
                "--metrics",
                ",".join([DURATION, DRAM, CLOCK, *tensors]),
                sys.executable,
                str(script),
                str(problem.path),
                str(path),
                json.dumps(case),
                "3",
                "ncu",
            ]
            proc = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'problems'}"},  # the references import _lib
            )
        rows = ncu_rows(proc.stdout)
        if not rows:
            print(f"{spec}: ncu gave no rows (rc {proc.returncode}): {proc.stdout[-600:]} {proc.stderr[-600:]}")
            continue
        per_call = len(rows) // 3 or 1
        last = rows[-per_call:]  # the third call's kernels
        durations = [number(r.get(DURATION)) or 0.0 for r in last]
        total = sum(durations)
        dram = weighted(last, durations, DRAM)
        clock = weighted(last, durations, CLOCK)
        tensor = max((t for t in (weighted(last, durations, m) for m in tensors) if t is not None), default=None)
        ncu_ns = total  # ncu's default unit for the duration is the nanosecond
        at_ncu = (largest.roofline_ns or 0.0) / ncu_ns if ncu_ns else None
        median = largest.stats.median_ns if largest.stats else None
        row = {
            "solution": spec,
            "case": case,
            "median_ns": median,
            "share": largest.roofline_share,
            "limit": largest.roofline_limit,
            "roofline_ns": largest.roofline_ns,
            "ncu_ns": ncu_ns,
            "share_at_ncu_time": at_ncu,
            "ncu_dram_pct": dram,
            "ncu_tensor_pct": tensor,
            "kernels": len(last),
            "sm_clock_mhz": clock / 1e6 if clock else None,
        }
        report.append(row)
        share = f"{100 * (largest.roofline_share or 0):.1f}% ({largest.roofline_limit})"
        print(
            f"| {spec} | {case} | {(median or 0) / 1e3:.1f} µs | {share} | {ncu_ns / 1e3:.1f} µs | "
            f"{100 * (at_ncu or 0):.1f}% | {dram if dram is None else round(dram, 1)} | "
            f"{tensor if tensor is None else round(tensor, 1)} | {(clock or 0) / 1e6:.0f} MHz |",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
