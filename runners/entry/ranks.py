"""The processes of a run of several ranks (docs/multigpu.md): one sandboxed evaluator per rank, each seeing only its
GPU, joined by the group channel; and one sandbox for all the submission's ranks (one loopback-only network
namespace), started by ``runners.submission.ranks``. Rank 0's evaluator reports; this session reads its report
exactly as ``Session`` reads the one evaluator's."""

from __future__ import annotations

import contextlib
import mmap
import os
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

from runners.contract import RunRequest
from runners.entry.session import Outcomes, Session, SessionSpec, _env, _ro_python, close_ends
from runners.gpus import Gpu, list_gpus, usable
from runners.ipc.protocol import Job
from runners.ipc.wire import socket_pair
from runners.oracle.base import JOB_FD_ENV, REPORT_FD_ENV
from runners.oracle.group import GATE_FD_ENV, GROUP_FDS_ENV
from runners.sandbox import ProcessOutcome, SandboxSpec, SandboxUnavailable, run_sandboxed
from runners.submission.ranks import RANK_DEVICES_ENV, RANK_FDS_ENV
from runners.submission.serve import SOCKET_FD_ENV

NCCL_ENV = {
    # The lent machines' rule: never NVLink multicast (NVLS), in NCCL, in PyTorch's symmetric memory, in NVSHMEM.
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
    # The sandbox has a loopback and nothing else: rendezvous and bootstrap go over it.
    "NCCL_SOCKET_IFNAME": "lo",
    "GLOO_SOCKET_IFNAME": "lo",
}
"""Every rank's environment (docs/multigpu.md)."""


def rank_gpus(request: RunRequest, gpus: list[Gpu] | None) -> tuple[list[Gpu] | None, str]:
    """The GPUs of a run of ``request.world_size`` ranks: ``gpus`` (a worker's pool gave them), else the first of
    this machine's usable GPUs (``kernelcup run``); None on the CPU. The second value says why there are too few."""
    world = request.world_size
    if request.device == "cpu":
        return None, ""
    if gpus is None:
        try:
            gpus = usable(list_gpus())[:world]
        except ValueError as exc:
            return None, str(exc)
    if len(gpus) < world:
        return None, (f"the run has {world} ranks, one per GPU, and this runner has {len(gpus)} GPU(s) for it; run it "
                      f"where {world} GPUs are free (a device named like H100x{world})")  # fmt: skip
    return list(gpus[:world]), ""


def rank_workdir(dirs: Any, rank: int) -> Path:
    """Rank ``rank``'s evaluator folder: rank 0's is the job's own; the others' hold a copy of the problem."""
    if rank == 0:
        return Path(dirs.oracle)
    folder = Path(dirs.root) / f"oracle-rank{rank}"
    if not folder.exists():
        folder.mkdir()
        shutil.copytree(dirs.problem, folder / Path(dirs.problem).name)
    return folder


def evaluator_env(
    rank: int, *, job_fd: int, sub_fd: int, group_fds: list[int], report_fd: int, gate_fd: int, on_gpu: bool
) -> tuple[dict[str, str], list[int]]:
    """Rank ``rank``'s evaluator's wiring: its environment (which descriptor is what) and the descriptors it
    inherits. Every rank gets its job pipe, its socket to the submission's rank and its group sockets (rank 0 one to
    each other rank, the others one to rank 0); rank 0 alone the report pipe; on a GPU every rank the start word
    (``gate_fd``, -1: none); on the CPU its checks run on one passive OpenMP thread (no threads left spinning on the
    cores the ranks run on)."""
    env = {JOB_FD_ENV: str(job_fd), SOCKET_FD_ENV: str(sub_fd), GROUP_FDS_ENV: ",".join(map(str, group_fds))}
    fds = [job_fd, sub_fd, *group_fds]
    if rank == 0:
        env[REPORT_FD_ENV] = str(report_fd)
        fds.append(report_fd)
    if gate_fd >= 0:
        env[GATE_FD_ENV] = str(gate_fd)
        fds.append(gate_fd)
    if not on_gpu:
        env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
    return env, fds


def submission_env(
    base: dict[str, str], rank_fds: list[int], gpus: list[Gpu] | None, *, on_gpu: bool, cpus: int
) -> dict[str, str]:
    """The environment of the submission's sandbox (its ranks' launcher, ``runners.submission.ranks``): the
    language's, every rank's (``NCCL_ENV``), each rank's socket, on a GPU each rank's device (by UUID), on the CPU the
    cores shared out between the ranks (as torchrun does: no rank's threads spin on another's)."""
    env = {**base, **NCCL_ENV, RANK_FDS_ENV: ",".join(map(str, rank_fds))}
    if on_gpu and gpus:
        env[RANK_DEVICES_ENV] = ",".join(g.uuid for g in gpus)
    if not on_gpu:
        env["OMP_NUM_THREADS"] = str(max(1, cpus // len(rank_fds)))
    return env


class _Wiring:
    """The descriptors of one run of several ranks, made before any process starts: the report pipe, the start word
    (on a GPU), the group channel (rank 0 <-> rank j), each rank's socket to the submission's rank and its job pipe.
    ``ends`` says which of them each process holds: once it has started, this parent closes its copies
    (``started``), so each side sees the other's exit as end of file; ``close`` releases whatever is left."""

    def __init__(self, world: int, on_gpu: bool) -> None:
        self.report_r, self.report_w = os.pipe()
        self.fds = [self.report_r, self.report_w]
        """Descriptors this parent still holds open."""
        self.group = [socket.socketpair() for _ in range(world - 1)]  # (rank 0's end, rank j's end)
        self.gate = os.memfd_create("kernelcup-start-word", 0) if on_gpu else -1  # the evaluators' start word, zeroed
        if self.gate >= 0:
            os.ftruncate(self.gate, mmap.PAGESIZE)
            self.fds.append(self.gate)
        self.subs = [socket_pair() for _ in range(world)]  # evaluator r <-> the submission's rank r
        self.sockets = [s for pair in (*self.group, *self.subs) for s in pair]
        self.jobs: list[tuple[int, int]] = []
        for _ in range(world):
            job_r, job_w = os.pipe()
            self.fds += [job_r, job_w]
            self.jobs.append((job_r, job_w))
        self.ends: dict[str, list[Any]] = {f"rank{r}": self._rank_ends(r) for r in range(world)}
        self.ends["submission"] = [pair[1] for pair in self.subs]
        self._lock = threading.Lock()

    def held(self, rank: int) -> list[socket.socket]:
        """Rank ``rank``'s evaluator's sockets: to the submission's rank, then its group sockets."""
        if rank == 0:
            return [self.subs[0][0], *(pair[0] for pair in self.group)]
        return [self.subs[rank][0], self.group[rank - 1][1]]

    def _rank_ends(self, rank: int) -> list[Any]:
        return [self.jobs[rank][0], *self.held(rank)] + ([self.report_w] if rank == 0 else [])

    def evaluator(self, rank: int, on_gpu: bool) -> tuple[dict[str, str], list[int]]:
        """Rank ``rank``'s evaluator's environment and inherited descriptors (``evaluator_env``), made inheritable."""
        mine = self.held(rank)
        job_r = self.jobs[rank][0]
        for fd in (job_r, self.report_w, *([self.gate] if self.gate >= 0 else [])):
            os.set_inheritable(fd, True)
        return evaluator_env(rank, job_fd=job_r, sub_fd=mine[0].fileno(), group_fds=[s.fileno() for s in mine[1:]],
                             report_fd=self.report_w, gate_fd=self.gate, on_gpu=on_gpu)  # fmt: skip

    def started(self, name: str) -> None:
        """The child holds its ends now: close ours, so each side sees the other's exit as end of file."""
        with self._lock:
            ends, self.ends[name] = self.ends[name], []
            close_ends(ends, self.fds)

    def hand_over(self, job: Job, world: int) -> None:
        """Each rank's job down its pipe (its rank and the world size in it), then the pipe closed."""
        for r, (_, job_w) in enumerate(self.jobs):
            rank_job = job.model_copy(update={"rank": r, "world_size": world})
            with contextlib.suppress(BrokenPipeError):
                os.write(job_w, (rank_job.model_dump_json() + "\n").encode())
            os.close(job_w)
            self.fds.remove(job_w)

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.close()


class RankSession(Session):
    """``Session`` for ``world_size`` ranks: ``gpus`` one per rank (None on the CPU)."""

    def __init__(self, spec: SessionSpec, *, gpus: list[Gpu] | None) -> None:
        super().__init__(spec)
        self.gpus = gpus
        self.world_size = self.request.world_size
        self.on_gpu = self.request.device != "cpu"
        self.ro: tuple[Path, ...] = ()
        """What both kinds of sandbox see read-only of the Python side and the language (set when the run starts)."""

    def _gpu(self, rank: int) -> Gpu | None:
        return self.gpus[rank] if self.gpus else None

    def run(self) -> Outcomes:
        world = self.world_size
        wiring = _Wiring(world, self.on_gpu)
        cancels = {name: threading.Event() for name in [*(f"rank{r}" for r in range(world)), "submission"]}
        outcomes: dict[str, ProcessOutcome | None] = dict.fromkeys(cancels)
        errors: dict[str, str] = {}
        self.ro = tuple(dict.fromkeys([*_ro_python(), *self.shape.extra_ro]))
        try:
            specs = {f"rank{r}": self._evaluator_spec(r, wiring, cancels[f"rank{r}"]) for r in range(world)}
            specs["submission"] = self._submission_spec(wiring, cancels["submission"])
            self._run_all(specs, wiring, cancels, outcomes, errors)
        finally:
            for c in cancels.values():
                c.set()
            wiring.close()
        cancelled = self.cancel is not None and self.cancel.is_set()
        result = Outcomes(self.report, outcomes["rank0"], outcomes["submission"], cancelled)
        result.expired, result.expired_message = self.expired
        result.unavailable = errors.get("unavailable", "")
        failed = next((v for k, v in errors.items() if k != "unavailable"), "")
        if failed:
            raise RuntimeError(failed)
        return result

    def _evaluator_spec(self, rank: int, wiring: _Wiring, cancel: threading.Event) -> SandboxSpec:
        """Rank ``rank``'s evaluator: its GPU only, a folder of its own with a copy of the problem."""
        env, fds = wiring.evaluator(rank, self.on_gpu)
        gpu = self._gpu(rank)
        workdir = rank_workdir(self.dirs, rank)
        return SandboxSpec(
            argv=[self.shape.python, "-m", "runners.oracle"],
            workdir=workdir,
            env=_env(env, self.request.device, gpu),
            timeout_s=self.bounds.total_s + 15,
            output_cap_bytes=64 * 1024,
            memory_mb=max(self.request.limits.host_memory_mb, 8192) * 2,
            pass_fds=tuple(fds),
            ro_paths=(*self.ro, workdir / Path(self.dirs.problem).name),
            allow_gpu=self.on_gpu,
            gpu_node=gpu.node if gpu is not None else None,
            require_sandbox=self.shape.require_sandbox,
            max_processes=64,
            disk_mb=64 * 1024,
            cancel=cancel,
        )

    def _submission_spec(self, wiring: _Wiring, cancel: threading.Event) -> SandboxSpec:
        """The one sandbox of every rank of the submission (one loopback-only network namespace), its GPUs all."""
        limits, world = self.request.limits, self.world_size
        rank_fds = [pair[1].fileno() for pair in wiring.subs]
        env = submission_env(dict(self.shape.submission_env), rank_fds, self.gpus, on_gpu=self.on_gpu,
                             cpus=os.cpu_count() or 1)  # fmt: skip
        nodes = [g.node for g in self.gpus or []]
        return SandboxSpec(
            argv=[self.shape.python, "-m", "runners.submission.ranks"],
            workdir=self.dirs.submission,
            env=_env(env, self.request.device),
            timeout_s=self.bounds.total_s + 15,
            output_cap_bytes=limits.output_cap_bytes,
            memory_mb=limits.host_memory_mb * world,
            pass_fds=tuple(rank_fds),
            ro_paths=(*self.ro, *self.dirs.shared_ro),
            allow_gpu=self.on_gpu,
            gpu_node=",".join(n for n in nodes if n) if nodes and all(nodes) else None,
            require_sandbox=self.shape.require_sandbox,
            max_tasks=1024 * world,
            max_processes=128 * world,
            cancel=cancel,
        )

    def _run_all(
        self,
        specs: dict[str, SandboxSpec],
        wiring: _Wiring,
        cancels: dict[str, threading.Event],
        outcomes: dict[str, ProcessOutcome | None],
        errors: dict[str, str],
    ) -> None:
        """Start every process (each in a thread that waits for it), hand the ranks their jobs, read rank 0's report
        until it is done, then stop them all and wait for their outcomes."""

        def start(name: str, spec: SandboxSpec) -> None:
            try:
                outcomes[name] = run_sandboxed(spec, on_start=lambda: wiring.started(name))
            except SandboxUnavailable as exc:
                errors["unavailable"] = str(exc)
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {exc}"
            finally:
                wiring.started(name)

        threads = [threading.Thread(target=start, args=(n, s), daemon=True, name=f"kernelcup-{n}")
                   for n, s in specs.items()]  # fmt: skip
        self.started = time.monotonic()  # (the phases, and the start-up's limit, count from here)
        for t in threads:
            t.start()
        wiring.hand_over(self.job, self.world_size)
        deadline = self.started + self.bounds.total_s + 20
        self._read(wiring.report_r, *cancels.values())
        self.let_submission_end(threads[-1])  # (the submission process is started last: ``specs``' order)
        if not self.report.done and not self.expired[0]:
            threads[0].join(timeout=max(deadline - time.monotonic(), 1.0))
        for c in cancels.values():
            c.set()
        for t in threads:
            t.join(timeout=30.0)
