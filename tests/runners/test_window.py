"""The CPU window against a scripted submission process (project issue 37): what that process can see before "go",
and what the window allows for.

The submission side is a thread speaking the real protocol over a real socket pair, with the real shared memory: it
does what a hostile process would, and records what it saw.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from leaderboards.problems import load_problem
from runners.contract import Mode, TimingSettings, Verdict
from runners.entry import run_request
from runners.ipc.arena import Arena, ArenaError, materialize, place
from runners.ipc.protocol import FROM_SUBMISSION, TO_SUBMISSION, Call, Done, Go, Prepared, TensorRef
from runners.ipc.wire import Wire, socket_pair
from runners.oracle.peer import Peer
from runners.oracle.timing import sample_of
from runners.oracle.window import CpuWindow
from runners.settings import RunnerSettings

torch = pytest.importorskip("torch")

SIZE = 50_000
REPO = Path(__file__).resolve().parents[2]
ALLREDUCE = REPO / "problems" / "allreduce"
CHEATS_RANKS = Path(__file__).resolve().parent / "cheats_ranks"


class Hostile(threading.Thread):
    """The submission side of ``calls`` CPU calls of a vector add. On "call" it tries to read the inputs from every
    arena it has mapped (and keeps looking until "go" comes); on "go" it maps what came with it, writes a + b
    straight into the host output arena (no copy of its own) and reports a reading of 1 ns."""

    def __init__(self, wire: Wire, arenas: dict[str, Arena], calls: int) -> None:
        super().__init__(daemon=True)
        self.wire, self.arenas, self.calls = wire, arenas, calls
        self.before_go: list[str] = []
        self.inodes: list[int] = []
        self.kept: list[Arena] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for _ in range(self.calls):
                self.call()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def call(self) -> None:
        got = self.wire.recv(10.0)
        assert got is not None and isinstance(got[0], Call)
        msg = got[0]
        watched = [self.arenas["host_in"].span(torch, 0, 3 * 4 * SIZE + 4096)]
        with contextlib.suppress(ArenaError):  # where the references point, in whatever it has mapped (the last
            watched += [t.view(torch.uint8) for t in materialize(torch, msg.data[0], self.arenas)[:2]]  # call's)
        self.wire.send(Prepared(k=msg.k))
        while not self.wire.waiting():  # watch everything it can until "go": nothing of this call may appear
            if any(bool(w.any()) for w in watched):
                self.before_go.append(f"call {msg.k}: bytes of the inputs were readable before 'go'")
                break
            time.sleep(0.0005)
        got = self.wire.recv(10.0)
        assert got is not None and isinstance(got[0], Go)
        go, fds = got
        spec = getattr(go, "arena", None)  # (none before issue 37: the inputs were in host_in)
        if spec is not None:
            assert len(fds) == 1
            self.inodes.append(os.fstat(fds[0]).st_ino)
            arena = Arena.open(torch, spec.name, "host", spec.size, fds[0])
            self.kept.append(arena)  # a hostile process keeps every mapping
            self.arenas[spec.name] = arena
        a, b, _ = materialize(torch, msg.data[0], self.arenas)
        host_out = self.arenas["host_out"]
        host_out.reset()
        ref = TensorRef(arena="host_out", offset=host_out.take(4 * SIZE), dtype="float32", shape=[SIZE], stride=[1])
        torch.add(a, b, out=host_out.view(torch, ref))
        self.wire.send(Done(k=msg.k, outputs=[ref], r_ns=1.0))


def _pair(calls: int) -> tuple[CpuWindow, Peer, Hostile, dict[str, Arena]]:
    ours = {name: Arena.create(torch, name, "host", 64 << 20) for name in ("host_in", "host_out")}
    theirs = {name: Arena.open(torch, name, "host", a.size, os.dup(a.fd)) for name, a in ours.items()}
    left, right = socket_pair()
    hostile = Hostile(Wire(right, TO_SUBMISSION), theirs, calls)
    hostile.start()
    return CpuWindow(torch, ours), Peer(Wire(left, FROM_SUBMISSION)), hostile, ours


def _inputs(seed: int) -> tuple[Any, Any, Any]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(SIZE, generator=g), torch.randn(SIZE, generator=g), torch.full((SIZE,), float("nan"))


def test_no_byte_of_a_calls_inputs_reaches_the_submission_before_go() -> None:
    """Issue 37, class 1: a process that watched the evaluator copy a call's inputs into the long-lived input arena
    computed the answer before "go". Each call's inputs now lie in a memfd of their own, handed over with "go"."""
    window, peer, hostile, arenas = _pair(calls=3)
    for k in range(1, 4):
        data = _inputs(k)
        placement = place(torch, data, arenas, cuda="dev_in", host="host_in")
        out = window.call(peer, k, [placement], timed=True, enqueue_timeout=0.0, deadline=time.monotonic() + 30)
        assert out.error is None and out.outputs is not None
        assert torch.equal(out.outputs[0], data[0] + data[1])  # the inputs did arrive, with "go"
    hostile.join(10)
    assert hostile.error is None, hostile.error
    assert hostile.before_go == []
    assert len(set(hostile.inodes)) == 3  # a memfd of its own for every call: none the process held before
    for kept in hostile.kept:  # a mapping it kept holds none of the evaluator's memory: the pages were freed
        assert not bool(kept.span(torch, 0, kept.size).any())


def test_the_cpu_window_allows_nothing_for_a_copy_it_did_not_see() -> None:
    """Issue 37, class 2: the window allowed for the submission process's copy of its output into shared memory,
    so a process that wrote its answer there directly was paid for a copy it never made (0.40x the time of the
    same kernel). No allowance now: a reading forged to 1 ns counts the whole window less the calibrated
    overhead."""
    window, peer, hostile, arenas = _pair(calls=1)
    placement = place(torch, _inputs(7), arenas, cuda="dev_in", host="host_in")
    out = window.call(peer, 1, [placement], timed=True, enqueue_timeout=0.0, deadline=time.monotonic() + 30)
    hostile.join(10)
    assert hostile.error is None, hostile.error
    assert out.error is None and out.reading_ns == 1.0
    assert out.allowance_ns == 0.0
    overhead = 0.25 * out.window_ns
    sample = sample_of(out.reading_ns, out.window_ns, overhead, 0.0, out.allowance_ns, out.degraded)
    assert sample.ns == pytest.approx(out.window_ns - overhead)



def test_no_rank_of_several_reads_its_shard_before_go(tmp_path: Path) -> None:
    """Issue 37, class 1 across ranks: allreduce's ranks watched their shards arrive in the long-lived input arena and
    summed them through /dev/shm before the window (0.45x on the 256 MiB case). Each rank's shard comes with its
    "go" now, as on one rank. (Before the fix this printed FOUND on every timed call.)"""
    source = (CHEATS_RANKS / "watch_input_copy.py").read_text()
    path = tmp_path / "submission.py"
    path.write_text(source)
    request = load_problem(ALLREDUCE).request(path.name, path.read_bytes(), Mode.RANKED, device="cpu", seed=4242)
    timing = TimingSettings(min_samples=5, max_samples=8, max_time_s=0.3, warmup_ms=5, warmup_min_calls=2)
    request = request.model_copy(update={"benchmarks": [{"size": 65536, "seed": 9}], "timing": timing})
    result = run_request(request, settings=RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True))
    assert result.verdict is Verdict.ACCEPTED, result.message + result.stderr[-2000:]
    assert result.system.world_size == 2
    assert "FOUND" not in result.stdout, result.stdout[-2000:]
