"""Rejudge and drift (issue 29): entries run again on what the runners are now, and what changed.

- **Rejudge**: an admin (``kernelcup leaderboard rejudge NAME --top K --device D``, the admin API, ``/admin
  rejudge``) queues one ``rejudges`` row per entry: the top K of each device's ranking. Workers take them only when
  no job and no system test is runnable (``Worker`` asks ``RejudgeRunner.run_one`` last), so they wait below every
  person's submission. A rejudge runs the entry's ranked file as its ranked job did (public and secret-seed run, the
  same secret inputs) and keeps the new ranked score, its **drift** (new / old - 1) and the runtime it ran on. The
  entry's stored runs stay its score: a rejudge moves no ranking (the old results are the history, the rejudge what
  they read now); a moderator acts on what it shows (``leaderboards/moderation.py``).
- **Runtime changes**: every stored run reports its runtime (driver, CUDA, torch, Triton, nvcc, GPU). The first run
  on a device with a runtime that device never reported before queues a re-timing (trigger ``runtime``) of the top
  ``retime_top`` entries of each leaderboard on that device. Each run times the reference too (the runner's baseline
  cache is per runtime), so a re-timing also measures the reference's drift against the entry's stored run; a
  reference that moved more than :data:`REFERENCE_DRIFT_ALERT` opens an admin alert, audited, that holds the board's
  announcements until an admin resolves it. The board shows each re-timed entry's "re-timed on torch X: -1.2%".

A rejudge that could not run (the runner failed) goes back to the queue, up to :data:`REJUDGE_ATTEMPTS` claims.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from leaderboards import pooling, ranking
from leaderboards.db import lease_now
from leaderboards.errors import InvalidChange, NotFound
from leaderboards.holdout import (
    allowed_wait_s,
    could_not_run,
    held_row,
    launch_quietly,
    oldest_runnable,
    top_entries,
)
from leaderboards.models import AdminAlert, Job, Leaderboard, Rejudge, Run, RunnerSystem, Submission
from leaderboards.queue import store_retried
from leaderboards.recording import RecordingMixin
from leaderboards.results import RecordedRun
from leaderboards.scoring import run_score
from leaderboards.snapshot import problem_from_snapshot
from runners.contract import Mode, RankingRule, RunRequest, RunResult, SystemInfo
from runners.launchers.base import Launcher

log = logging.getLogger(__name__)

REJUDGE_ATTEMPTS = 3
LEASE_MARGIN_S = 120.0
"""What a rejudge's lease adds to its two runs' time limits (launch, transfer, storing)."""
REFERENCE_DRIFT_ALERT = 0.05
"""A reference whose medians moved more than this (5%) on a new runtime opens an admin alert."""
RUNTIME_KEYS = ("gpu_name", "driver", "cuda", "torch", "triton", "nvcc")
"""What of a run's system info is its runtime: a change of any re-times what stands."""
RUNTIME_ACTOR = "runtime"
MAX_LIST = 500


class RejudgeStatus:
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    """Could not run, not the entry's fault (the runner failed on every attempt): an admin reads the note."""


def runtime_of(system: SystemInfo | dict[str, Any]) -> dict[str, str]:
    """The runtime part of a run's system info (the keys it reported)."""
    raw = system.model_dump() if isinstance(system, SystemInfo) else system
    return {k: str(raw[k]) for k in RUNTIME_KEYS if raw.get(k)}


def runtime_fingerprint(runtime: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(runtime, sort_keys=True).encode()).hexdigest()


def runtime_text(runtime: dict[str, str] | None) -> str:
    """'torch 2.6.0' (or the driver, or the GPU, when a run reported no torch)."""
    runtime = runtime or {}
    for key, name in (("torch", "torch"), ("triton", "Triton"), ("driver", "driver"), ("gpu_name", "")):
        if runtime.get(key):
            return f"{name} {runtime[key]}".strip()
    return "this runner"


def drift_text(drift: float) -> str:
    """'-1.2%' with a true minus sign, '+0.4%'."""
    return f"{drift * 100:+.1f}%".replace("-", "\u2212")


def announcements_held(change: Any) -> ColumnElement[bool]:
    """SQL: an open alert that holds announcements is on ``change``'s leaderboard (``change``: ``RankChange``)."""
    return exists().where(
        AdminAlert.leaderboard_id == change.leaderboard_id,
        AdminAlert.resolved_at.is_(None),
        AdminAlert.holds_announcements.is_(True),
    )


def reference_drift(old: RunResult, new: RunResult) -> float | None:
    """The reference baseline's drift from ``old`` to ``new`` (geometric mean over the cases both timed of new / old,
    minus 1), None when either did not time it."""
    medians = []
    for result in (old, new):
        ref = next((b for b in result.baselines if b.label == "reference"), None)
        medians.append(ref.case_medians_ns if ref is not None else [])
    ratios = [n / o for o, n in zip(medians[0], medians[1], strict=False) if o and n and o > 0 and n > 0]
    if not ratios:
        return None
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) - 1.0


@dataclass(frozen=True)
class RejudgeView:
    rejudge_id: int
    leaderboard: str
    device: str
    submission_id: int
    user_name: str
    trigger: str
    status: str
    old_score_ns: float | None
    new_score_ns: float | None
    drift: float | None
    passed: bool | None
    reference_drift: float | None
    runtime: str | None
    requested_by: str
    created_at: datetime
    finished_at: datetime | None

    @property
    def text(self) -> str:
        return rejudge_text(self.status, self.runtime, self.passed, self.drift)


def rejudge_text(status: str, runtime: str | None, passed: bool | None, drift: float | None) -> str:
    """What the board shows of a rejudge: 're-timed on torch 2.6.0: -1.2%' (or why there is no figure)."""
    if status != RejudgeStatus.DONE:
        return f"rejudge {status}"
    where = f"re-timed on {runtime or 'this runner'}"
    if not passed:
        return f"{where}: failed its checks"
    return f"{where}: {drift_text(drift)}" if drift is not None else where


def drift_texts(s: Session, leaderboard_id: int, device: str) -> dict[int, str]:
    """Submission id -> :func:`rejudge_text` of its latest finished rejudge on ``device``; entries never rejudged are
    absent."""
    latest = (
        select(func.max(Rejudge.id))
        .where(Rejudge.leaderboard_id == leaderboard_id, Rejudge.device == device, Rejudge.status == RejudgeStatus.DONE)
        .group_by(Rejudge.submission_id)
    )
    rows = s.scalars(select(Rejudge).where(Rejudge.id.in_(latest))).all()
    return {r.submission_id: rejudge_text(r.status, r.runtime, r.passed, r.drift) for r in rows}


@dataclass(frozen=True)
class RejudgeClaim:
    rejudge_id: int
    token: str
    device: str
    public: RunRequest
    secret: RunRequest
    rule: RankingRule


@dataclass(frozen=True)
class AlertView:
    alert_id: int
    leaderboard: str | None
    device: str | None
    kind: str
    message: str
    holds_announcements: bool
    created_at: datetime
    resolved_at: datetime | None
    resolved_by: str | None


def _alert_view(a: AdminAlert, board: str | None) -> AlertView:
    return AlertView(a.id, board, a.device, a.kind, a.message, a.holds_announcements, a.created_at, a.resolved_at,
                     a.resolved_by)  # fmt: skip


def _entry_job(s: Session, submission_id: int, device: str) -> tuple[Job, RunResult] | None:
    """The entry's latest ranked job on ``device`` with a passed public run, and that run's result."""
    row = s.execute(
        select(Job, Run)
        .join(Run, and_(Run.job_id == Job.id, Run.secret.is_(False), Run.passed.is_(True)))
        .where(Job.submission_id == submission_id, Job.device == device)
        .order_by(Job.id.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    try:
        return row[0], RunResult.model_validate(row[1].result)
    except ValueError:
        return None


class RejudgeMixin(RecordingMixin):
    """Queue, claim and record rejudges; notice runtime changes; admin alerts."""

    def queue_rejudges(
        self, name: str, *, actor: str, top: int = 10, device: str | None = None, trigger: str = "admin"
    ) -> tuple[RejudgeView, ...]:
        """Queue a rejudge of the ``top`` entries of each device (or of ``device``). An entry with a rejudge still
        queued or running is not queued twice."""
        if not 1 <= top <= 1000:
            raise InvalidChange(f"--top must be from 1 to 1000, not {top}.")
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            devices = self._check_devices(lb, [device]) if device else list(lb.devices)
            queued = self._queue(s, lb, devices, top, actor, trigger)
            self._audit(s, actor, "rejudge", lb.name, top=top, devices=devices, trigger=trigger, entries=len(queued))
            return tuple(self._rejudge_view(s, r, lb.name) for r in queued)

    def _queue(
        self, s: Session, lb: Leaderboard, devices: Sequence[str], top: int, actor: str, trigger: str
    ) -> list[Rejudge]:
        queued = []
        for dev in devices:
            for best, _user in top_entries(s, lb, dev, top):
                pending = s.scalar(
                    select(Rejudge.id).where(
                        Rejudge.submission_id == best.submission_id,
                        Rejudge.device == dev,
                        Rejudge.status.in_((RejudgeStatus.QUEUED, RejudgeStatus.RUNNING)),
                    )
                )
                if pending is not None:
                    continue
                row = Rejudge(
                    leaderboard_id=lb.id, device=dev, submission_id=best.submission_id, trigger=trigger,
                    status=RejudgeStatus.QUEUED, attempts=0, old_score=best.score, requested_by=actor,
                    created_at=self.clock(),
                )  # fmt: skip
                s.add(row)
                queued.append(row)
        s.flush()
        return queued

    def _rejudge_view(self, s: Session, r: Rejudge, board: str) -> RejudgeView:
        sub = s.get(Submission, r.submission_id)
        return RejudgeView(
            r.id, board, r.device, r.submission_id, sub.user.name if sub else "", r.trigger, r.status, r.old_score,
            r.new_score, r.drift, r.passed, r.reference_drift, r.runtime, r.requested_by, r.created_at, r.finished_at,
        )  # fmt: skip

    def rejudges(self, name: str, device: str | None = None, *, limit: int = 100) -> tuple[RejudgeView, ...]:
        """A leaderboard's rejudges, newest first (the history of what its entries read when run again)."""
        if not 1 <= limit <= MAX_LIST:
            raise InvalidChange(f"limit must be from 1 to {MAX_LIST}, not {limit}.")
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name)
            stmt = select(Rejudge).where(Rejudge.leaderboard_id == lb.id)
            if device is not None:
                (dev,) = self._check_devices(lb, [device])
                stmt = stmt.where(Rejudge.device == dev)
            rows = s.scalars(stmt.order_by(Rejudge.id.desc()).limit(limit)).all()
            return tuple(self._rejudge_view(s, r, lb.name) for r in rows)

    def drift_notes(self, name: str, device: str | None = None) -> dict[int, str]:
        """Submission id -> what the board shows of its latest finished rejudge on ``device`` (the board's only one
        when None): "re-timed on torch 2.6.0: -1.2%". Entries never rejudged are absent."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=False)
            (dev,) = self._check_devices(lb, [device] if device else None)
            return drift_texts(s, lb.id, dev)

    # -- workers --------------------------------------------------------------------------------------------------

    def claim_rejudge(
        self, worker_id: str, devices: Sequence[str] = (), *, run_margin_s: float = 0.0
    ) -> RejudgeClaim | None:
        """Take the oldest runnable rejudge for ``devices`` (all when empty); its lease covers both runs, each with
        the wait the worker allows beyond its limit (``run_margin_s``), on the database's clock (``lease_now``)."""
        with self.db.transaction() as s:
            now = lease_now(s, self.clock)
            row = oldest_runnable(s, Rejudge, devices, now)
            if row is None:
                return None
            sub = s.get(Submission, row.submission_id)
            if row.attempts >= REJUDGE_ATTEMPTS or sub is None or sub.deleted:
                row.status, row.finished_at = RejudgeStatus.FAILED, now
                row.note = "the lease ran out" if sub is not None and not sub.deleted else "the submission was deleted"
                return None
            problem = problem_from_snapshot(sub.leaderboard.task)
            public, secret = (
                self._request(problem, sub, row.device, Mode.RANKED, kind, secrets.token_hex(16))
                for kind in (False, True)
            )
            token = f"{worker_id}#{secrets.token_hex(8)}"
            row.status, row.lease_owner, row.attempts = RejudgeStatus.RUNNING, token, row.attempts + 1
            bound = public.time_limit_s() + secret.time_limit_s() + 2 * run_margin_s + LEASE_MARGIN_S
            row.lease_expires_at = now + timedelta(seconds=bound)
            return RejudgeClaim(row.id, token, row.device, public, secret, RankingRule(sub.leaderboard.ranking_by))

    def record_rejudge(
        self, claim: RejudgeClaim, results: tuple[RunResult, RunResult] | None, *, error: str = ""
    ) -> bool:
        """Store a rejudge's new ranked score and drift (``results``: public, secret), or that it could not run
        (``error``: queued again until its attempts are spent). Fenced by the claim's lease."""
        now = self.clock()
        with self.db.transaction() as s:
            row = held_row(s, Rejudge, claim.rejudge_id, claim.token)
            if row is None:
                return False
            if results is None:
                could_not_run(row, REJUDGE_ATTEMPTS, error, now)
                return True
            public, secret = results
            runtime = runtime_of(public.system)
            row.status, row.finished_at, row.note = RejudgeStatus.DONE, now, None
            row.system, row.runtime = public.system.model_dump(mode="json"), runtime_text(runtime)
            row.passed = public.passed and secret.passed
            if row.passed:
                pooled = pooling.ranked_score(public, secret, claim.rule)
                pub, sec = run_score(public, claim.rule), run_score(secret, claim.rule)
                fallback = ranking.ranked_score(pub, sec) if pub is not None and sec is not None else None
                row.new_score = pooled.score_ns if pooled is not None else fallback
                if row.new_score is not None and row.old_score:
                    row.drift = row.new_score / row.old_score - 1.0
            entry = _entry_job(s, row.submission_id, row.device)
            if entry is not None:
                row.reference_drift = reference_drift(entry[1], public)
            if row.reference_drift is not None and abs(row.reference_drift) > REFERENCE_DRIFT_ALERT:
                self._reference_alert(s, row)
            return True

    def _reference_alert(self, s: Session, row: Rejudge) -> None:
        """Open (once per leaderboard and device while unresolved) an alert that holds announcements."""
        lb = s.get(Leaderboard, row.leaderboard_id)
        assert lb is not None and row.reference_drift is not None
        open_one = s.scalar(
            select(AdminAlert.id).where(
                AdminAlert.leaderboard_id == lb.id, AdminAlert.device == row.device,
                AdminAlert.kind == "reference_drift", AdminAlert.resolved_at.is_(None),
            )
        )  # fmt: skip
        if open_one is not None:
            return
        message = (
            f"The reference of {lb.name!r} on {row.device} ran {drift_text(row.reference_drift)} on {row.runtime} "
            f"(more than {REFERENCE_DRIFT_ALERT:.0%}): scores from before and after the change may not compare. "
            "Announcements of this board are held until an admin resolves this alert."
        )
        s.add(AdminAlert(leaderboard_id=lb.id, device=row.device, kind="reference_drift", message=message,
                         holds_announcements=True, created_at=self.clock()))  # fmt: skip
        self._audit(s, RUNTIME_ACTOR, "alert", lb.name, device=row.device, kind="reference_drift",
                    drift=round(row.reference_drift, 4), runtime=row.runtime)  # fmt: skip
        log.warning("admin alert: %s", message)

    # -- runtime changes ------------------------------------------------------------------------------------------

    def record_run(
        self,
        job_id: int,
        result: RunResult,
        *,
        secret: bool = False,
        owner: str | None = None,
        session: Session | None = None,
    ) -> RecordedRun:
        """``RecordingMixin.record_run``, then :meth:`note_runtime` of the run's device, in the same transaction."""
        recorded = super().record_run(job_id, result, secret=secret, owner=owner, session=session)
        if recorded.created and result.system.ran:
            self.note_runtime(recorded.device, result.system, session=session)
        return recorded

    def note_runtime(self, device: str, system: SystemInfo, *, session: Session | None = None) -> str | None:
        """Remember ``device``'s runtime; the first time a device reports a runtime other than its earlier ones,
        queue the re-timing of each leaderboard's top ``retime_top`` entries there. Returns the new runtime's text
        when it queued a re-timing."""
        runtime = runtime_of(system)
        if not runtime:
            return None
        fingerprint = runtime_fingerprint(runtime)
        with self._tx(session) as s:
            known = s.scalar(
                select(RunnerSystem.id).where(RunnerSystem.device == device, RunnerSystem.fingerprint == fingerprint)
            )
            if known is not None:
                return None
            earlier = s.scalar(select(RunnerSystem.id).where(RunnerSystem.device == device).limit(1))
            try:
                with s.begin_nested():  # two workers may meet one new runtime at once: the first one queues
                    s.add(RunnerSystem(device=device, fingerprint=fingerprint, system=runtime, created_at=self.clock()))
            except IntegrityError:
                return None
            if earlier is None or self.settings.retime_top == 0:
                return None  # the device's first runtime: nothing ran on another to compare with
            boards = s.scalars(select(Leaderboard).order_by(Leaderboard.id)).all()
            count = 0
            for lb in boards:
                if device in lb.devices:
                    count += len(self._queue(s, lb, [device], self.settings.retime_top, RUNTIME_ACTOR, "runtime"))
            self._audit(s, RUNTIME_ACTOR, "runtime_changed", device, runtime=runtime, retimed=count)
            return runtime_text(runtime)

    # -- alerts -----------------------------------------------------------------------------------------------------

    def alerts(self, *, include_resolved: bool = False, limit: int = 100) -> tuple[AlertView, ...]:
        """Admin alerts, newest first (the open ones, or all)."""
        with self.db.transaction() as s:
            stmt = select(AdminAlert, Leaderboard.name).outerjoin(
                Leaderboard, Leaderboard.id == AdminAlert.leaderboard_id
            )
            if not include_resolved:
                stmt = stmt.where(AdminAlert.resolved_at.is_(None))
            rows = s.execute(stmt.order_by(AdminAlert.id.desc()).limit(min(max(limit, 1), MAX_LIST))).all()
            return tuple(_alert_view(a, board) for a, board in rows)

    def resolve_alert(self, alert_id: int, *, actor: str, reason: str) -> AlertView:
        """Close an alert (what it held, announcements, goes on); audited with the reason."""
        if not reason.strip():
            raise InvalidChange("Say why the alert is resolved (a reason): the audit log keeps it.")
        with self.db.transaction() as s:
            alert = s.get(AdminAlert, alert_id)
            if alert is None:
                raise NotFound(f"There is no alert {alert_id}; `kernelcup admin alerts` lists the open ones.")
            if alert.resolved_at is not None:
                raise InvalidChange(f"Alert {alert_id} was resolved already, by {alert.resolved_by}.")
            alert.resolved_at, alert.resolved_by = self.clock(), actor
            board = s.get(Leaderboard, alert.leaderboard_id) if alert.leaderboard_id is not None else None
            self._audit(s, actor, "resolve_alert", f"alert:{alert_id}", reason=reason.strip()[:1000],
                        leaderboard=board.name if board else None)  # fmt: skip
            return _alert_view(alert, board.name if board else None)


class RejudgeRunner:
    """Runs one rejudge when a worker has nothing else to do (after jobs and system tests)."""

    def __init__(self, service: RejudgeMixin, launcher_for: Callable[[str], Launcher], margin_s: float) -> None:
        self.service = service
        self.launcher_for = launcher_for
        self.margin_s = margin_s

    async def run_one(self, worker_id: str, devices: Sequence[str], db: Callable[..., Awaitable[Any]]) -> bool:
        """Claim and run one rejudge (its public, then its secret-seed run); False when none was runnable."""
        wait_s = allowed_wait_s(self.launcher_for, devices, self.margin_s)
        claim: RejudgeClaim | None = await db(self.service.claim_rejudge, worker_id, devices, run_margin_s=wait_s)
        if claim is None:
            return False
        what = f"rejudge {claim.rejudge_id}"
        public, error = await launch_quietly(self.launcher_for, claim.device, claim.public, self.margin_s, what)
        secret = None
        if public is not None:
            secret, error = await launch_quietly(self.launcher_for, claim.device, claim.secret, self.margin_s, what)
        results = (public, secret) if public is not None and secret is not None else None
        await db(store_retried, self.service.record_rejudge, claim, results, error=error, what=f"storing {what}")
        return True
