"""Standings of a competition (issue 29): live (the ranking with each entry's system-test coverage) and final (frozen
after the deadline's system tests: only entries that passed every held-out case, ranked with ties from their stored
statistics, ``leaderboards/standings.py``).

``competition_tick`` (the workers' housekeeping) drives a competition's end: once a leaderboard's deadline has passed
it queues the system tests of each device's top entries (a problem with held-out cases), and once none is left to run
it freezes each device's final standings. An admin may queue system tests earlier (``queue_system_tests``) and freeze
by hand (``freeze_standings``), never before the deadline.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from leaderboards.errors import InvalidChange, NotFound
from leaderboards.holdout import (
    SystemTestsMixin,
    SystemTestStatus,
    coverage_text,
    holdout_cases_on,
    queue_system_test,
    top_entries,
)
from leaderboards.late import late_notes
from leaderboards.models import (
    BestScore,
    FinalStanding,
    Job,
    Leaderboard,
    Run,
    Submission,
    SystemTest,
    User,
)
from leaderboards.moderation_states import ranks, ranks_condition
from leaderboards.ranking import practice_condition
from leaderboards.rejudge import drift_texts
from leaderboards.results import JobStatus, UserRef
from leaderboards.retiming import RoundStatus, deadline_rounds, queue_rounds, round_entries, wrong_in_a_round
from leaderboards.snapshot import problem_from_snapshot
from leaderboards.standings import Entry, entry_score, holdout_figure, rank
from runners.contract import Mode, RankingRule

log = logging.getLogger(__name__)

DEADLINE_ACTOR = "deadline"
NIGHTLY_ACTOR = "nightly"
NIGHTLY_EVERY = timedelta(hours=24)
"""How often an open leaderboard's top entries run its held-out cases (``competition_tick``)."""


@dataclass(frozen=True)
class StandingRow:
    rank: int
    tied: bool
    user_name: str
    submission_id: int
    file_name: str
    score_ns: float
    low_ns: float | None
    """The 95% interval of the score (final standings; None in live ones)."""
    high_ns: float | None
    coverage: str | None
    """"5 of 5 held-out cases" once the entry's system test ran, else None."""
    note: str | None = None
    """"late, admitted by X because Y" for an entry made after the deadline that an admin let in (``late.py``)."""
    holdout_ns: float | None = None
    """Where the problem times its held-out cases: the entry's one figure over them (the problem's rule over their
    medians), once its system test passed them; never a case's own time."""


@dataclass(frozen=True)
class ExcludedRow:
    user_name: str
    submission_id: int
    coverage: str


@dataclass(frozen=True)
class StandingsView:
    leaderboard: str
    device: str
    final: bool
    frozen_at: datetime | None
    rows: tuple[StandingRow, ...]
    excluded: tuple[ExcludedRow, ...] = ()


def entry_cases(s: Session, submission_id: int, device: str) -> tuple[tuple[dict[str, Any], ...], ...]:
    """Per benchmark case, the timing statistics of the entry's ranked runs on ``device`` (public first, then the
    secret-seed run), as the runs stored them."""
    runs = s.scalars(
        select(Run)
        .where(Run.submission_id == submission_id, Run.device == device, Run.mode == Mode.RANKED.value)
        .where(Run.passed.is_(True))
        .order_by(Run.job_id.desc(), Run.secret)
    ).all()
    if not runs:
        return ()
    latest = [r for r in runs if r.job_id == runs[0].job_id]
    per_run = [[b.get("stats") for b in r.result.get("benchmarks", [])] for r in latest]
    count = min(len(stats) for stats in per_run)
    return tuple(tuple(dict(stats[i]) for stats in per_run if stats[i]) for i in range(count))


class StandingsMixin(SystemTestsMixin):
    """Live and final standings, and the competition's end (``competition_tick``)."""

    def standings(
        self, name: str, device: str | None = None, *, final: bool = False, viewer: UserRef | None = None
    ) -> StandingsView:
        """A device's standings: ``final`` the frozen ones (``NotFound`` until frozen), else the live ranking's top
        entries with their system-test coverage where it ran. A hidden leaderboard only for a ``viewer`` who joined
        it with an invite code."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, include_hidden=False, viewer=viewer)
            (dev,) = self._check_devices(lb, [device] if device else None)
            if final:
                frozen = s.scalar(
                    select(FinalStanding).where(FinalStanding.leaderboard_id == lb.id, FinalStanding.device == dev)
                )
                if frozen is None:
                    raise NotFound(
                        f"Leaderboard {lb.name!r} has no final standings on {dev} yet: they are made after "
                        "its deadline, once its system tests have run, by a worker's housekeeping (at its start, "
                        "every KERNELCUP_WORKER_SWEEP_S and within 30 s of a system test; `kernelcup worker --once` "
                        f"runs it to the end), or by an admin: kernelcup leaderboard freeze {lb.name}"
                    )
                return with_late_notes(s, _final_view(lb.name, frozen, removed=moderated_out(s, frozen)))
            tests = {
                t.submission_id: t
                for t in s.scalars(
                    select(SystemTest).where(SystemTest.leaderboard_id == lb.id, SystemTest.device == dev)
                )
            }
            closed = self.clock() >= lb.deadline  # a held-out figure is shown from the deadline on (below)
            rows = []
            for i, (best, user) in enumerate(top_entries(s, lb, dev, 100)):
                sub = s.get(Submission, best.submission_id)
                test = tests.get(best.submission_id)
                coverage = coverage_text(test.passed, test.cases) if test is not None else None
                rows.append(
                    StandingRow(
                        i + 1,
                        False,
                        user.name,
                        best.submission_id,
                        sub.file_name if sub else "",
                        best.score,
                        None,
                        None,
                        coverage,
                        holdout_ns=test.score_ns if test is not None and closed else None,
                    )
                )
            live = with_late_notes(s, StandingsView(lb.name, dev, False, None, tuple(rows)))
            return with_drift_notes(live, drift_texts(s, lb.id, dev))

    def freeze_standings(self, name: str, device: str, *, actor: str) -> StandingsView:
        """Freeze a device's final standings: after the deadline, once no system test of it is left to run. Ranks
        the top entries that passed every held-out case (all top entries, for a problem without held-out cases) from
        their runs' stored statistics; an entry that failed one is listed as excluded (counts only)."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            (dev,) = self._check_devices(lb, [device])
            if self.clock() < lb.deadline:
                raise InvalidChange(
                    f"Leaderboard {lb.name!r} is open until {lb.deadline:%Y-%m-%d %H:%M} UTC: final "
                    "standings are made after its deadline."
                )
            if (
                s.scalar(
                    select(FinalStanding.id).where(FinalStanding.leaderboard_id == lb.id, FinalStanding.device == dev)
                )
                is not None
            ):
                raise InvalidChange(f"The final standings of {lb.name!r} on {dev} are frozen already.")
            frozen = self._freeze(s, lb, dev, actor)
            self._audit(s, actor, "freeze_standings", lb.name, device=dev, entries=len(frozen.entries))
            return _final_view(lb.name, frozen)

    def _freeze(self, s: Session, lb: Leaderboard, dev: str, actor: str) -> FinalStanding:
        entries, excluded = self._finalists(s, lb, dev)
        entries, wrong = _with_rounds(s, lb, dev, entries)
        frozen = FinalStanding(
            leaderboard_id=lb.id,
            device=dev,
            ranking_by=lb.ranking_by,
            entries=[e.to_json() for e in entries],
            excluded=[*excluded, *wrong],
            frozen_by=actor,
            created_at=self.clock(),
        )
        s.add(frozen)
        s.flush()
        return frozen

    def _finalists(self, s: Session, lb: Leaderboard, dev: str) -> tuple[list[Entry], list[dict[str, Any]]]:
        """The entries the final standings of ``dev`` rank: each ranked person's current best entry, where the problem
        has held-out cases only those whose system test since the deadline passed every one; and those left out
        (counts only). Raises ``InvalidChange`` while a ranked job that counts or a system test is left to run."""
        problem = problem_from_snapshot(lb.task)
        task = problem.task
        unsettled = unsettled_jobs(s, lb, dev)
        if unsettled:
            raise InvalidChange(
                f"{_count(unsettled, 'ranked job')} of {lb.name!r} on {dev} made before the deadline (or admitted "
                f"late) {'has' if unsettled == 1 else 'have'} not run yet: the final standings wait for "
                f"{'it' if unsettled == 1 else 'them'}."
            )
        cases = holdout_cases_on(problem, dev)  # (none may run at this device's world size)
        top = top_entries(s, lb, dev, None)  # every ranked person's best entry, banned users left out
        tests: dict[int, SystemTest] = {}
        if cases:
            found = deadline_tests(s, lb, dev, cases)
            missing = [b.submission_id for b, _ in top if b.submission_id not in found]
            if missing:
                raise InvalidChange(
                    f"{_count(len(missing), 'ranked entry', 'ranked entries')} of {lb.name!r} on {dev} "
                    f"{'has' if len(missing) == 1 else 'have'} no system test of its {cases} held-out cases since "
                    "the deadline: kernelcup leaderboard system-test"
                )
            tests = {b.submission_id: found[b.submission_id] for b, _ in top}
            pending = [t for t in tests.values() if t.status in (SystemTestStatus.QUEUED, SystemTestStatus.RUNNING)]
            if pending:
                raise InvalidChange(f"{len(pending)} system tests of {lb.name!r} on {dev} have not run yet.")
            unrun = [t for t in tests.values() if t.status == SystemTestStatus.FAILED]
            if unrun:  # the runner's failure, not the entries': they wait for a run rather than fall out
                raise InvalidChange(f"{len(unrun)} system tests of {lb.name!r} on {dev} could not run (the runner "
                                    "failed); queue them again: kernelcup leaderboard system-test")  # fmt: skip
        entries: list[Entry] = []
        excluded: list[dict[str, Any]] = []
        for best, user in top:
            sub = s.get(Submission, best.submission_id)
            if sub is None or sub.deleted or not ranks(sub.moderation):
                continue
            test = tests.get(sub.id)
            coverage = (test.passed, test.cases) if test is not None and test.passed is not None else None
            if test is not None and (coverage is None or coverage[0] != coverage[1]):
                text = coverage_text(test.passed, test.cases) or f"system test {test.status}"
                excluded.append({"user_name": user.name, "submission_id": sub.id, "coverage": text})
                continue
            stats = entry_cases(s, sub.id, dev)
            if not stats:
                continue  # no ranked run with timings on this device (deleted, or ranked before runs were kept)
            timed: tuple[dict[str, Any], ...] = ()
            if task.holdout_timed and test is not None:
                if not test.timings:  # passed every case, but a timing is missing: a runner's fault, not the entry's
                    raise InvalidChange(f"The system test of #{sub.id} on {dev} passed without its held-out timings; "
                                        "queue it again: kernelcup leaderboard system-test")  # fmt: skip
                timed = tuple(dict(run) for run in test.timings)
            entries.append(Entry(user.id, user.name, sub.id, sub.file_name, stats, coverage, timed))
        return entries, excluded

    def competition_tick(self) -> list[str]:
        """What the deadline does, for every leaderboard whose deadline has passed, device by device: once every
        ranked job made in time has run, queue the system tests of each ranked person's best entry (a problem with
        held-out cases; again for an entry whose test predates the deadline or a held-out case added since), then
        freeze the final standings once none is left to run; and every night of an open leaderboard with held-out
        cases, the system tests of its top entries (live standings show their coverage). Returns what it did, one
        line each."""
        now = self.clock()
        done: list[str] = []
        with self.db.transaction() as s:
            boards = s.execute(select(Leaderboard.id, Leaderboard.name).where(Leaderboard.deadline < now)).all()
            frozen = {(b, d) for b, d in s.execute(select(FinalStanding.leaderboard_id, FinalStanding.device))}
        for board_id, name in boards:
            try:
                done.extend(self._tick_board(board_id, name, frozen))
            except InvalidChange:
                continue  # not ready yet (system tests still running)
            except Exception:
                log.exception("the end of competition %r could not proceed", name)
        for name, top in self._nightly_due(now):
            try:
                queued = self.queue_system_tests(name, actor=NIGHTLY_ACTOR, trigger=NIGHTLY_ACTOR, top=top)
            except Exception:
                log.exception("the nightly system tests of %r could not be queued", name)
                continue
            if queued.entries:
                done.append(f"{name}: queued {len(queued.entries)} nightly system tests")
        return done

    def _nightly_due(self, now: datetime) -> list[tuple[str, int]]:
        """The open leaderboards with held-out cases whose nightly system tests are due (none queued in the last
        ``NIGHTLY_EVERY``; a board's first, ``NIGHTLY_EVERY`` after its first ranked entry), each with how many
        entries per device its problem tests (``system_test_top``)."""
        due = []
        with self.db.transaction() as s:
            for lb in s.scalars(select(Leaderboard).where(Leaderboard.deadline >= now)):
                task = problem_from_snapshot(lb.task).task
                if not task.holdout:
                    continue
                last = s.scalar(
                    select(func.max(SystemTest.created_at)).where(
                        SystemTest.leaderboard_id == lb.id, SystemTest.trigger == NIGHTLY_ACTOR
                    )
                )
                first = s.scalar(select(func.min(BestScore.submitted_at)).where(BestScore.leaderboard_id == lb.id))
                since = last or first
                if since is not None and now - since >= NIGHTLY_EVERY:
                    due.append((lb.name, task.system_test_top))
        return due

    def _tick_board(self, board_id: int, name: str, frozen: set[tuple[int, str]]) -> list[str]:
        with self.db.transaction() as s:
            lb = s.get(Leaderboard, board_id)
            if lb is None:
                return []
            devices = [d for d in lb.devices if (board_id, d) not in frozen]
        queued, ready = 0, []
        for d in devices:
            count = self._queue_deadline_tests(name, d)
            if count is None:
                continue  # a ranked job made in time has not run yet
            queued += count
            if not count:
                ready.append(d)
        done = [f"{name}: queued {queued} system tests at the deadline"] if queued else []
        for d in ready:
            if self.settings.deadline_retime_rounds and self._retime_finalists(name, d):
                done.append(f"{name}: queued {self.settings.deadline_retime_rounds} re-timing rounds on {d}")
            elif self._try_freeze(name, d):
                done.append(f"{name}: froze the final standings on {d}")
        return done

    def _queue_deadline_tests(self, name: str, device: str) -> int | None:
        """Queue the deadline's system tests of ``device`` (a problem with held-out cases): one for each ranked
        person's best entry that has none since the deadline on the board's current held-out cases (an honest #11
        may be the final #1, issue 29). None while a ranked job that counts is left to run (its entry may be a
        best one); else how many were queued (0: none needed)."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)  # (the row lock orders workers ticking at once)
            if unsettled_jobs(s, lb, device):
                return None
            cases = holdout_cases_on(problem_from_snapshot(lb.task), device)
            if not cases:
                return 0
            found = deadline_tests(s, lb, device, cases)
            untested = [b.submission_id for b, _ in top_entries(s, lb, device, None) if b.submission_id not in found]
            for submission_id in untested:
                queue_system_test(s, lb, device, submission_id, cases, DEADLINE_ACTOR, self.clock())
            if untested:
                self._audit(s, DEADLINE_ACTOR, "system_test", lb.name, device=device, trigger=DEADLINE_ACTOR,
                            entries=len(untested))  # fmt: skip
            return len(untested)

    def _retime_finalists(self, name: str, device: str) -> bool:
        """Queue the deadline's re-timing of ``device``'s finalists (those the final standings would rank), once,
        when its system tests have all run; False when it was queued before, is not due yet, or has fewer than two
        entries to compare."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            if deadline_rounds(s, lb, device):
                return False
            try:
                finalists, _ = self._finalists(s, lb, device)
            except InvalidChange:  # system tests still to run: the freeze waits for them too
                return False
            if len(finalists) < 2:
                return False
            top = problem_from_snapshot(lb.task).task.system_test_top  # issue 29: the top K are re-timed
            best = rank(finalists, RankingRule(lb.ranking_by), gpu=device != "cpu")  # their runs' order
            ids = [st.entry.submission_id for st in best][:top]
            rounds = self.settings.deadline_retime_rounds
            queued = queue_rounds(s, lb, device, ids, rounds, DEADLINE_ACTOR, self.clock())
            self._audit(s, DEADLINE_ACTOR, "retime", lb.name, device=device, rounds=rounds, batches=[queued.batch])
            return True

    def _try_freeze(self, name: str, device: str) -> bool:
        try:
            self.freeze_standings(name, device, actor=DEADLINE_ACTOR)
        except (InvalidChange, IntegrityError):  # not ready, or another worker froze it first
            return False
        return True


def _with_rounds(
    s: Session, lb: Leaderboard, dev: str, entries: list[Entry]
) -> tuple[list[Entry], list[dict[str, Any]]]:
    """The entries with their rounds of the deadline's re-timing of ``dev`` where it ran (``Entry.rounds``: the final
    standings then rank the re-timed ones by them), and those left out for a wrong answer (or a crash) in a round. The
    rounds count only while the entries they re-timed, each in two rounds at least, are still the top ones by their
    runs: after a late entry was admitted, an entry came back from moderation, or a re-timed one failed a round for a
    reason that may be the machine's, every entry ranks by its runs. Raises ``InvalidChange`` while rounds are left to
    run."""
    rows = deadline_rounds(s, lb, dev)
    if not rows:
        return entries, []
    waiting = [r for r in rows if r.status in (RoundStatus.QUEUED, RoundStatus.RUNNING)]
    if waiting:
        raise InvalidChange(f"{len(waiting)} re-timing rounds of {lb.name!r} on {dev} have not run yet.")
    wrong = set(wrong_in_a_round(rows))
    excluded = [
        {"user_name": e.user_name, "submission_id": e.submission_id, "coverage": "wrong answer in a re-timing round"}
        for e in entries
        if e.submission_id in wrong
    ]
    entries = [e for e in entries if e.submission_id not in wrong]
    retimed, _ = round_entries(rows, {})
    here = {e.submission_id for e in entries}  # (a re-timed finalist banned, deleted or quarantined since: gone)
    rounds = {e.submission_id: e.rounds for e in retimed if len(e.rounds) >= 2 and e.submission_id in here}
    top = [e.submission_id for e in sorted(entries, key=lambda e: entry_score(e, RankingRule(lb.ranking_by))[0])]
    if set(top[: len(rounds)]) != set(rounds):
        log.info("%s on %s: the re-timing rounds no longer cover the top entries; ranked by their runs", lb.name, dev)
        return entries, excluded  # the rounds no longer cover the top entries: ranked by their runs
    return [replace(e, rounds=rounds.get(e.submission_id, ())) for e in entries], excluded


def with_drift_notes(view: StandingsView, drifts: dict[int, str]) -> StandingsView:
    """Each re-timed entry's "re-timed on torch X: -1.2%" (``leaderboards/rejudge.py``) added to its note."""
    if not drifts:
        return view
    rows = tuple(
        replace(r, note="; ".join(n for n in (r.note, drifts.get(r.submission_id)) if n) or None) for r in view.rows
    )
    return replace(view, rows=rows)


def with_late_notes(s: Session, view: StandingsView) -> StandingsView:
    """The view with "late, admitted by X because Y" on the admitted late entries (``leaderboards/late.py``)."""
    notes = late_notes(s, (r.submission_id for r in view.rows))
    return replace(view, rows=tuple(replace(r, note=notes.get(r.submission_id)) for r in view.rows)) if notes else view


def moderated_out(s: Session, frozen: FinalStanding) -> set[int]:
    """The frozen entries that no longer rank (``leaderboards/moderation.py``): quarantined or judged hacked since,
    deleted, or their author banned. They leave the final standings when read, and the others are ranked again from
    their stored statistics."""
    ids = [int(e["submission_id"]) for e in frozen.entries]
    if not ids:
        return set()
    gone = or_(~ranks_condition(), Submission.deleted.is_(True), User.is_banned.is_(True))
    return set(
        s.scalars(select(Submission.id).join(User, User.id == Submission.user_id).where(Submission.id.in_(ids), gone))
    )


def unsettled_jobs(s: Session, lb: Leaderboard, device: str) -> int:
    """How many ranked jobs of ``device`` that could still rank are queued or running: of a submission made in time
    (or a late one an admin admitted), not deleted, not a replay, not moderated out, of a user not banned (the
    ranking's own conditions, ``ranking._eligible``). The final standings wait for them: one made at 23:59 behind a
    busy queue runs after the deadline and may be its winner."""
    query = (
        select(func.count())
        .select_from(Job)
        .join(Submission, Submission.id == Job.submission_id)
        .join(User, User.id == Submission.user_id)
        .where(
            Submission.leaderboard_id == lb.id,
            Submission.mode == Mode.RANKED.value,
            Submission.deleted.is_(False),
            ranks_condition(),
            ~practice_condition(),
            User.is_banned.is_(False),
            Job.device == device,
            Job.status.in_([JobStatus.QUEUED.value, JobStatus.RUNNING.value]),
        )
    )
    return s.scalar(query) or 0


def deadline_tests(s: Session, lb: Leaderboard, device: str, cases: int) -> dict[int, SystemTest]:
    """The system tests of ``device`` that count for the final standings, by submission: queued since the deadline
    (by it or by an admin), on as many held-out cases as the board has now (a hack may add one after a test ran)."""
    rows = s.scalars(
        select(SystemTest).where(
            SystemTest.leaderboard_id == lb.id,
            SystemTest.device == device,
            SystemTest.created_at >= lb.deadline,
            SystemTest.cases == cases,
        )
    )
    return {t.submission_id: t for t in rows}


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _final_view(name: str, frozen: FinalStanding, *, removed: Collection[int] = ()) -> StandingsView:
    kept = (Entry.from_json(e) for e in frozen.entries if int(e["submission_id"]) not in removed)
    rule = RankingRule(frozen.ranking_by)
    standings = rank(kept, rule, gpu=frozen.device != "cpu")
    rows = tuple(
        StandingRow(
            rank=st.rank,
            tied=st.tied,
            user_name=st.entry.user_name,
            submission_id=st.entry.submission_id,
            file_name=st.entry.file_name,
            score_ns=st.score_ns,
            low_ns=st.interval_ns[0],
            high_ns=st.interval_ns[1],
            coverage=coverage_text(*st.entry.coverage) if st.entry.coverage else None,
            holdout_ns=holdout_figure(st.entry, rule),
        )
        for st in standings
    )
    excluded = tuple(
        ExcludedRow(str(e["user_name"]), int(e["submission_id"]), str(e["coverage"])) for e in frozen.excluded
    )
    return StandingsView(name, frozen.device, True, frozen.created_at, rows, excluded)
