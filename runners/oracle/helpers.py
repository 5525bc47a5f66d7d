"""The evaluator's helper processes: submission-protocol processes of its own (trusted code only) in its sandbox,
each in a folder of its own: the calibration echo, the baseline process and, on the CPU, the baselines' echo.

Each helper is the submission program (``python -m runners.submission``) serving a known kernel or the reference.
Started one by one, each imports PyTorch itself (about a second of CPU, the bulk of a CPU run's cost: three of a
timed CPU run's five interpreters). On the CPU, where two or more start together, one zygote interpreter
(``runners.submission.zygote``) imports PyTorch once, with the helpers' environment, and forks them: each child is
what a fresh helper would be. Not on a GPU: there a helper's CUDA context and its warm toolchain are its own, and
the fork has not been proved on the lent GPU (docs/architecture.md).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from runners.ipc.protocol import FROM_SUBMISSION
from runners.ipc.wire import Wire, socket_pair
from runners.ipc.wiring import SOCKET_FD_ENV, ZYGOTE_ENV, ZYGOTE_HOLD_ENV, ZYGOTE_PIDS_ENV
from runners.oracle.base import EVALUATOR_ONLY_ENV, HELPER_THREADS_ENV
from runners.oracle.peer import Peer

TITLES = {"echo": "the calibration echo", "baseline": "the baseline process",
          "echo-baselines": "the baselines' calibration echo"}  # fmt: skip
"""The helpers the evaluator knows, by name (the name is also its folder), and how messages name them."""


class HelperProcess(Protocol):
    """What the evaluator does with a helper's process: ``subprocess.Popen`` or a zygote's child (``Forked``)."""

    def poll(self) -> int | None: ...
    def kill(self) -> None: ...
    def wait(self, timeout: float | None = None) -> int: ...


Helper = tuple[HelperProcess, Peer]


def helper_env(environ: Mapping[str, str]) -> dict[str, str]:
    """A helper's environment: the evaluator's, except on the CPU its threads, which are the submission process's
    (``HELPER_THREADS_ENV``) instead of the evaluator's own single passive one, so that a baseline is timed as the
    submission is."""
    env = dict(environ)
    if HELPER_THREADS_ENV in env:
        threads = env.pop(HELPER_THREADS_ENV)
        for var in EVALUATOR_ONLY_ENV:
            env.pop(var, None)
        if threads:
            env["OMP_NUM_THREADS"] = threads
    return env


def start_helper(workdir: Path, name: str, title: str) -> tuple[subprocess.Popen[bytes], Peer]:
    """Start one helper as a new interpreter in ``workdir/name``; it imports PyTorch, says hello and waits."""
    a, b = socket_pair()
    (workdir / name).mkdir(exist_ok=True)
    env = {**helper_env(os.environ), SOCKET_FD_ENV: str(b.fileno())}
    proc = subprocess.Popen([sys.executable, "-m", "runners.submission"], pass_fds=(b.fileno(),), env=env,
                            cwd=workdir / name)  # fmt: skip
    b.close()
    return proc, Peer(Wire(a, FROM_SUBMISSION), title)


def start_helpers(workdir: Path, names: list[str], *, fork: bool) -> dict[str, Helper]:
    """Start the named helpers (names the evaluator does not know are left out): forked from one zygote where
    ``fork`` (the CPU) and there are two or more, else each as its own interpreter."""
    names = [n for n in dict.fromkeys(names) if n in TITLES]
    if not fork or len(names) < 2:
        return {n: start_helper(workdir, n, TITLES[n]) for n in names}
    zygote = Zygote(workdir, names)
    return {n: (zygote.child(n), peer) for n, peer in zygote.peers.items()}


class Zygote:
    """One ``runners.submission.zygote`` process and the helpers it forks. Its children's pids arrive on a pipe
    once it has imported PyTorch (read when first needed, so that the evaluator's own start is not held up); while
    the evaluator holds the hold pipe, the zygote reaps none of them, so a pid stays theirs."""

    def __init__(self, workdir: Path, names: list[str]) -> None:
        ends = {n: socket_pair() for n in names}
        for n in names:
            (workdir / n).mkdir(exist_ok=True)
        pids_r, pids_w = os.pipe()
        hold_r, self._hold_w = os.pipe()
        env = {**helper_env(os.environ), ZYGOTE_ENV: ",".join(f"{n}:{b.fileno()}" for n, (_, b) in ends.items()),
               ZYGOTE_PIDS_ENV: str(pids_w), ZYGOTE_HOLD_ENV: str(hold_r)}  # fmt: skip
        fds = (*(b.fileno() for _, b in ends.values()), pids_w, hold_r)
        # A process group of its own: letting the zygote go kills every child it forked, one not yet known too.
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "runners.submission.zygote"], pass_fds=fds, env=env,
                                         cwd=workdir, process_group=0)  # fmt: skip
        except BaseException:
            for a, _ in ends.values():
                a.close()
            for fd in (pids_r, self._hold_w):
                os.close(fd)
            raise
        finally:  # the child's ends: the zygote holds them now (or nobody does)
            for _, b in ends.values():
                b.close()
            os.close(pids_w)
            os.close(hold_r)
        self._pids_r: int | None = pids_r
        self._buffer = b""
        self.pids: dict[str, int] = {}
        self.peers = {n: Peer(Wire(a, FROM_SUBMISSION), TITLES[n]) for n, (a, _) in ends.items()}
        self.live = set(names)
        self.released = False

    def child(self, name: str) -> Forked:
        return Forked(self, name)

    def pid(self, name: str, timeout: float) -> int | None:
        """The child's pid once the zygote has said it (waiting at most ``timeout``); None if it has not (yet)."""
        deadline = time.monotonic() + timeout
        while name not in self.pids and self._pids_r is not None:
            poller = select.poll()
            poller.register(self._pids_r, select.POLLIN)
            if not poller.poll(max(deadline - time.monotonic(), 0.0) * 1000):
                return None
            chunk = os.read(self._pids_r, 4096)
            if not chunk:  # all said (or the zygote died before)
                os.close(self._pids_r)
                self._pids_r = None
                break
            self._buffer += chunk
            *lines, self._buffer = self._buffer.split(b"\n")
            for line in lines:
                n, _, p = line.decode().partition(" ")
                if n in self.live and p.isdigit():
                    self.pids[n] = int(p)
        return self.pids.get(name)

    def ended(self, name: str) -> None:
        """The child was killed: once none is left the zygote is let go (its process group killed whole)."""
        self.live.discard(name)
        if not self.live:
            self.release()

    def release(self) -> None:
        if self.released:
            return
        self.released = True
        with contextlib.suppress(OSError):
            os.close(self._hold_w)
        if self._pids_r is not None:
            with contextlib.suppress(OSError):
                os.close(self._pids_r)
            self._pids_r = None
        self.pids.clear()  # (reaped from here on: a pid may become another process's)
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


class Forked:
    """A helper forked by a ``Zygote``, handled as ``subprocess.Popen`` is (its exit status stays the zygote's:
    ``returncode`` is -9 once it ended, whatever ended it)."""

    def __init__(self, zygote: Zygote, name: str) -> None:
        self.zygote, self.name = zygote, name
        self.returncode: int | None = None

    def _alive(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            return False
        return state not in (b"Z", b"X")

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        pid = self.zygote.pid(self.name, 0.0)
        if pid is None:  # not forked yet: it will be while the zygote runs and it was not let go
            gone = self.zygote.proc.poll() is not None or self.name not in self.zygote.live
        else:
            gone = not self._alive(pid)
        if gone:
            self.returncode = -signal.SIGKILL
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            pid = self.zygote.pid(self.name, 0.0)
            if pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            self.returncode = -signal.SIGKILL
        # One not forked yet may still be: it goes with its zygote's process group once all are let go.
        self.zygote.ended(self.name)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["runners.submission.zygote", self.name], timeout or 0.0)
            time.sleep(0.005)
        return self.returncode or 0
