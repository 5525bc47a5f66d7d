"""Whose time a run spends (issues 37 and 31): the platform's start-up has its own limit and, run out, is the runner
being overloaded (never the user's timeout); the submission's limit counts from its load, without a compile allowance
where its language has no compile step; a hang names the test or benchmark case, each of which is bounded by the
reference's own time where it is known, and a waiting run says how long it has waited at least every 10 s."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from harness_helpers import build_request

from runners.contract import Language, Mode, ProgressEvent, RunRequest, Verdict
from runners.entry import OVERLOADED, run_request
from runners.entry import clock as clock_mod
from runners.entry import session as session_mod
from runners.entry.clock import bounds_for, case_bound_s, hung_call
from runners.settings import RunnerSettings

HANGS_ON_THE_SECOND_CALL = b"""import torch

calls = 0


def custom_kernel(data):
    global calls
    calls += 1
    while calls == 2:
        pass
    a, b, out = data
    return torch.add(a, b, out=out)
"""


def _slow_start(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The submission process starts ``seconds`` late (a loaded machine's interpreter): the platform's start-up."""
    real_init = session_mod.Session.__init__

    def slow_init(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        if self.shape.start_submission:
            self.shape = replace(self.shape, prefix=("/bin/sh", "-c", f'sleep {seconds}; exec "$@"', "sh"))

    monkeypatch.setattr(session_mod.Session, "__init__", slow_init)


def test_a_start_slower_than_the_run_limit_is_not_charged_to_the_submission(
    monkeypatch: pytest.MonkeyPatch, runner_settings: RunnerSettings
) -> None:
    """Issue 37.2: a correct file whose run limit (6 s) is shorter than the platform's start-up (the submission
    process starts 10 s late) is accepted: its limit counts from its load. Before, the limit counted from the start
    and this was a timeout."""
    _slow_start(monkeypatch, 10)
    request = build_request("submissions/correct_torch.py", run_timeout_s=6.0, compile_timeout_s=0.0)
    result = run_request(request, settings=runner_settings)
    assert result.verdict is Verdict.ACCEPTED, result.message
    assert result.phase_times["compiling"] >= 10


def test_a_start_that_cannot_finish_is_the_runner_overloaded_and_never_the_users(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 37.1: a start-up past KERNELCUP_STARTUP_TIMEOUT_S is an infrastructure error of the runner (retried)
    that says the runner is overloaded, logged for the operator; the user's infinite loop never ran. Before, the
    start-up ran under the user's (long) limit and the run went on."""
    _slow_start(monkeypatch, 60)
    settings = RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True, startup_timeout_s=5)
    start = time.monotonic()
    with caplog.at_level("WARNING", logger="runners.entry"):
        result = run_request(build_request("submissions/hang.py", run_timeout_s=60.0), settings=settings)
    assert time.monotonic() - start < 60
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR and result.fault == "runner", result.message
    assert result.message.startswith(OVERLOADED), result.message
    assert "did not finish within 5 s (KERNELCUP_STARTUP_TIMEOUT_S" in result.message
    assert any(OVERLOADED in r.getMessage() for r in caplog.records)


def test_the_local_launcher_counts_overloaded_starts_in_its_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What the worker and `runners check` show of it: the launcher's self-check counts the overloaded starts."""
    from runners.launchers.base import DetachedJob
    from runners.launchers.local import LocalLauncher

    _slow_start(monkeypatch, 60)
    settings = RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True, startup_timeout_s=5,
                              prestart=False)  # fmt: skip
    launcher = LocalLauncher(settings)
    request = build_request("submissions/correct_torch.py")
    result = asyncio.run(launcher.run(request, DetachedJob()))
    assert result.message.startswith(OVERLOADED)
    said = asyncio.run(launcher.check())
    assert "1 run found this machine overloaded" in said, said


def test_a_python_hang_is_told_within_its_run_limit_naming_the_test_and_the_next_run_works(
    runner_settings: RunnerSettings,
) -> None:
    """Issue 37.3: a Python file gets no compile allowance (it has no compile step), so a hang costs the run limit
    and not 300 s more; the message names the test, and progress says every 10 s how long it has waited. The next
    run on the same runner settings works (nothing of the stopped run is left in its way). (Also the one hang of
    tests/runners/test_entry.py, whose own 15 s run this test replaced: the same claims, one evaluation less.)"""
    events: list[ProgressEvent] = []
    request = build_request("submissions/hang.py", run_timeout_s=12.0, compile_timeout_s=300.0)
    result = run_request(request, events.append, settings=runner_settings)
    assert result.wall_time_s - result.phase_times["compiling"] < 40  # 12 s and the stop, not 312 s
    assert result.wall_time_s < 60
    assert result.verdict is Verdict.TIMEOUT, result.message
    limits = "12 s (12 s for this mode's run; counted from loading the file, the platform's start-up not included)"
    assert result.message.startswith(f"the run did not finish within {limits}: it was test 1 of 3"), result.message
    assert "it was test 1 of 3 ({size: 1, seed: 1})" in result.message
    assert "compiling" not in result.message.split(";")[0]
    waits = [e.detail for e in events if "s so far (limit 12 s)" in e.detail]
    assert waits and waits[0].startswith("test 1 of 3"), [e.detail for e in events]
    after = run_request(build_request("submissions/correct_torch.py"), settings=runner_settings)
    assert after.verdict is Verdict.ACCEPTED, after.message


def test_a_later_test_is_bounded_by_the_references_time_on_its_own_inputs(
    monkeypatch: pytest.MonkeyPatch, runner_settings: RunnerSettings
) -> None:
    """Issues 37.3 and 31: the evaluator times the reference on each test's inputs just before the submission's call,
    and the test is bounded by the larger of the floor (made 3 s here) and 200x that: a hang in test 2 is told then,
    naming test 2, long before the run's limit (120 s), with no earlier run's times on this runner."""
    monkeypatch.setattr(clock_mod, "TEST_FLOOR_S", 3.0)
    request = build_request("submissions/correct_torch.py", content=HANGS_ON_THE_SECOND_CALL, run_timeout_s=120.0)
    result = run_request(request, settings=runner_settings)
    assert result.wall_time_s - result.phase_times["compiling"] < 60  # (from the load: the start-up is not its)
    assert result.verdict is Verdict.TIMEOUT, result.message
    assert result.message.startswith("test 2 of 3 ({size: 7, seed: 2}) did not finish within 3 s, the bound on one")
    assert "200x the reference's time on this test, " in result.message and " ms on this runner" in result.message
    assert [t.verdict for t in result.tests] == [Verdict.ACCEPTED]


HANGS_ON_A_BENCHMARK = b"""import torch


def custom_kernel(data):
    a, b, out = data
    while a.numel() >= 4096:  # the benchmark cases' sizes, not the tests'
        pass
    return torch.add(a, b, out=out)
"""


def test_a_benchmark_case_is_bounded_by_the_references_time_on_it_as_this_run_measured_it(
    monkeypatch: pytest.MonkeyPatch, runner_settings: RunnerSettings
) -> None:
    """Issue 31: a kernel that hangs on a benchmark case's first warm-up call is told once that case's own bound runs
    out (the evaluator's budget for the case, plus twice the larger of the floor, made 1 s here, and 200x the
    reference's median on the case, which this run timed before the submission loaded; no cache), naming the case,
    long before the run's limit (120 s)."""
    monkeypatch.setattr(clock_mod, "TEST_FLOOR_S", 1.0)
    request = build_request("submissions/correct_torch.py", Mode.BENCHMARK, content=HANGS_ON_A_BENCHMARK,
                            run_timeout_s=120.0)  # fmt: skip
    result = run_request(request, settings=runner_settings)
    assert result.wall_time_s - result.phase_times["compiling"] < 60
    assert result.verdict is Verdict.TIMEOUT, result.message
    assert result.message.startswith("benchmark 1 of 2 ({size: 4096, seed: 10}) did not finish within "), result.message
    assert "the bound on one benchmark case" in result.message and "on this runner" in result.message
    assert "baseline" in result.phase_times  # the reference's time came from this very run


def test_bounds_give_a_compile_allowance_only_to_languages_with_a_compile_step() -> None:
    python = build_request("submissions/correct_torch.py", compile_timeout_s=300.0, run_timeout_s=60.0)
    assert bounds_for(python, 90.0).user_s == 60.0
    cuda = python.model_copy(update={"lang": Language.CUDA})
    assert bounds_for(cuda, 90.0).user_s == 360.0
    timed = build_request("submissions/correct_torch.py", Mode.BENCHMARK, compile_timeout_s=0.0, run_timeout_s=60.0)
    b = bounds_for(timed, 90.0)
    assert b.startup_s == 90.0 + timed.baselines_allowance_s() and b.total_s == b.startup_s + 60.0


def test_each_step_is_bounded_by_the_larger_of_a_floor_and_200_times_the_references_time() -> None:
    """The rule of docs/sandbox.md: a test may take max(floor, 200 x the reference's slowest benchmark median), the
    first test's floor (120 s: CUDA's start, JIT builds) larger than a later one's (60 s); a benchmark case the
    evaluator's budget for it (5 x max_time_s) plus twice that of its own case's reference median. Nothing known,
    no bound but the run's."""
    timed = build_request("submissions/correct_torch.py", Mode.BENCHMARK, run_timeout_s=600.0)
    budget = 5 * timed.timing.max_time_s
    assert bounds_for(timed, 90.0).test_bound_s(0) is None and bounds_for(timed, 90.0).bench_bound_s(0) is None
    slow = bounds_for(timed, 90.0, (1e9, None))  # the reference: 1 s on case 1, case 2 not timed
    assert slow.test_bound_s(0) == 200.0 and slow.test_bound_s(1) == 200.0
    assert slow.bench_bound_s(0) == budget + 2 * 200.0 and slow.bench_bound_s(1) is None
    fast = bounds_for(timed, 90.0, (5e3, 2e4))  # 5 and 20 us: the floors
    assert fast.test_bound_s(0) == 120.0 and fast.test_bound_s(1) == 60.0
    assert fast.bench_bound_s(0) == fast.bench_bound_s(1) == budget + 2 * 60.0
    # This run's own timing of the reference (before the load) fills in what the cache did not have.
    assert slow.with_reference(1, 2e9, cases=2).bench_bound_s(1) == budget + 2 * 400.0
    assert slow.with_reference(1, 2e9, cases=2).test_bound_s(1) == 400.0
    # The reference's time on a test's own inputs, where the evaluator measured it, comes first.
    assert bounds_for(timed, 90.0).test_bound_s(1, own_s=0.5) == 100.0 and slow.test_bound_s(1, own_s=1e-6) == 60.0
    assert bounds_for(timed, 90.0).test_bound_s(0, own_s=1e-6) == 120.0


def test_a_cases_bound_grows_with_its_size() -> None:
    assert case_bound_s({"size": 1, "seed": 3}) == pytest.approx(20.0)
    assert case_bound_s({"m": 4096, "n": 4096, "k": 4096, "seed": 1}) == pytest.approx(20 + 4096**3 * 20e-9)
    assert case_bound_s({"shape": [1000, 1000], "flag": True}) == pytest.approx(20.02)


def test_the_hung_function_is_read_from_the_evaluators_stack() -> None:
    dump = (
        "Fatal Python error: Aborted\n\nCurrent thread 0x00007f (most recent call first):\n"
        '  File "/job/oracle/problem/_lib.py", line 3 in _slow\n'
        '  File "/job/oracle/problem/reference.py", line 12 in generate_input\n'
        '  File "/repo/runners/oracle/evaluate.py", line 274 in <lambda>\n'
    )
    assert hung_call(dump, "/job/oracle/problem") == "generate_input (_lib.py line 3, in _slow)"
    assert hung_call(dump.replace("_lib.py", "reference.py"), "/job/oracle/problem/") == (
        "generate_input (reference.py line 3, in _slow)"
    )
    assert hung_call("nothing useful", "/job/oracle/problem") == ""


def test_a_flood_of_output_is_stopped_after_a_few_mebibytes(runner_settings: RunnerSettings) -> None:
    """Issue 37.1 (huge output): only 16 KiB of each stream is kept, so the submission may print 8 MiB in all before
    it is stopped (it was 64 MiB: on a loaded machine reading it outlasted the test's own timeout)."""
    flood = b"import sys\n\ndef custom_kernel(data):\n    while True:\n        sys.stdout.write('x' * (1 << 20))\n"
    result = run_request(build_request("submissions/correct_torch.py", content=flood), settings=runner_settings)
    assert result.verdict is Verdict.RUNTIME_ERROR, result.message
    assert "printed more than 8 MiB of output" in result.message
    assert result.stdout_truncated and len(result.stdout.encode()) <= 16 * 1024


def test_the_clock_names_the_step_and_whose_time_it_is() -> None:
    """The deadlines as reports arrive: the platform's until the load, then the submission's, step by step, each
    test and benchmark case bounded by the reference's time as this run measured it before the load."""
    from runners.entry.clock import RunClock, user_timeout_message

    request = build_request("submissions/correct_torch.py", Mode.RANKED, compile_timeout_s=0.0, run_timeout_s=600.0)
    clock = RunClock(request, bounds_for(request, 90.0), started=100.0)
    first = clock.step()
    assert (first.kind, first.what, first.deadline) == ("startup", "starting", 100.0 + 90.0 + 90.0)  # + baselines
    clock.saw_reference(0, 1e6)  # the evaluator timed the reference: 1 ms on case 1, 2 s on case 2
    clock.saw_reference(1, 2e9)
    clock.saw("compiling", 150.0)  # a slow start: none of its 50 s is the submission's
    assert (clock.step().kind, clock.step().deadline) == ("submission", 750.0)
    clock.saw("testing", 151.0)
    test1 = clock.step()
    assert test1.what == "test 1 of 3 ({size: 1, seed: 1})" and test1.deadline == 151.0 + 400.0  # 200 x 2 s
    clock.saw_test_reference(0, 2.5)  # the evaluator: the reference took 2.5 s on test 1's own inputs
    assert clock.step().deadline == 151.0 + 500.0 and clock.step().limit_s == 500.0
    assert "200x the reference's time on this test, 2.5e+03 ms" in user_timeout_message(clock, clock.step(), 651.0)
    clock.saw("test", 152.0)
    clock.saw("test", 153.0)
    clock.saw("test", 154.0)
    clock.saw("benchmarking", 155.0)
    bench1 = clock.step()
    bound = 5 * request.timing.max_time_s + 2 * 60.0  # the case's budget, and twice the floor (200 x 1 ms < 60 s)
    assert bench1.what == "benchmark 1 of 2 ({size: 4096, seed: 10})" and bench1.deadline == 155.0 + bound
    message = user_timeout_message(clock, bench1, bench1.deadline)
    assert message.startswith(f"benchmark 1 of 2 ({{size: 4096, seed: 10}}) did not finish within {bound:.0f} s, the "
                              "bound on one benchmark case"), message  # fmt: skip
    assert "200x the reference's time on this case, 1 ms on this runner" in message
    clock.saw("bench", 156.0)
    assert clock.step().what.startswith("benchmark 2 of 2") and clock.step().deadline == 750.0  # 800 s: past the run's


def _session(request: RunRequest, events: list[ProgressEvent]) -> session_mod.Session:
    """A test-mode session of ``request`` on the CPU that processes nothing (its report pipe is the test's to feed),
    its progress events into ``events``."""
    job = session_mod.Job(mode="test", device="cpu", lang="python", submission="submission.py",
                          display_name="submission.py", tests=request.tests, benchmarks=[], timing={})  # fmt: skip
    shape = session_mod.make_shape(request, gpu=None, python="python", prefix=[], extra_ro=(), submission_env=None,
                                   require_sandbox=False)  # fmt: skip
    return session_mod.Session(session_mod.SessionSpec(request, job, None, shape, on_progress=events.append))


def test_a_waiting_step_sends_a_line_at_least_every_10_s_with_its_time_and_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The event stream of a run whose first test hangs, read from the evaluator's report pipe (no processes): after
    the load and 'testing', nothing more comes, and the session sends a progress event every heartbeat (made 0.2 s
    here) that names the test and how long it has run, until the run's limit (1 s) stops it as a timeout."""
    import os
    import threading

    from runners.ipc.protocol import RHello, RProgress

    monkeypatch.setattr(session_mod, "HEARTBEAT_S", 0.2)
    request = build_request("submissions/correct_torch.py", run_timeout_s=1.0, compile_timeout_s=0.0)
    events: list[ProgressEvent] = []
    session = _session(request, events)
    read_end, write_end = os.pipe()
    for msg in (RHello(), RProgress(phase="compiling", detail="submission.py"), RProgress(phase="testing")):
        os.write(write_end, (msg.model_dump_json() + "\n").encode())
    started = time.monotonic()
    try:
        session._read(read_end, threading.Event())
    finally:
        os.close(read_end)
        os.close(write_end)
    assert session.expired[0] == "timeout" and time.monotonic() - started < 5
    assert session.expired[1].startswith("the run did not finish within 1 s"), session.expired
    waits = [e for e in events if e.waited_s is not None]
    assert len(waits) >= 3, events
    assert all(e.detail.startswith("test 1 of 3 ({size: 1, seed: 1}): ") for e in waits), waits
    assert all(e.detail.endswith("s so far (limit 1 s)") and e.waited_s < 1.5 for e in waits), waits
    assert [e.waited_s for e in waits] == sorted(e.waited_s for e in waits)
    assert all(e.waited_s is None for e in events if e not in waits)  # only the heartbeat carries it


@pytest.mark.parametrize(("evaluator_phase", "said"), [
    ("baseline", "timing the reference (to compare with the submission)"),
    ("starting", "starting the run's processes"),
])
def test_the_start_up_heartbeat_names_what_it_waits_on_without_repeating_the_phase(
    evaluator_phase: str, said: str
) -> None:
    """Newcomer's walk, 2026-11-29: a benchmark run printed 'starting starting: 59 s so far' for a minute while the
    evaluator timed the reference, which nothing said."""
    request = build_request("submissions/correct_torch.py")
    events: list[ProgressEvent] = []
    session = _session(request, events)
    session.report.phase = evaluator_phase
    session._heartbeat(session_mod.Step("startup", 0.0, 60.0, "starting", 60.0), 59.0)
    (event,) = events
    assert event.phase.value == "starting" and event.detail == f"{said}: 59 s so far (limit 60 s)"
