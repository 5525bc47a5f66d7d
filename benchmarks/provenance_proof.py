"""The proof of issue 30's provenance pass and library policy on a GPU with Nsight Compute (the lent H200).

Runs problems/matmul_own (which denies cuBLAS, cuBLASLt, cuDNN and ATen's matmul kernels) in ranked mode with:

- solutions/rejected/matmul.py (``a @ b``): rejected, the message naming cuBLASLt's nvjet kernel and its share;
- solutions/correct/triton.py (a Triton GEMM): accepted, every case's coverage >= ``--coverage`` (0.95);
- solutions/rejected/decoy.py (a token Triton kernel beside ``torch.matmul``): rejected;
- solutions/rejected/side_stream.py and side_thread.py (``torch.matmul`` on a stream / in a thread of its own):
  rejected;
- solutions/rejected/evade_collector.py (timed with ``torch.matmul``, zeros in the call it recognises as the
  collector's): rejected, its recorded call's output being checked;

and prints, per run, the verdict, the message, each case's top kernels and coverage (one line each), and the wall
time the provenance pass added (``result.provenance.seconds``; issue 30's target: <= 1.5 s per ranked evaluation),
then a summary. Exit status 0 when every expectation holds. In-process through ``runners.entry.run_request``,
sandboxed (bubblewrap) unless ``--no-sandbox``; the baselines are not timed unless ``--baselines`` (they are not what
is proven, and they cost a minute).

    PYTHONPATH=. python3 benchmarks/provenance_proof.py
    PYTHONPATH=. python3 benchmarks/provenance_proof.py --only triton.py --mode benchmark
"""

from __future__ import annotations

import argparse
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

from leaderboards.problems import load_problem
from runners.contract import Mode, ProgressEvent, RunResult, Verdict
from runners.entry import run_request
from runners.entry.profiling import cannot_record_kernels
from runners.provenance import summary
from runners.settings import RunnerSettings

REPO = Path(__file__).resolve().parents[1]
PROBLEM = REPO / "problems" / "matmul_own"
FILES = ("solutions/rejected/matmul.py", "solutions/correct/triton.py", "solutions/rejected/decoy.py",
         "solutions/rejected/side_stream.py", "solutions/rejected/side_thread.py",
         "solutions/rejected/evade_collector.py")  # fmt: skip
TARGET_S = 1.5


def expected(path: Path) -> Verdict:
    """The verdict a timed run must get: the file's '# timed:' line."""
    for line in path.read_text().splitlines()[:10]:
        if line.startswith("# timed:"):
            return Verdict(line.removeprefix("# timed:").split()[0])
    raise SystemExit(f"{path} has no '# timed: verdict' line")


def evaluate(path: Path, mode: Mode, *, sandbox: bool, baselines: bool, verbose: bool) -> RunResult:
    problem = load_problem(PROBLEM)
    seed = secrets.randbits(62) if mode is Mode.RANKED else None  # a ranked run's secret, as the platform draws it
    request = problem.request(path.name, path.read_bytes(), mode, device="cuda", device_name="H200", seed=seed)
    settings = RunnerSettings(time_baselines=baselines)
    t0 = time.monotonic()

    def progress(event: ProgressEvent) -> None:
        if verbose:
            print(f"    [{time.monotonic() - t0:6.1f}s] {event.phase.value} {event.detail}", flush=True)

    return run_request(request, progress, settings=settings, require_sandbox=sandbox)


def check(path: Path, result: RunResult, want: Verdict, coverage: float) -> list[str]:
    """What is wrong with ``result`` for ``path`` (empty when it is as issue 30 says)."""
    problems = []
    if result.verdict is not want:
        problems.append(f"{path.name}: {result.verdict.value}, expected {want.value}")
    prov = result.provenance
    evades = path.name == "evade_collector.py"  # its recorded call is wrong: the pass fails, nothing is recorded
    if not evades and (prov is None or prov.collector != "ncu"):
        problems.append(f"{path.name}: collector {prov.collector if prov else None}, expected ncu")
    if evades and "the recorded call" not in result.message:
        problems.append(f"{path.name}: the rejection does not say the recorded call was wrong: {result.message[:200]}")
    if not evades and want is Verdict.REJECTED and result.verdict is Verdict.REJECTED and \
            "% of the time in" not in result.message and "explain only" not in result.message:  # fmt: skip
        problems.append(f"{path.name}: the rejection does not name a share: {result.message[:200]}")
    if want is Verdict.ACCEPTED:
        for b in result.benchmarks:
            got = b.kernels.coverage if b.kernels else None
            if got is None or got < coverage:
                problems.append(f"{path.name}: benchmark {b.index + 1} coverage {got}, expected >= {coverage}")
    return problems


def report(path: Path, result: RunResult, wall: float) -> None:
    prov = result.provenance
    sandboxed = "sandboxed" if result.system.sandboxed else "NOT sandboxed"
    print(f"{path.name}: {result.verdict.value} ({sandboxed}, wall {wall:.1f}s, provenance pass "
          f"{prov.seconds if prov else None}s, collector {prov.collector if prov else None})")  # fmt: skip
    print(f"  message: {result.message[:600]}")
    for b in result.benchmarks:
        median = f"{b.stats.median_ns / 1e3:.1f}us" if b.stats else "-"
        line = summary(b.kernels) if b.kernels else "no record"
        print(f"  benchmark {b.index + 1} {b.case} median {median}: {line}")
    if prov is not None and prov.note:
        print(f"  note: {prov.note[:800]}")
    if result.verdict is Verdict.INFRASTRUCTURE_ERROR or (prov is not None and prov.collector != "ncu"):
        print(f"  stderr tail: {(result.stderr or '')[-1500:]}")
        print(f"  profile: {(result.profile or '')[-1500:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["ranked", "benchmark"], default="ranked")
    parser.add_argument("--only", action="append", default=[], help="run only files of this name (repeatable)")
    parser.add_argument("--coverage", type=float, default=0.95, help="the accepted solution's least coverage")
    parser.add_argument("--no-sandbox", action="store_true", help="run without bubblewrap")
    parser.add_argument("--baselines", action="store_true", help="time the reference too (a minute more)")
    parser.add_argument("--verbose", action="store_true", help="print each run's progress events")
    args = parser.parse_args()
    ncu = shutil.which("ncu")
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:] \
        if ncu else ["none"]  # fmt: skip
    print(f"ncu: {ncu} {' '.join(version)}; bwrap: {shutil.which('bwrap')}")
    why = cannot_record_kernels(RunnerSettings())
    if why:
        print(f"this runner cannot record kernels: {why}")
        return 1
    files = [PROBLEM / f for f in FILES if not args.only or Path(f).name in args.only]
    failures: list[str] = []
    added: list[float] = []
    for path in files:
        t0 = time.monotonic()
        result = evaluate(path, Mode(args.mode), sandbox=not args.no_sandbox, baselines=args.baselines,
                          verbose=args.verbose)  # fmt: skip
        report(path, result, time.monotonic() - t0)
        failures += check(path, result, expected(path), args.coverage)
        if result.provenance is not None and result.provenance.seconds is not None:
            added.append(result.provenance.seconds)
    if added:
        print(f"provenance pass: {min(added):.2f}-{max(added):.2f}s added per {args.mode} evaluation "
              f"(mean {sum(added) / len(added):.2f}s; target <= {TARGET_S}s)")  # fmt: skip
    for failure in failures:
        print(f"FAIL {failure}")
    print("OK: every expectation holds" if not failures else f"{len(failures)} expectation(s) failed")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
