"""How much two evaluations of one file differ, and what the compare and the ranked score make of it (issues 16, 28).

    # On a GPU machine: ranked scores of one file under two accounts, and compares of identical files, interleaved
    PYTHONPATH=. python3 benchmarks/compare_noise.py --session [--problem problems/vectoradd] [--file triton.py]
        [--trials 20] [--rounds 4] [--budget-s 450] [--skip-ranked] [--skip-compares] [--json OUT.json]

    # Anywhere, no GPU: the same statistics over the noise model of tests/timing_noise.py
    PYTHONPATH=. python3 benchmarks/compare_noise.py --simulate [--sim-trials 1000]

    # The old way: whole compares through the command line, of --file against itself (and --against)
    PYTHONPATH=. python3 benchmarks/compare_noise.py [--repeats 5] [--rounds 20] [--against pytorch.py]

``--session`` runs, in one process with pre-started interpreters (as a worker does), ``--trials`` times: one
**ranked trial** (two accounts submit ``--file``: each gets a public ranked run and a secret-seed ranked run; the
ranked score of each account, pooled by ``leaderboards.pooling`` and, beside it, the slower run's as before issue 28)
and one **compare** of two identical files (``a.py`` and ``b.py``, the same bytes) through ``runners.compare.compare``
with at most ``--rounds`` rounds. It then prints: every trial's ranked scores and whether the two accounts agree
within 1%; every compare's overall ratio and per-case intervals; per case how many intervals held 1; and the spread
of every case's median over all the session's evaluations against the process offset the statistics assume
(``runners.compare.process_offset_sd``). It starts no new trial after ``--budget-s`` seconds.

Time on the lent H200 (vectoradd, three cases, sandboxed, pre-started interpreters): 16 runs took 44 s, about 2.7 s
a run, so a ranked trial (4 runs) takes about 11 s and a compare 5.5 s a round: ``--skip-compares --trials 20`` about
220 s, ``--skip-ranked --trials 20 --rounds 4`` about 440 s. docs/measurement.md ("Comparing two kernels", "The
ranked score") holds the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from leaderboards.pooling import ranked_score  # noqa: E402
from runners.compare import compare, process_offset_sd  # noqa: E402
from runners.contract import Comparison, Mode, RankingRule, RunRequest, RunResult  # noqa: E402


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
    cases = ", ".join(f"{c['ratio']:.4f} ({c['ci_low']:.4f}–{c['ci_high']:.4f})" for c in got["cases"])
    interval = f"{got['ci_low']:.4f} – {got['ci_high']:.4f}"
    return f"| {label} | {got['rounds']} | {got['ratio']:.4f} | {interval} | {cases} | {wall:.0f} s |"


def via_cli(args: argparse.Namespace) -> None:
    solutions = args.problem.resolve() / "solutions" / "correct"
    a = solutions / args.file
    pairs = [(a, a)] * args.repeats + ([(a, solutions / args.against)] if args.against else [])
    start, done = time.monotonic(), list[dict[str, Any]]()
    print("| A vs B | rounds run | A/B ratio | 95% interval | per case (interval) | wall |\n|---|---|---|---|---|---|")
    for x, y in pairs:
        if time.monotonic() - start > args.budget_s:
            print(f"(budget of {args.budget_s:.0f} s spent: {len(pairs) - len(done)} compares not started)")
            break
        got, wall = one(args.problem, x, y, args.rounds, args.device)
        label = f"{x.name} vs the same file" if x == y else f"{x.name} vs {y.name}"
        print(row(label, got, wall), flush=True)
        done.append({"a": x.name, "b": y.name, "wall_s": wall, "comparison": got})
    same = [d["comparison"] for d in done if d["a"] == d["b"] and d["comparison"].get("ratio") is not None]
    good = [c for c in same if c["ci_low"] <= 1 <= c["ci_high"]]
    print(f"\nidentical files with an overall interval holding 1: {len(good)} of {len(same)}")
    if args.json:
        args.json.write_text(json.dumps(done, indent=2))


def _holds(c: Any) -> bool:
    return bool(c.ci_low <= 1.0 <= c.ci_high)


def _summary(compares: Sequence[Comparison], ranked: Sequence[dict[str, Any]]) -> list[str]:
    """The closing lines: per case how many identical-file intervals held 1, overall too; how many ranked trials
    agreed within 1%, pooled and by the slower run."""
    lines = []
    good = [c for c in compares if c.ratio is not None]
    if good:
        k = len(good[0].cases)
        per_case = [sum(_holds(c.cases[i]) for c in good) for i in range(k)]
        lines.append(
            f"identical files: the interval held 1 in {sum(_holds(c) for c in good)} of {len(good)} compares overall; "
            f"per case {', '.join(f'{h} of {len(good)}' for h in per_case)}"
        )
    if ranked:
        pooled = sum(abs(t["pooled"][0] / t["pooled"][1] - 1) <= 0.01 for t in ranked)
        slower = sum(abs(t["slower"][0] / t["slower"][1] - 1) <= 0.01 for t in ranked)
        flagged = sum(t["flagged"] for t in ranked)
        lines.append(
            f"two accounts, one file: ranked scores within 1% in {pooled} of {len(ranked)} trials pooled, "
            f"{slower} of {len(ranked)} by the slower run; {flagged} account-runs flagged"
        )
    return lines


def session(args: argparse.Namespace) -> None:
    from leaderboards.problems import load_problem
    from runners.entry import run_request
    from runners.entry.prestart import Prestarter
    from runners.settings import RunnerSettings

    problem = load_problem(args.problem.resolve())
    content = (args.problem.resolve() / "solutions" / "correct" / args.file).read_bytes()
    settings = RunnerSettings(time_baselines=False)  # KERNELCUP_* from the environment, as a runner reads them
    prestart = Prestarter(settings) if settings.prestart else None
    medians: list[list[float]] = []

    def run(request: RunRequest) -> RunResult:
        result = run_request(request, settings=settings, prestart=prestart)
        if not result.passed:
            raise SystemExit(f"{request.submission.name} ({request.mode.value}): {result.verdict}: {result.message}")
        medians.append([b.stats.median_ns for b in result.benchmarks if b.stats is not None])
        return result

    def request(name: str, mode: Mode, seed: int | None) -> RunRequest:
        return problem.request(name, content, mode, device=args.device, device_name=args.device, seed=seed)

    rule = request("x.py", Mode.RANKED, None).ranking_by
    start = time.monotonic()
    compares: list[Comparison] = []
    ranked: list[dict[str, Any]] = []
    print("| trial | account A: pooled (slower run) | account B: pooled (slower run) | A/B pooled | A/B slower | "
          "notes |\n|---|---|---|---|---|---|", flush=True)  # fmt: skip
    try:
        for trial in range(args.trials):
            if time.monotonic() - start > args.budget_s:
                print(f"(budget of {args.budget_s:.0f} s spent after {trial} trials)")
                break
            if not args.skip_ranked:
                scores = {}
                for account in ("a.py", "b.py") if trial % 2 == 0 else ("b.py", "a.py"):
                    public = run(request(account, Mode.RANKED, None))
                    secret = run(request(account, Mode.RANKED, secrets.randbelow(2**31)))
                    got = ranked_score(public, secret, rule)
                    assert got is not None and public.score_ns and secret.score_ns
                    scores[account] = (got, max(public.score_ns, secret.score_ns))
                (pa, sa), (pb, sb) = scores["a.py"], scores["b.py"]
                ranked.append({"pooled": (pa.score_ns, pb.score_ns), "slower": (sa, sb),
                               "flagged": pa.flagged + pb.flagged, "notes": [pa.note, pb.note]})  # fmt: skip
                notes = "; ".join(n for n in (pa.note, pb.note) if n)[:160]
                print(f"| {trial + 1} | {pa.score_ns / 1e3:.3f} µs ({sa / 1e3:.3f}) | {pb.score_ns / 1e3:.3f} µs "
                      f"({sb / 1e3:.3f}) | {pa.score_ns / pb.score_ns:.4f} | {sa / sb:.4f} | {notes} |",
                      flush=True)  # fmt: skip
            if not args.skip_compares:
                got_c = compare(request("a.py", Mode.BENCHMARK, None), request("b.py", Mode.BENCHMARK, None), run,
                                rounds=args.rounds)  # fmt: skip
                compares.append(got_c)
                print(row(f"compare {trial + 1}: a.py vs b.py (the same bytes)", got_c.model_dump(), 0.0), flush=True)
    finally:
        if prestart is not None:
            prestart.close()
    print()
    print("\n".join(_summary(compares, ranked)))
    if medians and all(len(m) == len(medians[0]) for m in medians):
        print("\n| case | evaluations | median of medians | sd across evaluations | model (process offset) |")
        print("|---|---|---|---|---|")
        for i, case in enumerate(request("x.py", Mode.BENCHMARK, None).benchmarks):
            xs = [m[i] for m in medians]
            mid = statistics.median(xs)
            sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
            print(f"| {case} | {len(xs)} | {mid / 1e3:.3f} µs | {sd:.0f} ns ({sd / mid:.2%}) | "
                  f"{process_offset_sd(mid) * mid:.0f} ns ({process_offset_sd(mid):.2%}) |")  # fmt: skip
    print(f"\nwall: {time.monotonic() - start:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"compares": [c.model_dump(mode="json") for c in compares],
                                         "ranked": ranked, "medians_ns": medians}, indent=2))  # fmt: skip


def simulate(args: argparse.Namespace) -> None:
    """The statistics over the noise model of tests/timing_noise.py (the lent H100's measured offsets, per-sample
    noise and, with outliers, one run in 50 reading a case 1-2 µs slow)."""
    sys.path.insert(0, str(REPO / "tests"))
    from timing_noise import OUTLIERS, QUIET, run_result  # type: ignore[import-not-found]

    from runners.contract import SubmissionFile

    shapes = {
        "vectoradd (8, 127, 520 µs)": (8e3, 127e3, 520e3),
        "3, 8, 30, 200, 500 µs": (3e3, 8e3, 30e3, 200e3, 500e3),
        "30, 200, 500 µs": (30e3, 200e3, 500e3),
    }
    print("| cases | noise | within 1%: pooled | within 1%: slower run | bias: pooled | bias: slower run | flagged |")
    print("|---|---|---|---|---|---|---|")
    for label, true in shapes.items():
        truth = math.exp(math.fsum(math.log(t) for t in true) / len(true))
        for noise_name, noise in (("offsets", QUIET), ("offsets + outliers", OUTLIERS)):
            rng = random.Random(28)
            within = [0, 0]
            logs: list[list[float]] = [[], []]
            flags = 0
            for _ in range(args.sim_trials):
                both = []
                for _account in range(2):
                    public, secret = (run_result(rng, true, noise, Mode.RANKED) for _ in range(2))
                    got = ranked_score(public, secret, RankingRule.GEOMEAN)
                    assert got is not None and public.score_ns and secret.score_ns
                    flags += got.flagged
                    pair = (got.score_ns, max(public.score_ns, secret.score_ns))
                    both.append(pair)
                    for w in (0, 1):
                        logs[w].append(math.log(pair[w] / truth))
                for w in (0, 1):
                    within[w] += abs(both[0][w] / both[1][w] - 1) <= 0.01
            n = args.sim_trials
            bias = [statistics.fmean(v) for v in logs]
            print(f"| {label} | {noise_name} | {within[0] / n:.1%} | {within[1] / n:.1%} | {bias[0]:+.2%} | "
                  f"{bias[1]:+.2%} | {flags / (2 * n):.1%} |")  # fmt: skip
    sys.path.insert(0, str(REPO / "tests" / "runners"))
    from harness_helpers import SUBMISSIONS, build_request  # type: ignore[import-not-found]

    base = build_request(SUBMISSIONS / "correct_torch.py", Mode.BENCHMARK, device="cuda")
    print("\n| compares of | cases | noise | interval holds 1, per case | overall | called (interval below 1) |")
    print("|---|---|---|---|---|---|")
    trials = max(1, args.sim_trials // 5)
    for label, true_a, true_b in (
        ("identical files", (3e3, 8e3, 30e3, 200e3, 500e3), (3e3, 8e3, 30e3, 200e3, 500e3)),
        ("A 3% faster from 30 µs", (3e3, 8e3, 30e3 * 0.97, 200e3 * 0.97, 500e3 * 0.97), (3e3, 8e3, 30e3, 200e3, 500e3)),
        ("A 3% faster on the large", (8e3, 127e3 * 0.97, 520e3 * 0.97), (8e3, 127e3, 520e3)),
    ):
        for noise_name, noise in (("offsets", QUIET), ("offsets + outliers", OUTLIERS)):
            rng = random.Random(16)
            a = base.model_copy(update={"benchmarks": [{"i": i} for i in range(len(true_a))]})
            b = a.model_copy(update={"submission": SubmissionFile(name="b.py", content=a.submission.content)})

            def run(request: RunRequest, ta: Sequence[float] = true_a, tb: Sequence[float] = true_b,
                    nz: Any = noise, r: random.Random = rng) -> RunResult:  # fmt: skip
                return run_result(r, ta if request.submission.name != "b.py" else tb, nz, cases=request.benchmarks)

            done = [compare(a, b, run) for _ in range(trials)]
            held = [sum(_holds(c.cases[i]) for c in done) / trials for i in range(len(true_a))]
            overall = sum(_holds(c) for c in done) / trials
            called = sum((c.ci_high or 2.0) < 1.0 for c in done) / trials
            sizes = ", ".join(f"{t / 1e3:g}" for t in true_b)
            print(f"| {label} ({trials}) | {sizes} µs | {noise_name} | {', '.join(f'{h:.1%}' for h in held)} | "
                  f"{overall:.1%} | {called:.1%} |", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--session", action="store_true", help="Ranked trials and compares on this machine's GPU.")
    parser.add_argument("--simulate", action="store_true", help="The statistics over the noise model (no GPU).")
    parser.add_argument("--problem", type=Path, default=REPO / "problems" / "vectoradd")
    parser.add_argument("--file", default="triton.py", help="A solution under the problem's solutions/correct/.")
    parser.add_argument("--against", default=None, help="(CLI mode) a second solution, compared once with --file.")
    parser.add_argument("--repeats", type=int, default=5, help="(CLI mode) identical-file compares to run.")
    parser.add_argument("--trials", type=int, default=20, help="(session) ranked trials and compares to run.")
    parser.add_argument("--rounds", type=int, default=None, help="The most rounds of each compare (20; session 4).")
    parser.add_argument("--skip-ranked", action="store_true", help="(session) compares only.")
    parser.add_argument("--skip-compares", action="store_true", help="(session) ranked trials only.")
    parser.add_argument("--sim-trials", type=int, default=1000, help="(simulate) trials per row.")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget-s", type=float, default=None, help="Start nothing new after this (450; CLI 480).")
    parser.add_argument("--json", type=Path, default=None, help="Also write every result here.")
    args = parser.parse_args()
    if args.simulate:
        simulate(args)
        return
    if args.session:
        args.rounds = args.rounds or 4
        args.budget_s = args.budget_s if args.budget_s is not None else 450.0
        session(args)
        return
    args.rounds = args.rounds or 20
    args.budget_s = args.budget_s if args.budget_s is not None else 480.0
    via_cli(args)


if __name__ == "__main__":
    main()
