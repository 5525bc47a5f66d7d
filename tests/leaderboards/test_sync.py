"""`kernelcup problems validate|sync` and `kernelcup leaderboard list|show`, through the real CLI and database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from helpers import REFERENCE, check_reference_in_process, write_problem, write_problem_set
from typer.testing import CliRunner

from kernelcup.cli import build_app
from leaderboards.db import Database
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.sync import sync_problem_set, traceback_headline, validate_path
from runners.contract import RunRequest, RunResult

DEADLINE = "2031-01-01T00:00:00"


@pytest.fixture
def problem_set(tmp_path: Path) -> Path:
    write_problem(tmp_path / "problems", "add")
    write_problem(tmp_path / "problems", "scale", description="Scale a vector.")
    return write_problem_set(
        tmp_path / "problems",
        [
            {"directory": "add", "deadline": DEADLINE, "devices": ["cpu", "H100"]},
            {"directory": "scale", "name": "scale-v1", "deadline": DEADLINE, "devices": ["cpu"]},
        ],
        name="starter",
    )


def edit_task(problem_dir: Path, **changes: object) -> None:
    task_file = problem_dir / "task.yml"
    task = yaml.safe_load(task_file.read_text())
    task.update(changes)
    task_file.write_text(yaml.safe_dump(task))


def test_validate_reports_every_error_with_file_and_field(tmp_path: Path, cli) -> None:
    root = tmp_path / "problems"
    write_problem(root, "good")
    bad = write_problem(root, "bad")
    edit_task(bad, benchmarks=[], tset=[1])
    (bad / "reference.py").write_text("def ref_kernel(d): pass\n")
    write_problem_set(root, [{"directory": "good", "deadline": "soon", "devices": []}], name="set")
    code, out, err = cli("problems", "validate", str(root))
    assert code == 1
    assert f"{bad}/task.yml: benchmarks: List should have at least 1 item" in err
    assert f"{bad}/task.yml: tset: unknown field" in err
    assert f"{root}/set.yaml: problems.0.deadline:" in err
    assert f"{root}/set.yaml: problems.0.devices: List should have at least 1 item" in err
    assert "error(s)" in err
    code, out, _ = cli("problems", "validate", str(root / "good"))
    assert code == 0 and "ok: 1 problem(s), 0 problem set(s)" in out
    code, out, _ = cli("problems", "validate", str(root / "good"), "--json")
    assert code == 0 and json.loads(out)["issues"] == []
    code, _, err = cli("problems", "validate", str(tmp_path / "nowhere"))
    assert code == 1 and "no such file or folder" in err


def test_validate_counts_the_problems_a_set_lists(problem_set: Path, cli) -> None:
    """A newcomer's walk: validating a set printed "ok: 0 problem(s), 1 problem set(s)" after checking its problems."""
    code, out, _ = cli("problems", "validate", str(problem_set))
    assert code == 0 and "ok: 2 problem(s), 1 problem set(s)" in out
    code, out, _ = cli("problems", "validate", str(problem_set.parent))  # the folders and the set: each folder once
    assert code == 0 and "ok: 2 problem(s), 1 problem set(s)" in out


def test_validate_the_repository_problems_folder_reports_problems_by_file() -> None:
    report = validate_path(Path(__file__).resolve().parents[2] / "problems")
    for issue in report.issues:  # whatever state the library is in, every issue names a file
        assert issue.file


def test_sync_creates_then_leaves_unchanged(problem_set: Path, cli) -> None:
    code, out, _ = cli("problems", "sync", str(problem_set), "--json")
    assert code == 0
    report = json.loads(out)
    assert [(i["leaderboard"], i["action"]) for i in report["items"]] == [("add", "created"), ("scale-v1", "created")]
    assert report["applied"] is True and report["checked"] == ["add", "scale-v1"]  # new problems: references ran
    code, out, _ = cli("problems", "sync", str(problem_set), "--json")
    report = json.loads(out)
    assert [i["action"] for i in report["items"]] == ["unchanged", "unchanged"]
    assert report["checked"] == []  # nothing changed: no reference runs again
    code, out, _ = cli("leaderboard", "list", "--json")
    boards = {b["name"]: b for b in json.loads(out)}
    assert boards["add"]["devices"] == ["cpu", "H100"] and boards["add"]["deadline"] == "2031-01-01T00:00:00+00:00"
    assert boards["scale-v1"]["description"] == "Scale a vector."
    code, out, _ = cli("leaderboard", "list")
    assert code == 0 and "scale-v1" in out and "open" in out


def test_tests_description_deadline_change_freely_but_benchmarks_need_force(
    problem_set: Path, cli, database: Database
) -> None:
    cli("problems", "sync", str(problem_set))
    service = LeaderboardService(database, CoreSettings(_env_file=None))
    r = service.submit(UserRef("a"), "s.py", b"x = 1\n", "scale-v1")
    from helpers import run_result

    service.record_run(r.jobs[0].job_id, run_result())
    service.record_run(r.jobs[0].job_id, run_result(), secret=True)
    assert len(service.ranking("scale-v1").entries) == 1

    add, scale = problem_set.parent / "add", problem_set.parent / "scale"
    edit_task(add, tests=[{"size": 1, "seed": 5}, {"size": 7, "seed": 6}], description="Add, better explained.")
    edit_task(scale, benchmarks=[{"size": 123, "seed": 1}])
    code, out, err = cli("problems", "sync", str(problem_set))
    assert code == 1
    assert "scale-v1" in err and "--force" in err and "needs --force" in out and "benchmark cases changed" in out
    assert "nothing was applied" in out
    # All or nothing: the free changes to 'add' wait with the refused one.
    assert service.task("add").description == "Add two vectors." and len(service.task("add").tests) == 1
    assert len(service.task("scale-v1").benchmarks) == 2
    assert len(service.ranking("scale-v1").entries) == 1

    (scale / "reference.py").write_text((scale / "reference.py").read_text() + "\n# tweak\n")
    report = sync_problem_set(service, problem_set)
    (refused,) = report.refused
    assert refused.reasons == ("reference files changed: reference.py", "benchmark cases changed")
    assert not report.applied

    code, out, _ = cli("problems", "sync", str(problem_set), "--force", "--json")
    assert code == 0
    forced = {i["leaderboard"]: i for i in json.loads(out)["items"]}["scale-v1"]
    assert forced["action"] == "updated" and forced["ranking_reset"] is True
    assert service.ranking("scale-v1").entries == () and service.task("scale-v1").benchmarks == (
        {"size": 123, "seed": 1},
    )
    assert service.task("add").description == "Add, better explained." and len(service.task("add").tests) == 2


def test_sync_refuses_an_invalid_set_without_touching_the_database(problem_set: Path, cli) -> None:
    edit_task(problem_set.parent / "add", lang="rust")
    code, _, err = cli("problems", "sync", str(problem_set))
    assert code == 1 and "add/task.yml: lang:" in err
    code, out, _ = cli("leaderboard", "list", "--json")
    assert json.loads(out) == []


def test_leaderboard_show_ranks_per_device(problem_set: Path, cli, database: Database) -> None:
    from helpers import run_result

    cli("problems", "sync", str(problem_set))
    service = LeaderboardService(database, CoreSettings(_env_file=None))
    for user, median in (("slow", 3_000_000.0), ("fast", 1500.0)):
        r = service.submit(UserRef(user), "s.py", f"# {user}\n".encode(), "add", ["H100"])
        service.record_run(r.jobs[0].job_id, run_result([median, median]))
        service.record_run(r.jobs[0].job_id, run_result([median, median]), secret=True)
    code, out, _ = cli("leaderboard", "show", "add", "--json")
    assert code == 0
    data = json.loads(out)
    by_device = {r["device"]: r for r in data["rankings"]}
    assert by_device["cpu"]["entries"] == []
    assert [e["user_name"] for e in by_device["H100"]["entries"]] == ["fast", "slow"]
    assert "secret_seed" not in out
    code, out, _ = cli("leaderboard", "show", "add", "--device", "h100")
    assert code == 0 and "fast" in out and "1.50 µs" in out and "3.00 ms" in out and "cpu" not in out.split("\n", 2)[2]
    code, _, err = cli("leaderboard", "show", "add", "--device", "TPU")
    assert code == 1 and "does not run on 'TPU'" in err
    code, _, err = cli("leaderboard", "show", "nope")
    assert code == 1 and "no leaderboard named 'nope'" in err


def test_cli_formatting_helpers() -> None:
    from datetime import UTC, datetime

    from kernelcup.commands.common import jsonable
    from leaderboards.formatting import format_ns
    from leaderboards.results import UserRef as Ref

    assert [format_ns(x) for x in (None, 812, 12_345, 4_560_000, 1.23e9, 250_000)] == [
        "–",
        "812 ns",
        "12.3 µs",
        "4.56 ms",
        "1.23 s",
        "250 µs",
    ]
    when = datetime(2030, 1, 2, 3, 4, tzinfo=UTC)
    assert jsonable({"u": Ref("a", 5), "t": when, "b": b"x", "s": (1, 2)}) == {
        "u": {"name": "a", "discord_id": 5, "github_id": None},
        "t": "2030-01-02T03:04:00+00:00",
        "b": "x",
        "s": [1, 2],
    }


def test_validate_run_and_sync_run_each_reference_on_every_case_the_smallest_first(
    tmp_path: Path, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI gets the reference check from its composition root; this one records what it was asked to run."""
    monkeypatch.setenv("DATABASE_URL", database.engine.url.render_as_string(hide_password=False))
    monkeypatch.chdir(tmp_path)
    asked: list[tuple[str, list[dict], str, str]] = []

    def check_reference(request: RunRequest, *, settings: object = None) -> RunResult:
        asked.append((request.problem, request.tests, request.device, request.mode.value))
        return check_reference_in_process(request, settings=settings)

    app = build_app(reference_check=lambda: check_reference)
    root = tmp_path / "problems"
    write_problem(root, "add", tests=[{"size": 30, "seed": 1}, {"size": 2, "seed": 9}, {"size": 7, "seed": 3}])
    # generate_input returns a number where its own reference (and every kernel) expects a list
    wrong_type = REFERENCE.replace("return list(range(size))", "return size").replace("return data", "return data[:]")
    broken = write_problem(root, "broken", reference=wrong_type)
    entries = [{"directory": d, "deadline": DEADLINE, "devices": ["cpu"]} for d in ("add", "broken")]
    set_file = write_problem_set(root, entries, name="starter")

    result = CliRunner().invoke(app, ["problems", "validate", str(root / "add")])
    assert result.exit_code == 0 and asked == []  # without --run nothing runs
    result = CliRunner().invoke(app, ["problems", "validate", "--run", str(root / "add")])
    assert result.exit_code == 0, result.output
    assert "1 reference(s) passed their own check" in result.stdout
    every = [{"size": 2, "seed": 9}, {"size": 30, "seed": 1}, {"size": 7, "seed": 3}]
    assert asked == [("add", every, "cpu", "test")]  # every test case, the smallest first, on the CPU

    asked.clear()
    result = CliRunner().invoke(app, ["problems", "sync", str(set_file)])
    assert result.exit_code == 1
    assert f"{broken}/reference.py: generate_input -> ref_kernel -> check_implementation" in result.stderr
    assert "ref_kernel raised TypeError" in result.stderr
    assert [a[0] for a in asked] == ["add", "broken"]
    # each check says so as it starts, as validate --run does (a newcomer's walk: sync was silent for ~110 s)
    assert f"running the reference of {root / 'add'} on its test cases (from {{'size': 2, 'seed': 9}})" in result.stderr
    assert f"running the reference of {broken} on" in result.stderr
    service = LeaderboardService(database, CoreSettings(_env_file=None))
    assert service.list_leaderboards(include_hidden=True) == ()  # nothing applied

    asked.clear()
    result = CliRunner().invoke(app, ["problems", "sync", "--skip-run", str(set_file)])
    assert result.exit_code == 0, result.output
    assert asked == [] and "applied: 2 created, 0 updated, 0 unchanged" in result.stdout


def test_sync_says_when_nothing_was_applied(problem_set: Path, cli) -> None:
    cli("problems", "sync", str(problem_set))
    edit_task(problem_set.parent / "scale", benchmarks=[{"size": 5, "seed": 5}])
    code, out, err = cli("problems", "sync", str(problem_set))
    assert code == 1 and "nothing was applied" in out and "Nothing in the set was changed" in err


def test_a_failed_reference_check_leads_with_the_problems_own_error() -> None:
    """A newcomer's walk: `import numpyy` in reference.py read as three lines of our wording and the runner's own
    frames before the error; the message now starts with the file, line and exception."""
    message = (
        "the problem 'nc-bad' failed: importing the problem's reference.py:\n"
        "Traceback (most recent call last):\n"
        '  File "/work/main/runners/oracle/evaluate.py", line 120, in setup\n'
        "    module = import_file(path)\n"
        '  File "<frozen importlib._bootstrap_external>", line 999, in exec_module\n'
        '  File "/tmp/job/problem/reference.py", line 7, in <module>\n'
        "    import numpyy\n"
        "ModuleNotFoundError: No module named 'numpyy'\n"
    )
    assert traceback_headline(message) == "reference.py line 7: ModuleNotFoundError: No module named 'numpyy'"
    assert traceback_headline("check_implementation accepts None as the output of test 1") == ""
