"""The platform's one retry policy (``runners.retry``, on tenacity), tested once for every user of it: the queue's
database retries, the GitHub and Modal launchers, storing results."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from runners.retry import aretrying, backoff_s, retrying


class Flaky(Exception):
    pass


def failing(times: int, exc: type[Exception] = Flaky):  # type: ignore[no-untyped-def]
    calls: list[int] = []

    def fn() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise exc(f"failure {len(calls)}")
        return "ok"

    return fn, calls


def test_backoff_doubles_and_caps() -> None:
    assert [backoff_s(a, 0.5, 3) for a in (1, 2, 3, 4, 5)] == [0.5, 1, 2, 3, 3]


def test_retries_what_is_worth_it_with_the_backoff_then_reraises_the_last_error() -> None:
    sleeps: list[float] = []
    policy = dict(retry_if=lambda e: isinstance(e, Flaky), what="t", first_s=1, max_s=3, sleep=sleeps.append)
    fn, calls = failing(3)
    assert retrying(attempts=5, **policy)(fn) == "ok"
    assert sleeps == [1, 2, 3] and len(calls) == 4
    sleeps.clear()
    fn, calls = failing(10)
    with pytest.raises(Flaky, match="failure 5"):  # the caller gets its own exception, not a RetryError
        retrying(attempts=5, **policy)(fn)
    assert len(calls) == 5 and sleeps == [1, 2, 3, 3]


def test_other_errors_are_not_retried() -> None:
    fn, calls = failing(1, ValueError)
    with pytest.raises(ValueError):
        retrying(retry_if=lambda e: isinstance(e, Flaky), what="t", first_s=0, max_s=0, attempts=5)(fn)
    assert len(calls) == 1


def test_a_time_budget_is_never_overslept() -> None:
    fn, calls = failing(1000)
    started = time.monotonic()
    with pytest.raises(Flaky):
        retrying(retry_if=lambda e: True, what="t", first_s=0.02, max_s=0.05, budget_s=0.3)(fn)
    assert time.monotonic() - started < 0.4 and len(calls) >= 4


def test_the_exception_may_dictate_the_wait_and_an_event_ends_endless_retries() -> None:
    sleeps: list[float] = []
    fn, _ = failing(2)
    retrying(retry_if=lambda e: True, what="t", first_s=1, max_s=1, attempts=3, sleep=sleeps.append,
             wait_for=lambda exc, delay: 7.0)(fn)  # fmt: skip
    assert sleeps == [7.0, 7.0]
    stop = threading.Event()
    fn, calls = failing(1000)
    threading.Timer(0.1, stop.set).start()
    with pytest.raises(Flaky):
        retrying(retry_if=lambda e: True, what="t", first_s=0.01, max_s=0.01, until=stop)(fn)  # no bound but `until`
    assert 2 <= len(calls) < 1000


def test_coroutines_share_the_policy() -> None:
    calls: list[int] = []

    async def fn(x: int) -> int:
        calls.append(1)
        if len(calls) < 3:
            raise Flaky()
        return x + 1

    policy = aretrying(retry_if=lambda e: isinstance(e, Flaky), what="t", first_s=0.001, max_s=0.01, attempts=3)
    assert asyncio.run(policy(fn, 41)) == 42 and len(calls) == 3
