"""The fake launcher the core's tests use: canned results, recorded requests, errors, delays, re-attach."""

from __future__ import annotations

import asyncio

import pytest

from runners.contract import Mode, Verdict
from runners.launchers.base import Launcher, LauncherError
from runners.launchers.fake import FakeLauncher, accepted_result, verdict_result


def test_default_answer_is_accepted_with_a_score_for_timed_modes(make_request, job) -> None:
    async def body() -> None:
        fake = FakeLauncher()
        assert isinstance(fake, Launcher)
        request = make_request(mode=Mode.BENCHMARK, benchmarks=[{"size": 1}, {"size": 2}])
        result = await fake.run(request, job)
        assert result.verdict is Verdict.ACCEPTED and len(result.benchmarks) == 2
        assert result.score_ns == pytest.approx(1000.0)
        assert fake.requests == [request] and job.refs == ["fake-" + job.refs[0].split("-")[1]]
        assert accepted_result(make_request()).score_ns is None  # test mode is not timed

    asyncio.run(body())


def test_responder_errors_and_reattach(make_request, make_job) -> None:
    async def body() -> None:
        fake = FakeLauncher(verdict_result(Verdict.WRONG_ANSWER, "nope"), errors=[LauncherError("outage"), None])
        job = make_job()
        with pytest.raises(LauncherError, match="outage"):
            await fake.run(make_request(), job)
        result = await fake.run(make_request(), job)  # the second attempt re-attaches to the stored reference
        assert result.verdict is Verdict.WRONG_ANSWER and result.message == "nope"
        assert fake.reattached == job.refs[:1] and len(fake.requests) == 2

    asyncio.run(body())


def test_check_error_and_progress(make_request, job) -> None:
    async def body() -> None:
        fake = FakeLauncher(check_error=LauncherError("no token"), delay_s=0.01)
        with pytest.raises(LauncherError, match="no token"):
            await fake.check()
        await fake.run(make_request(), job)
        assert [kind for kind, _ in job.log] == ["ref", "progress"]

    asyncio.run(body())
