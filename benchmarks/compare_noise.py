"""How close ``kernelcup run PROBLEM A B --compare`` comes to 1 for two identical files, and how it tells two kernels
apart (issue 16: identical files within ±0.5% with an interval that holds 1).

    PYTHONPATH=. python3 benchmarks/compare_noise.py [--problem problems/vectoradd] [--file pytorch.py]
        [--against triton.py] [--repeats 5] [--rounds 20] [--device cuda] [--budget-s 480] [--json OUT.json]

Each repeat is one whole compare through the command line, exactly as a person runs it (fresh sandboxed processes per
run, pre-started interpreters, the default stopping rule of ``runners.compare``), of ``--file`` against itself; with
``--against``, one more compare of the two files. Prints a markdown table (rounds run, ratio, interval, per case,
wall) and how many identical-file compares came out within ±0.5% with an interval holding 1. Stops starting new
compares after ``--budget-s`` seconds. docs/measurement.md ("Comparing two kernels") holds the figures.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def one(problem: Path, a: Path, b: Path, rounds: int, device: str) -> tuple[dict[str, Any], float]:
    """One compare through ``python -m kernelcup run``: its Comparison (JSON) and its wall time in seconds."""
    args = [sys.executable, "-m", "kernelcup", "run", str(problem), str(a), str(b), "--compare", "--rounds",
            str(rounds), "--device", device, "--json"]  # fmt: skip
    start = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, cwd=REPO)
    wall = time.monotonic() - start
    try:
        return json.loads(proc.stdout), wall
    except json.JSONDecodeError:
        raise SystemExit(f"the compare did not answer (exit {proc.returncode}):\n{proc.stderr[-3000:]}") from None


def row(label: str, got: dict[str, Any], wall: float) -> str:
    if got.get("ratio") is None:
        message = f"{got.get('verdict')}: {str(got.get('message', ''))[:120]}"
        return f"| {label} | {got.get('rounds')} | {message} | | | {wall:.0f} s |"
    cases = ", ".join(f"{c['ratio']:.4f}" for c in got["cases"])
    interval = f"{got['ci_low']:.4f} – {got['ci_high']:.4f}"
    return f"| {label} | {got['rounds']} | {got['ratio']:.4f} | {interval} | {cases} | {wall:.0f} s |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "vectoradd")
    parser.add_argument("--file", default="pytorch.py", help="A solution under the problem's solutions/correct/.")
    parser.add_argument("--against", default=None, help="A second solution, compared once with --file.")
    parser.add_argument("--repeats", type=int, default=5, help="Identical-file compares to run.")
    parser.add_argument("--rounds", type=int, default=20, help="The most rounds of each compare.")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget-s", type=float, default=480.0, help="Start no compare after this many seconds.")
    parser.add_argument("--json", type=Path, default=None, help="Also write every comparison here.")
    args = parser.parse_args()
    solutions = args.problem.resolve() / "solutions" / "correct"
    a = solutions / args.file
    pairs = [(a, a)] * args.repeats + ([(a, solutions / args.against)] if args.against else [])
    start, done = time.monotonic(), []
    print("| A vs B | rounds run | A/B ratio | 95% interval | per case | wall |\n|---|---|---|---|---|---|")
    for x, y in pairs:
        if time.monotonic() - start > args.budget_s:
            print(f"(budget of {args.budget_s:.0f} s spent: {len(pairs) - len(done)} compares not started)")
            break
        got, wall = one(args.problem, x, y, args.rounds, args.device)
        label = f"{x.name} vs the same file" if x == y else f"{x.name} vs {y.name}"
        print(row(label, got, wall), flush=True)
        done.append({"a": x.name, "b": y.name, "wall_s": wall, "comparison": got})
    same = [d["comparison"] for d in done if d["a"] == d["b"] and d["comparison"].get("ratio") is not None]
    good = [c for c in same if abs(c["ratio"] - 1) <= 0.005 and c["ci_low"] <= 1 <= c["ci_high"]]
    print(f"\nidentical files within ±0.5% with an interval holding 1: {len(good)} of {len(same)}")
    if args.json:
        args.json.write_text(json.dumps(done, indent=2))


if __name__ == "__main__":
    main()
