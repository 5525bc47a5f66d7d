"""Input hacks against a board (issue 35): any account submits a case of the problem's ``hack_space``; a worker runs
it against each device's top entries, below every person's job; a case that breaks one becomes a held-out case.

1. **Submit** (``submit_hack``; ``POST /api/v1/leaderboards/{name}/hacks``, ``kernelcup hack submit``): the case is
   checked at once (``leaderboards.hacks.check_hack``: every parameter in its range, finite, the sizes' product under
   the space's cap; a space that caps no size takes no hack), against the account's hack rate limit, then stored as
   one ``hacks`` row per device of the board (the devices asked for, or all of them).
2. **Run** (``HackRunner``, a ``Worker`` runs it only when no job is runnable, after system tests): the reference on
   the case first (a case it fails is ``refused``, naming the field), then the device's top ``hack_top`` entries of
   other accounts, one test-mode run each: correctness only, never timed.
3. **Record** (``record_hack``): an entry that failed where the reference passed is broken. Where one is, in one
   transaction: the case is added to the board's held-out cases (its stored task snapshot's ``holdout``, which the
   system tests and final standings read), each broken entry is quarantined (``moderation``, audited, its author's
   ranking rebuilt: its rank is gone at once) for a moderator to judge hacked or clear, and the hacker is credited
   (``hack_credits``: "alice broke 2 entries" on the board's standings).

What anyone reads: the hacker (and admins) each entry's submission id, rank, user and verdict as the board shows them,
never its code nor its run's messages; everyone the credits. No surface ever shows a case (the hacker has it; once
held out it is secret). The rate limit: a hack that broke nobody (or was refused, or is still waiting) costs one unit
of the account's ``hack_units_per_day``; one that broke an entry costs none.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from leaderboards.errors import InvalidChange, NotFound, RateLimited
from leaderboards.hack_space import HackField
from leaderboards.hacks import HackRefused, check_hack, hack_request, judged, reference_refusal, reference_request
from leaderboards.holdout import could_not_run, held_row, launch_quietly, oldest_runnable, top_entries
from leaderboards.models import Hack, Leaderboard, Submission, User
from leaderboards.moderation import set_state
from leaderboards.moderation_states import ALLOWED_FROM, ModerationState
from leaderboards.recording import RecordingMixin, harness_device
from leaderboards.results import UserRef
from leaderboards.snapshot import SnapshotError, TaskSnapshot, problem_from_snapshot
from runners.contract import Limits, RunRequest, RunResult
from runners.launchers.base import Launcher

HACK_ATTEMPTS = 3
"""Claims of one hack before it is ``failed`` (the runner failed every time: never the hacker's fault)."""
LEASE_MARGIN_S = 120.0
"""What a hack's lease adds to its runs' time limits (launch, transfer, storing)."""
MAX_HOLDOUT = 200
"""Held-out cases a board keeps at most: past it, a breaking hack still quarantines, but adds no case."""
NOT_JUDGED = "not judged"
RUNNER_FAILED = "the runner could not run it (not the case's fault): it costs no unit; send it again"
"""What the hacker reads of a hack the runner failed (admins read the runner's own error)."""


class HackStatus:
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    REFUSED = "refused"
    """The reference fails its own check on the case: it is no hack."""
    FAILED = "failed"
    """Could not run, not the hacker's fault (the runner failed on every attempt)."""


@dataclass(frozen=True)
class HackEntry:
    """One entry's run on a hack, as the hacker reads it: the entry as the board showed it, and its verdict."""

    submission_id: int
    rank: int
    user_name: str
    verdict: str
    broken: bool


@dataclass(frozen=True)
class HackView:
    """A hack as its author and admins see it (never its case: the author has it, and it may now be held out)."""

    hack_id: int
    leaderboard: str
    device: str
    user_name: str
    status: str
    broken: int
    entries: tuple[HackEntry, ...]
    note: str
    """Why it was refused (the reference fails on it), or why it could not run."""
    created_at: datetime
    finished_at: datetime | None

    @property
    def text(self) -> str:
        if self.status == HackStatus.DONE:
            return f"hack #{self.hack_id} on {self.device}: broke {self.broken} of {len(self.entries)} entries"
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


def case_hash(case: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(case, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _view(hack: Hack, board: str, user: str, *, admin: bool = False) -> HackView:
    """``hack`` as its author reads it (why the runner failed, an admin only: it names the runner's side)."""
    entries = tuple(
        HackEntry(int(e["submission_id"]), int(e["rank"]), str(e["user"]), str(e["verdict"]), bool(e["broken"]))
        for e in hack.outcomes or []
    )
    note = hack.note or ""
    if hack.status != HackStatus.REFUSED and not admin:  # a queued one's note: its last try's runner error
        note = RUNNER_FAILED if hack.status == HackStatus.FAILED else ""
    return HackView(hack.id, board, hack.device, user, hack.status, hack.broken, entries, note,
                    hack.created_at, hack.finished_at)  # fmt: skip


class BoardHacksMixin(RecordingMixin):
    """Submit, claim, record and read input hacks against boards."""

    if False:  # the service's own (leaderboards/service.py), declared for mypy

        def _open_board(self, s: Session, user: UserRef, leaderboard: str) -> tuple[User, Leaderboard]: ...

    def submit_hack(
        self, user: UserRef, leaderboard: str, case: Any, devices: Sequence[str] | None = None
    ) -> tuple[HackView, ...]:
        """Queue an input hack against ``leaderboard``'s top entries on ``devices`` (all the board's when None):
        ``HackRefused`` (a field error) where the case is not one of the problem's hack space, ``RateLimited`` where
        the account's hack units of the day are spent."""
        now = self.clock()
        with self.db.transaction() as s:
            u, lb = self._open_board(s, user, leaderboard)
            checked = check_hack(problem_from_snapshot(lb.task), case)
            chosen = self._check_devices(lb, devices) if devices else list(lb.devices)
            digest = case_hash(checked)
            mine = s.scalars(
                select(Hack).where(Hack.leaderboard_id == lb.id, Hack.user_id == u.id, Hack.case_hash == digest)
            ).all()
            if any(h.device in chosen and h.status != HackStatus.FAILED for h in mine):
                raise HackRefused(
                    f"you tried this case on {lb.name} already (hack #{min(h.id for h in mine)}): a case runs once "
                    "per device; change a parameter (the seed) for another try",
                    [HackField("case", "tried already")],
                )
            self._check_hack_units(s, u, now)
            fields = {"leaderboard_id": lb.id, "user_id": u.id, "case": checked, "case_hash": digest}
            rows = [
                Hack(device=device, status=HackStatus.QUEUED, broken=0, attempts=0, created_at=now, **fields)
                for device in chosen
            ]
            s.add_all(rows)
            s.flush()
            self._audit(s, f"user:{u.identity}", "hack", lb.name, hacks=[h.id for h in rows], devices=chosen)
            return tuple(_view(h, lb.name, u.name) for h in rows)

    def _check_hack_units(self, s: Session, u: User, now: datetime) -> None:
        """Refuse a hack where the account spent its units of the last 24 hours: one per hack (a case on a board)
        that broke nobody, was refused, or is still waiting."""
        limit = self.settings.hack_units_per_day
        if limit == 0:
            raise InvalidChange(
                "This server takes no input hacks (its KERNELCUP_HACK_UNITS_PER_DAY is 0).", code="hacks_off"
            )
        day = now - timedelta(days=1)
        rows = s.scalars(select(Hack).where(Hack.user_id == u.id, Hack.created_at > day).order_by(Hack.id)).all()
        groups: dict[tuple[int, str], list[Hack]] = defaultdict(list)
        for h in rows:
            groups[(h.leaderboard_id, h.case_hash)].append(h)
        costly = [hs for hs in groups.values() if not any(h.broken for h in hs)
                  and not all(h.status == HackStatus.FAILED for h in hs)]  # fmt: skip
        if len(costly) >= limit:
            retry = min(hs[0].created_at for hs in costly) + timedelta(days=1)
            raise RateLimited(
                f"You have used your {limit} input hacks of the last 24 hours (a hack that breaks no entry, or is "
                f"refused, or is still waiting costs one; one that breaks an entry costs none). Try again after "
                f"{retry:%Y-%m-%d %H:%M} UTC.",
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
        """Who broke how many distinct entries of ``leaderboard`` with input hacks, most first."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard, include_hidden=False, viewer=viewer)
            rows = s.execute(
                select(User.name, Hack.outcomes)
                .join(User, User.id == Hack.user_id)
                .where(Hack.leaderboard_id == lb.id, Hack.status == HackStatus.DONE, Hack.broken > 0)
            ).all()
            broke: dict[str, set[int]] = defaultdict(set)
            for name, outcomes in rows:
                broke[name] |= {int(e["submission_id"]) for e in outcomes or [] if e.get("broken")}
            credits = (HackCredit(name, len(ids)) for name, ids in broke.items())
            return tuple(sorted(credits, key=lambda c: (-c.broken, c.user_name)))

    # -- the worker's side ------------------------------------------------------------------------------------------

    def claim_hack(self, worker_id: str, devices: Sequence[str] = ()) -> HackClaim | None:
        """Take the oldest runnable hack for ``devices`` (all when empty) with its requests: the reference's, then
        each of the device's top entries of other accounts (test mode, the one case). Its lease covers every run."""
        now = self.clock()
        with self.db.transaction() as s:
            hack = oldest_runnable(s, Hack, devices, now)
            if hack is None:
                return None
            if hack.attempts >= HACK_ATTEMPTS:  # its last holder died: not the hacker's fault
                hack.status, hack.note, hack.finished_at = HackStatus.FAILED, "the lease ran out", now
                return None
            lb = s.get(Leaderboard, hack.leaderboard_id)
            assert lb is not None
            problem = problem_from_snapshot(lb.task)
            limits = Limits(max_submission_bytes=self.settings.max_submission_bytes)
            device = harness_device(hack.device)

            def sealed(request: RunRequest) -> RunRequest:
                return self._within_board_limit(request).model_copy(update={"nonce": secrets.token_hex(16)})

            reference = sealed(reference_request(problem, hack.case, device, device_name=hack.device, limits=limits))
            entries: list[HackEntryRun] = []
            for rank, (best, user) in enumerate(top_entries(s, lb, hack.device, None), start=1):
                if len(entries) >= self.settings.hack_top:
                    break
                if user.id == hack.user_id:
                    continue  # one's own entries earn no credit
                sub = s.get(Submission, best.submission_id)
                assert sub is not None
                request = hack_request(problem, hack.case, sub.file_name, sub.code.content, device,
                                       device_name=hack.device, limits=limits)  # fmt: skip
                entries.append(HackEntryRun(sub.id, rank, user.name, sealed(request)))
            token = f"{worker_id}#{secrets.token_hex(8)}"
            hack.status, hack.lease_owner, hack.attempts = HackStatus.RUNNING, token, hack.attempts + 1
            budget = sum(r.time_limit_s() for r in [reference, *(e.request for e in entries)])
            hack.lease_expires_at = now + timedelta(seconds=budget + LEASE_MARGIN_S)
            return HackClaim(hack.id, token, hack.device, reference, tuple(entries))

    def record_hack(
        self,
        claim: HackClaim,
        reference: RunResult | None,
        results: Sequence[RunResult | None] = (),
        *,
        error: str = "",
    ) -> bool:
        """Store a hack's outcome: refused (the reference failed), or each entry's verdict; where one broke, the case
        joins the board's held-out cases, each broken entry is quarantined and the hacker credited. ``reference``
        None: it could not run (``error``; queued again until its attempts are spent). Fenced by the claim's lease:
        False when another holder took it over."""
        now = self.clock()
        with self.db.transaction() as s:
            s.execute(select(Leaderboard.id).join(Hack, Hack.leaderboard_id == Leaderboard.id)
                      .where(Hack.id == claim.hack_id).with_for_update())  # fmt: skip
            hack = held_row(s, Hack, claim.hack_id, claim.token)
            if hack is None:
                return False
            if reference is None:
                could_not_run(hack, HACK_ATTEMPTS, error, now)  # the note: admins' (the hacker reads "failed")
                return True
            refused = reference_refusal(reference)
            if refused is not None:
                hack.status, hack.note, hack.finished_at, hack.outcomes = HackStatus.REFUSED, refused.message, now, []
                return True
            outcomes: list[dict[str, Any]] = []
            for entry, result in zip(claim.entries, results, strict=True):
                verdict, broken = NOT_JUDGED, False
                if result is not None:
                    outcome = judged(str(entry.submission_id), result, True)
                    verdict, broken = outcome.verdict.label, outcome.broken
                outcomes.append({"submission_id": entry.submission_id, "rank": entry.rank, "user": entry.user_name,
                                 "verdict": verdict, "broken": broken})  # fmt: skip
            hack.outcomes, hack.status, hack.finished_at, hack.note = outcomes, HackStatus.DONE, now, None
            hack.broken = sum(1 for o in outcomes if o["broken"])
            if hack.broken:
                self._hack_broke(s, hack, [int(o["submission_id"]) for o in outcomes if o["broken"]], now)
            return True

    def _hack_broke(self, s: Session, hack: Hack, broken: Sequence[int], now: datetime) -> None:
        """A hack broke ``broken``: its case joins the board's held-out cases, the entries are quarantined."""
        lb = s.get(Leaderboard, hack.leaderboard_id)
        hacker = s.get(User, hack.user_id)
        assert lb is not None and hacker is not None
        held = self._hold_out(lb, hack.case)
        actor = f"hack:{hack.id}"
        quarantined = []
        for submission_id in broken:
            sub = s.get(Submission, submission_id)
            if sub is None or sub.moderation not in ALLOWED_FROM[ModerationState.QUARANTINED]:
                continue  # judged hacked already, or quarantined by a moderator
            reason = (
                f"input hack #{hack.id} by {hacker.name} broke it on {hack.device} (it failed a case the reference "
                "passes, which is now one of the board's held-out cases): out of the rankings until a moderator "
                "judges it hacked or clears it"
            )
            set_state(s, sub, ModerationState.QUARANTINED, actor=actor, reason=reason, now=now)
            quarantined.append(submission_id)
        self._audit(s, actor, "hack_broke", lb.name, hacker=hacker.name, device=hack.device, broke=list(broken),
                    quarantined=quarantined, held_out=held)  # fmt: skip

    @staticmethod
    def _hold_out(lb: Leaderboard, case: dict[str, Any]) -> bool:
        """Add ``case`` to the board's held-out cases (its task snapshot's ``holdout``) where it is not one yet and
        the snapshot stays valid with it; whether it is one now."""
        snap = TaskSnapshot.load(lb.task)
        holdout = snap.task.holdout
        if case in holdout:
            return True
        if len(holdout) >= MAX_HOLDOUT:
            return False
        try:
            held = snap.with_task(holdout=[*holdout, dict(case)])
        except SnapshotError:  # e.g. holdout_timed needs a seed in every case
            return False
        lb.task = held.stored()  # a new object: the JSON column sees the change
        return True


class HackRunner:
    """Runs one input hack when a worker has nothing else to do (``Worker`` calls ``run_one`` after an empty claim,
    after system tests)."""

    def __init__(self, service: BoardHacksMixin, launcher_for: Callable[[str], Launcher], margin_s: float) -> None:
        self.service = service
        self.launcher_for = launcher_for
        self.margin_s = margin_s

    async def run_one(self, worker_id: str, devices: Sequence[str], db: Callable[..., Awaitable[Any]]) -> bool:
        """Claim and run one hack (the reference, then each entry); False when none was runnable."""
        claim: HackClaim | None = await db(self.service.claim_hack, worker_id, devices)
        if claim is None:
            return False
        what = f"hack {claim.hack_id}"
        reference, error = await launch_quietly(self.launcher_for, claim.device, claim.reference, self.margin_s, what)
        results: list[RunResult | None] = []
        if reference is not None and reference_refusal(reference) is None:
            for entry in claim.entries:
                result, _ = await launch_quietly(self.launcher_for, claim.device, entry.request, self.margin_s, what)
                results.append(result)
        else:
            results = [None] * len(claim.entries)
        await db(self.service.record_hack, claim, reference, results, error=error)
        return True
