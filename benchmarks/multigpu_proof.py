"""The proof of the problems on several GPUs (docs/multigpu.md) on a machine with two (or more) GPUs.

1. A probe submission, in test mode: every rank sees exactly one GPU, the NCCL rules (no NVLink multicast) reached
   it, the ranks' network is a loopback only, and NCCL's all_reduce works between the ranks.
2. The template and every solution of ``allreduce`` and ``allgather_gemm`` in test mode: the template and the
   correct ones accepted, the wrong ones a wrong answer.
3. The template and each correct solution ``--repeats`` times in ranked mode (a fresh secret seed each time):
   accepted, and each benchmark case's median within ``--spread`` (2%) of the others (max - min over the median);
   each wrong solution once in ranked mode: never accepted.

Prints one line per run (verdict, per-case medians, samples, calls per sample, wall time) and a summary; exit
status 0 when every check holds. Runs in-process through ``runners.entry.run_request``, sandboxed (bubblewrap) when
the machine allows it (``--no-sandbox`` otherwise; the lines say which).

    PYTHONPATH=. python3 benchmarks/multigpu_proof.py                      # world size 2, on GPUs 0 and 1
    PYTHONPATH=. python3 benchmarks/multigpu_proof.py --world-size 4 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from leaderboards.problems import load_problem
from runners.contract import Mode, RunResult, Verdict
from runners.entry import run_request

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = ("allreduce", "allgather_gemm")
PROBE = '''
import os, socket
import torch
import torch.distributed as dist

assert os.environ.get("NCCL_NVLS_ENABLE") == "0", "NCCL_NVLS_ENABLE did not reach the rank"
assert os.environ.get("TORCH_SYMM_MEM_DISABLE_MULTICAST") == "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST missing"
assert os.environ.get("NVSHMEM_DISABLE_NVLS") == "1", "NVSHMEM_DISABLE_NVLS missing"
assert torch.cuda.device_count() == 1, f"rank {os.environ['RANK']} sees {torch.cuda.device_count()} GPUs"
names = sorted(name for _, name in socket.if_nameindex())
assert names == ["lo"], f"the ranks see network interfaces {names}"
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
probe = torch.full((4,), float(dist.get_rank() + 1), device="cuda")
dist.all_reduce(probe)
torch.cuda.synchronize()
world = dist.get_world_size()
assert probe[0].item() == world * (world + 1) / 2, probe
print(f"rank {dist.get_rank()}: {torch.cuda.get_device_name()} {torch.cuda.get_device_properties(0).uuid} "
      f"nccl {torch.cuda.nccl.version()} ok", flush=True)


def custom_kernel(data):
    (x,) = data
    dist.all_reduce(x)
    return x
'''


def run(problem: str, name: str, source: bytes, mode: Mode, world: int, sandbox: bool, seed: int | None) -> RunResult:
    loaded = load_problem(REPO / "problems" / problem)
    request = loaded.request(name, source, mode, device="cuda", device_name=f"cudax{world}", seed=seed)
    return run_request(request, require_sandbox=sandbox)


def line(label: str, result: RunResult, wall: float) -> str:
    cases = [f"{b.stats.median_ns / 1e3:.1f}us(n={b.stats.samples},x{b.calls_per_sample})" for b in result.benchmarks
             if b.stats is not None]  # fmt: skip
    sandboxed = "sandboxed" if result.system.sandboxed else "NOT sandboxed"
    return (f"{label}: {result.verdict.value} ranks={result.system.world_size} {sandboxed} wall={wall:.1f}s "
            f"{' '.join(cases)} | {result.message[:240]}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--spread", type=float, default=0.02)
    parser.add_argument("--no-sandbox", action="store_true", help="run where bubblewrap cannot (said in each line)")
    parser.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    args = parser.parse_args()
    world, sandbox = args.world_size, not args.no_sandbox
    subprocess.run(["nvidia-smi", "--query-gpu=index,name,driver_version,clocks.sm", "--format=csv,noheader"])
    subprocess.run(["nvidia-smi", "topo", "-m"])
    failures: list[str] = []

    t0 = time.time()
    probe = run("allreduce", "probe.py", PROBE.encode(), Mode.TEST, world, sandbox, None)
    print(line("probe (one GPU per rank, NCCL rules, loopback only, all_reduce)", probe, time.time() - t0))
    print("    probe stdout:", probe.stdout.strip().replace("\n", " | ")[:1000])
    if probe.verdict is not Verdict.ACCEPTED:
        failures.append(f"probe: {probe.verdict.value}: {probe.message[:300]} {probe.stderr[-1500:]}")

    for problem in args.problems:
        folder = REPO / "problems" / problem / "solutions"
        solutions = [(REPO / "problems" / problem / "templates" / "pytorch.py", Verdict.ACCEPTED)]
        solutions += [(p, Verdict.ACCEPTED) for p in sorted(folder.glob("correct/*.py"))]
        solutions += [(p, Verdict.WRONG_ANSWER) for p in sorted(folder.glob("wrong/*.py"))]
        for path, expected in solutions:
            t0 = time.time()
            result = run(problem, path.name, path.read_bytes(), Mode.TEST, world, sandbox, None)
            print(line(f"{problem}/{path.parent.name}/{path.name} test", result, time.time() - t0))
            if result.verdict is not expected:
                failures.append(f"{problem}/{path.name} test: {result.verdict.value}, expected {expected.value}: "
                                f"{result.message[:300]} {result.stderr[-1500:]}")  # fmt: skip
        for path, expected in solutions:
            repeats = args.repeats if expected is Verdict.ACCEPTED else 1
            medians: list[list[float]] = []
            for seed in range(1000, 1000 + repeats):
                t0 = time.time()
                result = run(problem, path.name, path.read_bytes(), Mode.RANKED, world, sandbox, seed)
                print(line(f"{problem}/{path.parent.name}/{path.name} ranked seed={seed}", result, time.time() - t0))
                if (result.verdict is Verdict.ACCEPTED) != (expected is Verdict.ACCEPTED):
                    failures.append(f"{problem}/{path.name} ranked: {result.verdict.value}: {result.message[:300]}")
                medians.append([b.stats.median_ns for b in result.benchmarks if b.stats is not None])
            if expected is not Verdict.ACCEPTED or len(medians) < 2 or any(len(m) != len(medians[0]) for m in medians):
                continue
            for case, values in enumerate(zip(*medians, strict=True)):
                spread = (max(values) - min(values)) / statistics.median(values)
                verdict = "ok" if spread <= args.spread else "TOO WIDE"
                print(f"    {problem}/{path.name} case {case + 1}: medians "
                      f"{', '.join(f'{v / 1e3:.1f}' for v in values)} us, spread {spread:.2%} {verdict}")  # fmt: skip
                if spread > args.spread:
                    failures.append(f"{problem}/{path.name} case {case + 1}: medians spread {spread:.2%}")
    print()
    print(f"{len(failures)} failure(s)" if failures else "all checks hold")
    for failure in failures:
        print(" -", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
