"""Admin functions of the service: leaderboards, submissions, users, limits, pause, statistics.

Who may call them is the surfaces' check (e.g. the Discord admin role); ``actor`` is recorded in the audit log.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from leaderboards import ranking
from leaderboards.board_hacks import merge_hack_cases
from leaderboards.errors import (
    AlreadyExists,
    InvalidChange,
    LiveChangeNeedsForce,
    NeedsForce,
    SubmissionNotFound,
)
from leaderboards.models import (
    BestScore,
    Job,
    JobStatus,
    Leaderboard,
    Run,
    Submission,
    User,
    Worker,
)
from leaderboards.problem_rules import devices_issue, leaderboard_name_issue, name_key, text_issue
from leaderboards.problems import Problem
from leaderboards.queue import WORKER_ALIVE_S
from leaderboards.results import (
    ImpossibleRun,
    LeaderboardSummary,
    LeaderboardUpdate,
    LiveImpact,
    QueueStats,
    SetEntry,
    SyncAction,
    SyncItem,
    UsageStats,
    UserRef,
    UserView,
    WorkerView,
)
from leaderboards.service_base import ServiceBase
from leaderboards.snapshot import (
    TaskSnapshot,
    fingerprint,
    incomparable_changes,
    snapshot,
)
from leaderboards.thaw import thaw_missing
from runners.contract import SPEED_OF_LIGHT, Verdict

IMPOSSIBLE_SHOWN = 5
"""How many of the speed-of-light gate's newest rejections the usage stats list."""
LIVE_USERS_SHOWN = 10
"""How many users a change to a live leaderboard names (the rest are counted)."""
AUDITED_FIELDS = ("name", "deadline", "devices", "description", "visible", "problem", "problem_set")
"""The leaderboard fields whose old and new values an update's audit entry records."""


def _audited(lb: Leaderboard) -> dict[str, Any]:
    values = {f: getattr(lb, f) for f in AUDITED_FIELDS}
    values["code_public_after_deadline"] = lb.code_public_after_deadline
    values["deadline"] = lb.deadline.astimezone(UTC).isoformat() if lb.deadline else None
    values["devices"] = list(lb.devices)
    values["fingerprint"] = lb.fingerprint
    return values


def _old_and_new(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, Any]]:
    keys = [k for k in after if before.get(k) != after[k]]
    return {"old": {k: before.get(k) for k in keys}, "new": {k: after[k] for k in keys}}


class _NothingApplied(Exception):
    """Rolls back a problem-set sync in which an entry needs --force."""


class AdminMixin(ServiceBase):
    """Admin functions of ``LeaderboardService``; the caller has checked the permission."""

    def create_leaderboard(
        self,
        problem: Problem,
        *,
        name: str | None = None,
        deadline: datetime,
        devices: Sequence[str],
        creator: str = "",
        description: str | None = None,
        visible: bool = True,
        rate_limit_per_hour: int | None = None,
        problem_set: str | None = None,
        code_public_after_deadline: bool = False,
    ) -> LeaderboardSummary:
        name = name or problem.name
        self._check_admin_values(deadline, devices, rate_limit_per_hour, new_name=name, description=description)
        with self.db.transaction() as s:
            lb = self._create(
                s,
                problem,
                name=name,
                deadline=deadline,
                devices=devices,
                creator=creator,
                description=description,
                visible=visible,
                rate_limit_per_hour=rate_limit_per_hour,
                problem_set=problem_set,
                code_public_after_deadline=code_public_after_deadline,
            )
            return self._summary(lb)

    def _create(
        self,
        s: Session,
        problem: Problem,
        *,
        name: str,
        deadline: datetime,
        devices: Sequence[str],
        creator: str,
        description: str | None = None,
        visible: bool = True,
        rate_limit_per_hour: int | None = None,
        problem_set: str | None = None,
        code_public_after_deadline: bool = False,
    ) -> Leaderboard:
        self._check_name_free(s, name)
        snap = snapshot(problem)
        lb = Leaderboard(
            name=name,
            description=description if description is not None else problem.task.description,
            deadline=deadline.astimezone(UTC),
            task=snap.stored(),
            problem=problem.name,
            lang=problem.task.lang.value,
            devices=list(dict.fromkeys(devices)),
            ranking_by=problem.task.ranking_by.value,
            secret_seed=secrets.randbits(62),
            creator=creator,
            visible=visible,
            paused=False,
            rate_limit_per_hour=rate_limit_per_hour,
            fingerprint=fingerprint(snap),
            problem_set=problem_set,
            code_public_after_deadline=code_public_after_deadline,
        )
        s.add(lb)
        s.flush()
        self._audit(s, creator or "system", "create_leaderboard", name, fingerprint=lb.fingerprint)
        return lb

    def _check_name_free(self, s: Session, name: str, *, renaming: int | None = None) -> None:
        """Refuse a new name that is taken, or that differs from a taken one only in case or look-alike characters
        (``name_key``): two leaderboards people cannot tell apart. ``renaming``: the id of the leaderboard that
        takes the name (its own name does not count)."""
        key = name_key(name)
        for existing in s.scalars(select(Leaderboard.name).where(Leaderboard.id != (renaming or 0))):
            if existing == name:
                raise AlreadyExists(f"A leaderboard named {name!r} already exists.")
            if name_key(existing) == key:
                raise AlreadyExists(
                    f"A leaderboard named {existing!r} already exists; {name!r} differs from it only in case or "
                    "look-alike characters. Choose another name."
                )

    def _check_admin_values(
        self,
        deadline: datetime | None,
        devices: Sequence[str] | None,
        rate: int | None,
        *,
        new_name: str | None = None,
        description: str | None = None,
    ) -> None:
        issue = text_issue(description) if description is not None else None
        if issue:
            raise InvalidChange(f"The description {issue}.")
        if new_name is not None:
            issue = leaderboard_name_issue(new_name)
            if issue:
                raise InvalidChange(issue[0].upper() + issue[1:] + ".")
        if deadline is not None and deadline.tzinfo is None:
            raise InvalidChange("The deadline needs a time zone (use UTC).")
        if devices is not None:
            issue = devices_issue(devices) if devices else "a leaderboard needs at least one device"
            if issue:
                raise InvalidChange(issue[0].upper() + issue[1:] + ".")
        if rate is not None and rate < 1:
            raise InvalidChange("A rate limit is a positive number of submissions per hour (or none).")

    def update_leaderboard(
        self,
        name: str,
        *,
        new_name: str | None = None,
        problem: Problem | None = None,
        deadline: datetime | None = None,
        devices: Sequence[str] | None = None,
        description: str | None = None,
        visible: bool | None = None,
        force: bool = False,
        actor: str = "",
        code_public_after_deadline: bool | None = None,
    ) -> LeaderboardUpdate:
        """Change a leaderboard. A new problem whose reference, benchmarks, language, ranking rule or world size
        differ needs ``force=True`` (raises ``NeedsForce`` naming why otherwise) and starts the ranking over.

        Renaming it (``new_name``) or moving its deadline into the past while it is live (queued or running jobs,
        ranked entries) also needs ``force=True``: otherwise ``LiveChangeNeedsForce`` says how many jobs and
        entries it affects and whose, and nothing changes. The audit entry records who, what, the old and the new
        values, and whether it was forced over a live competition."""
        renaming = new_name is not None and new_name != name
        self._check_admin_values(
            deadline, devices, None, description=description, new_name=new_name if renaming else None
        )
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            if problem is not None:
                reasons = incomparable_changes(TaskSnapshot.load(lb.task), snapshot(problem))
                if reasons and not force:
                    raise NeedsForce(name, reasons)
            live_changes = self._live_changes(lb, new_name=new_name, deadline=deadline)
            impact = self._live_impact(s, lb) if live_changes else None
            if impact is not None and impact.live and not force:
                raise LiveChangeNeedsForce(name, " and ".join(live_changes), impact)
            before = _audited(lb)
            changed: list[str] = []
            if new_name is not None and new_name != lb.name:
                self._check_name_free(s, new_name, renaming=lb.id)
                lb.name = new_name
                changed.append("name")
            more, reset = self._update(
                s,
                lb,
                problem=problem,
                deadline=deadline,
                devices=devices,
                description=description,
                visible=visible,
                code_public_after_deadline=code_public_after_deadline,
            )
            changed += more
            if changed:
                lb.updated_at = self.clock()
                live = {"live_jobs": impact.live_jobs, "ranked_entries": impact.ranked_entries} if impact else None
                self._audit(
                    s,
                    actor or "system",
                    "update_leaderboard",
                    name,
                    changed=changed,
                    reset=reset,
                    **_old_and_new(before, _audited(lb)),
                    forced_while_live=bool(impact and impact.live),
                    live=live,
                )
            s.flush()
            return LeaderboardUpdate(self._summary(lb), tuple(changed), reset)

    def _live_changes(self, lb: Leaderboard, *, new_name: str | None, deadline: datetime | None) -> list[str]:
        """The changes asked of ``lb`` that need force while it is live: a rename, a deadline moved into the past."""
        out = []
        if new_name is not None and new_name != lb.name:
            out.append(f"renaming it to {new_name!r}")
        now = self.clock()
        if deadline is not None and deadline <= now < lb.deadline:
            out.append(f"moving its deadline into the past ({deadline.astimezone(UTC):%Y-%m-%d %H:%M} UTC)")
        return out

    def _live_impact(self, s: Session, lb: Leaderboard) -> LiveImpact:
        """The leaderboard's queued and running jobs, its ranked entries (not banned users') and whose they are."""
        live = (
            select(Submission.user_id)
            .join(Job, Job.submission_id == Submission.id)
            .where(
                Submission.leaderboard_id == lb.id,
                Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)),
            )
        )
        ranked = (
            select(BestScore.user_id)
            .join(User, User.id == BestScore.user_id)
            .where(BestScore.leaderboard_id == lb.id, User.is_banned.is_(False))
        )
        jobs = s.scalar(select(func.count()).select_from(live.subquery()))
        entries = s.scalar(select(func.count()).select_from(ranked.subquery()))
        whose = User.id.in_(live.union(ranked).scalar_subquery())
        users = s.scalar(select(func.count()).select_from(User).where(whose)) or 0
        names = tuple(s.scalars(select(User.name).where(whose).order_by(User.name).limit(LIVE_USERS_SHOWN)))
        return LiveImpact(int(jobs or 0), int(entries or 0), names, max(0, int(users) - len(names)))

    def _update(
        self,
        s: Session,
        lb: Leaderboard,
        *,
        problem: Problem | None = None,
        deadline: datetime | None = None,
        devices: Sequence[str] | None = None,
        description: str | None = None,
        visible: bool | None = None,
        problem_set: str | None = None,
        code_public_after_deadline: bool | None = None,
    ) -> tuple[list[str], bool]:
        """Apply the changes (the caller has checked that incomparable ones are forced); the fields that changed,
        and whether the ranking started over."""
        changed: list[str] = []
        reset = False
        if problem is not None:
            snap, old = snapshot(problem), TaskSnapshot.load(lb.task)
            snap, hack_cases = merge_hack_cases(s, lb, snap)  # a re-sync keeps the held-out cases hacks added
            reasons = incomparable_changes(old, snap)
            if snap != old:
                changed.append("task")
                changed += hack_cases
                if description is None and lb.description != problem.task.description:
                    description = problem.task.description
                lb.task, lb.lang, lb.ranking_by = snap.stored(), problem.task.lang.value, problem.task.ranking_by.value
                lb.problem = problem.name
            if reasons:
                lb.fingerprint = fingerprint(snap)
                ranking.rebuild(s, lb)  # old runs no longer match the fingerprint: the ranking starts over
                reset = True
        for attr, value in (
            ("deadline", deadline.astimezone(UTC) if deadline else None),
            ("devices", list(dict.fromkeys(devices)) if devices is not None else None),
            ("description", description),
            ("visible", visible),
            ("problem_set", problem_set),
            ("code_public_after_deadline", code_public_after_deadline),
        ):
            if value is not None and getattr(lb, attr) != value:
                setattr(lb, attr, value)
                changed.append(attr.replace("_", " "))
        if changed:
            lb.updated_at = self.clock()
        return changed, reset

    def apply_problem_set(
        self, problem_set: str, entries: Sequence[SetEntry], *, force: bool = False, actor: str = ""
    ) -> tuple[tuple[SyncItem, ...], bool]:
        """Create or update one leaderboard per entry, all in one transaction: every entry is applied or none.

        Returns what each entry does and whether it was applied. Nothing is applied when an entry needs ``force``:
        its scores would become incomparable (reference, benchmarks, language, ranking rule or world size changed) or
        another problem set owns the leaderboard. A ``UserError`` (e.g. a look-alike of an existing name) also leaves
        everything as it was.
        """
        for e in entries:
            self._check_admin_values(e.deadline, e.devices, None, new_name=e.name)
        items: list[SyncItem] = []
        try:
            with self.db.transaction() as s:
                for e in entries:
                    items.append(self._apply_entry(s, problem_set, e, force=force, actor=actor))
                if any(i.action is SyncAction.NEEDS_FORCE for i in items):
                    raise _NothingApplied
        except _NothingApplied:
            return tuple(items), False
        return tuple(items), True

    def _apply_entry(self, s: Session, problem_set: str, e: SetEntry, *, force: bool, actor: str) -> SyncItem:
        lb = s.scalar(select(Leaderboard).where(Leaderboard.name == e.name).with_for_update())
        if lb is None:
            self._create(
                s,
                e.problem,
                name=e.name,
                deadline=e.deadline,
                devices=e.devices,
                creator=actor,
                problem_set=problem_set,
                code_public_after_deadline=e.code_public_after_deadline,
            )
            return SyncItem(e.name, SyncAction.CREATED)
        reasons = incomparable_changes(TaskSnapshot.load(lb.task), snapshot(e.problem))
        if lb.problem_set is not None and lb.problem_set != problem_set:
            reasons.insert(0, f"it belongs to problem set {lb.problem_set!r} (--force moves it to {problem_set!r})")
        live_changes = self._live_changes(lb, new_name=None, deadline=e.deadline)
        impact = self._live_impact(s, lb) if live_changes else None
        if impact is not None and impact.live:
            reasons.append(f"{live_changes[0]} affects {impact.text()}")
        if reasons and not force:
            return SyncItem(e.name, SyncAction.NEEDS_FORCE, reasons=tuple(reasons))
        before = _audited(lb)
        changed, reset = self._update(
            s,
            lb,
            problem=e.problem,
            deadline=e.deadline,
            devices=e.devices,
            problem_set=problem_set,
            code_public_after_deadline=e.code_public_after_deadline,
        )
        if not changed:
            return SyncItem(e.name, SyncAction.UNCHANGED)
        self._audit(
            s,
            actor or "system",
            "update_leaderboard",
            e.name,
            changed=changed,
            reset=reset,
            **_old_and_new(before, _audited(lb)),
            forced_while_live=bool(impact and impact.live),
            live={"live_jobs": impact.live_jobs, "ranked_entries": impact.ranked_entries} if impact else None,
            problem_set=problem_set,
        )
        return SyncItem(e.name, SyncAction.UPDATED, tuple(changed), ranking_reset=reset)

    def task_snapshot(self, name: str) -> TaskSnapshot:
        """The problem a leaderboard stores (task.yml, files, templates), hidden ones too: for admins."""
        with self.db.transaction() as s:
            return TaskSnapshot.load(self._leaderboard(s, name).task)

    def delete_leaderboard(self, name: str, *, actor: str = "") -> None:
        """Delete a leaderboard with all its submissions, jobs and runs."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            s.delete(lb)
            self._audit(s, actor or "system", "delete_leaderboard", name)

    def delete_submission(self, submission_id: int, *, actor: str = "", user: UserRef | None = None) -> None:
        """Remove a submission from every ranking (soft delete) and cancel its unfinished jobs.

        With ``user`` it is the author deleting their own; without, an admin (permission checked by the surface).
        """
        now = self.clock()
        with self.db.transaction() as s:
            sub = self._submission(s, submission_id)
            if user is not None and sub.user.identity != user.identity:
                raise SubmissionNotFound(submission_id, mine=True)
            if sub.deleted:
                raise SubmissionNotFound(submission_id)
            s.execute(select(Leaderboard.id).where(Leaderboard.id == sub.leaderboard_id).with_for_update())
            sub.deleted, sub.deleted_at = True, now
            s.execute(
                update(Job)
                .where(Job.submission_id == sub.id, Job.status.in_((JobStatus.QUEUED.value, JobStatus.RUNNING.value)))
                .values(status=JobStatus.CANCELLED.value, error="submission deleted", finished_at=now, lease_owner=None)
            )
            s.flush()
            ranking.rebuild(s, sub.leaderboard, user_id=sub.user_id)
            who = actor or (user.identity if user else "system")
            thaw_missing(s, sub.user_id, [sub.leaderboard_id], actor=who, why=f"submission {sub.id} deleted")
            self._audit(s, who, "delete_submission", str(submission_id))

    def user(self, user: UserRef) -> UserView:
        with self.db.transaction() as s:
            return self._user_view(self._user(s, user, create=False))

    @staticmethod
    def _user_view(u: User) -> UserView:
        return UserView(u.id, u.name, u.identity, u.discord_id, u.is_banned, u.ban_reason, u.is_program)

    def ban_user(self, user: UserRef, *, reason: str = "", actor: str = "") -> UserView:
        """Refuse the user's submissions and hide them from every ranking (kept, so unbanning restores them)."""
        with self.db.transaction() as s:
            u = self._user(s, user)
            u.is_banned, u.ban_reason = True, reason or None
            self._audit(s, actor or "system", "ban", u.identity, reason=reason)
            s.flush()
            return self._user_view(u)

    def unban_user(self, user: UserRef, *, actor: str = "") -> UserView:
        with self.db.transaction() as s:
            u = self._user(s, user, create=False)
            if not u.is_banned:
                return self._user_view(u)  # nothing to undo
            boards = select(BestScore.leaderboard_id).where(BestScore.user_id == u.id)
            s.execute(select(Leaderboard.id).where(Leaderboard.id.in_(boards)).with_for_update())  # as a freeze
            u.is_banned, u.ban_reason = False, None
            self._audit(s, actor or "system", "unban", u.identity)
            s.flush()
            thaw_missing(s, u.id, actor=actor or "system", why=f"{u.identity} unbanned")  # back where frozen without
            return self._user_view(u)

    def set_rate_limit(self, name: str, per_hour: int | None, *, actor: str = "") -> LeaderboardSummary:
        """Submissions per user per hour on this leaderboard, every mode counted; None falls back to the defaults
        (KERNELCUP_RANKED_RATE_LIMIT_PER_HOUR for ranked, KERNELCUP_RATE_LIMIT_PER_HOUR for the other modes)."""
        self._check_admin_values(None, None, per_hour)
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            lb.rate_limit_per_hour = per_hour
            self._audit(s, actor or "system", "set_rate_limit", name, per_hour=per_hour)
            s.flush()
            return self._summary(lb)

    def pause(self, name: str, *, actor: str = "") -> LeaderboardSummary:
        return self._set_paused(name, True, actor)

    def resume(self, name: str, *, actor: str = "") -> LeaderboardSummary:
        return self._set_paused(name, False, actor)

    def _set_paused(self, name: str, paused: bool, actor: str) -> LeaderboardSummary:
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            lb.paused = paused
            self._audit(s, actor or "system", "pause" if paused else "resume", name)
            s.flush()
            return self._summary(lb)

    def queue_stats(self) -> QueueStats:
        with self.db.transaction() as s:
            jobs: dict[str, dict[str, int]] = {}
            for device, status, n in s.execute(
                select(Job.device, Job.status, func.count()).group_by(Job.device, Job.status)
            ):
                jobs.setdefault(device, {})[status] = int(n)
            oldest = s.scalar(select(func.min(Job.created_at)).where(Job.status == JobStatus.QUEUED.value))
            alive_since = self.clock() - timedelta(seconds=WORKER_ALIVE_S)
            workers = s.scalars(
                select(Worker)
                .where(Worker.heartbeat_at >= alive_since, Worker.stopped_at.is_(None))
                .order_by(Worker.id)
            ).all()
            return QueueStats(
                jobs=jobs,
                oldest_queued_at=oldest.replace(tzinfo=UTC) if oldest is not None and oldest.tzinfo is None else oldest,
                workers=tuple(
                    WorkerView(w.id, w.hostname, tuple(w.devices), w.heartbeat_at, w.healthy, w.health_note or "")
                    for w in workers
                ),
            )

    def usage_stats(self, since: datetime | None = None) -> UsageStats:
        with self.db.transaction() as s:
            sub_filter = [Submission.created_at >= since] if since else []
            by_lb = dict(
                s.execute(
                    select(Leaderboard.name, func.count(Submission.id))
                    .join(Submission, Submission.leaderboard_id == Leaderboard.id)
                    .where(*sub_filter)
                    .group_by(Leaderboard.name)
                ).all()
            )
            by_mode = dict(
                s.execute(select(Submission.mode, func.count()).where(*sub_filter).group_by(Submission.mode)).all()
            )
            users = s.scalar(select(func.count(func.distinct(Submission.user_id))).where(*sub_filter))
            run_rows = s.execute(
                select(Run.started_at, Run.finished_at).where(*([Run.created_at >= since] if since else []))
            ).all()
            seconds = sum((b - a).total_seconds() for a, b in run_rows if a is not None and b is not None)
            impossible = self._impossible_runs(s, since)
            return UsageStats(
                since=since,
                submissions=sum(by_lb.values()),
                users=int(users or 0),
                by_leaderboard={k: int(v) for k, v in by_lb.items()},
                by_mode={k: int(v) for k, v in by_mode.items()},
                runs_seconds=seconds,
                impossible_runs=len(impossible),
                impossible_latest=tuple(impossible[:IMPOSSIBLE_SHOWN]),
            )

    @staticmethod
    def _impossible_runs(s: Session, since: datetime | None) -> list[ImpossibleRun]:
        """Rejected runs whose rejection is the speed-of-light gate's, newest first (rejections are rare, so the
        few rejected rows are read and filtered here rather than by a JSON query that differs per database)."""
        rows = s.execute(
            select(Run, User.name, Leaderboard.name)
            .join(Submission, Submission.id == Run.submission_id)
            .join(User, User.id == Submission.user_id)
            .join(Leaderboard, Leaderboard.id == Submission.leaderboard_id)
            .where(Run.verdict == Verdict.REJECTED.value, *([Run.created_at >= since] if since else []))
            .order_by(Run.id.desc())
        ).all()
        return [
            ImpossibleRun(
                submission_id=run.submission_id,
                user_name=user_name,
                leaderboard=board,
                device=run.device,
                secret=run.secret,
                at=run.created_at,
                message="" if run.secret else str(run.result.get("message", "")),
            )
            for run, user_name, board in rows
            if (run.result or {}).get("rejection") == SPEED_OF_LIGHT
        ]
