"""The runner lets a submission process that the evaluator saw end deliver its own exit status before it stops the
sandboxes (CI's exit_early flake: on a loaded machine the runner's SIGKILL won the race and the verdict read
"crashed (killed, signal 9)" instead of "exited with code 0")."""

from __future__ import annotations

import threading
import time

import pytest

from runners.contract import Verdict
from runners.entry import session as session_module
from runners.entry.session import Report, Session
from runners.ipc.protocol import SUBMISSION_EXITED, RFatal


def _session(message: str | None) -> Session:
    s = object.__new__(Session)  # only the report matters here
    s.report = Report()
    if message is not None:
        s.report.fatal = RFatal(verdict=Verdict.RUNTIME_ERROR, message=message, fault="submission")
    return s


def _ending_in(seconds: float) -> threading.Thread:
    t = threading.Thread(target=time.sleep, args=(seconds,), daemon=True)
    t.start()
    return t


def test_a_submission_seen_to_exit_is_waited_for_until_it_ends() -> None:
    t = _ending_in(0.3)
    _session(SUBMISSION_EXITED).let_submission_end(t)
    assert not t.is_alive()


def test_the_wait_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "EXIT_GRACE_S", 0.2)
    t = _ending_in(30)
    began = time.monotonic()
    _session(SUBMISSION_EXITED).let_submission_end(t)
    assert t.is_alive() and time.monotonic() - began < 5


@pytest.mark.parametrize("message", [None, "the submission answered out of turn"])
def test_any_other_end_is_not_waited_for(message: str | None) -> None:
    t = _ending_in(30)
    began = time.monotonic()
    _session(message).let_submission_end(t)
    assert time.monotonic() - began < 1
