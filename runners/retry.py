"""The one retry policy of the platform, on ``tenacity``: exponential backoff, capped, bounded in tries or in time.

Every layer that retries something transient uses it: the queue's database transactions
(``leaderboards.queue.with_db_retry``), the GitHub and Modal launchers' API calls, the worker's storing of a
finished result, ``kernelcup submit``. What differs between them is only *what* is worth another try
(``retry_if``), how many tries or how long (``attempts``, ``budget_s``) and, for rate limits that say when to come
back, the wait (``wait_for``). The last exception is re-raised as it is when the policy gives up, so each caller
keeps its own error messages.

It lives in ``runners`` (the lowest layer) so that launchers, the core and the surfaces can all share it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import tenacity
from tenacity import RetryCallState

WaitFor = Callable[[BaseException, float], float]
"""(the exception, the backoff the policy would wait) -> the wait to use instead."""


def backoff_s(attempt: int, first_s: float, max_s: float) -> float:
    """The wait after the ``attempt``-th failed try (1-based): first, 2·first, 4·first, … capped at ``max_s``."""
    return float(min(max_s, first_s * (2 ** max(0, attempt - 1))))


def _policy(
    *,
    retry_if: Callable[[BaseException], bool],
    what: str,
    first_s: float,
    max_s: float,
    attempts: int | None = None,
    budget_s: float | None = None,
    wait_for: WaitFor | None = None,
    log: logging.Logger | None = None,
    until: threading.Event | None = None,
) -> dict[str, object]:
    def wait(state: RetryCallState) -> float:
        delay = backoff_s(state.attempt_number, first_s, max_s)
        exc = state.outcome.exception() if state.outcome is not None else None
        if wait_for is not None and exc is not None:
            delay = wait_for(exc, delay)
        return max(0.0, delay)

    stops: list[tenacity.stop.stop_base] = []
    if attempts is not None:
        stops.append(tenacity.stop_after_attempt(attempts))
    if budget_s is not None:
        stops.append(tenacity.stop_before_delay(budget_s))  # never sleep past the budget
    if until is not None:
        stops.append(tenacity.stop_when_event_set(until))  # the process is stopping: give up now
    logger = log or logging.getLogger(__name__)

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait_s = state.next_action.sleep if state.next_action is not None else 0.0
        logger.warning(
            "%s failed (%s: %s); try %d again in %.2f s",
            what,
            type(exc).__name__,
            str(exc).splitlines()[0][:200] if exc is not None and str(exc) else "",
            state.attempt_number + 1,
            wait_s,
        )

    return dict(
        retry=tenacity.retry_if_exception(retry_if),
        wait=wait,
        stop=tenacity.stop_any(*stops) if stops else tenacity.stop_never,
        reraise=True,
        before_sleep=before_sleep,
    )


def retrying(*, sleep: Callable[[float], None] | None = None, **policy: Any) -> tenacity.Retrying:
    """A blocking retryer: ``retrying(...)(fn)`` calls ``fn()`` until it succeeds or the policy gives up.

    ``policy``: ``retry_if`` (which exceptions are worth another try), ``what`` (for the log), ``first_s`` and
    ``max_s`` (the backoff), and the bounds ``attempts`` and/or ``budget_s``; optionally ``wait_for`` (a wait the
    exception dictates, e.g. a rate limit's reset), ``log`` and ``until`` (an event that ends the retries). No
    ``attempts`` and no ``budget_s`` means: until it succeeds (used only where giving up would lose data and
    a person can stop the process: ``until`` set ends it)."""
    kwargs = _policy(**policy)
    if sleep is not None:
        kwargs["sleep"] = sleep
    return tenacity.Retrying(**kwargs)  # type: ignore[arg-type]


def aretrying(**policy: Any) -> tenacity.AsyncRetrying:
    """The same policy for coroutines: ``await aretrying(...)(coroutine_function)``; waits with ``asyncio.sleep``."""
    return tenacity.AsyncRetrying(**_policy(**policy))  # type: ignore[arg-type]
