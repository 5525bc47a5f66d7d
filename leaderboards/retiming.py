"""Re-timing the finalists side by side, on every machine that serves the device (issue 29).

A leaderboard's live ranking rests on each entry's own ranked runs, made at different times, perhaps on different
machines. Before the standings are trusted (an admin asks: ``kernelcup leaderboard retime NAME``, the admin API), the
top K entries of a device are timed again **interleaved**: R rounds, each one benchmark run of every entry, in turn,
on one machine, on the same inputs (one seed for the batch); the order alternates from round to round (A B C, then
C B A) so that a machine warming up or drifting within a round favours nobody.

**Spread over the machines.** Each round is a row of ``retime_rounds`` with its own lease. When the rounds are queued,
round r is assigned to the r-th (mod n) live worker serving the device, so with two machines half the rounds run on
each; a worker takes its own rounds and unassigned ones, and another worker's once that worker stops heartbeating
(nothing waits on a machine that died). A worker that serves the device alone (a single-machine deployment) runs every
round: the entries are then interleaved on the same GPU in alternating rounds, and the result says it ran on one
machine. Like system tests and rejudges, rounds run only when no job of anyone's is runnable (``Worker``).

**Pooled, with each machine's figure kept.** An entry's re-timed score is the geometric mean of its scores over all the
rounds that ran; each machine's figure (the same over that machine's rounds) is kept beside it, so a machine that
reads slower or faster shows. Two entries are told apart by the compare machinery (``runners.compare.
overall_ratio``): the paired ratio of their scores over the rounds they share (a round's two runs come from one
machine, one after the other, so a machine's offset cancels in their ratio), with its 95% interval, widened on a GPU to
at least the cases' own noise. An entry's rank is 1 + the number of entries told apart from it and faster: entries
none of which is clearly faster share a rank, as in the final standings.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from leaderboards.db import lease_now
from leaderboards.errors import InvalidChange, NotFound
from leaderboards.holdout import allowed_wait_s, could_not_run, held_row, launch_quietly, top_entries
from leaderboards.models import Leaderboard, RetimeRound, Submission, User
from leaderboards.models import Worker as WorkerRow
from leaderboards.queue import WORKER_ALIVE_S, serves, store_retried
from leaderboards.recording import RecordingMixin, harness_device
from leaderboards.rejudge import runtime_of, runtime_text
from leaderboards.scoring import aggregate
from leaderboards.snapshot import problem_from_snapshot
from leaderboards.standings import Entry, rank
from runners.contract import Limits, Mode, RankingRule, RunRequest, RunResult, Verdict
from runners.launchers.base import Launcher

DEFAULT_RETIME_ROUNDS = 6
MAX_RETIME_ROUNDS = 50
RETIME_ATTEMPTS = 3
LEASE_MARGIN_S = 120.0


class RoundStatus:
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    """Could not run, not the entries' fault (the runner failed on every attempt): an admin reads the note."""


@dataclass(frozen=True)
class RetimeQueued:
    leaderboard: str
    device: str
    batch: str
    rounds: int
    entries: tuple[int, ...]
    """The submissions re-timed, best first as the live ranking had them."""
    workers: tuple[str, ...]
    """The live workers serving the device the rounds were spread over (none: whichever worker comes)."""


@dataclass(frozen=True)
class RetimeClaim:
    round_id: int
    token: str
    worker_id: str
    device: str
    runs: tuple[tuple[int, RunRequest], ...]
    """(submission id, its benchmark request), in the round's order."""


@dataclass(frozen=True)
class MachineFigure:
    machine: str
    """The worker that ran the rounds and the runtime it reported, e.g. 'gpu-box-2 (torch 2.6.0)'."""
    rounds: int
    score_ns: float


@dataclass(frozen=True)
class RetimedRow:
    rank: int
    tied: bool
    """Another entry shares the rank: the compare machinery cannot tell them apart (95%)."""
    user_name: str
    submission_id: int
    score_ns: float
    """The geometric mean of the entry's scores over every round that ran."""
    low_ns: float
    high_ns: float
    rounds: int
    machines: tuple[MachineFigure, ...]


@dataclass(frozen=True)
class RetimingView:
    leaderboard: str
    device: str
    batch: str
    rounds: int
    """Rounds queued."""
    done: int
    """Rounds that ran."""
    machines: int
    """How many machines (workers) ran them."""
    rows: tuple[RetimedRow, ...]
    failed: tuple[int, ...] = ()
    """Entries whose benchmark run failed in some round (they are not ranked here; a moderator looks)."""
    running: int = 0
    """Rounds a worker holds now (the admin page's progress; queued = rounds - done - running - rounds_failed)."""
    rounds_failed: int = 0
    """Rounds that could not run (the runner failed on every attempt, or the lease ran out)."""

    @property
    def queued(self) -> int:
        """Rounds no worker has taken yet."""
        return self.rounds - self.done - self.running - self.rounds_failed


def _alive(s: Session, device: str, now: datetime) -> list[str]:
    since = now - timedelta(seconds=WORKER_ALIVE_S)
    rows = s.scalars(select(WorkerRow).where(WorkerRow.heartbeat_at >= since, WorkerRow.stopped_at.is_(None))).all()
    return sorted(w.id for w in rows if serves(w.devices, device))


def _geomean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def queue_rounds(
    s: Session, lb: Leaderboard, device: str, ids: Sequence[int], rounds: int, trigger: str, now: datetime
) -> RetimeQueued:
    """Queue ``rounds`` rounds of the submissions ``ids`` (best first) on ``device``: one batch, one seed, the order
    alternating, round r assigned to the r-th live worker serving the device."""
    workers = _alive(s, device, now)
    batch, seed = secrets.token_hex(8), secrets.randbelow(2**31 - 1)
    for r in range(rounds):
        s.add(RetimeRound(
            leaderboard_id=lb.id, device=device, batch=batch, seed=seed, round=r, trigger=trigger,
            entries=list(ids) if r % 2 == 0 else list(ids)[::-1], status=RoundStatus.QUEUED, attempts=0,
            assigned_worker=workers[r % len(workers)] if workers else None, created_at=now,
        ))  # fmt: skip
    return RetimeQueued(lb.name, device, batch, rounds, tuple(ids), tuple(workers))


def deadline_rounds(s: Session, lb: Leaderboard, device: str) -> list[RetimeRound]:
    """The rounds of the deadline's re-timing of ``device`` (none before it was queued)."""
    stmt = select(RetimeRound).where(
        RetimeRound.leaderboard_id == lb.id, RetimeRound.device == device, RetimeRound.trigger == "deadline"
    )
    return list(s.scalars(stmt.order_by(RetimeRound.round)))


class RetimingMixin(RecordingMixin):
    """Queue, claim and record re-timing rounds; read the pooled result."""

    def queue_retiming(
        self,
        name: str,
        *,
        actor: str,
        top: int = 10,
        rounds: int = DEFAULT_RETIME_ROUNDS,
        device: str | None = None,
        trigger: str = "admin",
    ) -> tuple[RetimeQueued, ...]:
        """Queue ``rounds`` interleaved rounds of each device's ``top`` entries (one device, given one), spread over
        the live workers serving it. A device with fewer than two entries has nothing to compare and is skipped."""
        if not 2 <= top <= 1000:
            raise InvalidChange(f"--top must be from 2 to 1000 (two entries at least to compare), not {top}.")
        if not 2 <= rounds <= MAX_RETIME_ROUNDS:
            raise InvalidChange(f"--rounds must be from 2 to {MAX_RETIME_ROUNDS}, not {rounds}.")
        now = self.clock()
        queued = []
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            for dev in self._check_devices(lb, [device]) if device else list(lb.devices):
                ids = [best.submission_id for best, _ in top_entries(s, lb, dev, top)]
                if len(ids) < 2:
                    continue
                queued.append(queue_rounds(s, lb, dev, ids, rounds, trigger, now))
            self._audit(s, actor, "retime", lb.name, top=top, rounds=rounds, device=device,
                        batches=[q.batch for q in queued])  # fmt: skip
        return tuple(queued)

    def claim_retime_round(
        self, worker_id: str, devices: Sequence[str] = (), *, run_margin_s: float = 0.0
    ) -> RetimeClaim | None:
        """Take the oldest runnable round for ``devices`` (all when empty) that is this worker's, nobody's, or that of
        a worker that stopped heartbeating; its lease covers every run of the round, each with the wait the worker
        allows beyond its limit (``run_margin_s``), on the database's clock (``lease_now``)."""
        with self.db.transaction() as s:
            now = lease_now(s, self.clock)
            runnable = or_(
                RetimeRound.status == RoundStatus.QUEUED,
                and_(RetimeRound.status == RoundStatus.RUNNING, RetimeRound.lease_expires_at < now),
            )
            stmt = select(RetimeRound).where(runnable)
            if devices:
                stmt = stmt.where(RetimeRound.device.in_(list(devices)))
            alive: dict[str, list[str]] = {}
            for row in s.scalars(stmt.order_by(RetimeRound.id).limit(64).with_for_update(skip_locked=True)):
                owner = row.assigned_worker
                if owner not in (None, worker_id) and owner in alive.setdefault(row.device, _alive(s, row.device, now)):
                    continue  # another live machine's round: spread, not raced for
                return self._claim(s, row, worker_id, now, run_margin_s)
            return None

    def _claim(
        self, s: Session, row: RetimeRound, worker_id: str, now: datetime, run_margin_s: float = 0.0
    ) -> RetimeClaim | None:
        if row.attempts >= RETIME_ATTEMPTS:  # its last holder died: not the entries' fault
            row.status, row.note, row.finished_at = RoundStatus.FAILED, "the lease ran out", now
            return None
        lb = s.get(Leaderboard, row.leaderboard_id)
        assert lb is not None
        problem = problem_from_snapshot(lb.task)
        limits = Limits(max_submission_bytes=self.settings.max_submission_bytes)
        runs = []
        for sid in row.entries:
            sub = s.get(Submission, sid)
            if sub is None or sub.deleted:
                continue
            request = problem.request(sub.file_name, sub.code.content, Mode.BENCHMARK,
                                      device=harness_device(row.device), device_name=row.device, seed=row.seed,
                                      limits=limits)  # fmt: skip
            runs.append((sid, self._within_board_limit(request).model_copy(update={"nonce": secrets.token_hex(16)})))
        token = f"{worker_id}#{secrets.token_hex(8)}"
        row.status, row.lease_owner, row.attempts = RoundStatus.RUNNING, token, row.attempts + 1
        bound = sum(r.time_limit_s() + run_margin_s for _, r in runs) + LEASE_MARGIN_S
        row.lease_expires_at = now + timedelta(seconds=bound)
        return RetimeClaim(row.id, token, worker_id, row.device, tuple(runs))

    def record_retime_round(
        self, claim: RetimeClaim, results: dict[int, RunResult] | None, *, machine: str = "", error: str = ""
    ) -> bool:
        """Store a round's results (each entry's per-case statistics and score; a run that failed its checks as
        failed), or that it could not run (``error``: queued again until its attempts are spent). Fenced by the
        claim's lease: False when another holder took it over."""
        now = self.clock()
        with self.db.transaction() as s:
            row = held_row(s, RetimeRound, claim.round_id, claim.token)
            if row is None:
                return False
            if results is None:
                could_not_run(row, RETIME_ATTEMPTS, error, now)
                return True
            lb = s.get(Leaderboard, row.leaderboard_id)
            rule = RankingRule(lb.ranking_by) if lb is not None else RankingRule.GEOMEAN
            stored: dict[str, Any] = {}
            for sid, result in results.items():
                stats = [b.stats for b in result.benchmarks if b.stats is not None and b.stats.median_ns > 0]
                if not result.passed or len(stats) != len(dict(claim.runs)[sid].benchmarks):
                    stored[str(sid)] = {"passed": False, "verdict": result.verdict.value}
                    continue
                score = aggregate([st.median_ns for st in stats], rule)
                stored[str(sid)] = {"passed": True, "score_ns": score, "stats": [st.model_dump() for st in stats]}
            row.results, row.status, row.finished_at = stored, RoundStatus.DONE, now
            row.worker_id, row.machine, row.note = claim.worker_id, machine[:200] or None, None
            return True

    def retiming(self, name: str, device: str | None = None) -> RetimingView:
        """The latest re-timing of a device (``device`` may be left out on a board of one device): each entry's pooled
        score over the rounds that ran, its 95% interval, each machine's figure, and ranks with ties."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=True)
            (dev,) = self._check_devices(lb, [device] if device else None)
            batch = s.scalar(
                select(RetimeRound.batch)
                .where(RetimeRound.leaderboard_id == lb.id, RetimeRound.device == dev)
                .order_by(RetimeRound.id.desc())
                .limit(1)
            )
            if batch is None:
                raise NotFound(f"{lb.name!r} has not been re-timed on {dev}: kernelcup leaderboard retime {lb.name}")
            rows = s.scalars(select(RetimeRound).where(RetimeRound.batch == batch).order_by(RetimeRound.round)).all()
            names = dict(
                s.execute(
                    select(Submission.id, User.name)
                    .join(User, User.id == Submission.user_id)
                    .where(Submission.id.in_(list(rows[0].entries)))
                ).all()
            )
            return _pooled(lb.name, dev, batch, rows, names, RankingRule(lb.ranking_by))


WRONG_IN_A_ROUND = (Verdict.WRONG_ANSWER.value, Verdict.RUNTIME_ERROR.value)
"""A re-timing round's verdicts that are the entry's own failure on fresh inputs (its answer, or its crash): such an
entry leaves the final standings, as one that fails a held-out case does. A timeout or a lack of memory on one machine
may be the machine's: the entry is then not re-timed, and the board ranks by runs."""


def wrong_in_a_round(rows: Sequence[RetimeRound]) -> list[int]:
    """The entries that answered wrong (or crashed) in a round that ran."""
    done = [r for r in rows if r.status == RoundStatus.DONE and r.results]
    return sorted({int(k) for r in done for k, v in (r.results or {}).items() if v.get("verdict") in WRONG_IN_A_ROUND})


def round_entries(rows: Sequence[RetimeRound], names: dict[int, str]) -> tuple[list[Entry], list[int]]:
    """Each entry of a re-timing as the standings rank one (``Entry.rounds``: the rounds it ran in, each with the
    machine, its score and its cases' statistics), and the entries whose run failed in some round (left out)."""
    done = [r for r in rows if r.status == RoundStatus.DONE and r.results]
    ids = list(rows[0].entries) if rows else []
    failed = sorted({int(k) for r in done for k, v in (r.results or {}).items() if not v.get("passed")})
    entries = []
    for sid in ids:
        if sid in failed:
            continue
        rounds = tuple(
            {"round": r.round, "machine": _machine(r), "score_ns": v["score_ns"], "stats": v["stats"]}
            for r in done
            if (v := (r.results or {}).get(str(sid)))
        )
        entries.append(Entry(0, names.get(sid, "?"), sid, "", (), rounds=rounds))
    return entries, failed


def _machine(row: RetimeRound) -> str:
    return f"{row.worker_id} ({row.machine})" if row.machine else str(row.worker_id)


def _pooled(
    board: str, device: str, batch: str, rows: Sequence[RetimeRound], names: dict[int, str], rule: RankingRule
) -> RetimingView:
    done = [r for r in rows if r.status == RoundStatus.DONE and r.results]
    machines_count = len({r.worker_id for r in done})
    entries, failed = round_entries(rows, names)
    ranked = [e for e in entries if len(e.rounds) >= 2]
    out = []
    for st in rank(ranked, rule, gpu=device != "cpu") if len(done) >= 2 and ranked else ():
        figures: dict[str, list[float]] = {}
        for r in st.entry.rounds:
            figures.setdefault(str(r["machine"]), []).append(float(r["score_ns"]))
        per_machine = tuple(MachineFigure(m, len(vs), _geomean(vs)) for m, vs in sorted(figures.items()))
        low, high = st.interval_ns
        out.append(RetimedRow(st.rank, st.tied, st.entry.user_name, st.entry.submission_id, st.score_ns, low, high,
                              len(st.entry.rounds), per_machine))  # fmt: skip
    running = sum(r.status == RoundStatus.RUNNING for r in rows)
    lost = sum(r.status == RoundStatus.FAILED for r in rows)
    return RetimingView(board, device, batch, len(rows), len(done), machines_count, tuple(out), tuple(failed), running,
                        lost)  # fmt: skip


class RetimeRunner:
    """Runs one re-timing round when a worker has nothing else to do (after jobs and system tests)."""

    def __init__(self, service: RetimingMixin, launcher_for: Callable[[str], Launcher], margin_s: float) -> None:
        self.service = service
        self.launcher_for = launcher_for
        self.margin_s = margin_s

    async def run_one(self, worker_id: str, devices: Sequence[str], db: Callable[..., Awaitable[Any]]) -> bool:
        """Claim and run one round (each entry's benchmark run, in the round's order, one after another on this
        machine); False when none was runnable."""
        wait_s = allowed_wait_s(self.launcher_for, devices, self.margin_s)
        claim: RetimeClaim | None = await db(self.service.claim_retime_round, worker_id, devices, run_margin_s=wait_s)
        if claim is None:
            return False
        results: dict[int, RunResult] = {}
        machine = ""
        what = f"re-timing round {claim.round_id}"
        for sid, request in claim.runs:
            result, error = await launch_quietly(self.launcher_for, claim.device, request, self.margin_s, what)
            if result is None:
                await db(
                    store_retried, self.service.record_retime_round, claim, None, error=error, what=f"storing {what}"
                )
                return True
            results[sid] = result
            machine = machine or runtime_text(runtime_of(result.system))
        await db(
            store_retried, self.service.record_retime_round, claim, results, machine=machine, what=f"storing {what}"
        )
        return True
