"""`kernelcup hack submit|show|credits` on this machine's database (issue 35): a case out of range is refused naming
its field; an in-range one is queued, a worker runs it, `show` lists each entry's verdict and `credits` the hacker."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from helpers import future
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.commands.board_hack import ACTION_WORDS, _line
from leaderboards.board_hacks import EntryAction, HackRunner
from leaderboards.db import open_database
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode, RunRequest, RunResult, TestResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result

FIXTURE = Path(__file__).parents[1] / "leaderboards" / "hack_fixture"
SHAPE_KEYED = (FIXTURE / "shape_keyed.py").read_bytes()


def respond(request: RunRequest) -> RunResult:
    if request.mode is not Mode.TEST:
        return accepted_result(request)
    (case,) = request.tests
    wrong = request.submission.content == SHAPE_KEYED and case["cols"] % 32 != 0
    verdict = Verdict.WRONG_ANSWER if wrong else Verdict.ACCEPTED
    return RunResult(verdict=verdict, mode=request.mode, tests=[TestResult(index=0, case=case, verdict=verdict)])


def run(*args: str):
    return CliRunner().invoke(build_app(), list(args), env={"COLUMNS": "200"})


def test_hack_submit_show_and_credits_on_the_local_database(env: Path) -> None:
    settings = CoreSettings(_env_file=None, data_dir=env / "data")
    service = LeaderboardService(open_database(settings), settings)
    folder = env / "problems" / "triple"
    folder.mkdir(parents=True)
    for rel in ("reference.py", "task.yml"):
        shutil.copy(FIXTURE / rel, folder / rel)
    service.create_leaderboard(load_problem(folder), deadline=future(), devices=["cpu"])
    sid = service.submit(UserRef("ann"), "k.py", SHAPE_KEYED, "triple", ["cpu"], Mode.RANKED).submission_id
    launcher = FakeLauncher(respond)
    worker_settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    asyncio.run(Worker(service, lambda _d: launcher, worker_settings).run(once=True))

    (env / "far.json").write_text(json.dumps({"rows": 1000, "cols": 3, "seed": 1}))
    refused = run("hack", "submit", "triple", str(env / "far.json"), "--user", "carol", "--server", "local")
    assert refused.exit_code != 0 and "rows: 1000 is outside 1 .. 256" in refused.output, refused.output
    (env / "case.json").write_text(json.dumps({"rows": 3, "cols": 33, "seed": 5}))
    queued = run("hack", "submit", "triple", str(env / "case.json"), "--user", "carol", "--server", "local", "--json")
    assert queued.exit_code == 0, queued.output
    (hack,) = json.loads(queued.output)["hacks"]
    assert hack["status"] == "queued" and "case" not in hack

    runner = HackRunner(service, lambda _d: launcher, 10.0)
    asyncio.run(Worker(service, lambda _d: launcher, worker_settings, hacks=runner).run(once=True))
    shown = run("hack", "show", str(hack["hack_id"]), "--user", "carol", "--server", "local")
    assert shown.exit_code == 0, shown.output
    assert f"broke 1 of 1 entries\n  #1 ann (submission {sid}): wrong answer (broken)" in shown.output
    assert "wrong answer (broken); quarantined: out of the rankings until a moderator judges it\n" in shown.output
    as_json = run("hack", "show", str(hack["hack_id"]), "--user", "carol", "--server", "local", "--json")
    assert [e["action"] for e in json.loads(as_json.output)["entries"]] == ["quarantined"], as_json.output
    assert run("hack", "show", str(hack["hack_id"]), "--user", "ann", "--server", "local").exit_code != 0
    credits = run("hack", "credits", "triple", "--server", "local")
    assert credits.exit_code == 0 and credits.output.strip() == "hacks: carol broke 1 entry", credits.output


def test_hack_submit_show_and_credits_through_a_server(env: Path) -> None:
    from served import served_kernelcup

    (env / "served").mkdir()
    with served_kernelcup(env / "served") as served:
        folder = env / "problems" / "triple"
        folder.mkdir(parents=True)
        for rel in ("reference.py", "task.yml"):
            shutil.copy(FIXTURE / rel, folder / rel)
        served.service.create_leaderboard(load_problem(folder), deadline=future(), devices=["cpu"])
        remote = {"COLUMNS": "200", "KERNELCUP_TOKEN": served.token, "KERNELCUP_CONFIG_DIR": str(env / "config")}

        def cli(*args: str):
            return CliRunner().invoke(build_app(), [*args, "--server", served.url], env=remote)

        (env / "far.json").write_text(json.dumps({"rows": 1000, "cols": 3, "seed": 1}))
        refused = cli("hack", "submit", "triple", str(env / "far.json"))
        assert refused.exit_code != 0 and "rows: 1000 is outside 1 .. 256" in refused.output, refused.output
        (env / "case.json").write_text(json.dumps({"rows": 3, "cols": 33, "seed": 5}))
        queued = cli("hack", "submit", "triple", str(env / "case.json"))
        assert queued.exit_code == 0 and "hack #1 on triple (cpu): queued" in queued.output, queued.output
        shown = cli("hack", "show", "1", "--json")
        assert shown.exit_code == 0 and json.loads(shown.output)["status"] == "queued", shown.output
        credits = cli("hack", "credits", "triple")
        assert credits.exit_code == 0 and "no input hack broke an entry of triple yet" in credits.output


def test_hack_show_prints_what_the_hack_did_to_each_entry() -> None:
    """`show` prints each entry's ``action`` as the API returns it: quarantined, flagged, withdrawn or kept, in words;
    nothing where it did nothing (or an older server sends none); an unknown one as it is, made
    printable (terminal escapes stripped)."""
    assert set(ACTION_WORDS) == {EntryAction.QUARANTINED, EntryAction.FLAGGED, EntryAction.WITHDRAWN, EntryAction.KEPT}
    entries = [
        {"rank": 1, "user_name": "ann", "submission_id": 7, "verdict": "wrong answer", "broken": True,
         "action": "quarantined"},
        {"rank": 2, "user_name": "bob", "submission_id": 8, "verdict": "wrong answer", "broken": False,
         "action": "flagged"},
        {"rank": 3, "user_name": "cy", "submission_id": 9, "verdict": "wrong answer", "broken": True,
         "action": "withdrawn"},
        {"rank": 4, "user_name": "di", "submission_id": 10, "verdict": "wrong answer", "broken": True,
         "action": "kept"},
        {"rank": 5, "user_name": "ed", "submission_id": 11, "verdict": "accepted", "broken": False, "action": ""},
        {"rank": 6, "user_name": "fi", "submission_id": 12, "verdict": "accepted", "broken": False},
        {"rank": 7, "user_name": "gu", "submission_id": 13, "verdict": "wrong answer", "broken": True,
         "action": "mystery\x1b[2J"},
    ]  # fmt: skip
    hack = {"hack_id": 3, "leaderboard": "triple", "device": "cpu", "status": "done", "broken": 1, "entries": entries}

    lines = _line(hack).splitlines()

    assert lines[0] == "hack #3 on triple (cpu): done, broke 1 of 7 entries"
    assert lines[1:] == [
        "  #1 ann (submission 7): wrong answer (broken); quarantined: out of the rankings until a moderator judges it",
        "  #2 bob (submission 8): wrong answer; flagged for a moderator (it still ranks)",
        "  #3 cy (submission 9): wrong answer (broken); credit withdrawn: a moderator cleared it",
        "  #4 di (submission 10): wrong answer (broken); kept: a moderator had judged it already",
        "  #5 ed (submission 11): accepted",
        "  #6 fi (submission 12): accepted",
        "  #7 gu (submission 13): wrong answer (broken); mystery",  # the escape sequence is stripped
    ]
