"""One evaluator of a run of several ranks (docs/multigpu.md): the one-GPU evaluator, agreeing with its peers.

Each rank's evaluator owns its GPU and its rank's submission process and does for them what the one-GPU evaluator
does. Over the group channel (``runners.oracle.group``) the evaluators meet at a barrier before every call, count the
slowest rank's sample of every timed batch, stop and size batches on values they all share, and combine their
checks, so every rank makes the same calls and the run's verdict is every rank's. Rank 0 reports to the entry;
another rank's failure reaches it as an abort and is reported as the run's.

A multi-rank problem's reference: ``generate_input(rank, world_size, **case)`` (one rank's data),
``ref_kernel(inputs)`` (every rank's output from every rank's data) and ``check_implementation(inputs, rank,
output)``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from runners.contract import Verdict
from runners.ipc.cuda import CudaError, HostWord
from runners.ipc.protocol import Job, RDone, RFatal, RTest
from runners.oracle.base import Fatal, Reporter, case_text, clone, since, trace
from runners.oracle.checking import clean_message, input_sample, normalise_check, speed_of_light_of
from runners.oracle.evaluate import Evaluator, evaluate
from runners.oracle.group import GATE_FD_ENV, Group
from runners.oracle.peer import Peer
from runners.oracle.timing import Sample
from runners.oracle.window import GpuWindow

_REMEMBERED = 1024
"""Inputs whose case is kept for their check (a batch holds at most 256 calls)."""


class RankReporter(Reporter):
    """Rank 0's report, written from its main thread or from the group's reader (a peer's abort): one line at a
    time, one fatal at most (the first failure is the run's), nothing after done. Its fatal also stops the peers."""

    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self.lock = threading.Lock()
        self.group: Group | None = None
        self.fatal = False
        self.done = False

    def send(self, report: Any, *, own: bool = True) -> None:
        """``own``: rank 0's own report (its failures are named "rank 0", but for a wrong answer, whose combined
        check names the rank); else a peer's failure, named by its rank."""
        if own and isinstance(report, RFatal) and report.verdict is not Verdict.WRONG_ANSWER:
            report = report.model_copy(update={"message": f"rank 0: {report.message}"})
        with self.lock:
            if self.done or (isinstance(report, RFatal) and self.fatal):
                return
            if isinstance(report, RFatal):
                self.fatal = True
                if self.group is not None:
                    self.group.abort(report.model_dump(mode="json"))
            super().send(report)
            self.done = isinstance(report, RDone)


class PeerReporter(Reporter):
    """A rank above 0 reports nothing to the entry: its failure goes to rank 0 as an abort, naming the rank."""

    def __init__(self, rank: int, group: Group) -> None:
        super().__init__(-1)
        self.rank = rank
        self.group = group

    def send(self, report: Any) -> None:
        if isinstance(report, RFatal):
            fatal = report.model_dump(mode="json")
            fatal["message"] = f"rank {self.rank}: {fatal['message']}"
            self.group.abort(fatal)


class RankEvaluator(Evaluator):
    def __init__(self, job: Job, report: Reporter, peer: Peer | None, workdir: Path, group: Group | None) -> None:
        super().__init__(job, report, peer, workdir)
        self.group = group
        self.rank, self.world_size = job.rank, job.world_size
        self.gate: HostWord | None = None
        self._gate_n = 0
        self._cases: OrderedDict[int, dict[str, Any]] = OrderedDict()
        """The case of each input this evaluator made, by the input's id: every input is made by ``generate``, which
        writes its id's entry, so an entry read for a live input is its own (the inputs themselves are not held:
        the public input of a large case would stay on the GPU)."""

    def setup(self) -> None:
        super().setup()
        if callable(self.speed_of_light):  # a multi-rank problem's bound of one rank's work depends on the world size
            self.speed_of_light = partial(self.speed_of_light, world_size=self.world_size)

    def _group(self) -> Group:
        assert self.group is not None, "a run of several ranks without its group channel"
        return self.group

    # ---- inputs: this rank's shard, and every rank's for the check --------------------------------------------
    def generate(self, case: dict[str, Any]) -> Any:
        data = self._generate(case, self.rank)
        self._cases.pop(id(data), None)
        self._cases[id(data)] = case
        while len(self._cases) > _REMEMBERED:
            self._cases.popitem(last=False)
        return data

    def _generate(self, case: dict[str, Any], rank: int) -> Any:
        try:
            return self.generate_input(rank=rank, world_size=self.world_size, **case)
        except BaseException as exc:
            self._problem_or_memory(exc, f"generate_input(rank={rank}, world_size={self.world_size}, "
                                    f"{case_text(case)})")  # fmt: skip
            raise  # pragma: no cover - _problem_or_memory raises

    def all_inputs(self, case: dict[str, Any]) -> list[Any]:
        """Every rank's data of ``case``, made afresh (the seed makes them the shards the ranks were given)."""
        return [self._generate(case, r) for r in range(self.world_size)]

    # ---- checks: every rank's, combined -----------------------------------------------------------------------
    def check_output(self, data: Any, output: Any) -> tuple[bool, str]:
        case = self._cases.get(id(data))
        if case is None:
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, "the evaluator lost the case of an input it checks", "runner")
        ok, message = self._check_rank(self.all_inputs(case), output)
        results = self._group().exchange([ok, message])
        for rank, (rank_ok, rank_message) in enumerate(results):
            if not rank_ok:
                return False, f"rank {rank}: {rank_message}"
        return True, str(results[0][1])

    def _check_rank(self, inputs: list[Any], output: Any) -> tuple[bool, str]:
        """The problem's check of this rank's output; a check that raises is the submission's fault only if it
        reads the reference's own output for this rank without raising (as on one GPU)."""
        try:
            return normalise_check(self.check(inputs, self.rank, output))
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
        try:
            if self.ref_kernel is None:
                raise RuntimeError("the problem has no ref_kernel")
            normalise_check(self.check(inputs, self.rank, self.ref_kernel(clone(self.torch, inputs))[self.rank]))
        except BaseException as exc:
            self._problem_or_memory(exc, "check_implementation (it fails on the reference's own output too)")
        return False, f"the problem's check could not read the output: {clean_message(error, 500)}"

    # ---- calls and timing: a barrier before each window; values every rank shares ---------------------------
    def start(self) -> None:
        super().start()
        assert self.window is not None
        self.window.before_inputs = self._barrier
        if isinstance(self.window, GpuWindow):
            self.gate = self._open_gate()
            if self.gate is not None:
                self.window.after_enqueue = self._release

    def before_load(self) -> None:
        """Every rank's submission process is up before any rank's file loads: a file that, at import, killed the
        other ranks' processes made their start (before their load, so the runner's fault) fail: an infrastructure
        error, retried, after a 300 s wait (red team, 2026-11-24). After the barrier each rank loads at once, and
        what any submission process does from there is the submission's doing."""
        self._group().barrier()

    def _open_gate(self) -> HostWord | None:
        """The word every rank's stream waits on before its window (the entry's memfd), or None where this driver
        cannot map it for the GPU (the ranks then start on the host barrier alone, tens of µs apart)."""
        fd = os.environ.pop(GATE_FD_ENV, "")
        if not fd:
            return None
        try:
            return HostWord(self.driver, int(fd))
        except (CudaError, OSError, ValueError) as exc:
            self.progress("starting", f"the ranks start on a host barrier only (no shared start word: {exc})")
            return None

    def _barrier(self) -> None:
        """Before each call's inputs are copied (so the copies, the L2 flush and "go" still follow one another
        uninterrupted, as on one GPU: docs/anti-cheat.md), with this GPU idle: the ranks' windows open together.

        On GPUs, our stream then waits on the shared start word, and every rank queues its whole window behind that
        wait before :meth:`_release` sets the word: the GPUs start within the time each takes to see one host
        write, not within the host barrier's skew, which the early rank's window would otherwise count."""
        if self.cuda:
            self.torch.cuda.current_stream().synchronize()
        self._group().barrier()
        if self.gate is not None:
            self._gate_n += 1
            self.driver.wait_value(int(self.torch.cuda.current_stream().cuda_stream), self.gate.device_ptr,
                                   self._gate_n)  # fmt: skip

    def _release(self) -> None:
        """Every rank has queued its window: open the start word (each rank sets it, whichever passes the barrier
        first opens it for all; a failed barrier still releases our own stream)."""
        assert self.gate is not None
        try:
            self._group().barrier()
        finally:
            self.gate.set(self._gate_n)

    def case_clock(self) -> Callable[[], float]:
        """The slowest evaluator's time since the case began: every rank ends its warm-up and its sampling on the
        same call."""
        origin = time.perf_counter()
        group = self._group()
        return lambda: group.max(time.perf_counter() - origin)

    def slowest(self, sample: Sample) -> Sample:
        """The slowest rank's sample (its reading, window and bound: the CPU's overhead cap reads them)."""
        mine = [sample.ns, sample.reading_ns, sample.window_ns, sample.allowance_ns, sample.event_ns, sample.bounded,
                sample.degraded]  # fmt: skip
        ns, reading, window, allowance, event, bounded, degraded = max(self._group().exchange(mine), key=lambda v: v[0])
        return replace(sample, ns=ns, reading_ns=reading, window_ns=window, allowance_ns=allowance, event_ns=event,
                       bounded=bool(bounded), degraded=bool(degraded))  # fmt: skip

    def agree_calls(self, calls: int) -> int:
        return self._group().min(calls)

    # ---- the problem's own check (no submission, one evaluator) -------------------------------------------------
    def run_reference_check(self) -> None:
        """What one GPU's reference check asks (``Evaluator.run_reference_check``), for every rank: on every test
        case the shards made twice alike and passable, the reference passing its own check (refusing an output of
        None on the first), and every benchmark case's shards made and its speed of light whole numbers."""
        if self.ref_kernel is None:
            raise Fatal(Verdict.INFRASTRUCTURE_ERROR, "the problem's reference.py has no ref_kernel", "problem")
        for i, case in enumerate(self.job.tests):
            t0 = time.perf_counter()
            where = f"test {i + 1} ({case_text(case)})"
            inputs = self.all_inputs(case)
            self._same_inputs(inputs, self.all_inputs(case), where)
            for r, shard in enumerate(inputs):
                self._passable(shard, f"{where}, rank {r}")
            if i == 0 and self._problem_code(lambda x=inputs: normalise_check(self._check_none_rank(x)),
                                             f"check_implementation of None on {where}")[0]:  # fmt: skip
                message = (f"check_implementation accepts None as rank 0's output of {where}: it does not look at "
                           "the output, so every submission would pass")  # fmt: skip
                raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "problem")
            try:
                outputs = list(self.ref_kernel(clone(self.torch, inputs)))
                if len(outputs) != self.world_size:
                    raise ValueError(f"ref_kernel returned {len(outputs)} outputs for {self.world_size} ranks")
                checks = [normalise_check(self.check(inputs, r, outputs[r])) for r in range(self.world_size)]
            except BaseException as exc:
                message = f"the reference failed on test {i + 1} ({case_text(case)}):\n{trace(exc)}"
                raise Fatal(Verdict.INFRASTRUCTURE_ERROR, message, "problem") from None
            failed = [(r, m) for r, (ok, m) in enumerate(checks) if not ok]
            verdict = Verdict.WRONG_ANSWER if failed else Verdict.ACCEPTED
            message = f"rank {failed[0][0]}: {failed[0][1]}" if failed else checks[0][1]
            self.report.send(RTest(index=i, verdict=verdict, message=message, duration_s=since(t0)))
        for i, case in enumerate(self.job.benchmarks):
            try:
                shards = self.all_inputs(case)
                for r, shard in enumerate(shards):
                    self._passable(shard, f"benchmark {i + 1}, rank {r}")
                if "seed" in case:
                    self._seed_makes_the_inputs(case, input_sample(self.torch, shards), make=self.all_inputs)
                del shards
                if callable(self.speed_of_light):
                    self._problem_code(lambda c=case: speed_of_light_of(self.speed_of_light, c),
                                       f"speed_of_light({case_text(case)})")  # fmt: skip
            except Fatal as f:
                raise Fatal(f.verdict, f"benchmark {i + 1}: {f.message}", f.fault) from None

    def _check_none_rank(self, inputs: list[Any]) -> object:
        try:
            return self.check(inputs, 0, None)
        except Exception:
            return False  # refusing None by raising is refusing it


def run_rank(job: Job, report_fd: str | None, peer: Peer | None, workdir: Path) -> int:
    """``python -m runners.oracle`` for one rank of several: the group channel, the reporter, the evaluation."""
    if job.mode == "reference":  # the problem's own check: one evaluator, no submission, no peers
        alone = RankReporter(int(report_fd or -1))
        evaluate(RankEvaluator(job, alone, peer, workdir, None), alone)
        return 0
    if job.rank == 0:
        reporter = RankReporter(int(report_fd or -1))

        def on_abort(fatal: dict[str, Any]) -> None:  # a peer stopped: its failure is the run's; end at once
            try:
                reporter.send(RFatal.model_validate(fatal), own=False)
            except Exception:
                why = "an evaluator of another rank stopped with an unreadable report"
                reporter.send(RFatal(verdict=Verdict.INFRASTRUCTURE_ERROR, fault="runner", message=why), own=False)
            reporter.send(RDone())
            os._exit(0)

        group = Group.from_env(0, job.world_size, on_abort)
        reporter.group = group
        report: Reporter = reporter
    else:
        group = Group.from_env(job.rank, job.world_size, lambda fatal: os._exit(0))
        report = PeerReporter(job.rank, group)
    evaluate(RankEvaluator(job, report, peer, workdir, group), report, finish=group.finish)
    return 0
