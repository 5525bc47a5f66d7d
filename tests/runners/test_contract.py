from __future__ import annotations

import pytest
from pydantic import ValidationError

from runners.contract import (
    CONTRACT_VERSION,
    PROVENANCE_RUN_S,
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


def test_a_timed_gpu_run_s_limit_holds_its_provenance_pass() -> None:
    """Red team, 2026-11-28: the pass (issue 30) ran outside the worker's bound, so a slow honest run overran it."""
    timed = _request(mode=Mode.BENCHMARK, benchmarks=[{"size": 3, "seed": 1}], device="cuda")
    limits = timed.limits
    assert timed.provenance_run_s() == min(limits.run_timeout_s, PROVENANCE_RUN_S)
    assert timed.time_limit_s() == pytest.approx(
        2 * limits.compile_timeout_s + limits.run_timeout_s + timed.provenance_run_s() + timed.baselines_allowance_s()
    )
    for untimed in (timed.model_copy(update={"device": "cpu"}), timed.model_copy(update={"mode": Mode.TEST})):
        assert untimed.provenance_allowance_s() == 0.0
