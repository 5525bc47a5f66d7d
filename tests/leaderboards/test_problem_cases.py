"""Bad problem definitions as data (``problem_cases/*/expect.yml``): validate names each mistake, sync refuses it
with the same words and leaves the database exactly as it was, on SQLite and PostgreSQL.

See ``problem_cases/README.md`` for the format of a case.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import check_reference_in_process

from leaderboards.errors import KernelcupError
from leaderboards.problems import ProblemFormatError
from leaderboards.service import LeaderboardService
from leaderboards.sync import sync_problem_set, validate_path
from runners.contract import RunRequest, RunResult, TestResult, Verdict
from runners.launchers.base import LauncherError
from runners.routing import Router, RoutingSettings

CASES = Path(__file__).parent / "problem_cases"
REPO = Path(__file__).resolve().parents[2]
NAMES = sorted(p.name for p in CASES.iterdir() if p.is_dir() and not p.name.startswith("_"))


def _params() -> list[object]:
    """One parameter per case; a case that gets through today (``xfail:``, docs/redteam-2026-11-23.md) is a strict
    expected failure until it is fixed, then the line goes."""
    params = []
    for name in NAMES:
        reason = yaml.safe_load((CASES / name / "expect.yml").read_text()).get("xfail")
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


PARAMS = _params()
ROUTES = "H100=local,cpu=local"


def routed(device: str) -> str | None:
    """The device check of the CLI (``kernelcup.wiring.device_check``) on fixed routes without a '*'."""
    try:
        Router(routes=RoutingSettings(KERNELCUP_ROUTES=ROUTES).table, factories={}).route_for(device)
    except LauncherError as exc:
        return str(exc)
    return None


def run_in_process(request: RunRequest) -> RunResult:
    """A test-mode run with the signature of ``runners.entry.run_request``, for the exploit battery of these cases: it
    runs the request's reference and its Python submission in this process (no sandbox), generate_input ->
    custom_kernel -> check_implementation on every test, as the evaluator's test mode does, and returns each test's
    verdict and the submission's stdout."""
    reference: dict[str, Any] = {"__name__": "reference"}
    exec(compile(request.files["reference.py"], "reference.py", "exec"), reference)
    submission: dict[str, Any] = {"__name__": "submission"}
    stdout = io.StringIO()
    tests = []
    with contextlib.redirect_stdout(stdout):
        exec(compile(request.submission.content, request.submission.name, "exec"), submission)
        for i, case in enumerate(request.tests):
            output = submission["custom_kernel"](reference["generate_input"](**case))
            ok, message = reference["check_implementation"](reference["generate_input"](**case), output)
            verdict = Verdict.ACCEPTED if ok is True else Verdict.WRONG_ANSWER
            tests.append(TestResult(index=i, case=case, verdict=verdict, message=message))
    passed = all(t.verdict is Verdict.ACCEPTED for t in tests)
    verdict = Verdict.ACCEPTED if passed else Verdict.WRONG_ANSWER
    return RunResult(verdict=verdict, mode=request.mode, tests=tests, stdout=stdout.getvalue())


def prepare(name: str, into: Path) -> tuple[Path, dict[str, Any]]:
    """The case's files laid over ``_base`` in ``into``, and its expectations."""
    shutil.copytree(CASES / "_base", into)
    shutil.copytree(CASES / name, into, dirs_exist_ok=True)
    expect = yaml.safe_load((into / "expect.yml").read_text())
    make = expect.get("make", {})
    if "fifo" in make:
        os.mkfifo(into / make["fifo"])
    for rel, target in make.get("symlink", {}).items():  # "repo:<path>" points into this repository
        link = into / rel
        if link.is_symlink() or link.exists():
            link.unlink()
        os.symlink(REPO / target.removeprefix("repo:") if target.startswith("repo:") else target, link)
    for rel, source in make.get("copy", {}).items():  # a second problem folder sharing a file of the first
        shutil.copyfile(into / source, into / rel)
    for rel, size in make.get("pad", {}).items():
        target = into / rel
        text = target.read_text() if target.exists() else ""
        line = "# " + "x" * 97 + "\n"
        target.write_text(text + line * ((size - len(text)) // len(line) + 1))
    return into / "set.yaml", expect


def state(service: LeaderboardService) -> list[tuple[Any, ...]]:
    """Everything sync could change, per leaderboard."""
    return [
        (b.name, b.deadline, b.devices, b.description, service.task_snapshot(b.name))
        for b in service.list_leaderboards(include_hidden=True)
    ]


def test_every_case_says_what_it_expects() -> None:
    assert len(NAMES) >= 30
    for name in NAMES:
        expect = yaml.safe_load((CASES / name / "expect.yml").read_text())
        assert expect.get("why") and (expect.get("error") or expect.get("warning")), name


@pytest.mark.parametrize("name", PARAMS)
def test_validate_names_the_mistake(name: str, tmp_path: Path) -> None:
    set_file, expect = prepare(name, tmp_path / name)
    report = validate_path(set_file, check=check_reference_in_process, device_check=routed, battery=run_in_process)
    errors = "\n".join(str(i) for i in report.issues)
    warnings = "\n".join(str(w) for w in report.warnings)
    if expect.get("error") and not expect.get("sync_only"):
        assert expect["error"] in errors
        assert all(i.file for i in report.issues)  # every message names its file
    else:
        assert report.ok, errors
    if expect.get("warning"):
        assert expect["warning"] in warnings


@pytest.mark.parametrize("name", PARAMS)
def test_sync_refuses_it_and_changes_nothing(name: str, tmp_path: Path, service: LeaderboardService) -> None:
    set_file, expect = prepare(name, tmp_path / name)
    if expect.get("before"):
        first = sync_problem_set(service, set_file.parent / expect["before"], check=check_reference_in_process)
        assert first.applied
    before = state(service)
    try:
        report = sync_problem_set(
            service, set_file, check=check_reference_in_process, device_check=routed, battery=run_in_process
        )
    except (ProblemFormatError, KernelcupError) as exc:
        message = str(exc)
        assert expect.get("error"), message
    else:
        message = "; ".join(r for item in report.refused for r in item.reasons)
        if expect.get("warning"):
            assert expect["warning"] in "\n".join(str(w) for w in report.warnings)
        if not expect.get("error"):
            assert report.applied and [i.leaderboard for i in report.items] == [b[0] for b in state(service)]
            return
        assert not report.applied
    assert expect["error"] in message
    assert "Traceback" not in message
    assert state(service) == before


def test_strict_makes_the_lint_an_error(tmp_path: Path) -> None:
    set_file, expect = prepare("battery_rough", tmp_path / "battery_rough")
    report = validate_path(set_file, check=check_reference_in_process, battery=run_in_process, strict=True)
    assert not report.ok
    assert any(expect["warning"] in str(issue) for issue in report.issues)
    assert not any(expect["warning"] in str(warning) for warning in report.warnings)


def test_the_battery_runs_in_the_sandboxed_evaluator(tmp_path: Path) -> None:
    """The real runner: the evaluator calls the battery's custom_kernel once per test, in order, and its stdout (which
    answers equal the reference's) comes back, so the same fixture is caught the same way."""
    from runners.entry import run_request

    set_file, expect = prepare("battery_zeros", tmp_path / "battery_zeros")
    report = validate_path(set_file, check=check_reference_in_process, battery=run_request)
    assert expect["error"] in "\n".join(str(i) for i in report.issues)
    assert len(report.issues) == len({str(i) for i in report.issues})


def test_a_problem_the_set_runs_on_the_cpu_alone_is_not_launch_bound(tmp_path: Path) -> None:
    """Newcomer's walk, 2026-11-29: a problem on `devices: [cpu]` was warned that its case is launch-bound on an H100.
    The same folder in a set with a GPU is still warned (the case above)."""
    set_file, expect = prepare("battery_launch_bound", tmp_path / "case")
    set_file.write_text(set_file.read_text().replace("devices: [cpu, H100]", "devices: [cpu]"))
    report = validate_path(set_file, check=check_reference_in_process, battery=run_in_process)
    assert report.ok, report.issues
    assert not any(expect["warning"] in str(w) for w in report.warnings), report.warnings
