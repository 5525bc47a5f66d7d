"""System tests and final standings through the service and a worker (issue 29): the top entries run on the held-out
cases below everyone's submissions, only counts are kept, and the final standings rank those that passed. A kernel
right on the ranked shapes and wrong on one held-out shape is #1 live and absent from the final standings; the honest
#2 becomes #1."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from helpers import write_problem
from sqlalchemy import select

from leaderboards.db import Database
from leaderboards.errors import InvalidChange, NotFound
from leaderboards.holdout import SystemTestRunner
from leaderboards.models import AuditLog, FinalStanding, Job, SystemTest
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult, TestResult, TimingStats, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result

HELD_OUT = [{"size": 5, "seed": 50}, {"size": 9, "seed": 51}, {"size": 13, "seed": 52}]
CHEAT = b"def custom_kernel(data):\n    return data  # right on the ranked shapes only\n"
HONEST = b"def custom_kernel(data):\n    return list(data)\n"
THIRD = b"def custom_kernel(data):\n    return [*data]\n"
SPEED = {CHEAT: 500.0, HONEST: 1000.0, THIRD: 2000.0}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2031, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def respond(request: RunRequest) -> RunResult:
    """The runner: each file at its speed; the cheat fails the held-out case of size 9 (a system test's only)."""
    result = accepted_result(request, SPEED.get(request.submission.content, 1500.0))
    if request.submission.content == CHEAT and any(c["size"] == 9 for c in request.tests):
        tests = [
            TestResult(
                index=i,
                case=c,
                verdict=Verdict.WRONG_ANSWER if c["size"] == 9 else Verdict.ACCEPTED,
                message=f"mismatch at size {c['size']}",
            )
            for i, c in enumerate(request.tests)
        ]
        return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, tests=tests, message="wrong at size 9")
    return result


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock) -> LeaderboardService:
    service = LeaderboardService(database, settings, clock=clock)
    path = write_problem(tmp_path / "problems")
    task = yaml.safe_load((path / "task.yml").read_text())
    task["holdout"] = HELD_OUT
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    service.create_leaderboard(load_problem(path), deadline=clock.now + timedelta(days=1), devices=["cpu"])
    return service


def serve(service: LeaderboardService, launcher: FakeLauncher, settings: WorkerSettings | None = None) -> None:
    settings = settings or WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    launchers: Callable[[str], FakeLauncher] = lambda _d: launcher  # noqa: E731
    runner = SystemTestRunner(service, launchers, 10.0)
    asyncio.run(Worker(service, launchers, settings, system_tests=runner).run(once=True))


def submit_all(service: LeaderboardService) -> dict[str, int]:
    ids = {}
    for user, code in (("cheat", CHEAT), ("honest", HONEST), ("third", THIRD)):
        ids[user] = service.submit(UserRef(user), "k.py", code, "add", ["cpu"], Mode.RANKED).submission_id
    return ids


def test_the_cheat_is_first_live_and_absent_from_the_final_standings(svc: LeaderboardService, clock: Clock) -> None:
    launcher = FakeLauncher(respond)
    ids = submit_all(svc)
    serve(svc, launcher)
    live = svc.standings("add")
    assert [(r.rank, r.user_name, r.coverage) for r in live.rows] == [
        (1, "cheat", None), (2, "honest", None), (3, "third", None)]  # fmt: skip
    for request in launcher.requests:  # no competitor's run was sent a held-out case
        assert request.tests != HELD_OUT and all(c not in request.tests for c in HELD_OUT)

    clock.now += timedelta(days=2)  # past the deadline: the workers' housekeeping ends the competition
    assert svc.competition_tick() == ["add: queued 3 system tests at the deadline"]
    with pytest.raises(InvalidChange, match="have not run yet"):
        svc.freeze_standings("add", "cpu", actor="admin")
    assert svc.competition_tick() == []  # queued once; nothing to freeze yet
    assert [c.status for c in svc.system_test_coverage("add")] == ["queued"] * 3
    serve(svc, launcher)
    system = [r for r in launcher.requests if r.tests == HELD_OUT]
    assert sorted(r.submission.content for r in system) == sorted([CHEAT, HONEST, THIRD])
    assert all(r.mode is Mode.TEST and not r.benchmarks for r in system)

    coverage = {c.user_name: c.text for c in svc.system_test_coverage("add")}
    assert coverage == {"cheat": "2 of 3 held-out cases", "honest": "3 of 3 held-out cases",
                        "third": "3 of 3 held-out cases"}  # fmt: skip
    live = svc.standings("add")  # live standings show the coverage once system tests have run
    assert (live.rows[0].user_name, live.rows[0].coverage) == ("cheat", "2 of 3 held-out cases")

    assert svc.competition_tick() == ["add: froze the final standings on cpu"]
    final = svc.standings("add", final=True)
    assert [(r.rank, r.tied, r.user_name, r.coverage) for r in final.rows] == [
        (1, False, "honest", "3 of 3 held-out cases"), (2, False, "third", "3 of 3 held-out cases")]  # fmt: skip
    assert [(e.user_name, e.submission_id, e.coverage) for e in final.excluded] == [
        ("cheat", ids["cheat"], "2 of 3 held-out cases")]  # fmt: skip
    low, high = final.rows[0].low_ns, final.rows[0].high_ns
    assert low is not None and high is not None and low < 1000.0 < high
    assert svc.competition_tick() == []  # frozen once
    with pytest.raises(InvalidChange, match="frozen already"):
        svc.freeze_standings("add", "cpu", actor="admin")


def test_nothing_of_a_held_out_case_is_stored(svc: LeaderboardService, clock: Clock, database: Database) -> None:
    launcher = FakeLauncher(respond)
    submit_all(svc)
    serve(svc, launcher)
    svc.queue_system_tests("add", actor="admin", top=2)
    serve(svc, launcher)
    clock.now += timedelta(days=2)
    svc.competition_tick()
    serve(svc, launcher)
    svc.competition_tick()
    with database.transaction() as s:
        rows = [*s.scalars(select(SystemTest)), *s.scalars(select(FinalStanding)), *s.scalars(select(AuditLog))]
        stored = repr([vars(r) for r in rows])
        assert rows and "mismatch at size" not in stored and "'size': 9" not in stored and "'seed': 51" not in stored
        from leaderboards.models import Run

        assert all(r.mode == Mode.RANKED.value for r in s.scalars(select(Run)))  # a system test stores no run


def test_admin_system_tests_take_the_top_k_and_wait_below_submissions(svc: LeaderboardService) -> None:
    launcher = FakeLauncher(respond)
    submit_all(svc)
    serve(svc, launcher)
    queued = svc.queue_system_tests("add", actor="admin", top=2)
    assert (queued.cases, [e.user_name for e in queued.entries]) == (3, ["cheat", "honest"])
    assert all(e.text == "system test queued" for e in queued.entries)
    svc.submit(UserRef("late"), "k.py", HONEST + b"# late\n", "add", ["cpu"], Mode.TEST)  # queued after them
    order: list[str] = []
    launcher.respond = lambda r: (order.append("system" if r.tests == HELD_OUT else "job"), respond(r))[1]
    serve(svc, launcher)
    assert order == ["job", "system", "system"]  # a person's submission first
    with svc.db.transaction() as s:
        assert all(j.status == "succeeded" for j in s.scalars(select(Job)))


def test_a_system_test_the_runner_fails_is_retried_then_marked_not_the_entrys(
    svc: LeaderboardService, clock: Clock
) -> None:
    launcher = FakeLauncher(respond)
    submit_all(svc)
    serve(svc, launcher)
    clock.now += timedelta(days=2)
    launcher.respond = lambda r: (
        RunResult.infrastructure_error(r.mode, "the GPU fell off")
        if r.tests == HELD_OUT and r.submission.content == CHEAT
        else respond(r)
    )
    assert svc.competition_tick() == ["add: queued 3 system tests at the deadline"]
    serve(svc, launcher)
    coverage = {c.user_name: (c.status, c.passed) for c in svc.system_test_coverage("add")}
    assert coverage == {"cheat": ("failed", None), "honest": ("done", 3), "third": ("done", 3)}
    assert sum(r.tests == HELD_OUT and r.submission.content == CHEAT for r in launcher.requests) == 3  # three attempts
    with pytest.raises(InvalidChange, match="could not run"):  # the entry waits for a run rather than fall out
        svc.freeze_standings("add", "cpu", actor="admin")
    assert svc.competition_tick() == []  # nor does the deadline freeze without it
    svc.queue_system_tests("add", actor="admin", top=1)
    launcher.respond = respond
    serve(svc, launcher)
    final = svc.freeze_standings("add", "cpu", actor="admin")
    assert [(r.user_name, r.coverage) for r in final.rows] == [
        ("honest", "3 of 3 held-out cases"), ("third", "3 of 3 held-out cases")]  # fmt: skip
    assert [e.coverage for e in svc.standings("add", final=True).excluded] == ["2 of 3 held-out cases"]


def test_a_problem_without_held_out_cases_has_no_system_test_and_final_standings_rank_all(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    service = LeaderboardService(database, settings, clock=clock)
    service.create_leaderboard(load_problem(write_problem(tmp_path)), deadline=clock.now + timedelta(hours=1),
                               devices=["cpu"])  # fmt: skip
    with pytest.raises(InvalidChange, match="no held-out cases"):
        service.queue_system_tests("add", actor="admin")
    with pytest.raises(NotFound, match="no final standings"):
        service.standings("add", final=True)
    submit_all(service)
    serve(service, FakeLauncher(respond))
    with pytest.raises(InvalidChange, match="after its deadline"):
        service.freeze_standings("add", "cpu", actor="admin")
    clock.now += timedelta(hours=2)
    assert service.competition_tick() == ["add: froze the final standings on cpu"]
    final = service.standings("add", final=True)
    assert [(r.rank, r.user_name, r.coverage) for r in final.rows] == [
        (1, "cheat", None), (2, "honest", None), (3, "third", None)]  # fmt: skip


def test_the_deadline_tests_every_ranked_entry_whatever_the_nightly_top(
    database: Database, settings: CoreSettings, tmp_path: Path, clock: Clock
) -> None:
    """Issue 29: system tests take the top K nightly while a board is open, and every ranked entry at the deadline,
    so an honest entry below the top K still reaches the final standings when those above it fail."""
    service = LeaderboardService(database, settings, clock=clock)
    path = write_problem(tmp_path / "problems")
    task = yaml.safe_load((path / "task.yml").read_text())
    task.update(holdout=HELD_OUT, system_test_top=1)
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    service.create_leaderboard(load_problem(path), deadline=clock.now + timedelta(hours=1), devices=["cpu"])
    submit_all(service)
    launcher = FakeLauncher(respond)
    serve(service, launcher)
    assert len(service.queue_system_tests("add", actor="admin", top=1).entries) == 1  # K, as nightly takes them
    clock.now += timedelta(hours=2)
    assert service.competition_tick() == ["add: queued 3 system tests at the deadline"]
    serve(service, launcher)
    service.competition_tick()
    final = service.standings("add", final=True)
    assert [r.user_name for r in final.rows] == ["honest", "third"]
    assert [e.user_name for e in final.excluded] == ["cheat"]


def timed_board(service: LeaderboardService, root: Path, clock: Clock) -> str:
    """A problem that times its held-out cases (holdout_timed: true)."""
    path = write_problem(root / "timed", name="timed")
    task = yaml.safe_load((path / "task.yml").read_text())
    task.update(holdout=HELD_OUT, holdout_timed=True)
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    service.create_leaderboard(load_problem(path), deadline=clock.now + timedelta(days=1), devices=["cpu"])
    return "timed"


def keyed_to_the_benchmarks(request: RunRequest) -> RunResult:
    """KEYED is fastest on the ranked shapes and 10x slower on the held-out ones (a kernel tuned to the benchmark
    shapes); HONEST is as fast on both."""
    held_out = request.tests == HELD_OUT
    if request.submission.content == CHEAT:
        return accepted_result(request, 5000.0 if held_out else 500.0)
    return accepted_result(request, 1000.0)


def test_timed_held_out_cases_rank_the_final_standings_and_show_one_figure(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    name = timed_board(svc, tmp_path, clock)
    launcher = FakeLauncher(keyed_to_the_benchmarks)
    keyed = svc.submit(UserRef("keyed"), "k.py", CHEAT, name, ["cpu"], Mode.RANKED).submission_id
    honest = svc.submit(UserRef("honest"), "k.py", HONEST, name, ["cpu"], Mode.RANKED).submission_id
    serve(svc, launcher)
    assert [r.user_name for r in svc.standings(name).rows] == ["keyed", "honest"]  # live: the ranked shapes only

    clock.now += timedelta(days=2)
    assert f"{name}: queued 2 system tests at the deadline" in svc.competition_tick()  # (and the fixture's board)
    serve(svc, launcher)
    [system, _] = [r for r in launcher.requests if r.tests == HELD_OUT]
    assert system.mode is Mode.RANKED and system.benchmarks == HELD_OUT and system.baselines == []
    live = {r.user_name: r for r in svc.standings(name).rows}
    assert live["keyed"].coverage == "3 of 3 held-out cases"
    assert (live["keyed"].holdout_ns, live["honest"].holdout_ns) == (pytest.approx(5000.0), pytest.approx(1000.0))
    figures = {c.submission_id: c.score_ns for c in svc.system_test_coverage(name)}
    assert figures == {keyed: pytest.approx(5000.0), honest: pytest.approx(1000.0)}
    with svc.db.transaction() as s:  # per case: statistics only, in order; never a case's shape or seed
        [timings] = s.scalars(select(SystemTest.timings).where(SystemTest.submission_id == keyed)).all()
    assert len(timings) == 3 and all(set(t) == set(TimingStats.model_fields) for t in timings)

    assert f"{name}: froze the final standings on cpu" in svc.competition_tick()
    final = svc.standings(name, final=True)
    # 500 ns on two ranked cases and 5 µs on three held-out ones: the honest 1 µs everywhere wins.
    assert [(r.rank, r.user_name) for r in final.rows] == [(1, "honest"), (2, "keyed")]
    assert [r.holdout_ns for r in final.rows] == [pytest.approx(1000.0), pytest.approx(5000.0)]
    assert final.rows[1].score_ns == pytest.approx((500.0**2 * 5000.0**3) ** (1 / 5))
    assert final.rows[1].low_ns < final.rows[1].score_ns < final.rows[1].high_ns
    assert svc.standings(name, final=True) == final  # recomputed from the frozen statistics: the same floats


def test_a_timed_held_out_figure_stays_hidden_until_the_deadline(
    svc: LeaderboardService, clock: Clock, tmp_path: Path
) -> None:
    """A system test while the board is open (nightly, or an admin's) runs the competitor's file on the held-out
    inputs: an exact timing shown back would let that file tell its author about them (it can sleep by an amount
    that encodes a shape). Until the deadline only the counts are shown; the figure, after."""
    name = timed_board(svc, tmp_path, clock)
    launcher = FakeLauncher(keyed_to_the_benchmarks)
    svc.submit(UserRef("honest"), "k.py", HONEST, name, ["cpu"], Mode.RANKED)
    serve(svc, launcher)
    svc.queue_system_tests(name, actor="admin", top=5)
    serve(svc, launcher)
    [row] = svc.standings(name).rows
    assert (row.coverage, row.holdout_ns) == ("3 of 3 held-out cases", None)
    assert [(c.passed, c.score_ns) for c in svc.system_test_coverage(name)] == [(3, None)]
    clock.now += timedelta(days=2)
    [row] = svc.standings(name).rows
    assert row.holdout_ns == pytest.approx(1000.0)
    assert [c.score_ns for c in svc.system_test_coverage(name)] == [pytest.approx(1000.0)]


def test_timed_held_out_cases_need_seeds_and_stay_off_the_public_folder(tmp_path: Path) -> None:
    from leaderboards.problems import ProblemFormatError
    from leaderboards.public_problem import SECRET_TASK_FIELDS

    path = write_problem(tmp_path / "p")
    task = yaml.safe_load((path / "task.yml").read_text())
    task.update(holdout=[{"size": 5}], holdout_timed=True)
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    with pytest.raises(ProblemFormatError, match="needs a seed in every holdout case"):
        load_problem(path)
    task.update(holdout=[])
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    with pytest.raises(ProblemFormatError, match="needs holdout: cases"):
        load_problem(path)
    assert "holdout_timed" in SECRET_TASK_FIELDS
    task.pop("holdout_timed")
    (path / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    assert "holdout_timed" not in load_problem(path).snapshot()["task"]  # untimed problems keep their snapshot


def test_a_timed_system_test_on_the_cpu_runner_keeps_coverage_and_one_figure(tmp_path: Path) -> None:
    """The real runner (sandboxed where bubblewrap runs) on the CPU: a ranked-mode system test checks and times every
    held-out case; what is kept is the count and the statistics, from which one figure is made."""
    import shutil

    from leaderboards.holdout import held_out_text, held_out_timings
    from runners.entry import run_request
    from runners.settings import RunnerSettings

    folder = tmp_path / "vectoradd"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "problems" / "vectoradd", folder)
    task = yaml.safe_load((folder / "task.yml").read_text())
    task.update(holdout=[{"size": 33, "seed": 70}, {"size": 4099, "seed": 71}], holdout_timed=True)
    (folder / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    code = b"import torch\n\ndef custom_kernel(data):\n    a, b, out = data\n    return torch.add(a, b, out=out)\n"
    request = load_problem(folder).system_test_request("k.py", code, device="cpu", device_name="cpu")
    result = run_request(request, settings=RunnerSettings(_env_file=None, job_root=tmp_path / "jobs",
                                                          allow_unsandboxed=True))  # fmt: skip
    assert result.passed, result.message
    assert [t.verdict for t in result.tests] == [Verdict.ACCEPTED] * 2
    timings, figure = held_out_timings(request, result)
    assert timings is not None and figure is not None and len(timings) == 2
    medians = [t["median_ns"] for t in timings]
    assert all(m > 0 for m in medians) and figure == pytest.approx((medians[0] * medians[1]) ** 0.5)
    shown = held_out_text("2 of 2 held-out cases", figure)
    assert shown.startswith("2 of 2 held-out cases, timed ") and "4099" not in shown and "33" not in shown.split(",")[0]


def test_open_boards_test_their_top_entries_nightly_and_live_standings_show_it(
    svc: LeaderboardService, clock: Clock
) -> None:
    launcher = FakeLauncher(respond)
    svc.update_leaderboard("add", deadline=clock.now + timedelta(days=3), force=True)
    submit_all(svc)
    serve(svc, launcher)
    assert svc.competition_tick() == []  # the first night comes a day after the first ranked entry
    clock.now += timedelta(hours=23)
    assert svc.competition_tick() == []
    clock.now += timedelta(hours=1, minutes=1)  # still open: its deadline is two days away
    assert svc.competition_tick() == ["add: queued 3 nightly system tests"]
    assert svc.competition_tick() == []  # once a night
    serve(svc, launcher)
    live = svc.standings("add")
    assert [(r.user_name, r.coverage) for r in live.rows] == [
        ("cheat", "2 of 3 held-out cases"),
        ("honest", "3 of 3 held-out cases"),
        ("third", "3 of 3 held-out cases"),
    ]
    with svc.db.transaction() as s:
        assert set(s.scalars(select(SystemTest.trigger))) == {"nightly"}
        assert s.scalars(select(AuditLog.actor).where(AuditLog.action == "system_test")).all() == ["nightly"]
    clock.now += timedelta(hours=23)
    assert svc.competition_tick() == []
    clock.now += timedelta(hours=2)
    assert svc.competition_tick() == ["add: queued 3 nightly system tests"]  # the next night
    clock.now += timedelta(days=2)  # past the deadline now: the deadline's own tests, not a nightly one
    assert svc.competition_tick() == ["add: queued 3 system tests at the deadline"]
