"""One call of ``custom_kernel`` seen from the trusted evaluator: inputs in, a window on the evaluator's own clock
around the submission's work, the output snapshot taken where the window closes.

On CUDA (docs/measurement.md has the numbers):

1. The submission process has already queued ``wait go >= k -> custom_kernel -> done = k`` on its stream (its
   host work is out of the way) and told us where the output will be.
2. On our stream, back to back with no host in between: copy the call's inputs from our private memory into the
   shared input arena, read our private 2x-L2 buffer (cold L2, and the inputs are not in L2 either), reset
   ``done``, record ``t0``, write ``go = k``, wait for ``done >= k``, record ``t1``, and copy the output's bytes
   into private memory (the snapshot the check reads).

The two processes are different CUDA contexts, which the GPU time-slices: our stream's work runs without the
submission's in between, the submission's kernels run only after ``go`` (its inputs did not exist before), and
``t1`` is recorded only when our context runs again, after the submission's work is finished (or the output we
snapshot is incomplete, which the check catches). So ``t1 - t0`` is an upper bound on the submission's GPU time
that the submission cannot make smaller; it includes a context switch each way, which the evaluator calibrates
with a process of its own running a known kernel through the same protocol (:func:`calibrate`).

On the CPU the window is our clock from sending "go" to receiving "done"; the output is copied out of shared memory
at once. Each call's inputs are written into a memfd made for that call alone, handed to the submission process with
"go" (:class:`CpuWindow`): before the window opens it holds no byte of them, so no work on them can precede it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runners.ipc.arena import Arena, ArenaError, Placement, place, release, span_elements
from runners.ipc.protocol import (
    ArenaSpec,
    Call,
    CallError,
    Check,
    Checked,
    Done,
    Enqueued,
    Fetch,
    Go,
    Mapping,
    Prepared,
    Scalar,
    Seq,
    TensorRef,
)
from runners.ipc.protocol import Value as ValueTree
from runners.ipc.wiring import CALL_ARENA, DONE_OFFSET, GO_OFFSET
from runners.oracle.peer import Peer, PeerFailed


@dataclass
class CallOutcome:
    outputs: list[Any] | None = None
    """Each call's output as private tensors (the snapshot), or None when the call failed."""
    error: CallError | None = None
    window_ns: float = 0.0
    """The trusted window around the call (our clock), overhead included."""
    degraded: bool = False
    """The submission did not queue its call in time (it synchronised inside custom_kernel): its host time counts."""
    allowance_ns: float = 0.0
    """Time inside the window that is ours, not the submission's: none today. (The CPU allowed for the submission
    process's copy of its output into shared memory until issue 37: a copy the trusted side never sees happen, which
    a submission that wrote its answer there directly was paid for all the same.)"""
    reading_ns: float | None = None
    """The submission process's own reading of the call (CPU: with the answer; CUDA: fetched on demand)."""


@dataclass(frozen=True)
class Calibration:
    """What the trusted window costs on this machine, measured with the evaluator's own echo process."""

    overhead_ns: float
    """Upper bound on window minus the submission's own reading for honest work (context switches, protocol)."""
    event_ns: float
    """What an empty pair of the submission's CUDA events reads (taken off every sample, as Nsight Compute's
    kernel duration does not include it); 0 on the CPU."""
    slack_ns: float
    """How much less than ``overhead_ns`` the window added to the echo's fastest honest work: the most a reading
    that was rewritten could hide in one window, so batches are sized to make it small per call."""
    detail: str = ""
    typical_ns: float = 0.0
    """GPU: the most the window typically added to the echo's honest work (the largest median over its spin
    lengths); a case whose median excess is beyond this plus ``CASE_TOLERANCE_NS`` is bounded as a whole
    (``timing.tighten_case``). 0: unknown (the CPU, an old calibration)."""
    min_call_ns: float = 0.0
    """GPU: the least a call that launches any kernel can read, with margin (``KERNEL_FLOOR_SHARE`` of the echo's
    trivial kernel, less the event pair); no sample counts less. 0: unknown."""


def snapshot(torch: Any, value: ValueTree, arenas: dict[str, Arena], named: dict[str, int] | None = None,
             *, copy: bool = True) -> Any:  # fmt: skip
    """Private copies of the tensors ``value`` names (for CUDA arenas, copies queued on our stream). ``named``
    counts the bytes each arena gives (over every output of a batch): never more than the arena holds, however
    often an output names the same bytes. ``copy=False`` only checks (the bounds, strides, depth and those counts)."""
    named = {} if named is None else named

    def walk(v: ValueTree, depth: int = 0) -> Any:
        if depth > MAX_OUTPUT_DEPTH:
            raise ArenaError(f"the output nests tuples, lists or dicts more than {MAX_OUTPUT_DEPTH} deep")
        if isinstance(v, TensorRef):
            arena = arenas.get(v.arena)
            if arena is None:
                raise ArenaError(f"the output names an unknown arena {v.arena!r}")
            if arena.kind == "host" and arena.name not in ("host_out", CALL_ARENA):
                # A CPU output lies in host_out or in the call's own input arena (an ``out`` it was given), both no
                # larger than the call needs; naming the large sparse input arena only makes us read (and keep) its
                # untouched pages (red team, 2026-11-25).
                raise ArenaError(f"the output names the {arena.name} arena; return a tensor of your own")
            view = arena.view(torch, v)  # checks bounds and alignment
            if view.numel() == 0:
                return view.clone()
            itemsize = view.element_size()
            span = (1 + sum((s - 1) * st for s, st in zip(v.shape, v.stride, strict=True))) * itemsize
            dense = view.numel() * itemsize
            if view.numel() > MAX_OUTPUT_ELEMENTS or span > 2 * dense + SPREAD_SLACK:
                # Copying a thinly spread output takes as long as its span (the submission's choice): time in which
                # it could still be writing the output, after its window closed (red team, 2026-11-24).
                raise ArenaError(f"the output's strides spread its {view.numel():,} elements over {span:,} bytes; "
                                 "return a dense tensor (.contiguous())")  # fmt: skip
            _count(named, arena, span)
            if not copy:
                return None
            raw = arena.span(torch, v.offset, span)
            # A copy queued on our stream, behind the window's wait for "done". Nothing here may make this thread wait
            # for that stream (measured on the H100: ``torch.bitwise_or(raw, 0)`` does, ``clone`` does not); if the
            # submission's kernel faulted, "done" never comes and only ``GpuWindow._wait``'s check would end the call.
            return raw.clone().view(view.dtype).as_strided(v.shape, v.stride)
        if isinstance(v, Scalar):
            return v.v
        if isinstance(v, Seq):
            items = [walk(x, depth + 1) for x in v.items]
            return tuple(items) if v.t == "tuple" else items
        if isinstance(v, Mapping):
            return {k: walk(x, depth + 1) for k, x in v.items.items()}
        raise ArenaError("the output is not a value")  # pragma: no cover - the union is closed

    return walk(value)


def _count(named: dict[str, int], arena: Arena, span: int) -> None:
    """Count ``span`` bytes copied out of ``arena``; refuse more than it holds, or than the host arenas may give.

    Copies of one span named again and again would fill the evaluator's memory (red team, 2026-11-24: six references
    to a 3 GiB span of the sparse host output arena stopped the evaluator for memory, an infrastructure error)."""
    named[arena.name] = named.get(arena.name, 0) + span
    if arena.kind == "host":
        named[HOST] = named.get(HOST, 0) + span
    if named[arena.name] > arena.size or named.get(HOST, 0) > MAX_HOST_OUTPUT_BYTES:
        raise ArenaError(
            f"the outputs name {named[arena.name]:,} bytes of the {arena.name} arena ({named.get(HOST, 0):,} of host "
            f"memory in all); at most {arena.size:,} per arena and {MAX_HOST_OUTPUT_BYTES:,} of host memory: return "
            "each output once, in memory of its own"
        )


HOST = "<host arenas>"
MAX_HOST_OUTPUT_BYTES = 4 << 30
"""Bytes the outputs of one batch may name in the host arenas together: their private copies must fit the
evaluator's memory (at least 16 GiB) beside its own inputs, and a CPU run's output is far smaller."""
MAX_OUTPUT_DEPTH = 8
"""How deep an output may nest tuples, lists and dicts: as deep as the submission process's own ``describe`` lets an
honest output be (the problem's check walks it recursively; a deeper one is no answer)."""
MAX_OUTPUT_ELEMENTS = 1 << 36
"""Elements an output tensor may name (a stride-0 output can name far more than its memory holds)."""
SPREAD_SLACK = 1 << 20
"""Bytes an output's span may exceed twice its elements' size by (a slice of a padded buffer is honest)."""
_UNREADABLE = (ArenaError, RuntimeError, TypeError, ValueError, OverflowError)
"""What reading a submission's output reference can raise: every one is a bad output, the submission's."""


def snapshots(torch: Any, values: list[ValueTree], expected: int, arenas: dict[str, Arena]) -> list[Any]:
    """Private copies of a batch's outputs (``expected`` of them), every one checked before anything is copied."""
    if len(values) != expected:
        raise ArenaError(f"{len(values)} outputs came back for {expected} calls")
    named: dict[str, int] = {}
    for v in values:  # every output checked before anything is copied: a refused batch costs no memory
        snapshot(torch, v, arenas, named, copy=False)
    return [snapshot(torch, v, arenas) for v in values]


class GpuWindow:
    """Calls through one submission-protocol peer on CUDA: its control words live in ``arenas[ctrl]``."""

    before_inputs: Callable[[], None] | None = None
    """Run just before the call's inputs are copied, which the window's opening follows uninterrupted (a run of
    several ranks: their barrier, and a hold on the stream until every rank has queued its window, docs/multigpu.md)."""
    after_enqueue: Callable[[], None] | None = None
    """Run once the window is queued on our stream, up to its close (a run of several ranks: the hold's release),
    also when queueing it failed, so that our stream is never left held."""

    def __init__(self, torch: Any, driver: Any, arenas: dict[str, Arena], ctrl: str, flush_buffer: Any) -> None:
        self.torch = torch
        self.driver = driver
        self.arenas = arenas
        self.ctrl = arenas[ctrl]
        self.flush_buffer = flush_buffer
        self.spare = torch.cuda.Stream()  # to unblock our own stream if the submission never says "done"

    def _stream(self) -> int:
        return int(self.torch.cuda.current_stream().cuda_stream)

    def call(
        self, peer: Peer, k: int, batch: list[Placement], *, timed: bool, enqueue_timeout: float, deadline: float
    ) -> CallOutcome:
        torch = self.torch
        peer.send(Call(k=k, data=[p.value for p in batch], timed=timed))
        reply = peer.poll(Enqueued, enqueue_timeout, k)
        if reply is not None and reply.error is not None:
            return CallOutcome(error=reply.error)
        go, done = self.ctrl.base + GO_OFFSET, self.ctrl.base + DONE_OFFSET
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        stream = self._stream()
        if self.before_inputs is not None:
            self.before_inputs()
        try:
            for placement in batch:
                for dst, src in placement.copies:
                    dst.copy_(src, non_blocking=True)
            if timed:
                self.flush_buffer.sum(dtype=torch.int32)
            self.driver.write_value(stream, done, 0)  # only a "done" written after this point counts
            ev[0].record()
            self.driver.write_value(stream, go, k)
            self.driver.wait_value(stream, done, k)
            ev[1].record()
        finally:
            if self.after_enqueue is not None:
                self.after_enqueue()
        degraded = reply is None
        if reply is None:
            reply = peer.poll(Enqueued, max(deadline - time.monotonic(), 0.0), k)
            if reply is None:
                self._unblock(k)
                raise PeerFailed("timeout", f"custom_kernel did not return within the time limit (call {k})")
            if reply.error is not None:  # its context may be broken and never say "done": release our stream
                self._unblock(k)
                return CallOutcome(error=reply.error)
            ev[1] = torch.cuda.Event(enable_timing=True)
            ev[1].record()  # the window closes when we can snapshot: the submission's host time counts
        try:
            outputs = snapshots(torch, reply.outputs, len(batch), self.arenas)
        except _UNREADABLE as exc:
            self._unblock(k)
            return CallOutcome(error=CallError(kind="bad_output", message=f"the output could not be read: {exc}"))
        ev[2].record()
        fault = self._wait(ev[2], deadline, k, peer)
        if fault is not None:
            return CallOutcome(error=fault)
        return CallOutcome(outputs=outputs, window_ns=ev[0].elapsed_time(ev[1]) * 1e6, degraded=degraded)

    def reading(self, peer: Peer, k: int, timeout: float) -> float:
        peer.send(Fetch(k=k))
        from runners.ipc.protocol import Times

        return float(peer.expect(Times, timeout, k).r_ns)

    CHECK_AFTER_S = 1.0
    """How long the GPU work of a call may keep us waiting before the submission process is asked, every that long,
    whether its context has failed (a kernel that faulted without the submission synchronising: the "done" behind
    it never comes, and the run would otherwise wait out its whole time limit and be called too slow)."""

    def _wait(self, event: Any, deadline: float, k: int, peer: Peer | None = None) -> CallError | None:
        """Until ``event`` (after the window and the snapshot) completes; the submission's GPU failure if it
        reports one meanwhile (our stream is then released: the error is the call's outcome)."""
        polls = 0
        next_check = time.monotonic() + self.CHECK_AFTER_S
        while not event.query():
            polls += 1
            if polls > 5000:
                now = time.monotonic()
                if now > deadline:
                    self._unblock(k)
                    raise PeerFailed("timeout", f"the submission's GPU work did not finish in time (call {k})")
                if peer is not None and now >= next_check:
                    peer.send(Check(k=k))
                    answer = peer.poll(Checked, max(deadline - now, 0.0), k)
                    if answer is None:
                        self._unblock(k)
                        raise PeerFailed("timeout", f"the submission's GPU work did not finish in time (call {k})")
                    if answer.error is not None:  # its context is broken: "done" will never come
                        self._unblock(k)
                        return answer.error
                    next_check = time.monotonic() + self.CHECK_AFTER_S
                time.sleep(0.0002)
        return None

    def _unblock(self, k: int) -> None:
        """Release our stream's wait for ``done`` ourselves (the submission never wrote it)."""
        self.driver.write_value(int(self.spare.cuda_stream), self.ctrl.base + DONE_OFFSET, k)
        self.spare.synchronize()


class CpuWindow:
    """Calls on the CPU: our clock from "go" to "done"; the output copied out of shared memory at once.

    Each call's inputs go into a memfd of their own (:meth:`_fresh`), written before "call" is sent and handed over
    with "go": the submission process holds no byte of them before its window opens, so it cannot compute on them
    beforehand (project issue 37: a thread that watched the evaluator copy the inputs into the long-lived input arena
    computed the answer behind the copy, before "go", and scored a fraction of honest time). Mapping them is inside
    the window, as it is in the calibration echo's. After the call the memfd's pages are freed (a hole punched) and
    its descriptor closed: a mapping the submission keeps holds none of our memory."""

    before_inputs: Callable[[], None] | None = None
    """Run just before "go" (a run of several ranks: their barrier)."""

    def __init__(self, torch: Any, arenas: dict[str, Arena]) -> None:
        self.torch = torch
        self.arenas = arenas

    def call(
        self, peer: Peer, k: int, batch: list[Placement], *, timed: bool, enqueue_timeout: float, deadline: float
    ) -> CallOutcome:
        arena, values = self._fresh(batch)
        try:
            return self._call(peer, k, arena, values, timed, deadline)
        finally:
            self.arenas.pop(CALL_ARENA, None)
            release(arena)

    def _fresh(self, batch: list[Placement]) -> tuple[Arena, list[ValueTree]]:
        """The batch's inputs, laid out in the long-lived host input arena (``place``), written instead into a new
        memfd of the same layout, and the value trees naming it."""
        torch = self.torch
        host = self.arenas["host_in"]
        arena = Arena.create(torch, CALL_ARENA, "host", max(host.used, 1))
        self.arenas[CALL_ARENA] = arena
        try:
            for placement in batch:
                for dst, src in placement.copies:
                    if dst.numel() == 0:
                        continue
                    offset = dst.data_ptr() - host.base
                    nbytes = span_elements(list(dst.shape), list(dst.stride())) * dst.element_size()
                    view = arena.span(torch, offset, nbytes).view(dst.dtype).as_strided(dst.shape, dst.stride())
                    view.copy_(src)
            return arena, [_rename(p.value, host.name, CALL_ARENA) for p in batch]
        except BaseException:  # the memfd is freed however the copy failed (it would outlive the call otherwise)
            self.arenas.pop(CALL_ARENA, None)
            release(arena)
            raise

    def _call(self, peer: Peer, k: int, arena: Arena, values: list[ValueTree], timed: bool,
              deadline: float) -> CallOutcome:  # fmt: skip
        peer.send(Call(k=k, data=values, timed=timed))
        peer.expect(Prepared, max(deadline - time.monotonic(), 0.0), k)
        if self.before_inputs is not None:
            self.before_inputs()
        peer.quiet(k)  # an answer already waiting was made before "go": refused
        spec = ArenaSpec(name=CALL_ARENA, kind="host", size=arena.size)
        t0 = time.perf_counter_ns()
        peer.send(Go(k=k, arena=spec), [arena.fd])
        done = peer.poll(Done, max(deadline - time.monotonic(), 0.0), k)
        t1 = time.perf_counter_ns()
        if done is None:
            raise PeerFailed("timeout", f"custom_kernel did not return within the time limit (call {k})")
        if done.error is not None:
            return CallOutcome(error=done.error)
        try:
            outputs = snapshots(self.torch, done.outputs, len(values), self.arenas)
        except _UNREADABLE as exc:
            return CallOutcome(error=CallError(kind="bad_output", message=f"the output could not be read: {exc}"))
        # No allowance: everything inside the window (mapping the inputs, the call, a copy of the output into shared
        # memory where it was made elsewhere) is the submission process's, and we see none of it happen. Allowing
        # for an output copy paid a submission that wrote its answer into shared memory directly for a copy it never
        # made (project issue 37: 0.40x the time of the same kernel).
        return CallOutcome(outputs=outputs, window_ns=float(t1 - t0), reading_ns=float(done.r_ns))

    def reading(self, peer: Peer, k: int, timeout: float) -> float:  # pragma: no cover - CPU readings come with Done
        raise NotImplementedError


def _rename(value: ValueTree, old: str, new: str) -> ValueTree:
    """``value`` with every tensor reference to arena ``old`` naming ``new`` instead (same offsets)."""
    if isinstance(value, TensorRef):
        return value.model_copy(update={"arena": new}) if value.arena == old else value
    if isinstance(value, Seq):
        return Seq(t=value.t, items=[_rename(x, old, new) for x in value.items])
    if isinstance(value, Mapping):
        return Mapping(items={key: _rename(x, old, new) for key, x in value.items.items()})
    return value


Window = GpuWindow | CpuWindow


TRIVIAL = -1.0
"""The calibration's key for a trivial kernel (a spin of one cycle)."""
KERNEL_FLOOR_SHARE = 0.75
"""No sample counts less than this share of what the echo's trivial kernel reads (its 10th percentile, less the
event pair). Below the GPU window's resolution (a few µs) a rewritten reading is otherwise bounded by the
speed-of-light gate alone, whose floor for µs-scale work is nanoseconds (red team, 2026-11-25: a 2 µs kernel
reported as 0.3 µs was accepted at a sixth of its time)."""


def calibrate(torch: Any, window: Window, peer: Peer, arenas: dict[str, Arena], deadline: float) -> Calibration:
    """Run a known kernel through ``window`` in the evaluator's echo process: what an empty event pair reads, and
    an upper bound on what the window adds to honest work of several lengths."""
    cuda = isinstance(window, GpuWindow)
    probe = torch.zeros(16, device="cuda" if cuda else "cpu")
    rate = _sleep_cycles_per_ns(torch) if cuda else 1.0
    # GPU: also a trivial kernel (one cycle's spin), the least any call that launches a kernel can read.
    lengths_ns = [0.0, TRIVIAL, 3_000.0, 12_000.0, 50_000.0, 200_000.0] if cuda else [0.0, 50_000.0, 500_000.0]
    readings: dict[float, list[tuple[float, float]]] = {n: [] for n in lengths_ns}
    k = 0
    for rnd in range(10):
        for ns in lengths_ns:
            k += 1
            cycles = 1 if ns == TRIVIAL else int(ns * rate)
            placement = place(torch, (cycles, probe), arenas, cuda="dev_in", host="host_in")
            # The warm-up rounds start the echo's stream at once ("go" without waiting for "enqueued"): the first
            # launch of a kernel loads its module lazily, which waits for the whole context, including a stream
            # that waits for our "go" (seen on the H100: the first round sat out the whole 5 s enqueue timeout).
            wait = 5.0 if rnd >= 2 else 0.0
            out = window.call(peer, k, [placement], timed=True, enqueue_timeout=wait, deadline=deadline)
            if out.error is not None:
                raise RuntimeError(f"the calibration echo failed: {out.error.message}")
            r = out.reading_ns if out.reading_ns is not None else window.reading(peer, k, 10.0)
            if rnd >= 2:  # the first rounds warm up both contexts
                readings[ns].append((out.window_ns - out.allowance_ns, r))
    empty = [r for _, r in readings[0.0]]
    event_ns = statistics.median(empty) if cuda else 0.0
    overs = {ns: sorted(u - r for u, r in readings[ns]) for ns in lengths_ns[1:]}
    typical = [statistics.median(over) for over in overs.values()]
    names = {ns: "trivial" if ns == TRIVIAL else f"{int(ns / 1000)} µs" for ns in overs}
    detail = ", ".join(
        f"{names[ns]}: window - reading {statistics.median(over) / 1000:.1f} µs" for ns, over in overs.items()
    )
    if cuda:
        # On a GPU the window's cost is steady (context switches): the 90th percentile bounds it. What the echo's
        # spin kernels miss: real kernels' context switches measured up to ~3 µs more on the lent H100
        # (docs/measurement.md), and the bound must not inflate honest work.
        bounds = [over[min(len(over) - 1, int(0.9 * len(over)))] for over in overs.values()]
        overhead = max(bounds) + 5_000.0
        trivial = sorted(r for _, r in readings[TRIVIAL])
        min_call = KERNEL_FLOOR_SHARE * max(0.0, trivial[len(trivial) // 10] - event_ns)
        detail += f"; a trivial kernel reads {statistics.median(trivial) / 1000:.2f} µs"
        return Calibration(overhead_ns=overhead, event_ns=event_ns, slack_ns=overhead - min(typical), detail=detail,
                           typical_ns=max(typical), min_call_ns=min_call)  # fmt: skip
    # On the CPU the window's cost is scheduling noise on a shared machine, which a reading rewritten to zero would
    # hide inside if the bound were a typical cost (seen in CI: 390 µs of noise around 50 µs of work). So the bound
    # is the floor, the least the protocol ever cost the echo: noise then counts against the submission (its
    # samples read a little slow on a busy machine) and never gives a forged reading room. The slack is the
    # typical noise above the floor, which batches are sized to spread thin.
    floor = max(0.0, min(over[0] for over in overs.values()))
    return Calibration(overhead_ns=floor, event_ns=0.0, slack_ns=max(0.0, min(typical) - floor), detail=detail)


def _sleep_cycles_per_ns(torch: Any) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for _ in range(3):
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        end.synchronize()
        rates.append(1_000_000 / (start.elapsed_time(end) * 1e6))
    return max(rates[1:])
