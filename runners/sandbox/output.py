"""Draining the evaluation process's stdout and stderr: bounded memory, never a blocked child."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable

_MIB = 1024 * 1024


class Stream:
    """One pipe's capture: keeps the first ``cap`` bytes, counts the rest, feeds complete lines to a callback."""

    _LINE_MAX = 64 * 1024
    _CALLBACK_BUDGET = 8 * _MIB

    def __init__(self, cap: int, on_line: Callable[[str], None] | None) -> None:
        self.cap, self.on_line = cap, on_line
        self.kept = bytearray()
        self.total = 0
        self._partial = bytearray()

    def feed(self, chunk: bytes) -> None:
        if len(self.kept) < self.cap:
            self.kept += chunk[: self.cap - len(self.kept)]
        self.total += len(chunk)
        if self.on_line is not None and self.total <= self._CALLBACK_BUDGET:
            *complete, rest = chunk.split(b"\n")
            for piece in complete:
                self._partial += piece
                self._emit(bytes(self._partial))
                self._partial.clear()
            self._partial += rest
            if len(self._partial) > self._LINE_MAX:
                del self._partial[self._LINE_MAX :]

    def close(self) -> None:
        if self.on_line is not None and self._partial:
            self._emit(bytes(self._partial))
        self._partial.clear()

    def _emit(self, line: bytes) -> None:
        try:
            self.on_line(line[: self._LINE_MAX].decode(errors="replace").rstrip("\r"))  # type: ignore[misc]
        except Exception:  # a broken callback must not stop the draining of the pipe
            self.on_line = None

    @property
    def text(self) -> str:
        return bytes(self.kept).decode(errors="replace")

    @property
    def truncated(self) -> bool:
        return self.total > len(self.kept)


class Pump:
    """Drains stdout and stderr on one thread with non-blocking reads, so the child never blocks on a full pipe
    and the runner can stop reading at any time (even if an escaped process still held a pipe open)."""

    def __init__(self, streams: dict[int, Stream]) -> None:
        self.streams = streams
        self._stop = threading.Event()
        for fd in streams:
            os.set_blocking(fd, False)
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, 1031, _MIB)  # F_SETPIPE_SZ: fewer wake-ups when a submission floods the pipe
        self._thread = threading.Thread(target=self._run, name="sandbox-output", daemon=True)
        self._thread.start()

    @property
    def total(self) -> int:
        return sum(s.total for s in self.streams.values())

    def _run(self) -> None:
        import selectors

        with selectors.DefaultSelector() as sel:
            for fd in self.streams:
                sel.register(fd, selectors.EVENT_READ)
            open_fds = set(self.streams)
            while open_fds and not self._stop.is_set():
                for key, _ in sel.select(timeout=0.05):
                    fd = key.fd
                    try:
                        chunk = os.read(fd, 1 << 16)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except OSError:
                        chunk = b""
                    if chunk:
                        self.streams[fd].feed(chunk)
                    else:
                        sel.unregister(fd)
                        open_fds.discard(fd)

    def finish(self, grace_s: float) -> None:
        """Wait up to ``grace_s`` for both pipes to reach EOF, then stop reading and close them."""
        self._thread.join(grace_s)
        self._stop.set()
        self._thread.join()
        for fd, stream in self.streams.items():
            stream.close()
            with contextlib.suppress(OSError):
                os.close(fd)
