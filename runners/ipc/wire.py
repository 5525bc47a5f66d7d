"""Messages over a Unix datagram socket (``SOCK_SEQPACKET``): one JSON message per datagram, file descriptors of
shared memory alongside (``SCM_RIGHTS``), every read bounded in size and in time."""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import time
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from runners.ipc.protocol import MAX_MESSAGE_BYTES
from runners.validation import error_location, error_message

MAX_FDS = 8


class WireError(Exception):
    """The peer sent something that is not a valid message (or too much of it)."""


class PeerGone(Exception):
    """The peer closed its end (it exited or crashed)."""


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """Two connected ends, inheritable, with buffers large enough for the largest message."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for s in (a, b):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 2 * MAX_MESSAGE_BYTES)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2 * MAX_MESSAGE_BYTES)
        os.set_inheritable(s.fileno(), True)
    return a, b


class Wire:
    """One end of the conversation. ``adapter`` validates what arrives (a discriminated union of models)."""

    def __init__(self, sock: socket.socket, adapter: TypeAdapter[Any]) -> None:
        self.sock = sock
        self.adapter = adapter

    @classmethod
    def from_fd(cls, fd: int, adapter: TypeAdapter[Any]) -> Wire:
        return cls(socket.socket(fileno=fd), adapter)

    def send(self, message: BaseModel, fds: list[int] | None = None) -> None:
        data = message.model_dump_json().encode()
        if len(data) > MAX_MESSAGE_BYTES:
            raise WireError(f"a {type(message).__name__} message of {len(data)} bytes is over the limit")
        try:
            if fds:
                socket.send_fds(self.sock, [data], fds)
            else:
                self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            raise PeerGone from None

    def waiting(self) -> bool:
        """Whether a message (or the peer's end) is already waiting to be read."""
        ready, _, _ = select.select([self.sock], [], [], 0.0)
        return bool(ready)

    def recv(self, timeout: float | None = None) -> tuple[Any, list[int]] | None:
        """The next message and the descriptors that came with it; None when ``timeout`` passes first."""
        if timeout is not None:
            deadline = time.monotonic() + max(timeout, 0.0)
            while True:
                left = deadline - time.monotonic()
                try:
                    ready, _, _ = select.select([self.sock], [], [], max(left, 0.0))
                except InterruptedError:
                    continue
                if ready:
                    break
                if left <= 0:
                    return None
        try:
            data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE_BYTES + 1, MAX_FDS)
        except ConnectionResetError:
            raise PeerGone from None
        if not data:
            _close(fds)
            raise PeerGone
        if len(data) > MAX_MESSAGE_BYTES or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            _close(fds)
            raise WireError("a message over the size limit arrived")
        try:
            return self.adapter.validate_python(json.loads(data)), fds
        except (ValueError, ValidationError, RecursionError) as exc:  # a peer's JSON nested past the parser's depth
            # raises RecursionError: a malformed message like any other, never an error of the reader (red team,
            # 2026-11-24: 20,000 nested brackets became the evaluator's own failure, retried and blamed on the worker)
            _close(fds)
            raise WireError(f"a malformed message arrived: {_first_error(exc)}") from None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _close(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{error_location(err)}: {error_message(err)}"[:300]
    return str(exc)[:300]
