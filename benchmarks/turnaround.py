"""Turnaround: cold against pre-started runs (issue 16), on this machine's GPU (or its CPU, to try the script).

1. Ranked runs of the vectoradd Triton and matmul PyTorch solutions, each ``--repeats`` times cold (every process
   started for its job) and ``--repeats`` times pre-started (``runners.entry.prestart``: the job handed to processes
   started while the run before it went, ``--gap`` seconds earlier at least); median wall time of each. One priming
   run per problem comes first, so the reference's timing is cached in both (as on any runner after its first run).
2. A batch of ``--batch`` benchmark-mode candidates (copies of one solution with a comment changed, so each is a file
   of its own) through ``python -m kernelcup run PROBLEM *.py --mode benchmark --json``, the very path of
   ``kernelcup run`` with several files, pre-started (the default) and, with ``--batch-cold``, with
   ``KERNELCUP_PRESTART=false`` too.

Every run's ``phase_times`` (seconds from the hand-over; ``prestarted``: when its processes started, before it) and
the totals are printed, and written to ``--out`` as JSON. Targets (issue 16, on one H100): each ranked run <= 5 s,
the batch of 20 <= 60 s.

    python3 benchmarks/turnaround.py --out /tmp/turnaround.json             # on the GPU machine
    python3 benchmarks/turnaround.py --device cpu --skip-ranked --batch 3 --batch-cold \
        --problems tests/fixtures/problems --batch-solution $PWD/tests/runners/submissions/correct_torch.py
                                                                             # a quick try of the batch, no GPU
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leaderboards.problems import load_problem  # noqa: E402
from runners.contract import Mode, RunResult  # noqa: E402
from runners.entry import run_request  # noqa: E402
from runners.entry.prestart import Prestarter  # noqa: E402
from runners.settings import RunnerSettings  # noqa: E402

RANKED = [("vectoradd", "solutions/correct/triton.py"), ("matmul", "solutions/correct/pytorch.py")]


def _line(label: str, result: RunResult, wall: float) -> dict[str, Any]:
    times = " ".join(f"{k}={v:g}" for k, v in result.phase_times.items())
    print(f"  {label:<28} {result.verdict.label:<10} wall {wall:6.2f} s   {times}", flush=True)
    return {"label": label, "verdict": result.verdict.value, "wall_s": round(wall, 3),
            "phase_times": result.phase_times}  # fmt: skip


def ranked(args: argparse.Namespace, settings: RunnerSettings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, rel in RANKED:
        problem = load_problem(ROOT / "problems" / name)
        path = problem.path / rel
        device_name = args.device_name or args.device

        def request(problem=problem, path=path, device_name=device_name):  # type: ignore[no-untyped-def]
            return problem.request(path.name, path.read_bytes(), Mode.RANKED, device=args.device,
                                   device_name=device_name, seed=secrets.randbelow(2**31))  # fmt: skip

        print(f"{name} ({rel}), ranked:", flush=True)
        rows: dict[str, list[dict[str, Any]]] = {"priming": [], "cold": [], "prestarted": []}
        t = time.monotonic()
        rows["priming"].append(_line("priming (cold)", run_request(request(), settings=settings), time.monotonic() - t))
        for i in range(args.repeats):
            t = time.monotonic()
            result = run_request(request(), settings=settings)
            rows["cold"].append(_line(f"cold {i + 1}", result, time.monotonic() - t))
        prestart = Prestarter(settings)
        try:
            run_request(request(), settings=settings, prestart=prestart)  # starts the first set
            for i in range(args.repeats):
                time.sleep(args.gap)  # a runner between two jobs: the set has imported PyTorch meanwhile
                t = time.monotonic()
                result = run_request(request(), settings=settings, prestart=prestart)
                rows["prestarted"].append(_line(f"pre-started {i + 1}", result, time.monotonic() - t))
        finally:
            prestart.close()
        cold = statistics.median(r["wall_s"] for r in rows["cold"])
        warm = statistics.median(r["wall_s"] for r in rows["prestarted"])
        print(f"  median wall: cold {cold:.2f} s, pre-started {warm:.2f} s (target <= 5 s)\n", flush=True)
        out[name] = {**rows, "median_cold_s": cold, "median_prestarted_s": warm}
    return out


def batch(args: argparse.Namespace, prestart: bool) -> dict[str, Any]:
    problem = args.problems / args.batch_problem
    source = (problem / args.batch_solution).read_text()  # (an absolute --batch-solution stands as it is)
    with tempfile.TemporaryDirectory(prefix="kernelcup-turnaround-") as tmp:
        files = []
        for i in range(args.batch):
            f = Path(tmp) / f"candidate_{i + 1:02d}.py"
            f.write_text(f"# candidate {i + 1} of {args.batch}\n{source}")
            files.append(str(f))
        env = {**os.environ, "KERNELCUP_PRESTART": "true" if prestart else "false",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}  # fmt: skip
        argv = [sys.executable, "-m", "kernelcup", "run", str(problem), *files, "--mode", "benchmark", "--device",
                args.device, "--json"]  # fmt: skip
        label = "pre-started" if prestart else "cold (KERNELCUP_PRESTART=false)"
        print(f"batch of {args.batch} benchmark-mode candidates for {args.batch_problem}, {label}:", flush=True)
        t = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env, check=False)
        wall = time.monotonic() - t
    try:
        results = [RunResult.model_validate(r) for r in json.loads(done.stdout)]
    except ValueError:
        print(done.stdout[-2000:], done.stderr[-4000:], sep="\n")
        raise SystemExit(f"kernelcup run failed (exit {done.returncode})") from None
    rows = [_line(Path(f).name, r, r.wall_time_s) for f, r in zip(files, results, strict=True)]
    passed = sum(r.passed for r in results)
    print(f"  total wall {wall:.1f} s for {len(results)} files ({passed} passed; target <= 60 s)\n", flush=True)
    return {"prestart": prestart, "total_wall_s": round(wall, 2), "passed": passed, "runs": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--device-name", default=None, help="the device name in the requests (default: --device)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gap", type=float, default=10.0, help="seconds between two pre-started runs")
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--batch-problem", default="vectoradd")
    parser.add_argument("--batch-solution", default="solutions/correct/triton.py", help="in the problem's folder")
    parser.add_argument("--problems", type=Path, default=ROOT / "problems", help="the batch problem's parent folder")
    parser.add_argument("--batch-cold", action="store_true", help="run the batch with KERNELCUP_PRESTART=false too")
    parser.add_argument("--skip-ranked", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    settings = RunnerSettings(_env_file=".env", _env_file_encoding="utf-8")  # type: ignore[call-arg]
    report: dict[str, Any] = {}
    if not args.skip_ranked:
        report["ranked"] = ranked(args, settings)
    if args.batch:
        report["batch"] = [batch(args, prestart=True)] + ([batch(args, prestart=False)] if args.batch_cold else [])
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
