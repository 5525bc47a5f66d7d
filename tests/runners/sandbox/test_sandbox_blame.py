"""Whose fault a run's end is (issue 37, class 4). What the platform did to a run (a SIGKILL from outside the sandbox,
the host's out-of-memory killer, the runner's disk full while the job was below its limit) is the platform's failure:
an infrastructure error, retried, that names what happened. A limit the run itself broke stays its own, naming the
limit; and a SIGKILL the submission could have sent itself stays its own (else dying on purpose would re-roll a run)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from runners.contract import Mode, RunRequest, SubmissionFile, SystemInfo, Verdict
from runners.entry.session import Outcomes, Report
from runners.entry.verdict import build_result
from runners.ipc.protocol import RFatal
from runners.sandbox import ProcessOutcome, SandboxSpec, run_sandboxed
from runners.sandbox.cgroups import RunCgroups


def _kill_when_started(spec_for: Callable[..., SandboxSpec], jobdir: Path, pick: str) -> tuple[ProcessOutcome, bool]:
    """Run a sleeper; once it runs, SIGKILL from here (outside) the sandbox's ``pick``: 'init' (init.py) or 'bwrap'."""
    me = psutil.Process()
    killed = threading.Event()

    def killer() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not killed.is_set():
            for p in me.children(recursive=True):
                try:
                    cmd = " ".join(p.cmdline())
                    parent = p.parent()
                    outer_bwrap = p.name() == "bwrap" and parent is not None and parent.name() != "bwrap"
                except psutil.Error:
                    continue
                hit = "init.py" in cmd if pick == "init" else outer_bwrap
                if hit and (jobdir / "started").exists():
                    p.send_signal(signal.SIGKILL)
                    killed.set()
                    return
            time.sleep(0.05)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    out = run_sandboxed(spec_for("import time\nopen('started', 'w').close()\ntime.sleep(30)", timeout_s=25))
    t.join()
    return out, killed.is_set()


def test_a_sigkill_of_the_supervisor_is_the_platforms(spec_for, jobdir: Path, sandboxed: None) -> None:
    out, killed = _kill_when_started(spec_for, jobdir, "init")
    assert killed, "the test never found the sandbox's init.py"
    assert out.signal == signal.SIGKILL and not out.killed_reason and not out.timed_out
    assert "init.py" in out.infrastructure_failure and "outside" in out.infrastructure_failure


def test_a_sigkill_of_bubblewrap_is_the_platforms(spec_for, jobdir: Path, sandboxed: None) -> None:
    out, killed = _kill_when_started(spec_for, jobdir, "bwrap")
    assert killed, "the test never found bubblewrap"
    assert "bubblewrap" in out.infrastructure_failure and "outside" in out.infrastructure_failure


def test_its_own_sigkill_stays_the_submissions(run_py) -> None:
    out = run_py("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    assert out.signal == signal.SIGKILL and out.infrastructure_failure == ""
    out = run_py("import resource, time\nresource.setrlimit(resource.RLIMIT_CPU, (1, 1))\nwhile True: pass")
    assert out.signal in (signal.SIGKILL, signal.SIGXCPU) and out.infrastructure_failure == ""


def test_a_limit_the_run_broke_stays_its_own(run_py) -> None:
    out = run_py("import os, time\nwhile True:\n    os.fork()\n    time.sleep(0.05)", max_processes=16, timeout_s=8)
    assert out.too_many_processes and out.infrastructure_failure == ""
    out = run_py("x = bytearray(600 << 20)\nx[::4096] = b'a' * len(x[::4096])", memory_mb=200)
    assert out.out_of_memory and out.infrastructure_failure == "", out.sandbox_note


def test_an_oom_kill_below_the_runs_own_limit_is_the_hosts(run_py, monkeypatch: pytest.MonkeyPatch) -> None:
    # The host's OOM killer counts in the victim's memory cgroup too (oom_kill), but the cgroup never reached its limit.
    monkeypatch.setattr(RunCgroups, "oom_kills", lambda self: 1 if self.memory_dir is not None else 0)
    monkeypatch.setattr(RunCgroups, "limit_reached", lambda self: False)
    out = run_py("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    if not out.sandbox_note or "memory: cgroup" not in out.sandbox_note:
        pytest.skip("no memory cgroup on this machine")
    assert not out.out_of_memory and "out-of-memory killer" in out.infrastructure_failure


def test_v1_limit_reached_is_read_from_the_high_water_mark(tmp_path: Path) -> None:
    def cgroup(peak: int, failcnt: int = 0) -> RunCgroups:
        for name, value in {"limit_in_bytes": 100 << 20, "max_usage_in_bytes": peak, "failcnt": failcnt}.items():
            (tmp_path / f"memory.{name}").write_text(f"{value}\n")
        return RunCgroups(dirs=[tmp_path], memory_dir=tmp_path, memory_version=1)

    assert cgroup(100 << 20).limit_reached()
    assert cgroup(40 << 20, failcnt=2).limit_reached()
    assert not cgroup(40 << 20).limit_reached()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A job folder on a filesystem of 8 MiB (a tmpfs; needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    job = tmp_path / "small"
    job.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(job)], check=True)
    try:
        yield job
    finally:
        subprocess.run(["umount", "-l", str(job)], check=False)


def test_a_disk_full_below_the_jobs_limit_is_the_platforms(spec_for, small_disk: Path) -> None:
    code = "f = open('big', 'wb')\nfor _ in range(16): f.write(b'x' * (1 << 20))\nf.flush()"
    out = run_sandboxed(replace(spec_for(code, disk_mb=64), workdir=small_disk))
    assert out.returncode == 1 and "No space left" in out.stderr
    assert not out.disk_limit_exceeded
    assert "disk was full" in out.infrastructure_failure and "of its 64 MB" in out.infrastructure_failure


def test_the_jobs_own_disk_limit_stays_its_own(run_py) -> None:
    out = run_py("f = open('big', 'wb')\nfor _ in range(64): f.write(b'x' * (1 << 20))\nf.flush()", disk_mb=8)
    assert out.disk_limit_exceeded and out.infrastructure_failure == ""


def _verdict(sub: ProcessOutcome) -> tuple[Verdict, str, str | None]:
    request = RunRequest(problem="p", lang="py", mode=Mode.TEST, files={}, tests=[{"n": 1}],
                         submission=SubmissionFile(name="s.py", content=b"x"))  # fmt: skip
    report = Report(fatal=RFatal(verdict=Verdict.RUNTIME_ERROR, message="the submission process exited",
                                 fault="submission"), phase="testing")  # fmt: skip
    result = build_result(request, Outcomes(report, None, sub), SystemInfo(), None)
    return result.verdict, result.message, result.fault


def _ended(**kw: object) -> ProcessOutcome:
    fields: dict[str, object] = dict(returncode=None, signal=signal.SIGKILL, timed_out=False, out_of_memory=False,
                                     stdout="", stderr="", stdout_truncated=False, stderr_truncated=False,
                                     sandboxed=True, sandbox_note="", wall_time_s=1.0)  # fmt: skip
    fields.update(kw)
    return ProcessOutcome(**fields)  # type: ignore[arg-type]


def test_the_verdict_of_a_kill_from_outside_is_an_infrastructure_error_naming_it() -> None:
    verdict, message, fault = _verdict(_ended(infrastructure_failure="bubblewrap (outside the sandbox) was killed"))
    assert verdict is Verdict.INFRASTRUCTURE_ERROR and fault == "runner"
    assert "bubblewrap (outside the sandbox) was killed" in message and "not the submission" in message


def test_the_verdict_of_a_limit_stays_the_users_naming_the_limit() -> None:
    verdict, message, fault = _verdict(_ended(too_many_processes=True, killed_reason="started more than 16 processes"))
    assert verdict is Verdict.RUNTIME_ERROR and fault is None and "16 processes" in message
    verdict, message, _ = _verdict(_ended())  # a SIGKILL nothing shows came from outside: its own
    assert verdict is Verdict.RUNTIME_ERROR and "signal 9" in message


def test_the_runners_own_stop_of_a_submission_that_cut_its_connection_is_not_called_a_crash() -> None:
    """The evaluator saw the submission process go, and the runner's stop (SIGKILL, ``cancelled``) came before its
    exit status: the verdict says what is known, not "crashed (killed, signal 9)" (the CI flake of exit_early)."""
    verdict, message, fault = _verdict(_ended(cancelled=True, killed_reason="cancelled"))
    assert verdict is Verdict.RUNTIME_ERROR and fault is None
    assert "cut its connection" in message and "signal 9" not in message and "testing" in message
    verdict, message, _ = _verdict(_ended(signal=None, returncode=0))  # its own status arrived in time
    assert "exited with code 0 while testing" in message


def test_a_run_that_finished_and_was_judged_keeps_its_verdict_whatever_the_platform_noted() -> None:
    """A platform note (say, a disk the run itself filled by paths no count sees) is no free retry for a run whose
    processes finished and whose output the check rejected: only a run that died or never reported is the platform's
    (red team of this change)."""
    from runners.ipc.protocol import RTest

    request = RunRequest(problem="p", lang="py", mode=Mode.TEST, files={}, tests=[{"n": 1}],
                         submission=SubmissionFile(name="s.py", content=b"x"))  # fmt: skip
    report = Report(phase="testing", done=True)
    report.tests.append(RTest(index=0, verdict=Verdict.WRONG_ANSWER, message="1 of 1 elements differ"))
    sub = _ended(signal=None, returncode=0, infrastructure_failure="the runner's disk was full (3 MB free)")
    result = build_result(request, Outcomes(report, None, sub), SystemInfo(), None)
    assert result.verdict is Verdict.WRONG_ANSWER and result.fault is None


def test_unsandboxed_a_dead_supervisor_is_no_evidence_of_the_outside() -> None:
    """Unsandboxed, the submission is init.py's own child and user and can kill it: that is no kill from outside."""
    from runners.sandbox.run import _killed_outside

    assert _killed_outside(-signal.SIGKILL, None, sandboxed=False) == ""
    assert "init.py" in _killed_outside(-signal.SIGKILL, None, sandboxed=True)
