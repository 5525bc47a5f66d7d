"""Blocking client calls (PyGithub, Modal's blocking API) off the event loop, each with a bound.

Why not ``asyncio.to_thread``: a call stuck on a dead network would hold one of the loop's default
executor threads until the OS gives up, and enough of them starve every other ``to_thread`` user of the
process (the worker's database sessions), while ``asyncio.run`` waits for them at exit. Each call here
runs in its own daemon thread: the awaiting coroutine is released at the bound, and a process can always
exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

from runners.launchers.base import LauncherError

T = TypeVar("T")


class CallTimeout(LauncherError):
    """The blocking call gave no answer within its bound (network down or blocked): worth another try."""


async def call_blocking(fn: Callable[[], T], *, limit_s: float, what: str) -> T:
    """Run ``fn()`` in a daemon thread; its result, its exception, or ``CallTimeout`` after ``limit_s`` s."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: object, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)  # type: ignore[arg-type]

    def target() -> None:
        try:
            value = fn()
        except BaseException as exc:  # handed to the awaiting coroutine, never lost in the thread
            error: BaseException | None = exc
            value = None
        else:
            error = None
        with contextlib.suppress(RuntimeError):  # the loop closed while we ran: nobody is waiting any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name=f"kernelcup-{what[:40]}", daemon=True).start()
    # asyncio.wait, not wait_for: a TimeoutError raised by fn itself must reach the caller as it is.
    try:
        done, _ = await asyncio.wait({future}, timeout=limit_s)
    except asyncio.CancelledError:
        future.cancel()  # nobody waits any more: the thread's late answer is dropped, not left unretrieved
        raise
    if not done:
        future.cancel()
        raise CallTimeout(f"{what} did not answer within {limit_s:g} s")
    return future.result()
