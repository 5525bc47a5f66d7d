"""Input hacks hardened after the red team's review of issue 35 (2026-11-28; ``leaderboards/board_hacks.py``): each
finding's class has a test here, on SQLite and PostgreSQL. H1: no hack changes a board past its deadline or with
frozen standings. H2: a moderator's clear is not undone by a hack, every hack costs a unit (a confirmed break refunds
it once per case without its seed; the clear withdraws the credit). M1: a case the problem cannot make is refused and
costs a unit; failed hacks are free only up to a cap. M2: held-out cases hacks add are capped; a system test's time
limit scales with its cases. M3: a break is confirmed (the entry and the reference again) before it quarantines.
M4: a running hack yields to a waiting job between entries. L1: a running hack's lease is renewed. And a problem
re-sync keeps the held-out cases hacks added (those still inside the new hack_space)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import select
from test_board_hacks import BREAKS, HONEST, SEEN, SHAPE_KEYED, respond
from test_hacks import FIXTURE

from leaderboards import board_hacks
from leaderboards.board_hacks import HackCredit, HackRunner, HacksClosed, hack_units_used
from leaderboards.db import Database
from leaderboards.errors import RateLimited
from leaderboards.models import Hack, Leaderboard, Submission, User, utcnow
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.snapshot import TaskSnapshot, problem_from_snapshot, snapshot
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult, Verdict
from runners.launchers.base import LauncherError
from runners.launchers.fake import FakeLauncher


class Clock:
    def __init__(self) -> None:
        self.now = utcnow()

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_service(
    database: Database, settings: CoreSettings, root: Path, clock: Clock, **more: Any
) -> LeaderboardService:
    service = LeaderboardService(database, settings.model_copy(update={"hack_units_per_day": 2, **more}), clock=clock)
    folder = root / "triple"
    folder.mkdir(parents=True)
    for rel in ("reference.py", "task.yml"):
        shutil.copy(FIXTURE / rel, folder / rel)
    service.create_leaderboard(load_problem(folder), deadline=clock.now + timedelta(days=1), devices=["cpu"])
    return service


@pytest.fixture
def svc(database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock) -> LeaderboardService:
    return make_service(database, settings, tmp_path / "problems", clock)


def serve(service: LeaderboardService, launcher: FakeLauncher, **runner: Any) -> None:
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    launchers: Callable[[str], FakeLauncher] = lambda _d: launcher  # noqa: E731
    hacks = HackRunner(service, launchers, 10.0, **runner)
    asyncio.run(Worker(service, launchers, settings, hacks=hacks).run(once=True))


def enter(service: LeaderboardService, *who: tuple[str, bytes]) -> dict[str, int]:
    pairs = who or (("ann", SHAPE_KEYED), ("bob", HONEST))
    return {u: service.submit(UserRef(u), "k.py", c, "triple", ["cpu"], Mode.RANKED).submission_id for u, c in pairs}


def ranked(service: LeaderboardService) -> list[str]:
    return [r.user_name for r in service.standings("triple").rows]


def units(service: LeaderboardService, user: str) -> int:
    with service.db.transaction() as s:
        uid = s.scalar(select(User.id).where(User.name == user))
        assert uid is not None
        return hack_units_used(s, uid, service.clock())[0]


def moderation(service: LeaderboardService, submission_id: int) -> str | None:
    with service.db.transaction() as s:
        sub = s.get(Submission, submission_id)
        assert sub is not None
        return sub.moderation


def holdout(service: LeaderboardService) -> list[dict[str, Any]]:
    with service.db.transaction() as s:
        return problem_from_snapshot(s.scalar(select(Leaderboard.task))).task.holdout


# -- H1: a closed board -----------------------------------------------------------------------------------------------


def test_no_hack_is_taken_or_run_after_the_deadline_and_frozen_standings_stay(
    svc: LeaderboardService, clock: Clock
) -> None:
    launcher = FakeLauncher(respond)
    enter(svc)
    serve(svc, launcher)
    (waiting,) = svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))  # queued before the deadline
    clock.now += timedelta(days=2)
    frozen = [(r.rank, r.user_name) for r in svc.freeze_standings("triple", "cpu", actor="admin").rows]
    assert frozen == [(1, "ann"), (2, "bob")]
    with pytest.raises(HacksClosed, match="past its deadline") as closed:
        svc.submit_hack(UserRef("carol"), "triple", {**BREAKS, "seed": 6})
    assert closed.value.code == "hacks_closed"
    serve(svc, launcher)
    hack = svc.hack(waiting.hack_id, UserRef("carol"))
    assert hack.status == "closed" and "costs no unit" in hack.note and not hack.entries
    assert [(r.rank, r.user_name) for r in svc.standings("triple", "cpu", final=True).rows] == frozen
    assert (ranked(svc), holdout(svc), units(svc, "carol")) == (["ann", "bob"], [], 0)


def test_a_hack_running_when_the_deadline_passes_changes_nothing(svc: LeaderboardService, clock: Clock) -> None:
    ids = enter(svc)
    serve(svc, FakeLauncher(respond))
    svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    claim = svc.claim_hack("w0")
    assert claim is not None
    reference = respond(claim.reference)
    runs = [board_hacks.EntryRun(respond(e.request), confirmed=True) for e in claim.entries]
    clock.now += timedelta(days=2)  # the deadline passed while it ran
    assert svc.record_hack(claim, reference, runs)
    assert svc.hack(claim.hack_id, UserRef("carol")).status == "closed"
    assert (moderation(svc, ids["ann"]), holdout(svc), svc.hack_credits("triple")) == (None, [], ())


# -- H2: a moderator's clear; units ----------------------------------------------------------------------------------


def test_a_cleared_entry_is_only_flagged_by_the_next_hack_and_every_hack_costs_a_unit(svc: LeaderboardService) -> None:
    launcher = FakeLauncher(respond)
    ids = enter(svc)
    serve(svc, launcher)
    (first,) = svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    serve(svc, launcher)
    assert (ranked(svc), svc.hack_credits("triple"), units(svc, "carol")) == (["bob"], (HackCredit("carol", 1),), 0)
    svc.moderate(ids["ann"], "cleared", actor="admin:mod", reason="the case is unfair")
    assert svc.hack_credits("triple") == () and svc.hack(first.hack_id, UserRef("carol")).broken == 0
    assert units(svc, "carol") == 1  # the clear withdrew the refund

    (second,) = svc.submit_hack(UserRef("carol"), "triple", {**BREAKS, "seed": 6})
    serve(svc, launcher)
    hack = svc.hack(second.hack_id, UserRef("carol"))
    assert [(e.user_name, e.broken, e.action) for e in hack.entries] == [("ann", True, "flagged"), ("bob", False, "")]
    assert (hack.broken, ranked(svc), moderation(svc, ids["ann"])) == (0, ["ann", "bob"], "flagged")
    assert "flagged 1 for a moderator" in hack.text
    with pytest.raises(RateLimited, match="every hack costs one"):
        svc.submit_hack(UserRef("carol"), "triple", {**BREAKS, "seed": 7})
    # flagged after a clear: a later hack still only flags it (a moderator's clear is never undone by a machine)
    svc.settings = svc.settings.model_copy(update={"hack_units_per_day": 5})
    svc.submit_hack(UserRef("dan"), "triple", {**BREAKS, "seed": 8})
    serve(svc, launcher)
    assert (ranked(svc), moderation(svc, ids["ann"])) == (["ann", "bob"], "flagged")


def test_cases_that_differ_only_in_the_seed_refund_one_unit(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    svc = make_service(database, settings, tmp_path, clock, hack_top=1)
    launcher = FakeLauncher(respond)
    ids = enter(svc, ("ann", SHAPE_KEYED), ("dan", SHAPE_KEYED + b"\n"), ("bob", HONEST))
    serve(svc, launcher)
    svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))  # breaks ann (the top entry): refunded
    serve(svc, launcher)
    svc.submit_hack(UserRef("carol"), "triple", {**BREAKS, "seed": 6})  # breaks dan, the new top: same rate key
    serve(svc, launcher)
    assert (moderation(svc, ids["ann"]), moderation(svc, ids["dan"])) == ("quarantined", "quarantined")
    assert svc.hack_credits("triple") == (HackCredit("carol", 2),)
    assert units(svc, "carol") == 1
    svc.submit_hack(UserRef("carol"), "triple", dict(SEEN))  # breaks nobody: the second unit
    with pytest.raises(RateLimited):
        svc.submit_hack(UserRef("carol"), "triple", {**SEEN, "seed": 100})


# -- M1: a case the problem cannot make; failed hacks -----------------------------------------------------------------

BAD = {"rows": 256, "cols": 1, "seed": 1}
"""Stands for an in-range case the problem's generate_input cannot make (the fake's runner says so)."""


def test_a_case_the_problem_cannot_make_is_refused_and_costs_a_unit(svc: LeaderboardService) -> None:
    def problem_fails(request: RunRequest) -> RunResult:
        if request.mode is Mode.TEST and request.tests == [BAD]:
            return RunResult.infrastructure_error(request.mode, "generate_input failed: too narrow", fault="problem")
        return respond(request)

    launcher = FakeLauncher(problem_fails)
    enter(svc)
    serve(svc, launcher)
    before = len(launcher.requests)
    (queued,) = svc.submit_hack(UserRef("carol"), "triple", dict(BAD))
    serve(svc, launcher)
    hack = svc.hack(queued.hack_id, UserRef("carol"))
    assert hack.status == "refused" and "could not make" in hack.note and "costs a unit" in hack.note
    assert [r.submission.name for r in launcher.requests[before:]] == ["reference_as_submission.py"]  # once, no retry
    assert units(svc, "carol") == 1
    with pytest.raises(Exception, match="tried this case"):
        svc.submit_hack(UserRef("carol"), "triple", dict(BAD))


def test_failed_hacks_are_free_only_up_to_a_cap(svc: LeaderboardService) -> None:
    enter(svc)
    serve(svc, FakeLauncher(respond))
    down = FakeLauncher(respond, error=LauncherError("the runner is down"))
    for n in range(board_hacks.FREE_FAILED_PER_DAY + 2):
        (queued,) = svc.submit_hack(UserRef("carol"), "triple", {**SEEN, "seed": 1000 + n})
        serve(svc, down)
        assert svc.hack(queued.hack_id, UserRef("carol")).status == "failed"
    assert units(svc, "carol") == 2
    with pytest.raises(RateLimited):
        svc.submit_hack(UserRef("carol"), "triple", {**SEEN, "seed": 2000})


# -- M2: caps on hack-added cases; the system test's limit ------------------------------------------------------------


def test_held_out_cases_hacks_add_are_capped_per_hacker(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(board_hacks, "MAX_HACK_CASES_PER_HACKER", 1)
    svc = make_service(database, settings, tmp_path, clock, hack_top=1, hack_units_per_day=5)
    launcher = FakeLauncher(respond)
    ids = enter(svc, ("ann", SHAPE_KEYED), ("dan", SHAPE_KEYED + b"\n"), ("bob", HONEST))
    serve(svc, launcher)
    svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    serve(svc, launcher)
    svc.submit_hack(UserRef("carol"), "triple", {"rows": 5, "cols": 40, "seed": 1})
    serve(svc, launcher)
    assert moderation(svc, ids["dan"]) == "quarantined"  # it still quarantines
    assert holdout(svc) == [BREAKS]  # but adds no second case


def test_a_system_tests_time_limit_scales_with_its_held_out_cases() -> None:
    problem = load_problem(FIXTURE)
    base = problem.task.test_timeout_s
    public = len(problem.task.tests)

    def limit(cases: int) -> float:
        snap = snapshot(problem).with_task(holdout=[{"rows": 3, "cols": 3 + i, "seed": i} for i in range(cases)])
        request = problem_from_snapshot(snap.stored()).system_test_request("k.py", b"", device="cpu")
        assert len(request.tests) == cases
        return request.limits.run_timeout_s

    assert limit(1) == base  # never below the task's own limit
    assert limit(public * 10) == pytest.approx(base * 10)  # the same time per case as the public tests get


# -- M3: confirm before acting ----------------------------------------------------------------------------------------


def test_a_break_that_does_not_repeat_only_flags_the_entry(svc: LeaderboardService) -> None:
    calls: list[str] = []

    def flaky(request: RunRequest) -> RunResult:
        if request.mode is Mode.TEST and request.submission.content == HONEST:
            calls.append("bob")
            if len(calls) == 1:  # a contended device: it fails once
                return RunResult(verdict=Verdict.RUNTIME_ERROR, mode=request.mode, message="CUDA error: busy")
        return respond(request)

    launcher = FakeLauncher(flaky)
    ids = enter(svc, ("bob", HONEST))
    serve(svc, launcher)
    before = len(launcher.requests)
    (queued,) = svc.submit_hack(UserRef("carol"), "triple", dict(SEEN))
    serve(svc, launcher)
    names = [r.submission.name for r in launcher.requests[before:]]
    assert names == ["reference_as_submission.py", "k.py", "k.py", "reference_as_submission.py"]
    hack = svc.hack(queued.hack_id, UserRef("carol"))
    ((entry),) = hack.entries
    assert (entry.broken, entry.action, hack.broken) == (False, "flagged", 0)
    assert "not confirmed" in entry.verdict
    assert (ranked(svc), moderation(svc, ids["bob"]), holdout(svc)) == (["bob"], "flagged", [])


@pytest.mark.parametrize(("reference_s", "quarantined"), [(1.0, True), (170.0, False)])
def test_a_timeout_breaks_only_where_the_reference_used_a_fraction_of_the_limit(
    svc: LeaderboardService, reference_s: float, quarantined: bool
) -> None:
    def slow(request: RunRequest) -> RunResult:
        if request.mode is Mode.TEST and request.submission.content == HONEST:
            return RunResult(verdict=Verdict.TIMEOUT, mode=request.mode, message="over the limit")
        result = respond(request)
        if request.mode is Mode.TEST:
            result = result.model_copy(update={"wall_time_s": reference_s})
        return result

    launcher = FakeLauncher(slow)
    ids = enter(svc, ("bob", HONEST))
    serve(svc, launcher)
    svc.submit_hack(UserRef("carol"), "triple", dict(SEEN))
    serve(svc, launcher)
    assert moderation(svc, ids["bob"]) == ("quarantined" if quarantined else "flagged")


# -- M4: yield to waiting jobs ----------------------------------------------------------------------------------------


def test_a_running_hack_yields_to_a_waiting_job_between_entries(svc: LeaderboardService) -> None:
    sent: list[int] = []

    def meanwhile(request: RunRequest) -> RunResult:
        if request.mode is Mode.TEST and request.submission.content == SHAPE_KEYED and not sent:
            sent.append(
                svc.submit(UserRef("dan"), "k.py", HONEST + b"\n", "triple", ["cpu"], Mode.RANKED).submission_id
            )
        return respond(request)

    launcher = FakeLauncher(meanwhile)
    enter(svc)
    serve(svc, launcher)
    before = len(launcher.requests)
    (queued,) = svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    serve(svc, launcher)
    serve(svc, launcher)
    runs = [(r.mode, r.submission.content) for r in launcher.requests[before:]]
    dans = runs.index((Mode.RANKED, HONEST + b"\n"))
    bobs = runs.index((Mode.TEST, HONEST))
    assert dans < bobs  # dan's job ran between the hack's entries
    hack = svc.hack(queued.hack_id, UserRef("carol"))
    # the rest ran on the board's top entries as they were then: dan's new entry among them
    assert hack.status == "done" and [e.user_name for e in hack.entries] == ["ann", "bob", "dan"]


# -- L1: the lease ----------------------------------------------------------------------------------------------------


def test_a_running_hacks_lease_is_renewed_and_fenced(svc: LeaderboardService, clock: Clock) -> None:
    enter(svc)
    serve(svc, FakeLauncher(respond))
    svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    claim = svc.claim_hack("w0")
    assert claim is not None
    with svc.db.transaction() as s:
        first = s.scalar(select(Hack.lease_expires_at))
    assert first is not None
    clock.now = first - timedelta(seconds=1)  # almost out: renewed from now
    assert svc.renew_hack_lease(claim)
    clock.now = first + timedelta(seconds=5)
    assert svc.claim_hack("w1") is None  # still held: no second worker runs it
    stolen = board_hacks.HackClaim(claim.hack_id, "w1#x", claim.device, claim.reference, claim.entries)
    assert not svc.renew_hack_lease(stolen)


def test_the_runner_heartbeats_while_it_runs(svc: LeaderboardService) -> None:
    enter(svc)
    serve(svc, FakeLauncher(respond))
    svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    beats: list[int] = []
    renew = svc.renew_hack_lease

    def counted(claim: board_hacks.HackClaim) -> bool:
        beats.append(claim.hack_id)
        return renew(claim)

    svc.renew_hack_lease = counted  # type: ignore[method-assign]
    serve(svc, FakeLauncher(respond, delay_s=0.05), heartbeat_s=0.01)
    assert beats


# -- a problem re-sync ------------------------------------------------------------------------------------------------


def test_a_problem_resync_keeps_the_held_out_cases_hacks_added(svc: LeaderboardService, tmp_path: Path) -> None:
    enter(svc)
    serve(svc, FakeLauncher(respond))
    svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    serve(svc, FakeLauncher(respond))
    assert holdout(svc) == [BREAKS]
    folder = tmp_path / "problems" / "triple"
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["description"] = "Triple it (reworded)."
    (folder / "task.yml").write_text(yaml.safe_dump(task))
    update = svc.update_leaderboard("triple", problem=load_problem(folder), actor="admin")
    assert holdout(svc) == [BREAKS]
    assert "kept 1 held-out case input hacks added" in update.changed

    task["hack_space"]["params"]["cols"]["max"] = 32  # the case is outside the new space: dropped, and said so
    (folder / "task.yml").write_text(yaml.safe_dump(task))
    update = svc.update_leaderboard("triple", problem=load_problem(folder), actor="admin")
    assert holdout(svc) == []
    assert any("dropped 1 held-out case" in c for c in update.changed)
    with svc.db.transaction() as s:
        assert TaskSnapshot.load(s.scalar(select(Leaderboard.task))).task.holdout == []


def test_a_problem_set_sync_keeps_the_hack_added_cases_and_says_so(svc: LeaderboardService, tmp_path: Path) -> None:
    from leaderboards.results import SetEntry, SyncAction
    from leaderboards.sync import _changed as sync_changed

    enter(svc)
    serve(svc, FakeLauncher(respond))
    svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    serve(svc, FakeLauncher(respond))
    with svc.db.transaction() as s:
        deadline = s.scalar(select(Leaderboard.deadline))
    assert deadline is not None
    folder = tmp_path / "problems" / "triple"
    assert not sync_changed(svc, "triple", load_problem(folder))  # so a sync does not check its reference again
    same = SetEntry("triple", load_problem(folder), deadline, ("cpu",))
    ((first,), applied) = svc.apply_problem_set("set", [same], actor="sync")
    assert applied and holdout(svc) == [BREAKS]  # the same problem again: its hack-added case stays
    assert "task" not in first.changed  # and the task is unchanged (the case merged back into the same snapshot)
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["description"] = "Triple it (reworded)."
    (folder / "task.yml").write_text(yaml.safe_dump(task))
    assert sync_changed(svc, "triple", load_problem(folder))
    changed = SetEntry("triple", load_problem(folder), deadline, ("cpu",))
    ((item,), applied) = svc.apply_problem_set("set", [changed], actor="sync")
    assert applied and item.action is SyncAction.UPDATED
    assert "kept 1 held-out case input hacks added" in item.changed
    assert holdout(svc) == [BREAKS]


def test_a_hacks_lease_runs_on_the_databases_clock_not_a_skewed_workers(
    svc: LeaderboardService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault campaign, 2026-11-29: jobs' leases moved to the database's clock; a hack's were still written and
    compared with each worker's own, so a worker whose clock ran ahead took a live worker's hack."""
    import datetime as dt

    import leaderboards.models

    enter(svc)
    serve(svc, FakeLauncher(respond))
    svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    svc.clock = utcnow  # the service's default clock: leases then run on the database's
    claim = svc.claim_hack("w0")
    assert claim is not None

    class Ahead(dt.datetime):  # this host's wall clock two hours ahead
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return dt.datetime.now(tz) + timedelta(hours=2)

    monkeypatch.setattr(leaderboards.models, "datetime", Ahead)
    assert svc.claim_hack("w1") is None  # the live worker's hack is not taken over
    assert svc.renew_hack_lease(claim)
