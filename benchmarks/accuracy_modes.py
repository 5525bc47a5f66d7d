"""harness_accuracy's matmul case (4096×5120×4096 fp16, torch) in benchmark and ranked mode, alternating, then Nsight
Compute once: whether the harness's excess over ncu belongs to one mode (docs/measurement.md, "Checked against Nsight
Compute"). On the GPU machine, bubblewrap on PATH:

    PYTHONPATH=. python3 benchmarks/accuracy_modes.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness_accuracy as ha

from runners.contract import Mode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    case = next(c for c in ha.CASES if c["case"].get("kind") == "mm")
    work = Path(tempfile.mkdtemp(prefix="kernelcup-modes-"))
    problem = ha.make_problem(work / "problem", case["case"])
    medians: dict[Mode, list[float]] = {Mode.BENCHMARK: [], Mode.RANKED: []}
    for _ in range(args.repeats):
        for mode in medians:
            result, _ = ha.harness_run(problem, case["sub"], mode)
            stats = result.benchmarks[0].stats
            assert stats is not None, result.message
            medians[mode].append(stats.median_ns)
            print(f"{mode.value:<9} median {stats.median_ns / 1000:.2f} µs ({stats.samples} samples)", flush=True)
    truth, how = ha.ground_truth(problem, case["sub"], case["case"], work)
    print(f"ground truth {truth / 1000:.2f} µs ({how})")
    for mode, values in medians.items():
        diffs = ", ".join(f"{100 * (v / truth - 1):+.2f}%" for v in values)
        print(f"{mode.value:<9} against it: {diffs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
