"""What an operator's tools ask of the platform: readiness (database, schema, workers) and the figures behind the
metrics (job wait and run time distributions), computed from the stored rows so every process agrees."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import case, func, select, text
from sqlalchemy.exc import DBAPIError

from leaderboards.db import current_revision, head_revision
from leaderboards.models import Job, Leaderboard, Worker
from leaderboards.queue import WORKER_ALIVE_S, serves
from leaderboards.service_base import ServiceBase

WAIT_BUCKETS_S = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0)
RUN_BUCKETS_S = (1.0, 5.0, 15.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


@dataclass(frozen=True)
class Readiness:
    ready: bool
    database: str
    """'ok', or why it cannot be reached."""
    schema: str
    """'ok', or how it differs from the code's migrations."""
    devices_without_worker: tuple[str, ...]
    """Devices of open leaderboards that no live, healthy worker serves."""
    workers_per_device: dict[str, int]
    """For each device of an open leaderboard, how many live, healthy workers serve it."""
    unhealthy_workers: int
    """Live workers that claim no jobs because their runner failed its self-check (``kernelcup admin stats``)."""


@dataclass(frozen=True)
class LiveWorkers:
    """The device lists of the workers that heartbeat and are healthy (an empty list serves every device), and how
    many live ones are not healthy."""

    devices: tuple[tuple[str, ...], ...]
    unhealthy: int

    def count(self, device: str) -> int:
        return sum(1 for served in self.devices if serves(served, device))

    def serve(self, device: str) -> bool:
        return self.count(device) > 0


@dataclass(frozen=True)
class Distribution:
    """A cumulative histogram: ``counts[i]`` observations were <= ``buckets[i]``; ``count`` in all, ``total`` their
    sum."""

    buckets: tuple[float, ...]
    counts: tuple[int, ...]
    count: int
    total: float


@dataclass(frozen=True)
class JobTimes:
    wait: dict[str, Distribution]
    """By device: from submission to the first claim."""
    run: dict[str, Distribution]
    """By device: from the first claim to the end (finished jobs)."""


class StatsMixin(ServiceBase):
    def readiness(self) -> Readiness:
        """Whether this deployment can serve: the database answers, its schema is at the code's head, and every
        device of an open leaderboard has a live, healthy worker; with how many serve each device."""
        try:
            with self.db.transaction() as s:
                s.execute(text("SELECT 1"))
        except DBAPIError as exc:  # the driver's message names the server's address: only its kind is said here
            kind = type(getattr(exc, "orig", None) or exc).__name__
            return Readiness(False, f"unreachable ({kind})", "unknown", (), {}, 0)
        current, head = current_revision(self.db.engine), head_revision()
        schema = "ok" if current == head else f"at revision {current}, not {head}: run `kernelcup db upgrade`"
        now = self.clock()
        with self.db.transaction() as s:
            boards = s.scalars(
                select(Leaderboard.devices).where(Leaderboard.visible.is_(True), Leaderboard.deadline > now)
            ).all()
        wanted = sorted({d for devices in boards for d in devices}, key=str.lower)
        live = self.live_workers()
        counts = {d: live.count(d) for d in wanted}
        missing = tuple(d for d in wanted if not counts[d])
        ready = schema == "ok" and not missing
        return Readiness(ready, "ok", schema, missing, counts, live.unhealthy)

    def live_workers(self) -> LiveWorkers:
        """The workers that can take a job now: a heartbeat within ``WORKER_ALIVE_S``, not stopped, healthy."""
        since = self.clock() - timedelta(seconds=WORKER_ALIVE_S)
        with self.db.transaction() as s:
            rows = s.execute(
                select(Worker.devices, Worker.healthy).where(Worker.heartbeat_at >= since, Worker.stopped_at.is_(None))
            ).all()
        return LiveWorkers(tuple(tuple(devices) for devices, healthy in rows if healthy), sum(not h for _, h in rows))

    def job_times(self) -> JobTimes:
        """Cumulative wait and run time histograms per device over every job (one grouped query each)."""
        return JobTimes(
            wait=self._distribution(Job.created_at, Job.started_at, WAIT_BUCKETS_S),
            run=self._distribution(Job.started_at, Job.finished_at, RUN_BUCKETS_S),
        )

    def _seconds(self, start: Any, end: Any) -> Any:
        if self.db.is_sqlite:
            return (func.julianday(end) - func.julianday(start)) * 86400.0
        return func.extract("epoch", end - start)

    def _distribution(self, start: Any, end: Any, buckets: Sequence[float]) -> dict[str, Distribution]:
        seconds = self._seconds(start, end)
        columns = [func.sum(case((seconds <= b, 1), else_=0)) for b in buckets]
        stmt = (
            select(Job.device, func.count(), func.sum(seconds), *columns)
            .where(start.is_not(None), end.is_not(None))
            .group_by(Job.device)
        )
        with self.db.transaction() as s:
            rows = s.execute(stmt).all()
        return {
            device: Distribution(tuple(buckets), tuple(int(c or 0) for c in counts), int(n), float(total or 0.0))
            for device, n, total, *counts in rows
        }
