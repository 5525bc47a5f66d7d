"""The supervisor of ``kernelcup serve --workers N``: uvicorn's, with a health check that tolerates a busy machine.

uvicorn's ``Multiprocess`` pings each worker process every half second and kills it when one answer takes longer
than ``timeout_worker_healthcheck`` (5 s). On a saturated CPU a healthy worker answers late; it was killed, its
replacement spent more CPU importing the app, and the next worker missed its answer in turn: a restart loop that
served nothing (issue 37). Here a slow answer is not a death: a worker is replaced when its process has exited, or
when it has left ``misses`` pings in a row unanswered over at least ``hang_s``. Pings never block the supervisor:
one is sent every ``check_s`` and its answer is read whenever it arrives.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from socket import socket

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.supervisors.multiprocess import Multiprocess, Process

log = logging.getLogger(__name__)

CHECK_S = 5.0
"""How often a worker is pinged."""
HANG_S = 60.0
"""How long a worker may leave its pings unanswered before it counts as hung (a worker starting on a loaded machine
imports torch and the app first; a request may hold the GIL for seconds)."""
MISSES = 3
"""Unanswered pings in a row that, over ``HANG_S`` at least, make a worker hung."""


@dataclass
class Health:
    """What the supervisor knows of one worker process."""

    answered_at: float
    pinged_at: float | None = None
    unanswered: int = 0
    answers: int = 0


class PatientMultiprocess(Multiprocess):
    """uvicorn's supervisor (signals, SIGHUP restarts, SIGTTIN/SIGTTOU scaling, the startup-failure stop), with
    :meth:`keep_subprocess_alive` replaced: restart on exit, or on a hang over a long window, never on one late answer.
    """

    def __init__(
        self,
        config: Config,
        sockets: list[socket],
        *,
        check_s: float = CHECK_S,
        hang_s: float = HANG_S,
        misses: int = MISSES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(config, sockets)
        self.check_s = check_s
        self.hang_s = hang_s
        self.misses = misses
        self.clock = clock
        self.health: dict[int, Health] = {}
        self.restarts = 0

    def _check(self, process: Process, now: float) -> str | None:
        """Why ``process`` must be replaced ('exited', 'hung'), or None while it lives and answers in time."""
        if not process.process.is_alive():
            return "exited"
        health = self.health.setdefault(id(process), Health(answered_at=now))
        try:
            while process.parent_conn.poll(0):  # every answer that came since, however late
                process.parent_conn.recv()
                health.answered_at, health.unanswered = now, 0
                health.answers += 1
            if health.pinged_at is None or now - health.pinged_at >= self.check_s:
                process.parent_conn.send(b"ping")
                health.pinged_at = now
                health.unanswered += 1
        except (OSError, EOFError, ValueError):  # the pipe broke: the process is going or gone
            return "exited" if not process.process.is_alive() else None
        if health.unanswered >= self.misses and now - health.answered_at >= self.hang_s:
            return "hung"
        return None

    def keep_subprocess_alive(self) -> None:
        if self.should_exit.is_set():
            return  # stopping: nothing to keep alive
        now = self.clock()
        for idx, process in enumerate(self.processes):
            reason = self._check(process, now)
            if reason is None:
                continue
            self.health.pop(id(process), None)
            if reason == "hung":
                log.warning(
                    "worker process %s answered no health check for %.0f s; replacing it", process.pid, self.hang_s
                )
            process.kill()
            process.join()
            if process.exitcode == STARTUP_FAILURE:  # the app cannot start: it would fail the same way again
                log.error("worker process %s failed to start; stopping", process.pid)
                self.should_exit.set()
                return
            if self.should_exit.is_set():
                return
            log.info("worker process %s %s (exit code %s); starting another", process.pid, reason, process.exitcode)
            replacement = Process(self.config, self.sockets)
            replacement.start()
            self.processes[idx] = replacement
            self.restarts += 1
        alive = {id(p) for p in self.processes}
        for key in [k for k in self.health if k not in alive]:
            del self.health[key]
