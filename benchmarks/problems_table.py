"""Run every correct solution of the problem library in benchmark mode on this machine's GPU, through the harness,
and print a markdown table: problem, solution, median time per benchmark case, and the fraction of the H100's
speed of light reached at the largest case.

    python benchmarks/problems_table.py                    # all problems
    python benchmarks/problems_table.py matmul softmax     # some
    python benchmarks/problems_table.py --max-time 0.5     # seconds of timed calls per case (default 0.5)

Speed of light of a case is max(bytes / bandwidth, flops / compute peak), from the reference's
``speed_of_light(**case)``; the peaks are the H100 SXM's: 3.35 TB/s HBM3, 989 TFLOP/s dense fp16/bf16 tensor
(matmul), 494 TFLOP/s TF32 tensor (conv2d: fp32 inputs, TF32 allowed), 67 TFLOP/s fp32 otherwise. On an H200
the bandwidth is 4.8 TB/s (same compute); ``--peaks h100`` forces the H100's. Rows print as they finish.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboards.problems import load_problem  # noqa: E402
from runners.contract import Mode, TimingSettings  # noqa: E402
from runners.entry import run_request  # noqa: E402

PROBLEMS = REPO / "problems"
BYTES_PER_S = {"h100": 3.35e12, "h200": 4.8e12}
COMPUTE_PEAK = {"matmul": 989e12, "conv2d": 494e12}
FP32_PEAK = 67e12


def speed_of_light_s(problem: str, bytes_moved: int | None, flops: int | None, gpu: str) -> tuple[float, str]:
    memory = (bytes_moved or 0) / BYTES_PER_S[gpu]
    compute = (flops or 0) / COMPUTE_PEAK.get(problem, FP32_PEAK)
    return (memory, "memory") if memory >= compute else (compute, "compute")


def _fmt_time(ns: float) -> str:
    return f"{ns / 1e3:.1f} µs" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problems", nargs="*", help="problem folders under problems/ (default: all)")
    parser.add_argument("--max-time", type=float, default=0.5, help="seconds of timed calls per benchmark case")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--problems-dir", type=Path, default=PROBLEMS, help="where the problem folders are")
    parser.add_argument("--peaks", choices=sorted(BYTES_PER_S), help="whose peaks (default: from the GPU's name)")
    args = parser.parse_args(argv)
    peaks = args.peaks
    if peaks is None:
        import torch

        peaks = "h200" if torch.cuda.is_available() and "H200" in torch.cuda.get_device_name() else "h100"

    root = args.problems_dir
    names = args.problems or sorted(p.parent.name for p in root.glob("*/task.yml"))
    timing = TimingSettings(max_time_s=args.max_time, warmup_ms=50, max_samples=500)
    print(f"\nmedian per benchmark case (task.yml order); % of the {peaks.upper()}'s speed of light at the largest.\n")
    print("| problem | solution | median time per benchmark | % of speed of light (largest) |")
    print("|---|---|---|---|", flush=True)
    gpu = "?"
    for name in names:
        problem = load_problem(root / name)
        for path in sorted((root / name / "solutions" / "correct").glob("*")):
            if path.suffix not in (".py", ".cu"):
                continue
            t0 = time.monotonic()
            request = problem.request(path.name, path.read_bytes(), Mode.BENCHMARK, device=args.device)
            request = request.model_copy(update={"timing": timing})
            result = run_request(request)
            wall = time.monotonic() - t0
            print(
                f"# {name}/{path.name}: {result.verdict.value} in {wall:.0f} s {result.message[:200]}",
                file=sys.stderr,
                flush=True,
            )
            times, best = [], ""
            for bench in result.benchmarks:
                if bench.stats is None:
                    times.append(f"{bench.verdict.value}")
                    continue
                times.append(_fmt_time(bench.stats.median_ns))
            timed = [b for b in result.benchmarks if b.stats is not None]
            if timed:  # the largest case: the one with the longest speed-of-light time
                floors = [speed_of_light_s(name, b.bytes_moved, b.flops, peaks) for b in timed]
                (floor_s, bound), largest = max(zip(floors, timed, strict=True), key=lambda fb: fb[0][0])
                assert largest.stats is not None
                best = f"{100 * floor_s / (largest.stats.median_ns * 1e-9):.0f}% ({bound})"
            verdict = "" if result.verdict.value == "accepted" else f" **{result.verdict.value}**"
            print(f"| {name} | {path.name}{verdict} | {' / '.join(times)} | {best} |", flush=True)
            if result.system and result.system.gpu_name:
                gpu = result.system.gpu_name
    print(f"\nGPU: {gpu}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
