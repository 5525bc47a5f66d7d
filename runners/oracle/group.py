"""The channel between the evaluators of one run of several ranks (docs/multigpu.md): barrier, agreement, abort.

Rank 0's evaluator is the hub: the entry makes one socketpair between it and each other evaluator and passes the
ends only to them (``GROUP_FDS_ENV``), never to the submission's sandbox. Messages are JSON lines:

- ``{"t": "x", "n": N, "v": V}`` (rank j -> 0): rank j's part of exchange N; rank 0 answers every rank with
  ``{"t": "r", "n": N, "v": [V0, V1, ...]}`` once it holds all of them. An exchange with no value is a barrier.
- ``{"t": "abort", "fatal": {...}}`` (an ``RFatal``'s fields): the sender stopped with this failure. Rank 0
  reports it as the run's (the first failure wins) and ends; any other rank ends. A peer's end of file before
  the group finished is read as its evaluator's death.

Every evaluator makes the same exchanges in the same order (the evaluators run the same steps on the same cases), so
an exchange never waits for a peer that is elsewhere; a peer that stopped aborts the others instead of leaving them
waiting inside a collective until the time limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import threading
from collections.abc import Callable
from typing import Any

from runners.contract import Verdict
from runners.ipc.wiring import GATE_FD_ENV as GATE_FD_ENV
from runners.ipc.wiring import GROUP_FDS_ENV as GROUP_FDS_ENV
from runners.oracle.base import Fatal

MAX_LINE = 1024 * 1024


class Group:
    """This evaluator's end of the group channel. ``on_abort(fatal)`` runs on a reader thread when a peer stops
    (it must end the process: the main thread may be waiting on the GPU or in an exchange)."""

    def __init__(self, rank: int, world_size: int, socks: list[socket.socket],
                 on_abort: Callable[[dict[str, Any]], None]) -> None:  # fmt: skip
        if len(socks) != (world_size - 1 if rank == 0 else 1):
            raise ValueError(f"rank {rank} of {world_size} got {len(socks)} group sockets")
        self.rank, self.world_size = rank, world_size
        self.socks = socks
        self.on_abort = on_abort
        self.finished = False
        self.finishing = False
        self.seq = 0
        self.inbox: list[queue.Queue[Any]] = [queue.Queue() for _ in socks]
        self._send_lock = threading.Lock()
        self._aborted = threading.Event()
        self.threads = [threading.Thread(target=self._read, args=(i,), daemon=True, name=f"kc-group-{i}")
                        for i in range(len(socks))]  # fmt: skip
        for t in self.threads:
            t.start()

    @classmethod
    def from_env(cls, rank: int, world_size: int, on_abort: Callable[[dict[str, Any]], None]) -> Group:
        fds = [int(x) for x in os.environ.pop(GROUP_FDS_ENV, "").split(",") if x]
        return cls(rank, world_size, [socket.socket(fileno=fd) for fd in fds], on_abort)

    def peer_rank(self, i: int) -> int:
        return i + 1 if self.rank == 0 else 0

    # ---- reading ---------------------------------------------------------------------------------------------
    def _read(self, i: int) -> None:
        buf = b""
        sock = self.socks[i]
        while True:
            try:
                chunk = sock.recv(1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                if not (self.finished or self.finishing):
                    self._abort_from_peer({"verdict": "infrastructure_error", "fault": "runner",
                                           "message": f"the evaluator of rank {self.peer_rank(i)} exited"})  # fmt: skip
                self.inbox[i].put(None)
                return
            buf += chunk
            if len(buf) > MAX_LINE:
                self._abort_from_peer({"verdict": "infrastructure_error", "fault": "runner",
                                       "message": "the evaluators' group channel broke its protocol"})  # fmt: skip
                return
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                if msg.get("t") == "abort":
                    self._abort_from_peer(dict(msg.get("fatal") or {}))
                    return
                self.inbox[i].put(msg)

    def _abort_from_peer(self, fatal: dict[str, Any]) -> None:
        if self._aborted.is_set():
            return
        self._aborted.set()
        self.on_abort(fatal)

    def _send(self, i: int, msg: dict[str, Any]) -> None:
        data = (json.dumps(msg) + "\n").encode()
        with self._send_lock:
            self.socks[i].sendall(data)

    def _recv(self, i: int, seq: int) -> Any:
        msg = self.inbox[i].get()
        if msg is None:
            if not self.finishing:  # the peer is gone and on_abort is ending this process: wait for it
                threading.Event().wait()
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, f"the evaluator of rank {self.peer_rank(i)} exited before the "
                        "end", "runner")  # fmt: skip
        if msg.get("n") != seq:
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, f"the evaluators fell out of step (exchange {msg.get('n')} where "
                        f"{seq} was due)", "runner")  # fmt: skip
        return msg.get("v")

    # ---- exchanges -------------------------------------------------------------------------------------------
    def exchange(self, value: Any = None) -> list[Any]:
        """Every rank's ``value`` of this exchange, in rank order (the same list on every rank)."""
        self.seq += 1
        seq = self.seq
        if self.rank != 0:
            self._send(0, {"t": "x", "n": seq, "v": value})
            return list(self._recv(0, seq))
        values = [value] + [self._recv(i, seq) for i in range(len(self.socks))]
        for i in range(len(self.socks)):
            self._send(i, {"t": "r", "n": seq, "v": values})
        return values

    def barrier(self) -> None:
        self.exchange()

    def max(self, value: float) -> float:
        return max(float(v) for v in self.exchange(value))

    def min(self, value: int) -> int:
        return min(int(v) for v in self.exchange(value))

    def first(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        return self.exchange(value)[0]

    def finish(self) -> None:
        """Every rank is done: from here a peer's end of file is its normal exit."""
        self.finishing = True
        self.exchange("end")
        self.finished = True

    def abort(self, fatal: dict[str, Any]) -> None:
        """Tell the peers this evaluator stopped with ``fatal`` (best effort: a peer may be gone already)."""
        self.finished = True
        for i in range(len(self.socks)):
            with contextlib.suppress(OSError):
                self._send(i, {"t": "abort", "fatal": fatal})
