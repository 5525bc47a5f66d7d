"""The launcher interface: how the core hands a run request to some machine and gets a result back.

The core (``leaderboards/``) knows only this protocol. A launcher must:

- never block the event loop (blocking clients go through ``asyncio.to_thread``);
- bound every wait (``request.limits`` plus its own start-up/transfer margins);
- report a remote reference through ``job.set_remote_ref`` as soon as it has one, and, when
  ``job.remote_ref`` is already set (a restarted worker), re-attach to that run instead of starting
  another one;
- return an ``infrastructure_error`` result (or raise ``LauncherError``) for failures that are not the
  submission's fault, so the worker can retry them; never mark a job itself.

Every launcher subclasses ``Launcher``; each kind of route (``local``, ``modal``, ``github``) is one row of
``runners/launchers/registry.py``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol, runtime_checkable

from runners.contract import ProgressEvent, RunRequest, RunResult


class LauncherError(Exception):
    """An infrastructure failure of the launcher (outage, lost runner, malformed result). Retried by workers."""


class DeviceUnavailable(Exception):
    """This runner does not have the device the job wants (no GPU, or another model): a configuration problem of
    the operator's routes or the user's choice of device, not an outage. Workers fail the job at once, no retry."""


@runtime_checkable
class JobHandle(Protocol):
    """What a launcher may know and say about the job it serves."""

    @property
    def remote_ref(self) -> str | None:
        """The remote run reference stored on the job by an earlier attempt, if any."""
        ...

    async def set_remote_ref(self, ref: str) -> None:
        """Store the remote run reference durably (before waiting on the remote run)."""
        ...

    async def progress(self, event: ProgressEvent) -> None:
        """Report progress; must be cheap and never raise."""
        ...


class Launcher(ABC):
    """The base of every launcher: ``run`` and ``check`` to implement, and the capabilities the core reads, each
    with the safe default a launcher overrides only when it has the capability. The core reads them as plain
    attributes, so a launcher that does not say is trusted with nothing and given no extra time."""

    name: str

    @property
    def allows_unsandboxed(self) -> bool:
        """Whether the worker may store this launcher's results that did not run in the sandbox (trust-relevant:
        False unless the operator allowed it for this launcher)."""
        return False

    @property
    def wait_margin_s(self) -> float:
        """The longest this launcher may wait beyond a request's compile and run limits (a queue, a cold start);
        the worker's bound on one call grows to it."""
        return 0.0

    def cannot_serve(self, device_name: str) -> str | None:
        """Why this launcher cannot run jobs for ``device_name`` here (e.g. this machine lacks the GPU), or None.
        May block (it may ask the driver): call it off the event loop."""
        return None

    @abstractmethod
    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        """Run the request to completion (or re-attach to ``job.remote_ref``) and return its result."""

    @abstractmethod
    async def check(self) -> str:
        """Check configuration and credentials without running a job; return a one-line status.

        Raises ``LauncherError`` with a message naming the setting to fix when something is wrong.
        """


class DetachedJob:
    """A ``JobHandle`` for runs outside the queue (``kernelcup run``, tests): nothing is persisted."""

    def __init__(self, on_progress: object | None = None) -> None:
        self._ref: str | None = None
        self._on_progress = on_progress
        self.events: list[ProgressEvent] = []

    @property
    def remote_ref(self) -> str | None:
        return self._ref

    async def set_remote_ref(self, ref: str) -> None:
        self._ref = ref

    async def progress(self, event: ProgressEvent) -> None:
        self.events.append(event)
        if callable(self._on_progress):
            self._on_progress(event)
