from __future__ import annotations

import pytest
from pydantic import ValidationError

from runners.contract import (
    CONTRACT_VERSION,
    Language,
    Mode,
    RunRequest,
    RunResult,
    SubmissionFile,
    Verdict,
    worst,
)


def _request(**kw) -> RunRequest:
    base = dict(
        problem="p",
        lang=Language.PYTHON,
        mode=Mode.TEST,
        files={"reference.py": "x = 1\n"},
        submission=SubmissionFile(name="s.py", content=b"\x00\xffbinary"),
        tests=[{"size": 3, "seed": 1}],
    )
    base.update(kw)
    return RunRequest(**base)


def test_request_round_trips_through_json_with_binary_submission() -> None:
    req = _request()
    again = RunRequest.model_validate_json(req.model_dump_json())
    assert again == req
    assert again.submission.content == b"\x00\xffbinary"


def test_unknown_version_and_unknown_fields_are_refused() -> None:
    data = _request().model_dump(mode="json")
    with pytest.raises(ValidationError, match="not supported"):
        RunRequest.model_validate({**data, "version": CONTRACT_VERSION + 1})
    with pytest.raises(ValidationError, match="Extra inputs"):
        RunRequest.model_validate({**data, "surprise": 1})


def test_worst_verdict_follows_display_priority() -> None:
    assert worst([Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.TIMEOUT]) is Verdict.TIMEOUT
    assert worst([Verdict.WRONG_ANSWER, Verdict.COMPILE_ERROR]) is Verdict.COMPILE_ERROR
    assert worst([]) is Verdict.ACCEPTED


def test_only_infrastructure_errors_are_not_the_users_fault() -> None:
    assert [v for v in Verdict if not v.user_fault] == [Verdict.INFRASTRUCTURE_ERROR]
    res = RunResult.infrastructure_error(Mode.TEST, "runner crashed")
    assert not res.passed and res.verdict.label.startswith("infrastructure")
