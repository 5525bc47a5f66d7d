"""Input hacks against a board (issue 35): any account submits a case of the problem's ``hack_space``; a worker runs
it against each device's top entries, below every person's job; a case that breaks one (confirmed) becomes a held-out
case.

1. **Submit** (``submit_hack``; ``POST /api/v1/leaderboards/{name}/hacks``, ``kernelcup hack submit``): the case is
   checked at once (``leaderboards.hacks.check_hack``: every parameter in its range, finite, the sizes' product under
   the space's cap; a space that caps no size takes no hack), refused once the board is past its deadline or has
   frozen final standings (``hacks_closed``), checked against the account's hack units and the GPU budgets of the
   account and the token that sends it (``leaderboards.budgets``: a hack's runs spend them like a submission's, the
   evaluation seconds of every run it made, ``hacks.gpu_seconds``), then stored as one ``hacks`` row per device of
   the board (the devices asked for, or all of them).
2. **Run** (``HackRunner``, a ``Worker`` runs it only when no job is runnable, after system tests): the reference on
   the case first (a case it fails, or whose ``generate_input`` fails, is ``refused``), then the device's top
   ``hack_top`` entries of other accounts, one test-mode run each: correctness only, never timed. An entry that
   seems broken is **confirmed** before anything happens to it: it runs again, and the reference again; both must
   repeat (a TIMEOUT also needs the reference to have used at most ``REFERENCE_SHARE`` of the time limit; an
   OUT_OF_MEMORY is never confirmed, the runner does not report the reference's memory). Between entries the runner
   yields to waiting jobs: the hack goes back to the queue with the entries judged so far. Its lease is renewed while
   it runs (``renew_hack_lease``), like a job's.
3. **Record** (``record_hack``): a confirmed break, in one transaction: the case is added to the board's held-out
   cases (within ``MAX_HACK_CASES`` a board and ``MAX_HACK_CASES_PER_HACKER`` a hacker), the entry is quarantined
   (``moderation``, audited, its rank gone at once) for a moderator to judge hacked or clear, and the hacker is
   credited. An unconfirmed break, and any break of an entry a moderator once cleared, only flags it for a moderator.
   Nothing is recorded once the board is past its deadline or frozen (the hack is ``closed``).

What anyone reads: the hacker (and admins) each entry's submission id, rank, user and verdict as the board shows them,
never its code nor its run's messages; everyone the credits. No surface ever shows a case (the hacker has it; once
held out it is secret).

**Units** (``hack_units_per_day``, over the last 24 hours): every hack (a case on a board, all its devices) costs one,
refused ones included, and is refunded only by a confirmed break that quarantined an entry, once per *rate key*: the
case without its ``seed`` (cases that differ only in the seed are one hack for the refund). A moderator who clears the
entry withdraws the credit, and with it the refund. A hack the runner could not run (``failed``) or that the deadline
closed costs nothing, for ``FREE_FAILED_PER_DAY`` failed ones a day; past that each costs one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import secrets
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from leaderboards.db import lease_now
from leaderboards.errors import InvalidChange, LeaderboardClosed, NotFound, RateLimited, UserError
from leaderboards.hack_space import HackField
from leaderboards.hacks import (
    HackRefused,
    check_hack,
    hack_request,
    judged,
    reference_refusal,
    reference_request,
)
from leaderboards.holdout import could_not_run, held_row, launch_quietly, oldest_runnable, top_entries
from leaderboards.models import AuditLog, FinalStanding, Hack, Job, JobStatus, Leaderboard, Submission, User
from leaderboards.moderation import (
    QUARANTINED_BY_HACK,
    WITHDRAWN_BY_CLEAR,
    credited,
    set_state,
)
from leaderboards.moderation_states import ALLOWED_FROM, ModerationState
from leaderboards.queue import store_retried
from leaderboards.recording import RecordingMixin, harness_device
from leaderboards.results import UserRef
from leaderboards.snapshot import SnapshotError, TaskSnapshot, problem_from_snapshot
from runners.contract import Limits, RunRequest, RunResult, Verdict
from runners.launchers.base import Launcher

HACK_ATTEMPTS = 3
"""Claims of one hack before it is ``failed`` (the runner failed every time: never the hacker's fault)."""
LEASE_MARGIN_S = 120.0
"""What a hack's lease adds to its longest run's time limit (launch, transfer, storing); renewed while it runs."""
HEARTBEAT_S = 30.0
"""How often a running hack renews its lease."""
MAX_HOLDOUT = 200
"""Held-out cases a board keeps at most: past it, a breaking hack still quarantines, but adds no case."""
MAX_HACK_CASES = 20
"""Held-out cases input hacks add to one board at most (the system tests run every held-out case)."""
MAX_HACK_CASES_PER_HACKER = 5
"""Held-out cases one account's hacks add to one board at most."""
FREE_FAILED_PER_DAY = 3
"""Hacks the runner failed that cost an account no unit in 24 hours; each one past these costs one."""
REFERENCE_SHARE = 0.5
"""An entry's TIMEOUT confirms a break only where the reference's runs took at most this share of the time limit."""
NOT_JUDGED = "not judged"
RUNNER_FAILED = "the runner could not run it (not the case's fault): it costs no unit; send it again"
"""What the hacker reads of a hack the runner failed (admins read the runner's own error)."""
CLOSED = (
    "the board's deadline passed (or its final standings were frozen) before it ran: it costs no unit, and no hack "
    "changes a closed board"
)
SEED_KEYS = frozenset({"seed"})
"""Parameters a rate key leaves out: cases that differ only in them are one hack for the refund."""


class HacksClosed(LeaderboardClosed):
    """A hack sent to a board past its deadline or with frozen final standings (409)."""

    code = "hacks_closed"

    def __init__(self, name: str, deadline: datetime, why: str) -> None:
        UserError.__init__(
            self, f"{why}: it takes no input hacks any more (no hack may change a closed board's results)."
        )
        self.deadline = deadline


class HackStatus:
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    REFUSED = "refused"
    """The reference fails its own check on the case, or the problem cannot make it: it is no hack (costs a unit)."""
    FAILED = "failed"
    """Could not run, not the hacker's fault (the runner failed on every attempt)."""
    CLOSED = "closed"
    """The board's deadline passed or its final standings were frozen before it ran: nothing was done."""


class EntryAction:
    """What a hack did to an entry (``outcomes[i]["action"]``; ``moderation.credited`` and ``withdraw_credits`` read
    and write it too)."""

    NONE = ""
    QUARANTINED = QUARANTINED_BY_HACK
    """A confirmed break: out of the rankings until a moderator judges it; the hacker is credited."""
    FLAGGED = "flagged"
    """A break that was not confirmed, or of an entry a moderator cleared before: flagged for a moderator only."""
    WITHDRAWN = WITHDRAWN_BY_CLEAR
    """A moderator cleared the entry after the hack quarantined it: the credit (and the unit's refund) is withdrawn."""
    KEPT = "kept"
    """Broken, but a moderator had judged it already (hacked, or quarantined it): nothing changed."""


@dataclass(frozen=True)
class HackEntry:
    """One entry's run on a hack, as the hacker reads it: the entry as the board showed it, and its verdict."""

    submission_id: int
    rank: int
    user_name: str
    verdict: str
    broken: bool
    """A confirmed break (the entry failed twice where the reference passed twice)."""
    action: str = EntryAction.NONE


@dataclass(frozen=True)
class HackView:
    """A hack as its author and admins see it (never its case: the author has it, and it may now be held out)."""

    hack_id: int
    leaderboard: str
    device: str
    user_name: str
    status: str
    broken: int
    """Entries it broke and had quarantined (credited; a moderator's clear withdraws one)."""
    entries: tuple[HackEntry, ...]
    note: str
    """Why it was refused (the reference fails on it), or why it could not run."""
    created_at: datetime
    finished_at: datetime | None

    @property
    def text(self) -> str:
        if self.status == HackStatus.DONE:
            flagged = sum(1 for e in self.entries if e.action == EntryAction.FLAGGED)
            more = f", flagged {flagged} for a moderator" if flagged else ""
            return f"hack #{self.hack_id} on {self.device}: broke {self.broken} of {len(self.entries)} entries{more}"
        return f"hack #{self.hack_id} on {self.device}: {self.status}" + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class HackCredit:
    """A hacker's credit on a board: how many distinct entries their hacks broke."""

    user_name: str
    broken: int

    @property
    def text(self) -> str:
        return f"{self.user_name} broke {self.broken} {'entry' if self.broken == 1 else 'entries'}"


def credits_line(credits: Sequence[HackCredit]) -> str:
    """The board's credit line ("hacks: alice broke 2 entries, bob broke 1 entry"); '' where no hack broke one."""
    return "hacks: " + ", ".join(c.text for c in credits) if credits else ""


@dataclass(frozen=True)
class HackEntryRun:
    submission_id: int
    rank: int
    user_name: str
    request: RunRequest


@dataclass(frozen=True)
class HackClaim:
    hack_id: int
    token: str
    device: str
    reference: RunRequest
    entries: tuple[HackEntryRun, ...]


@dataclass(frozen=True)
class EntryRun:
    """One entry's run(s) on a hack, as the runner reports them to ``record_hack``: the first run's result, and for
    an apparent break whether its second run and the reference's second run confirmed it (and why not)."""

    result: RunResult | None
    confirmed: bool = False
    why: str = ""
    confirm_s: float = 0.0
    """Evaluation seconds of the confirming runs (the entry's second run, the reference's second run): GPU time the
    hacker's budgets are charged with the first run's."""


def case_hash(case: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(case, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def rate_key(case: dict[str, Any]) -> str:
    """The case without its seed: cases that differ only in the seed are one hack for the refund of a unit."""
    return case_hash({k: v for k, v in case.items() if k not in SEED_KEYS})


def hack_added_cases(s: Session, lb: Leaderboard, user_id: int | None = None) -> list[dict[str, Any]]:
    """The held-out cases of ``lb`` that input hacks added (of ``user_id``'s hacks only, given one), once each."""
    stmt = select(Hack.case).where(Hack.leaderboard_id == lb.id, Hack.status == HackStatus.DONE)
    if user_id is not None:
        stmt = stmt.where(Hack.user_id == user_id)
    holdout = TaskSnapshot.load(lb.task).task.holdout
    seen: list[dict[str, Any]] = []
    for case in s.scalars(stmt.order_by(Hack.id)):
        if case in holdout and case not in seen:
            seen.append(case)
    return seen


def board_closed(s: Session, lb: Leaderboard, now: datetime) -> str | None:
    """Why no hack may change ``lb`` now (past its deadline, or final standings frozen), None while it may."""
    if now >= lb.deadline:
        return f"{lb.name} is past its deadline ({lb.deadline:%Y-%m-%d %H:%M} UTC)"
    if s.scalar(select(FinalStanding.id).where(FinalStanding.leaderboard_id == lb.id).limit(1)) is not None:
        return f"{lb.name}'s final standings are frozen"
    return None


def cleared_before(s: Session, sub: Submission) -> bool:
    """Whether a moderator ever cleared ``sub`` (the audit log's moderation entries): a hack never quarantines it
    again on its own, it flags it for a moderator."""
    if sub.moderation == ModerationState.CLEARED:
        return True
    rows = s.scalars(
        select(AuditLog.detail).where(AuditLog.action == "moderate", AuditLog.target == f"submission:{sub.id}")
    )
    return any(isinstance(d, dict) and d.get("to") == ModerationState.CLEARED for d in rows)


def _view(hack: Hack, board: str, user: str, *, admin: bool = False) -> HackView:
    """``hack`` as its author reads it (why the runner failed, an admin only: it names the runner's side)."""
    entries = tuple(
        HackEntry(int(e["submission_id"]), int(e["rank"]), str(e["user"]), str(e["verdict"]), bool(e["broken"]),
                  str(e.get("action", EntryAction.QUARANTINED if e.get("broken") else "")))
        for e in hack.outcomes or []
    )  # fmt: skip
    note = hack.note or ""
    if hack.status not in (HackStatus.REFUSED, HackStatus.CLOSED) and not admin:  # a queued one's: its last try's
        note = RUNNER_FAILED if hack.status == HackStatus.FAILED else ""
    return HackView(hack.id, board, hack.device, user, hack.status, hack.broken, entries, note,
                    hack.created_at, hack.finished_at)  # fmt: skip


def _confirmation(first: RunResult, again: RunResult | None, reference: RunResult | None, limit_s: float) -> str:
    """Why an apparent break is not confirmed ('' where it is): the entry's second run must fail too, the
    reference's second run pass, and a TIMEOUT needs the reference to have used at most ``REFERENCE_SHARE`` of the
    limit; an OUT_OF_MEMORY is never confirmed (the runner does not report the reference's memory)."""
    verdict = judged("entry", first, True).verdict
    if verdict is Verdict.OUT_OF_MEMORY:
        return "out of memory is not confirmed automatically (the reference's memory is not measured)"
    if again is None or not judged("entry", again, True).broken:
        return "its second run did not fail"
    if reference is None or reference.verdict is not Verdict.ACCEPTED:
        return "the reference's second run did not pass"
    if verdict is Verdict.TIMEOUT and not 0 < reference.wall_time_s <= REFERENCE_SHARE * limit_s:
        return f"the reference took more than {REFERENCE_SHARE:.0%} of the time limit (or its time is unknown)"
    return ""


class BoardHacksMixin(RecordingMixin):
    """Submit, claim, record and read input hacks against boards."""

    if False:  # the service's own (leaderboards/service.py), declared for mypy

        def _open_board(self, s: Session, user: UserRef, leaderboard: str) -> tuple[User, Leaderboard]: ...

        def _check_budget(self, s: Session, user_id: int, token_id: int | None, now: datetime) -> None: ...

    def submit_hack(
        self,
        user: UserRef,
        leaderboard: str,
        case: Any,
        devices: Sequence[str] | None = None,
        *,
        token_id: int | None = None,
    ) -> tuple[HackView, ...]:
        """Queue an input hack against ``leaderboard``'s top entries on ``devices`` (all the board's when None):
        ``HackRefused`` (a field error) where the case is not one of the problem's hack space, ``HacksClosed``
        (409) once the board is past its deadline or frozen, ``RateLimited`` where the account's hack
        units of the day are spent, ``BudgetExhausted`` where the GPU budget of the account or of the sending token
        ``token_id`` is used up (the hack's runs spend both)."""
        now = self.clock()
        with self.db.transaction() as s:
            u, lb = self._open_board(s, user, leaderboard)
            closed = board_closed(s, lb, now)
            if closed is not None:
                raise HacksClosed(lb.name, lb.deadline, closed)
            checked = check_hack(problem_from_snapshot(lb.task), case)
            chosen = self._check_devices(lb, devices) if devices else list(lb.devices)
            digest = case_hash(checked)
            mine = s.scalars(
                select(Hack).where(Hack.leaderboard_id == lb.id, Hack.user_id == u.id, Hack.case_hash == digest)
            ).all()
            if any(h.device in chosen and h.status not in (HackStatus.FAILED, HackStatus.CLOSED) for h in mine):
                raise HackRefused(
                    f"you tried this case on {lb.name} already (hack #{min(h.id for h in mine)}): a case runs once "
                    "per device; change a parameter (the seed) for another try",
                    [HackField("case", "tried already")],
                )
            self._check_hack_units(s, u, now)
            self._check_budget(s, u.id, token_id, now)
            fields = {"leaderboard_id": lb.id, "user_id": u.id, "token_id": token_id, "case": checked,
                      "case_hash": digest}  # fmt: skip
            rows = [
                Hack(device=device, status=HackStatus.QUEUED, broken=0, attempts=0, created_at=now, **fields)
                for device in chosen
            ]
            s.add_all(rows)
            s.flush()
            self._audit(s, f"user:{u.identity}", "hack", lb.name, hacks=[h.id for h in rows], devices=chosen)
            return tuple(_view(h, lb.name, u.name) for h in rows)

    def _check_hack_units(self, s: Session, u: User, now: datetime) -> None:
        """Refuse a hack where the account spent its units of the last 24 hours (the rule: the module's docstring)."""
        limit = self.settings.hack_units_per_day
        if limit == 0:
            raise InvalidChange(
                "This server takes no input hacks (its KERNELCUP_HACK_UNITS_PER_DAY is 0).", code="hacks_off"
            )
        used, oldest = hack_units_used(s, u.id, now)
        if used >= limit and oldest is not None:
            retry = oldest + timedelta(days=1)
            raise RateLimited(
                f"You have used your {limit} input hacks of the last 24 hours (every hack costs one, refused and "
                "waiting ones too; a confirmed break that quarantines an entry refunds it, once per case without its "
                "seed, until a moderator clears that entry; a hack the runner could not run costs none, "
                f"{FREE_FAILED_PER_DAY} a day). Try again after {retry:%Y-%m-%d %H:%M} UTC.",
                retry,
                code="hack_rate_limited",
            )

    def hack(self, hack_id: int, viewer: UserRef | None, *, admin: bool = False) -> HackView:
        """One hack, for its author or an admin (``NotFound`` for anyone else: whether it exists is theirs)."""
        with self.db.transaction() as s:
            row = s.execute(
                select(Hack, Leaderboard.name, User)
                .join(Leaderboard, Leaderboard.id == Hack.leaderboard_id)
                .join(User, User.id == Hack.user_id)
                .where(Hack.id == hack_id)
            ).first()
            if row is None or not (admin or (viewer is not None and row[2].identity == viewer.identity)):
                raise NotFound(f"There is no hack #{hack_id} of yours.", code="hack_not_found")
            return _view(row[0], row[1], row[2].name, admin=admin)

    def my_hacks(self, viewer: UserRef, leaderboard: str, *, limit: int = 100) -> tuple[HackView, ...]:
        """The viewer's hacks on ``leaderboard``, newest first."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False, viewer=viewer)
            stmt = (
                select(Hack)
                .join(User, User.id == Hack.user_id)
                .where(Hack.leaderboard_id == lb.id, User.identity == viewer.identity)
                .order_by(Hack.id.desc())
                .limit(max(1, min(limit, 500)))
            )
            return tuple(_view(h, lb.name, viewer.name) for h in s.scalars(stmt))

    def hack_credits(self, leaderboard: str, viewer: UserRef | None = None) -> tuple[HackCredit, ...]:
        """Who broke how many distinct entries of ``leaderboard`` with input hacks (confirmed breaks that quarantined
        them, less those a moderator cleared since), most first."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False, viewer=viewer)
            rows = s.execute(
                select(User.name, Hack.outcomes)
                .join(User, User.id == Hack.user_id)
                .where(Hack.leaderboard_id == lb.id, Hack.status == HackStatus.DONE, Hack.broken > 0)
            ).all()
            broke: dict[str, set[int]] = defaultdict(set)
            for name, outcomes in rows:
                broke[name] |= {int(e["submission_id"]) for e in outcomes or [] if credited(e)}
            credits = (HackCredit(name, len(ids)) for name, ids in broke.items() if ids)
            return tuple(sorted(credits, key=lambda c: (-c.broken, c.user_name)))

    def with_hack_cases(self, leaderboard: str, new: TaskSnapshot) -> TaskSnapshot:
        """``new`` (a re-synced problem's snapshot) with the held-out cases hacks added to ``leaderboard`` that a
        sync keeps (``merge_hack_cases``): what the board would store, for the sync to tell a changed problem."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard)
            return merge_hack_cases(s, lb, new)[0]

    # -- the worker's side ------------------------------------------------------------------------------------------

    def claim_hack(self, worker_id: str, devices: Sequence[str] = ()) -> HackClaim | None:
        """Take the oldest runnable hack for ``devices`` (all when empty) with its requests: the reference's, then
        each of the device's top entries of other accounts not judged yet (test mode, the one case). A hack of a
        board past its deadline or frozen is ``closed`` instead (never run). Its lease covers its longest run and is
        renewed while it runs (``renew_hack_lease``). Leases are written and compared by the database's clock
        (``leaderboards.db.lease_now``), the one every worker agrees on."""
        with self.db.transaction() as s:
            now = lease_now(s, self.clock)
            for _ in range(100):  # closes at most this many hacks of closed boards in one claim
                hack = oldest_runnable(s, Hack, devices, now)
                if hack is None:
                    return None
                if hack.attempts >= HACK_ATTEMPTS:  # its last holder died: not the hacker's fault
                    hack.status, hack.note, hack.finished_at = HackStatus.FAILED, "the lease ran out", now
                    return None
                lb = s.get(Leaderboard, hack.leaderboard_id)
                assert lb is not None
                if board_closed(s, lb, now) is None:
                    break
                hack.status, hack.note, hack.finished_at = HackStatus.CLOSED, CLOSED, now
                hack.lease_owner, hack.lease_expires_at = None, None
            else:
                return None
            problem = problem_from_snapshot(lb.task)
            limits = Limits(max_submission_bytes=self.settings.max_submission_bytes)
            device = harness_device(hack.device)

            def sealed(request: RunRequest) -> RunRequest:
                return self._within_board_limit(request).model_copy(update={"nonce": secrets.token_hex(16)})

            reference = sealed(reference_request(problem, hack.case, device, device_name=hack.device, limits=limits))
            judged_ids = {int(o["submission_id"]) for o in hack.outcomes or []}
            entries: list[HackEntryRun] = []
            for rank, (best, user) in enumerate(top_entries(s, lb, hack.device, None), start=1):
                if len(entries) + len(judged_ids) >= self.settings.hack_top:
                    break
                if user.id == hack.user_id or best.submission_id in judged_ids:
                    continue  # one's own entries earn no credit; judged before the hack yielded
                sub = s.get(Submission, best.submission_id)
                assert sub is not None
                request = hack_request(problem, hack.case, sub.file_name, sub.code.content, device,
                                       device_name=hack.device, limits=limits)  # fmt: skip
                entries.append(HackEntryRun(sub.id, rank, user.name, sealed(request)))
            token = f"{worker_id}#{secrets.token_hex(8)}"
            hack.status, hack.lease_owner, hack.attempts = HackStatus.RUNNING, token, hack.attempts + 1
            hack.lease_expires_at = now + timedelta(seconds=_lease_s(reference, entries))
            return HackClaim(hack.id, token, hack.device, reference, tuple(entries))

    def renew_hack_lease(self, claim: HackClaim) -> bool:
        """The running hack's heartbeat: its lease runs its longest run's limit (and the margin) from now again.
        False when another holder took it over (the runner then stops)."""
        with self.db.transaction() as s:
            now = lease_now(s, self.clock)
            hack = s.scalar(
                select(Hack)
                .where(Hack.id == claim.hack_id, Hack.lease_owner == claim.token, Hack.status == HackStatus.RUNNING)
                .with_for_update()
            )
            if hack is None:
                return False
            hack.lease_expires_at = now + timedelta(seconds=_lease_s(claim.reference, claim.entries))
            return True

    def jobs_waiting(self, devices: Sequence[str] = ()) -> bool:
        """Whether a job (anyone's) is runnable on ``devices`` (all when empty): a running hack then yields."""
        now = self.clock()
        with self.db.transaction() as s:
            stmt = select(Job.id).where(
                Job.status == JobStatus.QUEUED.value, or_(Job.next_attempt_at.is_(None), Job.next_attempt_at <= now)
            )
            if devices:
                stmt = stmt.where(Job.device.in_(list(devices)))
            return s.scalar(stmt.limit(1)) is not None

    def record_hack(
        self,
        claim: HackClaim,
        reference: RunResult | None,
        results: Sequence[EntryRun | RunResult | None] = (),
        *,
        error: str = "",
        finished: bool = True,
    ) -> bool:
        """Store a hack's outcome: refused (the reference failed, or the problem could not make the case), or each
        entry's verdict; a confirmed break (``EntryRun.confirmed``) quarantines the entry, holds the case out and
        credits the hacker; an unconfirmed one flags the entry. ``results`` are the first of ``claim.entries``'
        (``finished`` False: the runner yielded to waiting jobs, the hack is queued again for the rest).
        ``reference`` None: it could not run (``error``; queued again until its attempts are spent). Nothing is done
        on a board past its deadline or frozen (``closed``). Fenced by the claim's lease: False when another holder
        took it over."""
        now = self.clock()
        with self.db.transaction() as s:
            s.execute(select(Leaderboard.id).join(Hack, Hack.leaderboard_id == Leaderboard.id)
                      .where(Hack.id == claim.hack_id).with_for_update())  # fmt: skip
            hack = held_row(s, Hack, claim.hack_id, claim.token)
            if hack is None:
                return False
            hack.gpu_seconds = (hack.gpu_seconds or 0.0) + _run_seconds(reference, results)
            lb = s.get(Leaderboard, hack.leaderboard_id)
            assert lb is not None
            if board_closed(s, lb, now) is not None:
                hack.status, hack.note, hack.finished_at = HackStatus.CLOSED, CLOSED, now
                return True
            if reference is None:
                could_not_run(hack, HACK_ATTEMPTS, error, now)  # the note: admins' (the hacker reads "failed")
                return True
            refused = _refusal(reference)
            if refused is not None:
                hack.status, hack.note, hack.finished_at, hack.outcomes = HackStatus.REFUSED, refused, now, []
                return True
            outcomes: list[dict[str, Any]] = [dict(o) for o in hack.outcomes or []]
            fresh: list[dict[str, Any]] = []
            for entry, run in zip(claim.entries, results, strict=False):
                entry_run = run if isinstance(run, EntryRun) else EntryRun(run)
                verdict, broken, apparent = NOT_JUDGED, False, False
                if entry_run.result is not None:
                    outcome = judged(str(entry.submission_id), entry_run.result, True)
                    verdict, apparent = outcome.verdict.label, outcome.broken
                    broken = apparent and entry_run.confirmed
                    if apparent and not broken:
                        verdict += f" (not confirmed: {entry_run.why or 'it was not run again'})"
                fresh.append({"submission_id": entry.submission_id, "rank": entry.rank, "user": entry.user_name,
                              "verdict": verdict, "broken": broken, "apparent": apparent,
                              "action": EntryAction.NONE})  # fmt: skip
            self._act_on(s, lb, hack, fresh, now)
            outcomes += fresh
            hack.outcomes, hack.broken = outcomes, sum(1 for o in outcomes if credited(o))
            if finished:
                hack.status, hack.finished_at, hack.note = HackStatus.DONE, now, None
            else:  # yielded to waiting jobs: the rest runs later; a yield is no failed attempt
                hack.status, hack.attempts, hack.note = HackStatus.QUEUED, max(0, hack.attempts - 1), None
            return True

    def _act_on(self, s: Session, lb: Leaderboard, hack: Hack, fresh: list[dict[str, Any]], now: datetime) -> None:
        """What a hack does to the entries it seemed to break (``fresh``' ``action``): a confirmed break quarantines
        the entry (unless a moderator cleared it once, or judged it already); an unconfirmed one, or one of a
        cleared entry, flags it for a moderator. A quarantine holds the case out and is audited."""
        hacker = s.get(User, hack.user_id)
        assert hacker is not None
        actor = f"hack:{hack.id}"
        for o in fresh:
            if not o["apparent"]:
                continue
            sub = s.get(Submission, int(o["submission_id"]))
            if sub is None:
                continue
            what = f"input hack #{hack.id} by {hacker.name} on {hack.device}"
            if (
                o["broken"]
                and not cleared_before(s, sub)
                and sub.moderation in ALLOWED_FROM[ModerationState.QUARANTINED]
            ):
                reason = (
                    f"{what} broke it (it failed a case the reference passes, twice, which is now one of the board's "
                    "held-out cases): out of the rankings until a moderator judges it hacked or clears it"
                )
                set_state(s, sub, ModerationState.QUARANTINED, actor=actor, reason=reason, now=now)
                o["action"] = EntryAction.QUARANTINED
            elif sub.moderation in ALLOWED_FROM[ModerationState.FLAGGED]:  # none yet, or cleared
                why = "a moderator cleared it before" if o["broken"] else "its failure did not repeat"
                reason = f"{what} seemed to break it ({o['verdict']}); {why}: a moderator should look (it still ranks)"
                set_state(s, sub, ModerationState.FLAGGED, actor=actor, reason=reason, now=now)
                o["action"] = EntryAction.FLAGGED
            else:
                o["action"] = EntryAction.FLAGGED if sub.moderation == ModerationState.FLAGGED else EntryAction.KEPT
        quarantined = [int(o["submission_id"]) for o in fresh if o["action"] == EntryAction.QUARANTINED]
        if any(o["apparent"] for o in fresh):
            held = self._hold_out(s, lb, hack) if quarantined else ""
            self._audit(s, actor, "hack_broke", lb.name, hacker=hacker.name, device=hack.device,
                        broke=[int(o["submission_id"]) for o in fresh if o["broken"]], quarantined=quarantined,
                        flagged=[int(o["submission_id"]) for o in fresh if o["action"] == EntryAction.FLAGGED],
                        held_out=held)  # fmt: skip

    @staticmethod
    def _hold_out(s: Session, lb: Leaderboard, hack: Hack) -> str:
        """Add the hack's case to the board's held-out cases (its task snapshot's ``holdout``) where it is not one yet,
        the caps allow it and the snapshot stays valid with it; what happened ('held out', or why not)."""
        snap = TaskSnapshot.load(lb.task)
        holdout = snap.task.holdout
        if hack.case in holdout:
            return "held out already"
        if len(holdout) >= MAX_HOLDOUT:
            return f"not held out: the board keeps {MAX_HOLDOUT} held-out cases at most"
        if len(hack_added_cases(s, lb)) >= MAX_HACK_CASES:
            return f"not held out: hacks add {MAX_HACK_CASES} held-out cases to a board at most"
        if len(hack_added_cases(s, lb, hack.user_id)) >= MAX_HACK_CASES_PER_HACKER:
            return f"not held out: one account's hacks add {MAX_HACK_CASES_PER_HACKER} held-out cases at most"
        try:
            held = snap.with_task(holdout=[*holdout, dict(hack.case)])
        except SnapshotError:  # e.g. holdout_timed needs a seed in every case
            return "not held out: the problem's held-out cases cannot take it"
        lb.task = held.stored()  # a new object: the JSON column sees the change
        return "held out"


def _seconds(result: RunResult | None) -> float:
    """The runner's own evaluation time of a run (0 without one, or without its start and end)."""
    if result is None or result.started_at is None or result.finished_at is None:
        return 0.0
    return max(0.0, (result.finished_at - result.started_at).total_seconds())


def _run_seconds(reference: RunResult | None, results: Sequence[EntryRun | RunResult | None]) -> float:
    """Evaluation seconds of what a hack's holder ran: the reference, each entry, and their confirming runs."""
    total = _seconds(reference)
    for run in results:
        if isinstance(run, EntryRun):
            total += _seconds(run.result) + max(0.0, run.confirm_s)
        else:
            total += _seconds(run)
    return total


def _lease_s(reference: RunRequest, entries: Sequence[HackEntryRun]) -> float:
    """A hack's lease: its longest run's limit, and the margin (renewed while it runs)."""
    return max(r.time_limit_s() for r in [reference, *(e.request for e in entries)]) + LEASE_MARGIN_S


def _refusal(reference: RunResult) -> str | None:
    """Why a hack is refused after its reference run (None where the reference passed): the problem could not make
    the case (its own fault, reported as such by the runner), or the reference fails its check on it."""
    if reference.verdict is Verdict.INFRASTRUCTURE_ERROR and reference.fault == "problem":
        return (
            f"the problem could not make or check this case ({reference.message[:300] or 'its generate_input failed'})"
            ": it is no hack; it costs a unit. Choose a case the problem's own generate_input handles"
        )
    refused = reference_refusal(reference)
    return None if refused is None else refused.message


def hack_units_used(s: Session, user_id: int, now: datetime) -> tuple[int, datetime | None]:
    """The hack units ``user_id`` used in the 24 hours before ``now``, and when the oldest costly one was sent:
    one per hack (a case on a board, all its devices), less one refund per rate key (the case without its seed)
    that quarantined an entry (credited: a moderator's clear withdraws it); hacks the runner failed or the deadline
    closed cost none, up to ``FREE_FAILED_PER_DAY`` failed ones."""
    day = now - timedelta(days=1)
    rows = s.scalars(select(Hack).where(Hack.user_id == user_id, Hack.created_at > day).order_by(Hack.id)).all()
    groups: dict[tuple[int, str], list[Hack]] = defaultdict(list)
    for h in rows:
        groups[(h.leaderboard_id, h.case_hash)].append(h)
    by_key: dict[tuple[int, str], list[list[Hack]]] = defaultdict(list)
    failed: list[list[Hack]] = []
    for (board, _), hs in groups.items():
        if all(h.status == HackStatus.CLOSED for h in hs):
            continue
        if all(h.status in (HackStatus.FAILED, HackStatus.CLOSED) for h in hs):
            failed.append(hs)
            continue
        by_key[(board, rate_key(hs[0].case))].append(hs)
    costly = failed[FREE_FAILED_PER_DAY:]
    for hacks in by_key.values():
        refund = next((hs for hs in hacks if any(h.broken > 0 for h in hs)), None)  # one refund a rate key
        costly += [hs for hs in hacks if hs is not refund]
    oldest = min((hs[0].created_at for hs in costly), default=None)
    return len(costly), oldest


class HackRunner:
    """Runs one input hack when a worker has nothing else to do (``Worker`` calls ``run_one`` after an empty claim,
    after system tests): renews its lease while it runs, confirms each apparent break, and yields to waiting jobs
    between entries."""

    def __init__(
        self,
        service: BoardHacksMixin,
        launcher_for: Callable[[str], Launcher],
        margin_s: float,
        *,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        self.service = service
        self.launcher_for = launcher_for
        self.margin_s = margin_s
        self.heartbeat_s = heartbeat_s

    async def run_one(self, worker_id: str, devices: Sequence[str], db: Callable[..., Awaitable[Any]]) -> bool:
        """Claim and run one hack (the reference, then each entry); False when none was runnable."""
        claim: HackClaim | None = await db(self.service.claim_hack, worker_id, devices)
        if claim is None:
            return False
        lost = asyncio.Event()
        beat = asyncio.ensure_future(self._heartbeat(claim, db, lost))
        try:
            reference, results, error, finished = await self._runs(claim, devices, db, lost)
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await beat
        if not lost.is_set():
            await db(store_retried, self.service.record_hack, claim, reference, results, error=error,
                     finished=finished, what=f"storing input hack {claim.hack_id}")  # fmt: skip
        return True

    async def _heartbeat(self, claim: HackClaim, db: Callable[..., Awaitable[Any]], lost: asyncio.Event) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                if not await db(self.service.renew_hack_lease, claim):
                    lost.set()  # another worker took it over: stop, store nothing
                    return
            except Exception:  # a database hiccup: the next beat tries again (the lease has its margin)
                continue

    async def _launch(self, claim: HackClaim, request: RunRequest) -> tuple[RunResult | None, str]:
        return await launch_quietly(self.launcher_for, claim.device, request, self.margin_s, f"hack {claim.hack_id}",
                                    keep_problem_fault=True)  # fmt: skip

    async def _runs(
        self, claim: HackClaim, devices: Sequence[str], db: Callable[..., Awaitable[Any]], lost: asyncio.Event
    ) -> tuple[RunResult | None, list[EntryRun], str, bool]:
        """The reference's run, each entry's (confirmed where it seems broken), why the reference could not run,
        and whether every entry ran (False: it yielded to waiting jobs)."""
        reference, error = await self._launch(claim, claim.reference)
        if reference is None or _refusal(reference) is not None:
            return reference, [], error, True
        results: list[EntryRun] = []
        for n, entry in enumerate(claim.entries):
            if lost.is_set():
                break
            if n and await db(self.service.jobs_waiting, devices):
                return reference, results, "", False  # the rest waits below the jobs: queued again
            result, _ = await self._launch(claim, entry.request)
            run = EntryRun(result)
            if result is not None and reference is not None and judged("entry", result, True).broken:
                again, _ = await self._launch(claim, entry.request.model_copy(update={"nonce": secrets.token_hex(16)}))
                ref_again, _ = await self._launch(
                    claim, claim.reference.model_copy(update={"nonce": secrets.token_hex(16)})
                )
                limit = entry.request.limits.run_timeout_s
                why = _confirmation(result, again, ref_again, limit)
                if (
                    not why
                    and reference.wall_time_s > REFERENCE_SHARE * limit
                    and judged("entry", result, True).verdict is Verdict.TIMEOUT
                ):
                    why = f"the reference took more than {REFERENCE_SHARE:.0%} of the time limit"
                run = EntryRun(result, confirmed=not why, why=why, confirm_s=_seconds(again) + _seconds(ref_again))
            results.append(run)
        return reference, results, "", True


def merge_hack_cases(s: Session, lb: Leaderboard, new: TaskSnapshot) -> tuple[TaskSnapshot, list[str]]:
    """A problem re-sync's new snapshot of ``lb`` with the held-out cases input hacks added to the old one: each is
    kept where it is still a case of the new ``hack_space`` (and the new snapshot takes it), dropped otherwise. The
    snapshot, and what the sync says about it ('' where no hack added a case)."""
    added = hack_added_cases(s, lb)
    if not added:
        return new, []
    problem = problem_from_snapshot(new.stored())
    kept, dropped = 0, 0
    for case in added:
        if case in new.task.holdout:
            kept += 1
            continue
        try:
            check_hack(problem, case)
            new = new.with_task(holdout=[*new.task.holdout, dict(case)])
            kept += 1
        except (HackRefused, SnapshotError):
            dropped += 1
    said = [f"kept {kept} held-out case{'s' if kept != 1 else ''} input hacks added"] if kept else []
    if dropped:
        said.append(f"dropped {dropped} held-out case{'s' if dropped != 1 else ''} input hacks added (outside the new "
                    "hack_space)")  # fmt: skip
    return new, said
