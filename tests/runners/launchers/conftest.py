"""Shared pieces of the launcher tests: a job handle that records what a launcher did, in order."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from runners.contract import Language, Mode, ProgressEvent, RunRequest, RunResult, SubmissionFile, Verdict
from runners.launchers.base import JobHandle


class RecordingJob:
    """A ``JobHandle`` that keeps every call, so tests can assert the order (ref stored before waiting)."""

    def __init__(self, remote_ref: str | None = None) -> None:
        self._ref = remote_ref
        self.log: list[tuple[str, str]] = []

    @property
    def remote_ref(self) -> str | None:
        return self._ref

    async def set_remote_ref(self, ref: str) -> None:
        self._ref = ref
        self.log.append(("ref", ref))

    async def progress(self, event: ProgressEvent) -> None:
        self.log.append(("progress", f"{event.phase}: {event.detail}"))

    @property
    def refs(self) -> list[str]:
        return [value for kind, value in self.log if kind == "ref"]


def _request(**overrides: object) -> RunRequest:
    base: dict[str, object] = dict(
        problem="vectoradd",
        lang=Language.PYTHON,
        mode=Mode.TEST,
        files={"reference.py": "def ref_kernel(data):\n    return data\n"},
        submission=SubmissionFile(name="submission.py", content=b"def custom_kernel(data):\n    return data\n"),
        tests=[{"size": 8, "seed": 1}],
        device_name="H100",
    )
    base.update(overrides)
    return RunRequest(**base)


def _result(verdict: Verdict = Verdict.ACCEPTED, **overrides: object) -> RunResult:
    return RunResult(verdict=verdict, mode=Mode.TEST, message="all tests passed", **overrides)


@pytest.fixture
def job() -> RecordingJob:
    job = RecordingJob()
    assert isinstance(job, JobHandle)
    return job


@pytest.fixture
def make_job() -> type[RecordingJob]:
    return RecordingJob


@pytest.fixture
def make_request() -> Callable[..., RunRequest]:
    return _request


@pytest.fixture
def make_result() -> Callable[..., RunResult]:
    return _result
