"""The result channel: authenticated, sequenced frames from the evaluation process to the parent.

The evaluation process writes one line per frame to a pipe that only it and the parent hold::

    <hex HMAC-SHA256(key, "<seq>:<json>")> <json>

The key is a fresh random value that the parent sends on the control pipe (never in the
environment or a file) before the submission is imported. The parent drops the whole run as
tampered (``ChannelError``) on a bad MAC, a repeated or skipped sequence number or a malformed line,
so text a submission writes to stdout, to some file descriptor or to a file is never taken as a result.
The control pipe carries the job and, in ranked mode, the per-call seeds, one JSON line each.

This module is imported on both sides; it holds no state at import.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterator
from typing import Any

MAX_FRAME_BYTES = 8 * 1024 * 1024
RESULT_FD_ENV = "KERNELCUP_RESULT_FD"
CONTROL_FD_ENV = "KERNELCUP_CONTROL_FD"


class ChannelError(Exception):
    """A frame failed authentication or sequencing: the evaluation process's output cannot be trusted."""


def new_key() -> bytes:
    return secrets.token_bytes(32)


def _mac(key: bytes, seq: int, body: str) -> str:
    return hmac.new(key, f"{seq}:{body}".encode(), hashlib.sha256).hexdigest()


def encode_frame(key: bytes, seq: int, payload: dict[str, Any]) -> bytes:
    body = json.dumps({**payload, "seq": seq}, separators=(",", ":"), allow_nan=True)
    return f"{_mac(key, seq, body)} {body}\n".encode()


class FrameReader:
    """Parent side: verifies frames in order. Feed it raw lines; it yields payloads or raises ChannelError."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._seq = 0

    def verify(self, line: bytes) -> dict[str, Any]:
        if len(line) > MAX_FRAME_BYTES:
            raise ChannelError("a result frame was larger than the limit")
        try:
            text = line.decode().rstrip("\n")
            mac, body = text.split(" ", 1)
        except (UnicodeDecodeError, ValueError):
            raise ChannelError("a malformed line arrived on the result channel") from None
        if not hmac.compare_digest(mac, _mac(self._key, self._seq, body)):
            raise ChannelError("a result frame failed authentication (forged or out of order)")
        try:
            payload = json.loads(body)
        except json.JSONDecodeError:
            raise ChannelError("a result frame was not JSON") from None
        if not isinstance(payload, dict) or payload.get("seq") != self._seq:
            raise ChannelError("a result frame carried the wrong sequence number")
        self._seq += 1
        return payload


def read_lines(fd: int, limit: int = MAX_FRAME_BYTES) -> Iterator[bytes]:
    """Lines from a pipe until EOF; a line over ``limit`` is yielded truncated (and then fails verification)."""
    buf = b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            if buf:
                yield buf
            return
        buf += chunk
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                if len(buf) > limit:
                    yield buf[: limit + 1]
                    buf = b""
                break
            yield buf[: nl + 1]
            buf = buf[nl + 1 :]


class ChildChannel:
    """Evaluation-process side: the result pipe moved to a random high descriptor, the key in a closure."""

    def __init__(self, result_fd: int, control_fd: int, key: bytes) -> None:
        # Move the pipes away from the numbers in the environment, so a submission that writes to the
        # advertised descriptor writes nowhere; the key lives only in this closure.
        self._fd = _move_fd(result_fd)
        self._control = os.fdopen(_move_fd(control_fd), "rb", buffering=0)
        seq = [0]

        def send(payload: dict[str, Any]) -> None:
            data = encode_frame(key, seq[0], payload)
            seq[0] += 1
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]

        self.send = send

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send a frame and wait for the parent's one-line JSON answer on the control pipe."""
        self.send(payload)
        line = self._control.readline()
        if not line:
            raise ChannelError("the parent closed the control pipe")
        return json.loads(line)


def _move_fd(fd: int) -> int:
    for _ in range(16):
        target = 200 + secrets.randbelow(800)
        try:
            os.fstat(target)
        except OSError:
            os.dup2(fd, target, inheritable=False)
            os.close(fd)
            return target
    return fd


def read_control_header(fd: int) -> tuple[dict[str, Any], bytes, int]:
    """Read the first control line (job + key) without buffering past it; returns (job, key, fd)."""
    data = b""
    while not data.endswith(b"\n"):
        ch = os.read(fd, 1)
        if not ch:
            raise ChannelError("the control pipe closed before the job arrived")
        data += ch
    header = json.loads(data)
    return header["job"], bytes.fromhex(header["key"]), fd
