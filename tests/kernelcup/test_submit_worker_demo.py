"""`kernelcup submit`, `kernelcup worker` and `kernelcup demo` end to end on an embedded SQLite database.

The launcher is A1's fake (no harness run) so these test the platform path: service, queue, worker, events and
rendering. The real local launcher runs in the problem-library tests and in `benchmarks/platform_overhead.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import write_problem, write_problem_set
from typer.testing import CliRunner

from kernelcup import wiring
from kernelcup.cli import build_app
from kernelcup.commands import submissions
from runners.contract import Verdict
from runners.launchers.fake import FakeLauncher, verdict_result

SOLUTION = "def custom_kernel(data):\n    return data\n"


@pytest.fixture(autouse=True)
def _no_log_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The output as a competitor's terminal shows it: `kernelcup submit` prints no log lines, but a handler that an
    earlier test in the same process left on the root logger would write the in-process worker's operator log
    ("job 1 (cpu): succeeded ...") into the captured output (seen under xdist only)."""
    import logging

    monkeypatch.setattr(logging.getLogger(), "handlers", [])


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("DATABASE_URL", "KERNELCUP_DATABASE_URL", "KERNELCUP_ROUTES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KERNELCUP_WORKER_POLL_S", "0.02")
    monkeypatch.setenv("KERNELCUP_WORKER_HEARTBEAT_S", "0.5")
    monkeypatch.chdir(tmp_path)  # no stray .env
    return tmp_path


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeLauncher:
    launcher = FakeLauncher()
    monkeypatch.setattr(wiring, "launcher_for", lambda kind="routed", **_: lambda device: launcher)
    return launcher


def sync(root: Path, devices: list[str]) -> None:
    write_problem(root / "problems", "add")
    (root / "problems" / "add" / "solutions" / "correct").mkdir(parents=True)
    (root / "problems" / "add" / "solutions" / "correct" / "pytorch.py").write_text(SOLUTION)
    (root / "problems" / "add" / "solutions" / "correct" / "triton_kernel.py").write_text("import triton\n" + SOLUTION)
    write_problem_set(
        root / "problems", [{"directory": "add", "deadline": "2099-01-01", "devices": devices}], name="starter"
    )
    result = CliRunner().invoke(
        build_app(), ["problems", "sync", "--skip-run", str(root / "problems" / "starter.yaml")]
    )
    assert result.exit_code == 0, result.output


def test_submit_runs_in_process_and_prints_json_report(env: Path, fake: FakeLauncher) -> None:
    sync(env, ["cpu"])
    (env / "sol.py").write_text(SOLUTION)
    result = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--json", "--user", "ann"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{") :])
    [job] = report["status"]["jobs"]
    assert job["status"] == "succeeded" and job["verdict"] == "accepted" and job["rank"] == 1
    assert job["secret_passed"] is True
    assert [r["device"] for r in report["results"]] == ["cpu"]
    assert [e["phase"] for e in job["events"]][:2] == ["queued", "started"]
    assert len(fake.requests) == 2  # public + secret


def test_cancel_leaves_a_finished_submission_and_delete_takes_it_off(
    env: Path, fake: FakeLauncher, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync(env, ["cpu"])
    (env / "sol.py").write_text(SOLUTION)
    done = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--json", "--user", "ann"])
    sid = json.loads(done.stdout[done.stdout.index("{") :])["status"]["submission_id"]
    app = build_app()
    cancel = CliRunner().invoke(app, ["submissions", "cancel", str(sid), "--user", "ann"])
    assert cancel.exit_code == 1 and "already finished; there is nothing to cancel" in cancel.output
    assert "#1" in CliRunner().invoke(app, ["leaderboard", "show", "add"]).output  # still ranked
    monkeypatch.setattr(submissions, "interactive", lambda: True)  # (a terminal to answer the question)
    kept = CliRunner().invoke(app, ["submissions", "delete", str(sid), "--user", "ann"], input="n\n")
    assert kept.exit_code == 1 and f"about to delete (take off the rankings): #{sid} · add · sol.py" in kept.output
    assert "nothing was deleted" in kept.output
    assert "#1" in CliRunner().invoke(app, ["leaderboard", "show", "add"]).output  # still ranked
    gone = CliRunner().invoke(app, ["submissions", "delete", str(sid), "--user", "ann"], input="y\n")
    assert gone.exit_code == 0 and f"submission #{sid} deleted: it is off the rankings" in gone.output
    assert CliRunner().invoke(app, ["submissions", "show", str(sid), "--user", "ann"]).exit_code == 1


def test_submit_text_report_shows_progress_score_and_rank(env: Path, fake: FakeLauncher) -> None:
    sync(env, ["cpu"])
    (env / "sol.py").write_text(SOLUTION)
    result = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--user", "ann"])
    assert result.exit_code == 0, result.output
    for text in ("started", "testing", "done", "cpu: accepted", "score", "rank 1", "benchmarks"):
        assert text in result.output
    assert "succeeded" not in result.output  # the operators' word: a competitor sees the outcome


def test_popcorn_cli_habits_leaderboard_mode_gpu_and_output(env: Path, fake: FakeLauncher) -> None:
    """`-m leaderboard` is ranked, `--gpu` is `--device`, `--output FILE` writes the report there, `--version`."""
    sync(env, ["cpu", "H100"])
    (env / "sol.py").write_text(SOLUTION)
    args = ["submit", "sol.py", "-l", "add", "-m", "leaderboard", "--gpu", "cpu", "--user", "ann", "--output", "r.txt"]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert [(r.mode.value, r.device) for r in fake.requests] == [("ranked", "cpu")] * 2  # public + secret seed
    report = (env / "r.txt").read_text()
    assert "submission #1 · add · sol.py · ranked" in report and "cpu: accepted" in report
    assert "wrote the result to r.txt" in result.output and "cpu: accepted" not in result.stdout
    version = CliRunner().invoke(build_app(), ["--version"])
    assert version.exit_code == 0 and version.output.startswith("kernelcup ") and "run contract v" in version.output


def test_submit_wrong_answer_exits_nonzero(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    launcher = FakeLauncher(verdict_result(Verdict.WRONG_ANSWER, "output differs at index 2"))
    monkeypatch.setattr(wiring, "launcher_for", lambda kind="routed", **_: lambda device: launcher)
    sync(env, ["cpu"])
    (env / "sol.py").write_text(SOLUTION)
    result = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--mode", "test"])
    assert result.exit_code == 1
    assert "cpu: wrong answer" in result.output and "output differs at index 2" in result.output
    assert "wrong_answer" not in result.output and "succeeded" not in result.output


def test_submit_no_wait_then_worker_once_serves_it(env: Path, fake: FakeLauncher) -> None:
    sync(env, ["cpu", "H100"])
    (env / "sol.py").write_text(SOLUTION)
    app = build_app()
    result = CliRunner().invoke(app, ["submit", "sol.py", "-l", "add", "-d", "H100", "--no-wait", "--json"])
    assert result.exit_code == 0, result.output
    receipt = json.loads(result.stdout)
    assert [j["device"] for j in receipt["jobs"]] == ["H100"] and receipt["jobs"][0]["queue_position"] == 1
    assert fake.requests == []
    result = CliRunner().invoke(app, ["worker", "--once", "--device", "H100"])
    assert result.exit_code == 0, result.output
    assert [r.device_name for r in fake.requests] == ["H100", "H100"]


def test_submit_user_errors_are_one_line(env: Path, fake: FakeLauncher) -> None:
    sync(env, ["cpu"])
    (env / "sol.py").write_text(SOLUTION)
    result = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "nope"])
    assert result.exit_code == 1 and "no leaderboard named 'nope'" in result.output
    result = CliRunner().invoke(build_app(), ["submit", "missing.py", "-l", "add"])
    assert result.exit_code != 0 and "missing.py is not a file" in result.output


def test_worker_rejects_unknown_launcher(env: Path) -> None:
    result = CliRunner().invoke(build_app(), ["worker", "--launcher", "teleport", "--once"])
    assert result.exit_code == 2 and "'teleport' is not one of" in result.output


def test_demo_without_problem_set_says_what_is_missing(env: Path) -> None:
    (env / "empty").mkdir()
    result = CliRunner().invoke(build_app(), ["demo", "--set", str(env / "empty" / "starter.yaml")])
    assert result.exit_code == 1


def test_demo_submits_pytorch_solutions_and_prints_rankings(env: Path, fake: FakeLauncher) -> None:
    sync(env, ["cpu", "H100"])
    result = CliRunner().invoke(build_app(), ["demo", "--set", str(env / "problems" / "starter.yaml")])
    assert result.exit_code == 0, result.output
    assert "demo-add" in result.output and "demo-pytorch" in result.output
    assert "demo-add: add/pytorch.py -> accepted" in result.output  # (the worker's log lines are the operators')
    assert len(fake.requests) == 2  # the PyTorch solution only (public + secret); Triton is skipped on CPU
    assert all(r.device == "cpu" for r in fake.requests)
    # demo leaderboards benchmark the largest test cases, not the GPU-sized benchmarks
    assert fake.requests[0].benchmarks == fake.requests[0].tests[-1:] or len(fake.requests[0].benchmarks) <= 2
    # its hint names a device: the starter boards have several, and refuse a submission without one
    assert "Next: `kernelcup problems sync`, `kernelcup submit FILE -l LEADERBOARD -d DEVICE`." in " ".join(
        result.output.split()
    )


def test_the_demo_names_the_problems_it_submits_nothing_to(env: Path, fake: FakeLauncher) -> None:
    """A newcomer counted 11 problems synced and 10 solutions submitted, with no word of the eleventh."""
    write_problem(env / "problems", "add")
    (env / "problems" / "add" / "solutions" / "correct").mkdir(parents=True)
    (env / "problems" / "add" / "solutions" / "correct" / "pytorch.py").write_text(SOLUTION)
    write_problem(env / "problems", "gpu_only")
    write_problem(env / "problems", "no_solution")
    entries = [
        {"directory": "add", "deadline": "2099-01-01", "devices": ["cpu"]},
        {"directory": "gpu_only", "deadline": "2099-01-01", "devices": ["H100"]},
        {"directory": "no_solution", "deadline": "2099-01-01", "devices": ["cpu"]},
    ]
    set_file = write_problem_set(env / "problems", entries, name="starter")
    result = CliRunner().invoke(build_app(), ["demo", "--set", str(set_file)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "not submitted to: gpu_only (not offered on cpu), no_solution (no PyTorch solution to submit)" in text


def test_demo_with_a_mistyped_problem_says_which_it_meant(env: Path, fake: FakeLauncher) -> None:
    sync(env, ["cpu"])
    result = CliRunner().invoke(build_app(), ["demo", "--set", str(env / "problems" / "starter.yaml"), "-p", "ad"])
    assert result.exit_code == 1
    assert "no problem named 'ad'. Did you mean 'add'?" in " ".join(result.output.split())
    assert fake.requests == []


def test_worker_process_stops_gracefully_on_sigterm(env: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from leaderboards.queue import JobQueue
    from leaderboards.settings import CoreSettings

    with wiring.open_platform(CoreSettings(_env_file=None)) as platform:  # creates and migrates the database
        queue = JobQueue(platform.db)
        proc = subprocess.Popen(
            [sys.executable, "-m", "kernelcup.cli", "worker", "--device", "cpu"],
            cwd=env,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while not queue.alive_workers(device="cpu") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert queue.alive_workers(device="cpu"), "the worker never registered"
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=30)
            assert proc.returncode == 0, out
            assert "SIGTERM" in out
            assert queue.alive_workers() == []  # it marked itself stopped
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def test_submitting_the_same_file_again_shows_the_earlier_result_unless_forced(env: Path, fake: FakeLauncher) -> None:
    sync(env, ["cpu"])
    (env / "sol.py").write_text(SOLUTION)
    first = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--user", "ann"])
    assert first.exit_code == 0, first.output
    runs = len(fake.requests)
    again = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--user", "ann"])
    assert again.exit_code == 0, again.output
    assert "already ran as #1 (same file, a moment ago); --force runs it again" in " ".join(again.output.split())
    assert len(fake.requests) == runs  # not run again
    queued = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--user", "ann", "--no-wait"])
    assert queued.output.strip() == "already ran as #1 (same file, a moment ago); --force runs it again"
    forced = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--user", "ann", "--force"])
    assert forced.exit_code == 0 and "submission #2" in forced.output
    assert len(fake.requests) == 2 * runs


def test_an_unreachable_database_is_one_line_not_a_traceback(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (env / "sol.py").write_text(SOLUTION)
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg2://nobody@127.0.0.1:9/none?connect_timeout=2")
    result = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: Cannot reach the database at"), result.output
    assert "Traceback" not in result.output


def test_a_dropped_connection_while_submitting_is_retried(
    env: Path, fake: FakeLauncher, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy.exc import OperationalError

    from leaderboards.service import LeaderboardService

    sync(env, ["cpu"])
    (env / "sol.py").write_text(SOLUTION)
    real = LeaderboardService.submit
    drops = [1]

    def dropping(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if drops:
            drops.pop()
            raise OperationalError("INSERT", {}, Exception("server closed the connection unexpectedly"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LeaderboardService, "submit", dropping)
    result = CliRunner().invoke(build_app(), ["submit", "sol.py", "-l", "add", "--user", "ann"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "submission #1" in result.output


def test_submit_compare_runs_in_process_and_prints_the_ratio(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 16 on the local database: `kernelcup submit A B --compare` queues one compare job, runs it here (no
    worker is running), shows "round k of N" and the A/B ratio with its interval per case and overall."""
    from runners.launchers.fake import accepted_result

    launcher = FakeLauncher(
        lambda r: accepted_result(r, 750.0 if "# fast" in r.submission.content.decode() else 1000.0)
    )
    monkeypatch.setattr(wiring, "launcher_for", lambda kind="routed", **_: lambda device: launcher)
    sync(env, ["cpu"])
    (env / "fast.py").write_text("# fast\n" + SOLUTION)
    (env / "same.py").write_text(SOLUTION)
    args = ["submit", "fast.py", "same.py", "--compare", "--rounds", "4", "-l", "add", "--user", "ann"]
    result = CliRunner().invoke(build_app(), args)
    assert result.exit_code == 0, result.output
    assert "round 1 of 4 (fast.py first)" in result.output and "round 4 of 4 (same.py first)" in result.output
    assert "fast.py vs same.py: 4 interleaved rounds" in result.output and "0.7500" in result.output
    assert "fast.py is faster by 25.0%" in result.output
    assert [r.submission.name for r in launcher.requests][:4] == ["fast.py", "same.py", "same.py", "fast.py"]
    result = CliRunner().invoke(build_app(), [*args[:5], "3", *args[6:]])
    assert result.exit_code == 2 and "--rounds must be even" in result.output
    result = CliRunner().invoke(build_app(), ["submit", "fast.py", "same.py", "--compare", "-l", "add", "-m", "ranked"])
    assert result.exit_code == 2 and "drop --mode ranked" in result.output


def test_the_demo_submits_no_kernel_dsl_solution_as_plain_python() -> None:
    """A newcomer's walk (2026-11-24): the demo ran the Helion, TileLang and CuTe DSL solutions as plain Python, and
    each ended in a runtime error on the demo's boards. A ``# lang:`` line marks a solution of another language."""
    from kernelcup.commands.demo import is_pytorch_solution

    problems = Path(__file__).resolve().parents[2] / "problems"
    dsl = [problems / "vectoradd/solutions/correct/cute_dsl.py", problems / "softmax/solutions/correct/helion.py",
           problems / "rmsnorm/solutions/correct/tilelang.py"]  # fmt: skip
    assert not any(is_pytorch_solution(p) for p in dsl)
    assert is_pytorch_solution(problems / "vectoradd/solutions/correct/pytorch.py")
