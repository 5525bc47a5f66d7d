"""Where the provenance pass's seconds go (issue 30: target <= 1.5 s per ranked evaluation of a starter problem).

For each starter solution given (default: vectoradd's Triton and PyTorch solutions), ``--repeats`` ranked runs with
the pass, sandboxed as in production, each printing the run's wall time, the seconds the pass added
(``result.provenance.seconds``), the pass's own phases (seconds from its job's hand-over: the evaluator's hello, the
submission process up under ncu, the recorded calls done), each progress event's time and the benchmarks' medians.
Then the pass's fixed costs, measured alone on this machine: a Python process that imports torch and touches the
GPU, the same under ncu with the pass's flags (the injection's start-up), and ``ncu --import`` of a small report (how
the record is read back).

    PYTHONPATH=. python3 benchmarks/provenance_cost.py [--file problems/vectoradd/solutions/correct/triton.py ...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import runners.entry as entry
from leaderboards.problems import load_problem
from runners.contract import Mode, ProgressEvent
from runners.devices import peaks_for
from runners.entry import run_request
from runners.entry.profiling import PROVENANCE_METRICS
from runners.gpus import list_gpus
from runners.settings import RunnerSettings

REPO = Path(__file__).resolve().parents[1]
DEFAULT_FILES = ("problems/vectoradd/solutions/correct/triton.py", "problems/vectoradd/solutions/correct/pytorch.py")
TOUCH = "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"


def timed(cmd: list[str]) -> tuple[float, int]:
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True)
    return time.monotonic() - t0, done.returncode


def run_one(path: Path, device_name: str) -> None:
    problem = load_problem(path.parents[2])
    request = problem.request(path.name, path.read_bytes(), Mode.RANKED, device="cuda", device_name=device_name,
                              seed=12345)  # fmt: skip
    t0 = time.monotonic()
    events: list[str] = []

    def progress(event: ProgressEvent) -> None:
        events.append(f"    [{time.monotonic() - t0:6.2f}s] {event.phase.value} {event.detail[:100]}")

    settings = RunnerSettings(provenance="ranked")
    passes: list[tuple[float, dict[str, float]]] = []
    plain_run = entry._run

    def watched(*args: Any, **kwargs: Any) -> Any:  # the pass's own run: its wall time and its phases
        t = time.monotonic()
        got = plain_run(*args, **kwargs)
        if kwargs.get("provenance_pass"):
            passes.append((time.monotonic() - t, dict(got.phase_times)))
        return got

    entry._run = watched  # type: ignore[assignment]
    try:
        result = run_request(request, progress, settings=settings, require_sandbox=True)
    finally:
        entry._run = plain_run  # type: ignore[assignment]
    wall = time.monotonic() - t0
    prov = result.provenance
    print(f"{path.relative_to(REPO)}: {result.verdict.value}, wall {wall:.2f} s, pass "
          f"{prov.seconds if prov else None} s, collector {prov.collector if prov else None}")  # fmt: skip
    medians = [f"{b.stats.median_ns / 1e3:.1f}" for b in result.benchmarks if b.stats]
    print(f"  medians (µs): {' / '.join(medians)}")
    for wall_s, phases in passes:
        shown = ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
        print(f"  the pass's run: {wall_s:.2f} s wall; its phases (s from the hand-over): {shown}")
    print("\n".join(events))
    if prov is not None and prov.note:
        print(f"  note: {prov.note[:400]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", action="append", default=[], help="a solution file (repeatable)")
    parser.add_argument("--repeats", type=int, default=2, help="ranked runs per file")
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed costs measured alone")
    args = parser.parse_args()
    gpus = list_gpus()
    if not gpus:
        print("no GPU here")
        return 1
    row = peaks_for(gpus[0].name)
    name = row.name if row else gpus[0].name
    print(f"GPU: {gpus[0].name} (device {name})")
    for f in args.file or DEFAULT_FILES:
        for _ in range(args.repeats):
            run_one(REPO / f, name)
    if args.no_fixed:
        return 0
    ncu = shutil.which("ncu")
    py = [sys.executable, "-c", TOUCH]
    for label, cmd in [("python + import torch + touch the GPU", py)] * 2:
        print(f"{label}: {timed(cmd)[0]:.2f} s")
    if ncu is None:
        print("no ncu here")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "r.ncu-rep"
        flags = [ncu, "--target-processes", "all", "--profile-from-start", "off", "--clock-control", "none",
                 "--metrics", PROVENANCE_METRICS, "--export", str(report), "--force-overwrite"]  # fmt: skip
        print(f"the same under ncu, nothing recorded: {timed([*flags, *py])[0]:.2f} s")
        rec = ("import torch; x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize(); "
               "torch.cuda.cudart().cudaProfilerStart(); y = x + x; torch.cuda.synchronize(); "
               "torch.cuda.cudart().cudaProfilerStop()")  # fmt: skip
        took, rc = timed([*flags, sys.executable, "-c", rec])
        print(f"under ncu, one add recorded: {took:.2f} s (rc {rc})")
        if report.exists():
            took, rc = timed([ncu, "--import", str(report), "--csv", "--page", "raw"])
            print(f"ncu --import of that report: {took:.2f} s (rc {rc})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
