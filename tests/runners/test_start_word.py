"""The ranks of a run on GPUs start their windows on one shared word (docs/multigpu.md): the order of the window's
steps around the hold and its release, and the word itself, with fakes for the GPU (the real path is proven by
benchmarks/multigpu_proof.py on a machine with two GPUs)."""

from __future__ import annotations

import mmap
import os
from types import SimpleNamespace
from typing import Any

import pytest

from runners.ipc.cuda import HostWord
from runners.ipc.protocol import Enqueued, Scalar
from runners.oracle.ranks import RankEvaluator
from runners.oracle.window import GpuWindow


class FakeDriver:
    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def wait_value(self, stream: int, ptr: int, value: int) -> None:
        self.log.append(("wait", ptr, value))

    def write_value(self, stream: int, ptr: int, value: int) -> None:
        self.log.append(("write", ptr, value))

    def host_register(self, ptr: int, size: int) -> int:
        self.log.append(("register", size))
        return ptr


class FakeEvent:
    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def record(self) -> None:
        self.log.append(("event",))

    def query(self) -> bool:
        return True

    def elapsed_time(self, other: FakeEvent) -> float:
        return 0.001


def fake_torch(log: list[Any]) -> Any:
    stream = SimpleNamespace(cuda_stream=7, synchronize=lambda: log.append(("sync",)))
    cuda = SimpleNamespace(
        Stream=lambda: stream,
        Event=lambda enable_timing=True: FakeEvent(log),
        current_stream=lambda: stream,
    )
    return SimpleNamespace(cuda=cuda, int32="int32")


class FakePeer:
    def send(self, msg: Any) -> None:
        pass

    def poll(self, kind: Any, timeout: float, k: int) -> Enqueued:
        return Enqueued(k=k, outputs=[Scalar(v=1)])


class Copy:
    def __init__(self, log: list[Any], fail: bool = False) -> None:
        self.log, self.fail = log, fail

    def copy_(self, src: Any, non_blocking: bool = False) -> None:
        if self.fail:
            raise RuntimeError("copy failed")
        self.log.append(("copy",))


def window(log: list[Any]) -> GpuWindow:
    flush = SimpleNamespace(sum=lambda dtype: log.append(("flush",)))
    return GpuWindow(fake_torch(log), FakeDriver(log), {"ctrl": SimpleNamespace(base=1000)}, "ctrl", flush)


def test_the_window_is_queued_whole_between_the_hold_and_its_release() -> None:
    log: list[Any] = []
    w = window(log)
    w.before_inputs = lambda: log.append(("hold",))
    w.after_enqueue = lambda: log.append(("release",))
    placement = SimpleNamespace(value=Scalar(v=0), copies=[(Copy(log), None)])
    out = w.call(FakePeer(), 3, [placement], timed=True, enqueue_timeout=1.0, deadline=1e18)  # type: ignore[arg-type]
    assert out.error is None
    steps = [entry[0] for entry in log]
    # the hold, then everything up to the window's close queued, then the release; the snapshot's event after it
    assert steps[: steps.index("release") + 1] == ["hold", "copy", "flush", "write", "event", "write", "wait",
                                                   "event", "release"]  # fmt: skip


def test_a_failure_while_queueing_still_releases_the_hold() -> None:
    log: list[Any] = []
    w = window(log)
    w.before_inputs = lambda: log.append(("hold",))
    w.after_enqueue = lambda: log.append(("release",))
    placement = SimpleNamespace(value=Scalar(v=0), copies=[(Copy(log, fail=True), None)])
    with pytest.raises(RuntimeError, match="copy failed"):
        w.call(FakePeer(), 1, [placement], timed=True, enqueue_timeout=1.0, deadline=1e18)  # type: ignore[arg-type]
    assert [entry[0] for entry in log] == ["hold", "release"]


def test_the_start_word_is_one_word_that_every_mapping_of_the_memfd_sees() -> None:
    fd = os.memfd_create("kernelcup-test-word", 0)
    try:
        os.ftruncate(fd, mmap.PAGESIZE)
        log: list[Any] = []
        word = HostWord(FakeDriver(log), fd)  # type: ignore[arg-type]
        assert log == [("register", mmap.PAGESIZE)]
        other = mmap.mmap(fd, mmap.PAGESIZE)  # another evaluator's mapping
        word.set(5)
        assert int.from_bytes(other[:4], "little") == 5
        word.set(2**32 + 6)  # the counter wraps as the GPU's comparison does
        assert int.from_bytes(other[:4], "little") == 6
        other.close()
    finally:
        os.close(fd)


class FakeGroup:
    def __init__(self, log: list[Any], fail: bool = False) -> None:
        self.log, self.fail = log, fail

    def barrier(self) -> None:
        self.log.append(("barrier",))
        if self.fail:
            raise RuntimeError("a peer stopped")


class FakeWord:
    device_ptr = 4096

    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def set(self, value: int) -> None:
        self.log.append(("set", value))


def rank_evaluator(log: list[Any], fail: bool = False) -> RankEvaluator:
    ev = RankEvaluator.__new__(RankEvaluator)
    ev.cuda = True
    ev.torch = fake_torch(log)
    ev.driver = FakeDriver(log)
    ev.group = FakeGroup(log, fail)  # type: ignore[assignment]
    ev.gate = FakeWord(log)  # type: ignore[assignment]
    ev._gate_n = 0
    return ev


def test_each_call_holds_on_a_new_count_after_the_barrier_and_opens_it_after_a_second() -> None:
    log: list[Any] = []
    ev = rank_evaluator(log)
    for _ in range(2):
        ev._barrier()
        ev._release()
    assert log == [("sync",), ("barrier",), ("wait", 4096, 1), ("barrier",), ("set", 1),
                   ("sync",), ("barrier",), ("wait", 4096, 2), ("barrier",), ("set", 2)]  # fmt: skip


def test_a_failed_barrier_still_opens_our_own_hold() -> None:
    log: list[Any] = []
    ev = rank_evaluator(log)
    ev._barrier()
    ev.group = FakeGroup(log, fail=True)  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="a peer stopped"):
        ev._release()
    assert log[-2:] == [("barrier",), ("set", 1)]
