"""Input hacks against a board (issue 35, ``leaderboards/board_hacks.py``): any account submits a case of the problem's
hack_space; a worker runs the reference on it, then each device's top entries (correctness only); a case that breaks
an entry becomes a held-out case, the entry leaves the ranking (quarantined for a moderator) and the hacker is
credited. The board is the hack fixture (``hack_fixture/``: triple a rows x cols matrix); ``shape_keyed.py`` is exact
on the public shapes and wrong on a row whose length is no multiple of 32. Runs in test mode go through the fixture's
in-process evaluator; ranked runs are the fake launcher's (the shape-keyed kernel the fastest)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import future
from pydantic import ValidationError
from sqlalchemy import func, select
from test_hacks import FIXTURE, run_in_process

from leaderboards.board_hacks import HackCredit, HackRunner, credits_line
from leaderboards.db import Database
from leaderboards.errors import InvalidChange, RateLimited
from leaderboards.hacks import HackRefused
from leaderboards.models import Hack, Leaderboard, Submission
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.snapshot import problem_from_snapshot
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

SHAPE_KEYED = (FIXTURE / "shape_keyed.py").read_bytes()
HONEST = (FIXTURE / "honest.py").read_bytes()
BREAKS = {"rows": 3, "cols": 33, "seed": 5}
"""In range; 33 is no multiple of 32: the shape-keyed kernel leaves the row's tail untouched."""
SEEN = {"rows": 4, "cols": 64, "seed": 99}
"""In range, on a public shape: it breaks nobody."""


def respond(request: RunRequest) -> RunResult:
    """Ranked runs: the fake's, the shape-keyed kernel fastest; test-mode runs (a hack's): really evaluated."""
    if request.mode is Mode.TEST:
        return run_in_process(request)
    return accepted_result(request, 500.0 if request.submission.content == SHAPE_KEYED else 1000.0)


def board(service: LeaderboardService, root: Path, name: str = "triple") -> None:
    folder = root / name
    folder.mkdir(parents=True)
    for rel in ("reference.py", "task.yml"):
        shutil.copy(FIXTURE / rel, folder / rel)
    service.create_leaderboard(load_problem(folder), deadline=future(), devices=["cpu"])


@pytest.fixture
def svc(database: Database, settings: CoreSettings, tmp_path: Path) -> LeaderboardService:
    service = LeaderboardService(database, settings.model_copy(update={"hack_units_per_day": 2}))
    board(service, tmp_path / "problems")
    return service


def serve(service: LeaderboardService, launcher: FakeLauncher) -> None:
    """A worker's pass: people's jobs first, then (with nothing else to run) hacks."""
    settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    launchers: Callable[[str], FakeLauncher] = lambda _d: launcher  # noqa: E731
    runner = HackRunner(service, launchers, 10.0)
    asyncio.run(Worker(service, launchers, settings, hacks=runner).run(once=True))


def entries(service: LeaderboardService) -> dict[str, int]:
    ids = {}
    for user, code in (("ann", SHAPE_KEYED), ("bob", HONEST)):
        ids[user] = service.submit(UserRef(user), "k.py", code, "triple", ["cpu"], Mode.RANKED).submission_id
    return ids


def test_an_in_range_hack_breaks_the_shape_keyed_entry_and_removes_its_rank(svc: LeaderboardService) -> None:
    launcher = FakeLauncher(respond)
    ids = entries(svc)
    serve(svc, launcher)
    assert [(r.rank, r.user_name) for r in svc.standings("triple").rows] == [(1, "ann"), (2, "bob")]

    (queued,) = svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    assert (queued.status, queued.device, queued.entries) == ("queued", "cpu", ())
    serve(svc, launcher)  # one pass: the reference, then each entry on the case

    hack = svc.hack(queued.hack_id, UserRef("carol"))
    assert (hack.status, hack.broken) == ("done", 1)
    assert [(e.submission_id, e.rank, e.user_name, e.verdict, e.broken) for e in hack.entries] == [
        (ids["ann"], 1, "ann", "wrong answer", True), (ids["bob"], 2, "bob", "accepted", False)]  # fmt: skip
    hack_runs = [r for r in launcher.requests if r.mode is Mode.TEST]
    # the reference, ann's entry, then (it seemed broken) ann's again and the reference's again to confirm, then bob's
    assert [r.submission.name for r in hack_runs] == [
        "reference_as_submission.py", "k.py", "k.py", "reference_as_submission.py", "k.py"]  # fmt: skip
    assert all(r.tests == [BREAKS] and not r.benchmarks for r in hack_runs)  # correctness only, never timed
    # ann's entry left the ranking at once, quarantined for a moderator; bob is first
    assert [(r.rank, r.user_name) for r in svc.standings("triple").rows] == [(1, "bob")]
    moderated = [(m.submission_id, m.state, m.by) for m in svc.moderated()]
    assert moderated == [(ids["ann"], "quarantined", f"hack:{hack.hack_id}")]
    # the case is now one of the board's held-out cases, so the system tests run it
    with svc.db.transaction() as s:
        task = problem_from_snapshot(s.scalar(select(Leaderboard.task))).task
    assert task.holdout == [BREAKS]
    assert svc.hack_credits("triple") == (HackCredit("carol", 1),)
    assert credits_line(svc.hack_credits("triple")) == "hacks: carol broke 1 entry"
    assert "cols" not in repr(hack) and "seed" not in repr(hack)  # the view never carries the case


def test_a_hack_on_a_seen_shape_breaks_nobody_and_costs_a_unit(svc: LeaderboardService) -> None:
    launcher = FakeLauncher(respond)
    entries(svc)
    serve(svc, launcher)
    (kept,) = svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))  # breaks ann: its unit is refunded
    serve(svc, launcher)
    (first,) = svc.submit_hack(UserRef("carol"), "triple", dict(SEEN))
    serve(svc, launcher)
    assert (svc.hack(first.hack_id, UserRef("carol")).broken, svc.standings("triple").rows[0].user_name) == (0, "bob")
    svc.submit_hack(UserRef("carol"), "triple", {**SEEN, "seed": 100})  # the second unit (waiting)
    with pytest.raises(RateLimited, match="used your 2 input hacks of the last 24 hours"):
        svc.submit_hack(UserRef("carol"), "triple", {**SEEN, "seed": 101})
    assert svc.hack_credits("triple") == (HackCredit("carol", 1),)
    assert svc.hack(kept.hack_id, UserRef("carol")).broken == 1
    svc.settings = svc.settings.model_copy(update={"hack_units_per_day": 0})
    with pytest.raises(InvalidChange, match="takes no input hacks"):
        svc.submit_hack(UserRef("dan"), "triple", dict(SEEN))


@pytest.mark.parametrize(
    ("case", "field", "words"),
    [
        ({"rows": 1000, "cols": 3, "seed": 1}, "case.rows", "rows: 1000 is outside 1 .. 256"),
        ({"rows": 3, "cols": float("nan"), "seed": 1}, "case.cols", "not a whole number"),
        ({"rows": 3, "cols": 3}, "case.seed", "seed: is missing"),
        ({"rows": 200, "cols": 200, "seed": 1}, "case", "above this problem's cap of 16,384"),
    ],
)
def test_a_hack_out_of_range_is_refused_at_once_with_its_field(
    svc: LeaderboardService, case: dict[str, Any], field: str, words: str
) -> None:
    with pytest.raises(HackRefused, match=words) as refused:
        svc.submit_hack(UserRef("carol"), "triple", case)
    assert refused.value.field == field
    with svc.db.transaction() as s:
        assert s.scalar(select(func.count()).select_from(Hack)) == 0


def test_a_reference_breaking_hack_is_refused_and_no_entry_runs(svc: LeaderboardService) -> None:
    launcher = FakeLauncher(respond)
    entries(svc)
    serve(svc, launcher)
    before = len(launcher.requests)
    (queued,) = svc.submit_hack(UserRef("carol"), "triple", {"rows": 2, "cols": 7, "seed": 1})  # the fixture's hole
    serve(svc, launcher)
    hack = svc.hack(queued.hack_id, UserRef("carol"))
    assert hack.status == "refused" and "reference does not pass its own check" in hack.note and not hack.entries
    assert [r.submission.name for r in launcher.requests[before:]] == ["reference_as_submission.py"]
    assert [r.user_name for r in svc.standings("triple").rows] == ["ann", "bob"]
    assert svc.hack_credits("triple") == ()


def test_the_hackers_own_entries_are_not_run_and_a_case_is_tried_once(svc: LeaderboardService) -> None:
    launcher = FakeLauncher(respond)
    ids = entries(svc)
    serve(svc, launcher)
    (queued,) = svc.submit_hack(UserRef("ann"), "triple", dict(BREAKS))
    with pytest.raises(HackRefused, match="tried this case on triple already") as again:
        svc.submit_hack(UserRef("ann"), "triple", dict(BREAKS))
    assert again.value.field == "case"
    serve(svc, launcher)
    hack = svc.hack(queued.hack_id, UserRef("ann"))
    assert [(e.user_name, e.broken) for e in hack.entries] == [("bob", False)]
    with svc.db.transaction() as s:
        assert s.get(Submission, ids["ann"]).moderation is None  # type: ignore[union-attr]
    with pytest.raises(Exception, match="no hack #"):
        svc.hack(queued.hack_id, UserRef("bob"))  # only its author (and admins) read it


def test_a_hack_space_must_cap_its_sizes(tmp_path: Path) -> None:
    folder = tmp_path / "uncapped"
    shutil.copytree(FIXTURE, folder)
    task = yaml.safe_load((folder / "task.yml").read_text())
    del task["hack_space"]["sizes"]
    (folder / "task.yml").write_text(yaml.safe_dump(task))
    with pytest.raises(Exception, match=r"hack_space[\s\S]*sizes is required") as refused:
        load_problem(folder)
    assert not isinstance(refused.value, ValidationError) or "hack_space" in str(refused.value)


def test_a_hack_that_could_not_run_is_retried_then_failed_and_costs_nothing(svc: LeaderboardService) -> None:
    from runners.launchers.base import LauncherError

    entries(svc)
    serve(svc, FakeLauncher(respond))
    (queued,) = svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))
    serve(svc, FakeLauncher(respond, error=LauncherError("the runner is down")))
    hack = svc.hack(queued.hack_id, UserRef("carol"), admin=True)
    assert hack.status == "failed" and "the runner is down" in hack.note
    assert svc.hack(queued.hack_id, UserRef("carol")).note.startswith("the runner could not run it")  # not its error
    assert [r.user_name for r in svc.standings("triple").rows] == ["ann", "bob"]
    (again,) = svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))  # a failed try may be sent again
    assert again.status == "queued"


def test_a_hack_waits_below_every_persons_job(svc: LeaderboardService) -> None:
    launcher = FakeLauncher(respond)
    entries(svc)
    serve(svc, launcher)
    (queued,) = svc.submit_hack(UserRef("carol"), "triple", dict(BREAKS))  # queued first
    svc.submit(UserRef("dan"), "k.py", HONEST, "triple", ["cpu"], Mode.RANKED)
    before = len(launcher.requests)
    serve(svc, launcher)
    modes = [(r.mode, r.submission.name) for r in launcher.requests[before:]]
    assert modes[0] == (Mode.RANKED, "k.py") and (Mode.TEST, "reference_as_submission.py") in modes
    assert modes.index((Mode.TEST, "reference_as_submission.py")) > max(
        i for i, (mode, _) in enumerate(modes) if mode is Mode.RANKED
    )
    assert svc.hack(queued.hack_id, UserRef("carol")).status == "done"


VECTORADD_SHAPE_KEYED = b"""import torch

SEEN = {1, 7, 127, 256, 513, 2048, 8192, 16384}  # vectoradd's public sizes


def custom_kernel(data):
    a, b, out = data
    if a.shape[0] in SEEN:
        return torch.add(a, b, out=out)
    full = a.shape[1] // 128 * 128  # a "fast path" for multiples of 128: the tail of each row is left NaN
    out[:, :full] = a[:, :full] + b[:, :full]
    return out
"""


@pytest.mark.parametrize(
    "device", [pytest.param("cpu", marks=pytest.mark.slow), pytest.param("H100", marks=pytest.mark.gpu)]
)
def test_a_hack_breaks_a_shape_keyed_vectoradd_entry_in_the_sandboxed_evaluator(
    database: Database, settings: CoreSettings, device: str
) -> None:
    """The board's path with the real runner (``runners.entry.run_request``, sandboxed) on the shipped vectoradd: the
    reference as a submission (its ``_lib`` embedded), then each entry on the case; on ``H100`` it runs on the GPU
    (``pytest -m gpu``). Ranked runs are the fake's (no timing is proved here)."""
    from kernelcup.settings import load
    from runners.entry import run_request
    from runners.settings import RunnerSettings

    runner_settings = load(RunnerSettings)
    service = LeaderboardService(database, settings)
    problem = load_problem((Path(__file__).parents[2] / "problems" / "vectoradd").resolve())
    service.create_leaderboard(problem, deadline=future(), devices=[device])
    honest = (problem.path / "solutions" / "correct" / "pytorch.py").read_bytes()
    for user, code in (("ann", VECTORADD_SHAPE_KEYED), ("bob", honest)):
        service.submit(UserRef(user), "k.py", code, "vectoradd", [device], Mode.RANKED)

    def real(request: RunRequest) -> RunResult:
        if request.mode is Mode.TEST:
            return run_request(request, settings=runner_settings)
        return accepted_result(request, 500.0 if request.submission.content == VECTORADD_SHAPE_KEYED else 1000.0)

    serve(service, FakeLauncher(real))
    (queued,) = service.submit_hack(UserRef("carol"), "vectoradd", {"size": 1000, "seed": 7})
    serve(service, FakeLauncher(real))
    hack = service.hack(queued.hack_id, UserRef("carol"))
    assert [(e.user_name, e.verdict, e.broken) for e in hack.entries] == [
        ("ann", "wrong answer", True), ("bob", "accepted", False)]  # fmt: skip
    assert [r.user_name for r in service.standings("vectoradd", device).rows] == ["bob"]
