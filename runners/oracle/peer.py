"""The evaluator's side of the conversation with a submission process (the user's, or its own calibration echo)."""

from __future__ import annotations

import contextlib
import time
from typing import Any, TypeVar

from pydantic import BaseModel

from runners.ipc.protocol import FROM_SUBMISSION
from runners.ipc.wire import PeerGone, Wire, WireError

M = TypeVar("M", bound=BaseModel)


class PeerFailed(Exception):
    """The submission process broke the protocol, went away, or did not answer in time. ``kind`` says which:
    ``gone`` (it exited or crashed), ``timeout``, ``protocol`` (a malformed or unexpected message)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Peer:
    def __init__(self, wire: Wire, name: str = "the submission process") -> None:
        self.wire = wire
        self.name = name

    @classmethod
    def from_fd(cls, fd: int, name: str = "the submission process") -> Peer:
        return cls(Wire.from_fd(fd, FROM_SUBMISSION), name)

    def send(self, message: BaseModel, fds: list[int] | None = None) -> None:
        try:
            self.wire.send(message, fds)
        except PeerGone:
            raise PeerFailed("gone", f"{self.name} exited") from None

    def expect(self, kind: type[M], timeout: float, k: int | None = None) -> M:
        """The next message, which must be a ``kind`` (for call ``k`` where given)."""
        got = self.poll(kind, timeout, k)
        if got is None:
            raise PeerFailed("timeout", f"{self.name} did not answer within {timeout:.0f} s")
        return got

    def poll(self, kind: type[M] | tuple[type[BaseModel], ...], timeout: float, k: int | None = None) -> Any:
        """Like :meth:`expect`, but None when ``timeout`` passes first (``kind`` may be a tuple of kinds)."""
        try:
            got = self.wire.recv(timeout)
        except PeerGone:
            raise PeerFailed("gone", f"{self.name} exited") from None
        except WireError as exc:
            raise PeerFailed("protocol", f"{self.name} broke the protocol: {exc}") from None
        if got is None:
            return None
        msg, fds = got
        _close(fds)
        if not isinstance(msg, kind):
            names = "/".join(c.__name__ for c in (kind if isinstance(kind, tuple) else (kind,)))
            raise PeerFailed("protocol", f"{self.name} broke the protocol: it sent {type(msg).__name__} where {names} "
                             "was due")  # fmt: skip
        if k is not None and getattr(msg, "k", k) != k:
            raise PeerFailed("protocol", f"{self.name} broke the protocol: it answered call {getattr(msg, 'k', '?')} "
                             f"where {k} was due")  # fmt: skip
        return msg

    def quiet(self, k: int) -> None:
        """Nothing may arrive unasked: an answer already waiting before call ``k`` was started is refused."""
        if self.wire.waiting():
            raise PeerFailed("protocol", f"{self.name} broke the protocol: it answered call {k} before it was started")

    def close(self) -> None:
        self.wire.close()


def _close(fds: list[int]) -> None:
    import os

    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def deadline_left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)
