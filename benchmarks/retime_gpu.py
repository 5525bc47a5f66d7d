"""Re-timing the finalists end to end on a real GPU (issue 29): identical files tie, three times the work ranks after.

    PYTHONPATH=. .venv/bin/python benchmarks/retime_gpu.py [--rounds 6] [--device H200] [--timeout 540] [--out r.json]

What it does, all of it through the production code paths (``leaderboards/retiming.py``, ``leaderboards/worker.py``,
``runners/launchers/local.py``; sandboxed as a worker serving other people is, whatever KERNELCUP_ALLOW_UNSANDBOXED
says):

1. a fresh SQLite database in a temporary folder; a leaderboard on ``problems/vectoradd`` for this machine's GPU (the
   peaks table's name for GPU 0, e.g. H200; ``--device`` or ``KERNELCUP_TEST_DEVICE`` to name it);
2. three ranked submissions by three accounts: ``alice`` and ``bob`` send byte-identical files (the problem's PyTorch
   solution), ``carol`` one that computes the sum three times (three times the work);
3. two ``Worker``s for that device in this process, each an asyncio task with its own local launcher: on a machine
   with two GPUs or more one on GPU 0 and one on GPU 1 (the launcher's GPU list, what a worker started with
   ``CUDA_VISIBLE_DEVICES=0`` or ``=1`` would have), on a machine of one GPU both on GPU 0 (the machine-wide GPU lock
   makes them take turns: never two timed runs on one GPU). The workers run the three ranked jobs;
4. a re-timing of the top 3 (``--rounds`` rounds, default 6) queued while both workers are alive, so the rounds are
   spread over them; progress lines while they run, and a bound (``--timeout``) on the whole thing;
5. the re-timing view as ``kernelcup leaderboard retiming`` prints it, and which worker ran each round.

It exits 0 when the expectation holds: every round ran, on both workers; alice's and bob's identical files share a
rank (tied); carol's is ranked after them. Otherwise it says what failed and exits 1 (2: it could not run at all).
``--out FILE`` writes everything as JSON. One ranked run takes ~10-20 s, one round three benchmark runs: with the
defaults the whole thing takes a few minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

if TYPE_CHECKING:
    from leaderboards.retiming import RetimingView
    from leaderboards.service import LeaderboardService
    from runners.gpus import Gpu

PROBLEM = REPO / "problems" / "vectoradd"
SOLUTION = PROBLEM / "solutions" / "correct" / "pytorch.py"
THRICE = b"""import torch


def custom_kernel(data):
    a, b, out = data
    for _ in range(3):  # three times the work of the original: re-timing must rank it after it
        torch.add(a, b, out=out)
    return out
"""
BOARD = "vectoradd"
SAME = ("alice", "bob")
"""The two accounts that send byte-identical files."""
SLOW = "carol"
"""The account whose file does three times the work."""


@dataclasses.dataclass(frozen=True)
class WorkerPlan:
    worker_id: str
    gpu_index: int


def plan_workers(gpu_indices: Sequence[int]) -> list[WorkerPlan]:
    """Two workers: one per GPU on a machine of two or more (the first two), both on the one GPU otherwise."""
    if not gpu_indices:
        raise ValueError("no GPU of the device here: this script needs one (it times real runs)")
    if len(gpu_indices) >= 2:
        return [WorkerPlan(f"retime-gpu{i}", i) for i in gpu_indices[:2]]
    only = gpu_indices[0]
    return [WorkerPlan(f"retime-{letter}-gpu{only}", only) for letter in "ab"]


def expectation_failures(view: RetimingView, rounds: int, workers: Sequence[str]) -> list[str]:
    """What the re-timing got wrong (empty: it holds): every round ran, on every one of ``workers``; the identical
    files (``SAME``) share a rank and are marked tied; the file with three times the work (``SLOW``) ranks after."""
    failures = []
    if view.done != rounds:
        failures.append(f"{view.done} of {rounds} rounds ran (the others failed or did not finish in time)")
    ran = {m.machine.split(" (", 1)[0] for row in view.rows for m in row.machines}
    idle = [w for w in workers if w not in ran]
    if idle:
        failures.append(f"no round ran on {', '.join(idle)}: the rounds were not spread over both workers")
    if view.failed:
        failures.append(f"a run failed in some round for submission(s) {', '.join(f'#{s}' for s in view.failed)}")
    by_user = {row.user_name: row for row in view.rows}
    missing = [u for u in (*SAME, SLOW) if u not in by_user]
    if missing:
        failures.append(f"not ranked in the re-timing: {', '.join(missing)}")
        return failures
    a, b, slow = by_user[SAME[0]], by_user[SAME[1]], by_user[SLOW]
    if a.rank != b.rank or not (a.tied and b.tied):
        failures.append(f"the identical files are not tied: {a.user_name} #{a.rank}{'=' if a.tied else ''}, "
                        f"{b.user_name} #{b.rank}{'=' if b.tied else ''}")  # fmt: skip
    if slow.rank <= max(a.rank, b.rank):
        failures.append(f"three times the work is not ranked after the identical files: {slow.user_name} "
                        f"#{slow.rank}, {a.user_name} #{a.rank}, {b.user_name} #{b.rank}")  # fmt: skip
    return failures


def local_device() -> str:
    """The device name to time on: KERNELCUP_TEST_DEVICE, else the peaks table's row for this machine's GPU 0."""
    from runners.devices import peaks_for
    from runners.gpus import list_gpus

    named = os.environ.get("KERNELCUP_TEST_DEVICE")
    if named:
        return named
    gpus = list_gpus()
    row = peaks_for(gpus[0].name) if gpus else None
    if row is None:
        found = gpus[0].name if gpus else "no NVIDIA GPU (nvidia-smi lists none)"
        raise ValueError(f"no GPU of the peaks table here ({found}): pass --device or set KERNELCUP_TEST_DEVICE")
    return row.name


def isolate(root: Path) -> None:
    """This process's kernelcup settings point at ``root`` only: a fresh SQLite database, no routes, no server."""
    for var in ("DATABASE_URL", "KERNELCUP_DATABASE_URL", "KERNELCUP_ROUTES", "KERNELCUP_SERVER"):
        os.environ.pop(var, None)
    os.environ["KERNELCUP_DATA_DIR"] = str(root / "data")
    os.environ["KERNELCUP_CONFIG_DIR"] = str(root / "config")


class Clock:
    """Seconds since the start, for the progress lines."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self) -> float:
        return time.monotonic() - self.start

    def say(self, text: str) -> None:
        print(f"[{self():5.0f} s] {text}", flush=True)


def _jobs_text(service: LeaderboardService, ids: dict[str, int]) -> tuple[str, bool, list[str]]:
    """Each account's ranked job in a word, whether all finished, and the ones that did not succeed."""
    parts, done, bad = [], True, []
    for user, sid in ids.items():
        status = service.submission_status(sid)
        job = status.jobs[0]
        word = job.verdict.value if job.verdict is not None else job.status.value
        parts.append(f"{user} {word}")
        done = done and status.done
        if status.done and not status.accepted:
            bad.append(f"{user} #{sid}: {word} ({job.error or 'no message'})")
    return ", ".join(parts), done, bad


def _rounds(service: LeaderboardService, batch: str) -> list[dict[str, Any]]:
    from sqlalchemy import select

    from leaderboards.models import RetimeRound

    with service.db.transaction() as s:
        rows = s.scalars(select(RetimeRound).where(RetimeRound.batch == batch).order_by(RetimeRound.round)).all()
        return [
            {
                "round": r.round,
                "assigned_worker": r.assigned_worker,
                "worker": r.worker_id,
                "status": r.status,
                "machine": r.machine,
                "order": list(r.entries),
                "attempts": r.attempts,
                "note": r.note,
                "scores_ns": {k: v.get("score_ns") for k, v in (r.results or {}).items()},
            }
            for r in rows
        ]


def _round_counts(rounds: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in rounds:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    running = [f"round {r['round']} on {r['assigned_worker'] or 'any'}" for r in rounds if r["status"] == "running"]
    text = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return text + (f" ({'; '.join(running)})" if running else "")


async def run(args: argparse.Namespace, root: Path, clock: Clock) -> dict[str, Any]:
    from kernelcup.settings import load
    from kernelcup.wiring import open_platform
    from leaderboards.problems import load_problem
    from leaderboards.results import UserRef
    from leaderboards.retiming import RetimeRunner
    from leaderboards.settings import CoreSettings
    from leaderboards.worker import Worker, WorkerSettings
    from runners.contract import Mode
    from runners.devices import device_mismatch
    from runners.gpus import list_gpus, usable
    from runners.launchers.local import LocalLauncher
    from runners.settings import RunnerSettings

    device = args.device or local_device()
    gpus: list[Gpu] = [g for g in usable(list_gpus()) if device_mismatch("cuda", device, g.name) is None]
    plans = plan_workers([g.index for g in gpus])
    by_index = {g.index: g for g in gpus}
    report: dict[str, Any] = {"device": device, "gpus": [f"{g.index}: {g.name}" for g in gpus],
                              "workers": [dataclasses.asdict(p) for p in plans], "rounds": args.rounds}  # fmt: skip
    clock.say(f"device {device}; GPUs {', '.join(report['gpus'])}; workers "
              f"{', '.join(f'{p.worker_id} on GPU {p.gpu_index}' for p in plans)}")  # fmt: skip

    core = CoreSettings(_env_file=None, database_url=None, data_dir=root / "data", rate_limit_per_hour=None,
                        duplicate_window_s=0)  # fmt: skip
    platform = open_platform(core, migrate=True)
    service = platform.service
    service.create_leaderboard(load_problem(PROBLEM), name=BOARD, deadline=datetime.now(UTC) + timedelta(days=30),
                               devices=[device])  # fmt: skip
    same = SOLUTION.read_bytes()
    files = {SAME[0]: same, SAME[1]: same, SLOW: THRICE}
    ids = {user: service.submit(UserRef(user), "solution.py", code, BOARD, [device], Mode.RANKED).submission_id
           for user, code in files.items()}  # fmt: skip
    clock.say(f"three ranked submissions: {', '.join(f'{u} #{i}' for u, i in ids.items())} "
              f"({SAME[0]} and {SAME[1]} byte-identical, {SLOW} three times the work)")  # fmt: skip

    runner = load(RunnerSettings, allow_unsandboxed=False)  # sandboxed like production, whatever the environment says
    launchers = [LocalLauncher(runner, gpus=[by_index[p.gpu_index]]) for p in plans]
    settings = WorkerSettings(_env_file=None, poll_s=0.2, heartbeat_s=5.0, lease_s=60.0)
    workers = []
    for plan, launcher in zip(plans, launchers, strict=True):

        def launcher_for(_device: str, launcher: LocalLauncher = launcher) -> LocalLauncher:
            return launcher

        retimings = RetimeRunner(service, launcher_for, settings.launch_margin_s)
        workers.append(Worker(service, launcher_for, settings, devices=[device], worker_id=plan.worker_id,
                              retimings=retimings))  # fmt: skip
    for plan, launcher in zip(plans, launchers, strict=True):
        clock.say(f"{plan.worker_id}: {await launcher.check()}")  # refuses to go on unsandboxed (LauncherError)

    stop = asyncio.Event()
    tasks = [asyncio.create_task(w.run(stop), name=w.worker_id) for w in workers]
    deadline = clock() + args.timeout
    try:
        report.update(await _drive(args, service, device, ids, [p.worker_id for p in plans], clock, deadline, tasks))
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        for launcher in launchers:
            launcher.close()
        platform.close()
    return report


async def _drive(
    args: argparse.Namespace,
    service: LeaderboardService,
    device: str,
    ids: dict[str, int],
    worker_ids: list[str],
    clock: Clock,
    deadline: float,
    tasks: list[asyncio.Task[Any]],
) -> dict[str, Any]:
    from kernelcup.commands.standings import retiming_table

    out: dict[str, Any] = {}
    last = ""
    while True:  # the ranked runs
        text, done, bad = await asyncio.to_thread(_jobs_text, service, ids)
        if text != last:
            clock.say(f"ranked runs: {text}")
            last = text
        if bad:
            return {"failures": [f"a ranked run did not pass: {b}" for b in bad]}
        if done:
            break
        _check_alive(tasks)
        if clock() > deadline:
            return {"failures": [f"the ranked runs did not finish within --timeout {args.timeout:g} s: {text}"]}
        await asyncio.sleep(2.0)
    out["ranked_s"] = round(clock(), 1)

    queued = await asyncio.to_thread(service.queue_retiming, BOARD, actor="benchmarks/retime_gpu.py", top=3,
                                     rounds=args.rounds, device=device)  # fmt: skip
    if not queued:
        return {**out, "failures": ["nothing was queued: fewer than two ranked entries"]}
    batch = queued[0]
    clock.say(
        f"re-timing queued: batch {batch.batch}, {batch.rounds} rounds of entries "
        f"{', '.join(f'#{e}' for e in batch.entries)}, spread over {', '.join(batch.workers) or 'nobody'}"
    )
    last, started = "", clock()
    while True:
        rounds = await asyncio.to_thread(_rounds, service, batch.batch)
        text = _round_counts(rounds)
        if text != last:
            clock.say(f"re-timing: {text}")
            last = text
        if all(r["status"] in ("done", "failed") for r in rounds):
            break
        _check_alive(tasks)
        if clock() > deadline:
            out["timed_out"] = True
            clock.say(f"--timeout {args.timeout:g} s is over: showing what ran")
            break
        await asyncio.sleep(2.0)
    out["retime_s"] = round(clock() - started, 1)
    out["rounds_run"] = rounds

    from rich.console import Console

    view = await asyncio.to_thread(service.retiming, BOARD, device)
    Console(width=160).print(retiming_table(view))
    print("rounds (order: the submissions in the round's order; the worker that ran it):")
    names = {sid: user for user, sid in ids.items()}
    for r in rounds:
        order = " ".join(f"{names.get(sid, sid)}" for sid in r["order"])
        scores = ", ".join(f"{names.get(int(k), k)} {v:.0f} ns" for k, v in r["scores_ns"].items() if v)
        print(f"  round {r['round']}: {r['status']} on {r['worker'] or '-'} (assigned {r['assigned_worker'] or '-'}); "
              f"order {order}; {scores or r['note'] or ''}")  # fmt: skip
    out["view"] = dataclasses.asdict(view)
    out["failures"] = expectation_failures(view, args.rounds, worker_ids)
    return out


def _check_alive(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks:
        if task.done():
            exc = task.exception()
            raise RuntimeError(f"worker {task.get_name()} stopped early: {exc!r}" if exc else
                               f"worker {task.get_name()} stopped early")  # fmt: skip


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Re-time three ranked vectoradd entries (two identical files, one doing three times the work) with "
        "two workers on this machine's GPU(s), sandboxed; exit 1 unless the identical files tie and the slow one "
        "ranks after them."
    )
    parser.add_argument("--rounds", type=int, default=6, help="Interleaved rounds to queue (2 to 50; default 6).")
    parser.add_argument("--device", default=None, help="The device name (default: KERNELCUP_TEST_DEVICE, else the "
                        "peaks table's name for this machine's GPU 0, e.g. H200).")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=540.0, help="Seconds for the whole run (default 540).")
    parser.add_argument("--out", type=Path, default=None, help="Write the result as JSON to this file.")
    parser.add_argument("--keep", action="store_true", help="Keep the temporary folder (database, job folders).")
    args = parser.parse_args(argv)
    if not 2 <= args.rounds <= 50:
        parser.error(f"--rounds must be from 2 to 50, not {args.rounds}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    clock = Clock()
    from runners.launchers.base import LauncherError

    root = Path(tempfile.mkdtemp(prefix="kernelcup-retime-"))
    isolate(root)
    try:
        report = asyncio.run(run(args, root, clock))
    except (ValueError, RuntimeError, OSError, LauncherError) as exc:  # no GPU; unsandboxed; a worker died
        print(f"could not run: {exc}", file=sys.stderr)
        report = {"error": str(exc), "failures": [f"could not run: {exc}"]}
        code = 2
    else:
        code = 1 if report.get("failures") else 0
    report["seconds"] = round(clock(), 1)
    report["passed"] = code == 0
    if args.keep:
        print(f"kept {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    for failure in report.get("failures", []):
        print(f"FAILED: {failure}")
    if code == 0:
        print(f"PASSED in {report['seconds']:.0f} s: {SAME[0]} and {SAME[1]} tied, {SLOW} ranked after them, "
              f"rounds spread over {len(report['workers'])} workers")  # fmt: skip
    return code


if __name__ == "__main__":
    raise SystemExit(main())
