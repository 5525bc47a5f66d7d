"""``kernelcup run``: a readable report or the RunResult JSON, and errors that say what to fix."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from harness_helpers import FIXTURES, SUBMISSIONS
from typer.testing import CliRunner

from kernelcup.cli import build_app
from runners.contract import RunResult, Verdict

runner = CliRunner()


def _run(*args: str):
    return runner.invoke(build_app(), ["run", *args])


def test_report_for_a_correct_submission() -> None:
    result = _run(str(FIXTURES / "vectoradd"), str(SUBMISSIONS / "correct_torch.py"), "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert "accepted" in result.output and "3 of 3 tests passed" in result.output
    assert "vectoradd · correct_torch.py · test · cpu" in result.output
    # stderr is no terminal here: the progress comes as plain lines, one per phase (no spinner to show it)
    lines = [line for line in result.stderr.splitlines() if line.startswith("vectoradd · correct_torch.py: ")]
    assert any(": testing" in line for line in lines) and len(lines) < 40, result.stderr


def test_json_for_a_wrong_submission_exits_1() -> None:
    result = _run(str(FIXTURES / "vectoradd"), str(SUBMISSIONS / "wrong_off_by_one.py"), "--device", "cpu", "--json")
    assert result.exit_code == 1
    parsed = RunResult.model_validate_json(result.stdout)
    assert parsed.verdict is Verdict.WRONG_ANSWER and "at (5,)" in parsed.tests[1].message


def test_missing_file_and_bad_problem_folder_name_the_fix(tmp_path: Path) -> None:
    missing = _run(str(FIXTURES / "vectoradd"), str(tmp_path / "nope.py"), "--device", "cpu")
    assert missing.exit_code == 1 and "not found" in missing.output and "nope.py" in missing.output
    (tmp_path / "task.yml").write_text("description: x\ntests: []\n")
    bad = _run(str(tmp_path), str(SUBMISSIONS / "correct_torch.py"), "--device", "cpu")
    assert bad.exit_code == 1 and "task.yml" in bad.output and "benchmarks" in bad.output
    device = _run(str(FIXTURES / "vectoradd"), str(SUBMISSIONS / "correct_torch.py"), "--device", "tpu")
    said = " ".join(device.output.replace("│", " ").split())  # (Rich wraps the error in a box)
    assert device.exit_code == 2 and "'tpu' is not one of" in said and "'cuda'" in said


def test_swapped_arguments_are_named(tmp_path: Path) -> None:
    sub = str(SUBMISSIONS / "correct_torch.py")
    swapped = _run(sub, str(FIXTURES / "vectoradd"), "--device", "cpu")
    assert swapped.exit_code == 1
    assert "the arguments are swapped" in swapped.output
    assert f"kernelcup run {FIXTURES / 'vectoradd'} {sub}" in " ".join(swapped.output.split())
    file_first = _run(sub, sub, "--device", "cpu")
    assert file_first.exit_code == 1 and "is a file, not a problem folder" in file_first.output
    folder_second = _run(str(FIXTURES / "vectoradd"), str(tmp_path), "--device", "cpu")
    assert folder_second.exit_code == 1 and "second argument is your submission file" in folder_second.output
    only_file = _run(sub, "--device", "cpu")  # no folder: it says where the folder goes, or how to name a board
    said = " ".join(only_file.output.split())
    assert only_file.exit_code == 1 and "pass the problem folder before it" in said and "run -l LEADERBOARD" in said
    only_folder = _run(str(FIXTURES / "vectoradd"), "--device", "cpu")
    assert only_folder.exit_code == 1 and "pass your file after the problem folder" in only_folder.output


def test_a_mistyped_problem_folder_gets_the_nearest_one() -> None:
    typo = _run(str(FIXTURES / "vectorad"), str(SUBMISSIONS / "correct_torch.py"), "--device", "cpu")
    assert typo.exit_code == 1
    assert f"did you mean {FIXTURES / 'vectoradd'}" in " ".join(typo.output.split())


def test_a_bare_problem_name_is_looked_up_under_problems(monkeypatch) -> None:
    monkeypatch.chdir(FIXTURES.parent)  # tests/fixtures: its problems/ holds vectoradd
    sub = str(SUBMISSIONS / "correct_torch.py")
    near = _run("vectorad", sub, "--device", "cpu")
    assert near.exit_code == 1 and "did you mean problems/vectoradd?" in " ".join(near.output.split())
    far = _run("zzz", sub, "--device", "cpu")
    assert far.exit_code == 1 and "the problem folders in problems/ are:" in " ".join(far.output.split())
    assert "vectoradd" in far.output


def test_lang_runs_a_python_problem_in_a_dsl_and_refuses_one_of_other_files() -> None:
    problems = Path(__file__).resolve().parents[2] / "problems"
    helion = str(problems / "softmax" / "solutions" / "correct" / "helion.py")
    wrong = _run(str(problems / "softmax"), helion, "--device", "cpu", "--lang", "cutlass")
    assert wrong.exit_code == 1 and "--lang cutlass" in wrong.output and "lang: cutlass" in wrong.output
    if importlib.util.find_spec("helion") is None:
        pytest.skip("helion is not installed (the dev extra installs it)")
    result = _run(str(problems / "softmax"), helion, "--device", "cpu", "--lang", "helion", "--json")
    parsed = RunResult.model_validate_json(result.stdout)
    assert result.exit_code == 0 and parsed.verdict is Verdict.ACCEPTED, result.output[-2000:]
    assert parsed.system.headers is not None and parsed.system.headers.startswith("Helion ")


@pytest.mark.parametrize("terminal", ["1", "0"])
def test_a_step_that_waits_is_a_line_every_time_the_runner_says_so(monkeypatch: pytest.MonkeyPatch,
                                                                    terminal: str) -> None:  # fmt: skip
    """Issue 31: a hanging kernel printed nothing although the README promises a line every 10 s. The runner's
    progress event for a step that goes on with nothing new (``waited_s``, at least every 10 s) is a line of its own,
    on a terminal (above the spinner) as in a log, each time it comes; other events are lines only in a log."""
    import runners.entry
    from runners.contract import Mode, Phase, ProgressEvent

    def hanging(request: object, progress: object, **_: object) -> RunResult:
        assert callable(progress)
        progress(ProgressEvent(phase=Phase.TESTING, detail="3 tests"))
        for waited in (10.0, 20.0, 30.0):  # (sent at once here: the runner's clock spaces them)
            detail = f"test 1 of 3 ({{size: 1, seed: 1}}): {waited:.0f} s so far (limit 300 s)"
            progress(ProgressEvent(phase=Phase.TESTING, detail=detail, waited_s=waited))
        return RunResult(verdict=Verdict.TIMEOUT, mode=Mode.TEST, message="test 1 of 3 did not finish")

    monkeypatch.setattr(runners.entry, "run_request", hanging)
    monkeypatch.setenv("TTY_COMPATIBLE", terminal)
    monkeypatch.setenv("COLUMNS", "200")  # (a line is not wrapped)
    result = _run(str(FIXTURES / "vectoradd"), str(SUBMISSIONS / "correct_torch.py"), "--device", "cpu")
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if "vectoradd · correct_torch.py: testing" in line]
    waits = [line for line in lines if "so far (limit 300 s)" in line]
    assert [w.split("): ")[1] for w in waits] == [f"{n} s so far (limit 300 s)" for n in (10, 20, 30)], lines
    assert any(line.endswith("testing 3 tests") for line in lines) is (terminal == "0"), lines
