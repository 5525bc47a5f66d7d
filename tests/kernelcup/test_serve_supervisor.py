"""``kernelcup serve --workers N`` keeps its processes on a busy machine (issue 37, class 3): a worker that answers its
health check late is left alone; one that exited is replaced at once, one that answers nothing for the whole window
is replaced then. Real uvicorn worker processes; a stopped process (SIGSTOP) stands for one starved of CPU."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator

import pytest
from uvicorn.config import Config
from uvicorn.supervisors.multiprocess import Multiprocess

from kernelcup.commands.serve_supervisor import PatientMultiprocess


async def tiny_app(scope, receive, send):  # type: ignore[no-untyped-def]
    """What each worker process serves (imported by name in the spawned process)."""
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def _config() -> Config:
    return Config(f"{__name__}:tiny_app", host="127.0.0.1", port=0, workers=2, lifespan="off", log_config=None)


@pytest.fixture
def supervisors() -> Iterator[Callable[[type[Multiprocess], dict[str, float]], Multiprocess]]:
    """Builds supervisors with started worker processes; stops them all and restores the signal handlers after."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    made: list[tuple[Multiprocess, object]] = []

    def make(kind: type[Multiprocess], options: dict[str, float]) -> Multiprocess:
        config = _config()
        sock = config.bind_socket()
        supervisor = kind(config, [sock], **options)  # type: ignore[arg-type]
        supervisor.init_processes()
        made.append((supervisor, sock))
        return supervisor

    yield make
    for supervisor, sock in made:
        for process in supervisor.processes:
            if process.pid is not None:
                _signal(process.pid, signal.SIGCONT)
        supervisor.terminate_all()
        supervisor.join_all()
        sock.close()  # type: ignore[attr-defined]
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # gone already
        os.kill(pid, sig)


def _pids(supervisor: Multiprocess) -> list[int]:
    pids = [p.pid for p in supervisor.processes]
    assert None not in pids, "a worker process that never started"
    return [pid for pid in pids if pid is not None]


def _supervise(supervisor: Multiprocess, seconds: float) -> None:
    """What ``Multiprocess.run`` does between signals: check the workers every half second (here every 0.1 s)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        supervisor.keep_subprocess_alive()
        time.sleep(0.1)


def _until_ready(supervisor: Multiprocess) -> None:
    """Until every worker answers a ping (a spawned process imports the app first; slow on a loaded machine)."""
    deadline = time.monotonic() + 60
    while not all(p.is_ready(timeout=1) for p in supervisor.processes):
        assert time.monotonic() < deadline, "the worker processes did not start"
        time.sleep(0.2)


def test_uvicorns_own_supervisor_kills_a_worker_that_answers_late(supervisors) -> None:  # type: ignore[no-untyped-def]
    """The bug: uvicorn's health check takes one answer later than its timeout for a dead process."""
    supervisor = supervisors(Multiprocess, {})
    supervisor.config.timeout_worker_healthcheck = 1
    _until_ready(supervisor)
    before = _pids(supervisor)
    _signal(before[0], signal.SIGSTOP)  # starved of CPU for 2.5 s
    _supervise(supervisor, 2.5)
    _signal(before[0], signal.SIGCONT)
    assert _pids(supervisor)[0] != before[0]


def test_a_worker_that_answers_late_is_kept_and_one_that_exited_is_replaced(supervisors) -> None:  # type: ignore[no-untyped-def]
    supervisor = supervisors(PatientMultiprocess, {"check_s": 0.2, "hang_s": 4.0, "misses": 3})
    assert isinstance(supervisor, PatientMultiprocess)
    _until_ready(supervisor)
    before = _pids(supervisor)
    _signal(before[0], signal.SIGSTOP)  # starved of CPU for 2.5 s: more than uvicorn's timeout, less than the window
    _supervise(supervisor, 2.5)
    _signal(before[0], signal.SIGCONT)
    _supervise(supervisor, 1.0)
    assert _pids(supervisor) == before and supervisor.restarts == 0
    assert supervisor.health[id(supervisor.processes[0])].unanswered <= 1  # its late answers were read

    _signal(before[1], signal.SIGKILL)  # a real failure: replaced at the next check
    _supervise(supervisor, 1.0)
    after = _pids(supervisor)
    assert after[0] == before[0] and after[1] != before[1] and supervisor.restarts == 1


def test_a_worker_that_answers_nothing_for_the_whole_window_is_replaced(supervisors) -> None:  # type: ignore[no-untyped-def]
    supervisor = supervisors(PatientMultiprocess, {"check_s": 0.2, "hang_s": 2.0, "misses": 3})
    assert isinstance(supervisor, PatientMultiprocess)
    _until_ready(supervisor)
    before = _pids(supervisor)
    _signal(before[0], signal.SIGSTOP)  # hung for good
    _supervise(supervisor, 1.5)
    assert _pids(supervisor) == before  # not yet: the window is 2 s
    _supervise(supervisor, 2.0)
    assert _pids(supervisor)[0] != before[0] and supervisor.restarts == 1
