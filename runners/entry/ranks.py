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
from runners.entry.session import Outcomes, Session, _env, _ro_python
from runners.gpus import Gpu, list_gpus, usable
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


class RankSession(Session):
    """``Session`` for ``world_size`` ranks: ``gpus`` one per rank (None on the CPU)."""

    def __init__(self, *args: Any, gpus: list[Gpu] | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gpus = gpus
        self.world_size = self.request.world_size

    def _gpu(self, rank: int) -> Gpu | None:
        return self.gpus[rank] if self.gpus else None

    def run(self) -> Outcomes:
        limits, world = self.request.limits, self.world_size
        time_limit = self.bounds.total_s
        on_gpu = self.request.device != "cpu"
        ro = tuple(dict.fromkeys([*_ro_python(), *self.extra_ro]))
        report_r, report_w = os.pipe()
        fds_to_close = [report_r, report_w]
        jobs: list[int] = []
        own_ends: dict[str, list[Any]] = {}
        specs: dict[str, SandboxSpec] = {}
        cancels = {name: threading.Event() for name in [*(f"rank{r}" for r in range(world)), "submission"]}
        group = [socket.socketpair() for _ in range(world - 1)]  # rank 0 <-> rank j: (rank 0's end, rank j's end)
        gate = os.memfd_create("kernelcup-start-word", 0) if on_gpu else -1  # the evaluators' start word, zeroed
        if gate >= 0:
            os.ftruncate(gate, mmap.PAGESIZE)
            fds_to_close.append(gate)
        subs = [socket_pair() for _ in range(world)]  # evaluator r <-> the submission's rank r
        sockets = [s for pair in (*group, *subs) for s in pair]
        for r in range(world):
            job_r, job_w = os.pipe()
            fds_to_close += [job_r, job_w]
            jobs.append(job_w)
            mine = [subs[r][0], *(pair[0] for pair in group)] if r == 0 else [subs[r][0], group[r - 1][1]]
            env = {JOB_FD_ENV: str(job_r), SOCKET_FD_ENV: str(subs[r][0].fileno()),
                   GROUP_FDS_ENV: ",".join(str(s.fileno()) for s in mine[1:])}  # fmt: skip
            fds = [job_r, *(s.fileno() for s in mine)]
            if r == 0:
                env[REPORT_FD_ENV] = str(report_w)
                fds.append(report_w)
            if gate >= 0:
                env[GATE_FD_ENV] = str(gate)
                fds.append(gate)
            if not on_gpu:  # the checks must not leave OpenMP threads spinning on the cores the ranks run on
                env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE")
            for fd in (job_r, report_w, *([gate] if gate >= 0 else [])):
                os.set_inheritable(fd, True)
            gpu = self._gpu(r)
            workdir = rank_workdir(self.dirs, r)
            specs[f"rank{r}"] = SandboxSpec(
                argv=[self.python, "-m", "runners.oracle"],
                workdir=workdir,
                env=_env(env, self.request.device, gpu),
                timeout_s=time_limit + 15,
                output_cap_bytes=64 * 1024,
                memory_mb=max(limits.host_memory_mb, 8192) * 2,
                pass_fds=tuple(fds),
                ro_paths=(*ro, workdir / Path(self.dirs.problem).name),
                allow_gpu=on_gpu,
                gpu_node=gpu.node if gpu is not None else None,
                require_sandbox=self.require_sandbox,
                max_processes=64,
                disk_mb=64 * 1024,
                cancel=cancels[f"rank{r}"],
            )
            own_ends[f"rank{r}"] = [job_r, *mine] + ([report_w] if r == 0 else [])
        rank_fds = [subs[r][1].fileno() for r in range(world)]
        sub_env = {**self.submission_env, **NCCL_ENV, RANK_FDS_ENV: ",".join(map(str, rank_fds))}
        nodes = [g.node for g in self.gpus or []]
        if on_gpu and self.gpus:
            sub_env[RANK_DEVICES_ENV] = ",".join(g.uuid for g in self.gpus)
        if not on_gpu:  # the cores shared out between the ranks (as torchrun does): no rank's threads spin on another's
            sub_env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // world))
        specs["submission"] = SandboxSpec(
            argv=[self.python, "-m", "runners.submission.ranks"],
            workdir=self.dirs.submission,
            env=_env(sub_env, self.request.device),
            timeout_s=time_limit + 15,
            output_cap_bytes=limits.output_cap_bytes,
            memory_mb=limits.host_memory_mb * world,
            pass_fds=tuple(rank_fds),
            ro_paths=(*ro, *self.dirs.shared_ro),
            allow_gpu=on_gpu,
            gpu_node=",".join(n for n in nodes if n) if nodes and all(nodes) else None,
            require_sandbox=self.require_sandbox,
            max_tasks=1024 * world,
            max_processes=128 * world,
            cancel=cancels["submission"],
        )
        own_ends["submission"] = [subs[r][1] for r in range(world)]
        outcomes: dict[str, ProcessOutcome | None] = dict.fromkeys(specs)
        errors: dict[str, str] = {}
        lock = threading.Lock()

        def started(name: str) -> None:
            """The child holds its ends now: close ours, so each side sees the other's exit as end of file."""
            with lock:
                ends, own_ends[name] = own_ends[name], []
                for end in ends:
                    with contextlib.suppress(OSError, ValueError):
                        if isinstance(end, int):
                            if end in fds_to_close:
                                fds_to_close.remove(end)
                                os.close(end)
                        else:
                            end.close()

        def start(name: str, spec: SandboxSpec) -> None:
            try:
                outcomes[name] = run_sandboxed(spec, on_start=lambda: started(name))
            except SandboxUnavailable as exc:
                errors["unavailable"] = str(exc)
            except Exception as exc:
                errors[name] = f"{type(exc).__name__}: {exc}"
            finally:
                started(name)

        threads = [threading.Thread(target=start, args=(n, s), daemon=True, name=f"kernelcup-{n}")
                   for n, s in specs.items()]  # fmt: skip
        try:
            self.started = time.monotonic()  # (the phases, and the start-up's limit, count from here)
            for t in threads:
                t.start()
            for r, job_w in enumerate(jobs):
                job = self.job.model_copy(update={"rank": r, "world_size": world})
                with contextlib.suppress(BrokenPipeError):
                    os.write(job_w, (job.model_dump_json() + "\n").encode())
                os.close(job_w)
                fds_to_close.remove(job_w)
            deadline = self.started + time_limit + 20
            self._read(report_r, *cancels.values())
            if not self.report.done and not self.expired[0]:
                threads[0].join(timeout=max(deadline - time.monotonic(), 1.0))
            for c in cancels.values():
                c.set()
            for t in threads:
                t.join(timeout=30.0)
        finally:
            for c in cancels.values():
                c.set()
            for fd in fds_to_close:
                with contextlib.suppress(OSError):
                    os.close(fd)
            for s in sockets:
                with contextlib.suppress(OSError):
                    s.close()
        cancelled = self.cancel is not None and self.cancel.is_set()
        result = Outcomes(self.report, outcomes["rank0"], outcomes["submission"], cancelled)
        result.expired, result.expired_message = self.expired
        result.unavailable = errors.get("unavailable", "")
        failed = next((v for k, v in errors.items() if k != "unavailable"), "")
        if failed:
            raise RuntimeError(failed)
        return result
