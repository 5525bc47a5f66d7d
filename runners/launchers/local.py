"""The local launcher: evaluates on this machine through ``runners.entry.run_request`` in a worker thread.

A thread cannot be cancelled, so the run gets a cancel event: when the launcher's coroutine is cancelled (the job
was cancelled, its lease lost, the worker stops, or the worker's bound on the call ran out), the event kills the
run's whole sandboxed process tree at once, and the launcher lets go only after the thread has returned, so no
run outlives its job on this machine (two runs sharing a GPU would spoil both timings)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runners.contract import Phase, ProgressEvent, RunRequest, RunResult
from runners.devices import device_gpus, device_mismatch
from runners.entry.admission import NotOffered, language_headers
from runners.entry.clock import OVERLOADED
from runners.entry.prestart import Prestarter
from runners.gpus import Gpu, GpuPool, list_gpus, usable
from runners.launchers.base import DeviceUnavailable, JobHandle, Launcher, LauncherError
from runners.settings import RunnerSettings

log = logging.getLogger(__name__)

KILL_WAIT_S = 10.0
"""How long a cancelled run may take to die (the sandbox needs ~0.1 s) before the launcher lets go anyway."""
MIN_FREE_MB = 64
"""A job folder needs room for the submission, its build and its output; less free space fails the self-check."""


class LocalLauncher(Launcher):
    """Runs the harness here. A worker serving others refuses unsandboxed runs unless the setting allows them."""

    name = "local"

    def __init__(self, settings: RunnerSettings, gpus: list[Gpu] | None = None) -> None:
        self.settings = settings
        self._gpu: tuple[str | None] | None = None  # this machine's GPU name, asked once (on first use)
        self._pool: GpuPool | None = GpuPool(gpus, settings.gpu_lock_dir) if gpus is not None else None
        self._pool_lock = threading.Lock()
        # The next run's processes, pre-started per GPU (runners/entry/prestart.py; KERNELCUP_PRESTART).
        self.prestart: Prestarter | None = Prestarter(settings) if settings.prestart else None
        self.overloaded = 0
        """Runs whose platform start-up ran out of KERNELCUP_STARTUP_TIMEOUT_S here (the self-check reports them)."""
        self._last_overload: tuple[float, str] | None = None

    def close(self) -> None:
        """Kill the pre-started processes (the worker stops); runs after this start cold."""
        if self.prestart is not None:
            self.prestart.close()

    def pool(self) -> GpuPool:
        """One GPU per run (runners/gpus.py): the GPUs this worker may use, listed once (blocking)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = GpuPool(usable(list_gpus()), self.settings.gpu_lock_dir)
            return self._pool

    def gpu_name(self) -> str | None:
        """The name of this machine's GPU 0 as the driver reports it, or None without one (asked once, blocking)."""
        if self._gpu is None:
            from runners.sysinfo import gpu_query

            gpu = gpu_query()
            self._gpu = (str(gpu["name"]) if gpu else None,)
        return self._gpu[0]

    def cannot_serve(self, device_name: str) -> str | None:
        """Why this machine cannot run jobs for ``device_name`` (no GPU, another model, or fewer GPUs of it than a
        name like ``H100x8`` asks for); None when it can."""
        device = "cpu" if device_name.lower() == "cpu" else "cuda"
        problem = device_mismatch(device, device_name, self.gpu_name())
        wanted = device_gpus(device_name)
        if problem is not None or device == "cpu" or wanted == 1:
            return problem
        try:
            gpus = self.pool().gpus
        except ValueError as exc:
            return str(exc)
        have = sum(device_mismatch(device, device_name, g.name) is None for g in gpus)
        if have < wanted:
            return (f"{device_name} takes {wanted} GPUs at once and this worker may use {have} of that model; serve it "
                    "from a machine with enough (or widen the worker's CUDA_VISIBLE_DEVICES)")  # fmt: skip
        return None

    @property
    def allows_unsandboxed(self) -> bool:
        """Whether the worker may store this launcher's unsandboxed results (KERNELCUP_ALLOW_UNSANDBOXED)."""
        return self.settings.allow_unsandboxed

    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        loop = asyncio.get_running_loop()
        pending: set[asyncio.Future[None]] = set()

        def on_progress(event: ProgressEvent) -> None:  # called from the harness thread
            def schedule() -> None:
                task = asyncio.ensure_future(_quiet(job.progress(event)))
                pending.add(task)
                task.add_done_callback(pending.discard)

            with contextlib.suppress(RuntimeError):  # the loop is closing: progress is best effort
                loop.call_soon_threadsafe(schedule)

        try:  # a language whose headers this machine lacks: refused at once, never the user's fault
            await asyncio.to_thread(language_headers, request, self.settings)
        except NotOffered as exc:
            raise DeviceUnavailable(str(exc)) from None
        if request.device == "cpu":
            return await self._run(request, on_progress, pending, None)
        try:
            pool = await asyncio.to_thread(self.pool)
        except ValueError as exc:  # the worker's CUDA_VISIBLE_DEVICES names a GPU this machine lacks
            raise LauncherError(str(exc)) from None
        names: list[str | None] = [g.name for g in pool.gpus] or [await asyncio.to_thread(self.gpu_name)]
        fitting = [n for n in names if device_mismatch(request.device, request.device_name, n) is None]
        if not fitting:  # refused at once: a run here would fail, or worse, time the wrong GPU
            raise DeviceUnavailable(device_mismatch(request.device, request.device_name, names[0]) or "no GPU fits")
        if not pool.gpus:
            raise DeviceUnavailable("this worker may use no GPU (CUDA_VISIBLE_DEVICES is empty or names none)")

        def fits(gpu: Gpu) -> bool:
            return device_mismatch(request.device, request.device_name, gpu.name) is None

        if request.world_size > 1:  # several ranks: that many GPUs at once (docs/multigpu.md)
            return await self._run_ranks(request, on_progress, pending, pool, fits, job)
        if not any(fits(g) for g in pool.free_gpus):
            await _quiet(job.progress(ProgressEvent(phase=Phase.QUEUED, detail="waiting for a free GPU")))
        own = await pool.acquire(fits, on_wait=self._told(job, pending))  # never two timed runs on one GPU
        return await self._run(request, on_progress, pending, own, release=pool.release)

    async def _run_ranks(
        self,
        request: RunRequest,
        on_progress: Callable[[ProgressEvent], None],
        pending: set[asyncio.Future[None]],
        pool: GpuPool,
        fits: Callable[[Gpu], bool],
        job: JobHandle,
    ) -> RunResult:
        count = request.world_size
        if sum(fits(g) for g in pool.gpus) < count:  # refused at once: it would wait forever
            raise DeviceUnavailable(f"the job runs {count} ranks, one per GPU, and this worker may use "
                                    f"{sum(fits(g) for g in pool.gpus)} GPUs that fit it")  # fmt: skip
        if sum(fits(g) for g in pool.free_gpus) < count:
            await _quiet(job.progress(ProgressEvent(phase=Phase.QUEUED, detail=f"waiting for {count} free GPUs")))
        own = await pool.acquire_many(count, fits, on_wait=self._told(job, pending))

        def release(gpus: list[Gpu]) -> None:
            for gpu in gpus:
                pool.release(gpu)

        return await self._run(request, on_progress, pending, own, release=release)

    @staticmethod
    def _told(job: JobHandle, pending: set[asyncio.Future[None]]) -> Callable[[str], None]:
        """The job's progress told (on this event loop) that its run waits for a GPU another process holds."""

        def tell(detail: str) -> None:
            task = asyncio.ensure_future(_quiet(job.progress(ProgressEvent(phase=Phase.QUEUED, detail=detail))))
            pending.add(task)
            task.add_done_callback(pending.discard)

        return tell

    def _placement(self, gpu: Gpu | list[Gpu] | None) -> dict[str, Any]:
        """The run's GPU (a list: one per rank) and, where on, the pre-started sets, as run_request's keywords (with
        pre-starting off the call is as before)."""
        where: dict[str, Any] = {"gpus": gpu} if isinstance(gpu, list) else {"gpu": gpu}
        if self.prestart is not None:
            where["prestart"] = self.prestart
        return where

    async def _run(
        self,
        request: RunRequest,
        on_progress: Callable[[ProgressEvent], None],
        pending: set[asyncio.Future[None]],
        gpu: Gpu | list[Gpu] | None,
        *,
        release: Callable[[Any], None] | None = None,
    ) -> RunResult:
        """The run in a thread; ``gpu`` (a list: one per rank) goes back through ``release`` only when the thread is
        over (a cancelled run whose processes take long to die still holds its GPU)."""
        from runners.entry import run_request

        cancel = threading.Event()
        thread = asyncio.ensure_future(
            asyncio.to_thread(
                run_request,
                request,
                on_progress,
                settings=self.settings,
                require_sandbox=not self.settings.allow_unsandboxed,
                cancel=cancel,
                **self._placement(gpu),
            )
        )
        if gpu is not None and release is not None:
            thread.add_done_callback(lambda _: release(gpu))
        try:
            result = await asyncio.shield(thread)
        except asyncio.CancelledError:
            cancel.set()  # the sandbox kills the tree within a poll; wait for the thread to see it
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(thread), KILL_WAIT_S)
            if not thread.done():
                log.error("the run of %s did not stop within %.0f s of being cancelled", request.problem, KILL_WAIT_S)
            raise
        await asyncio.sleep(0)  # let the last scheduled progress callbacks start
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        if result.fault == "runner" and result.message.startswith(OVERLOADED):
            self.overloaded += 1
            self._last_overload = (time.monotonic(), result.message)
            log.warning("this machine is overloaded (%d run(s) so far): %s", self.overloaded, result.message)
        return result

    def overload_report(self) -> str:
        """What the self-check says of overloaded starts since this launcher began ('' when there were none)."""
        if self._last_overload is None:
            return ""
        ago = time.monotonic() - self._last_overload[0]
        runs = "1 run" if self.overloaded == 1 else f"{self.overloaded} runs"
        return (f"; {runs} found this machine overloaded (the platform's start-up ran past KERNELCUP_STARTUP_TIMEOUT_S="
                f"{self.settings.startup_timeout_s:g} s; the last {ago:.0f} s ago): give it fewer worker slots or "
                "more cores")  # fmt: skip

    async def check(self) -> str:
        from runners import sysinfo
        from runners.sandbox import probe_sandbox

        bwrap, _, note = await asyncio.to_thread(probe_sandbox)
        if bwrap is None and not self.settings.allow_unsandboxed:
            raise LauncherError(
                f"local runner cannot sandbox submissions ({note}); install bubblewrap (`make setup`) or set "
                "KERNELCUP_ALLOW_UNSANDBOXED=true on a machine that runs only your own code"
            )
        problem = await asyncio.to_thread(self._probe_host)
        if problem:
            raise LauncherError(problem)
        gpu = await asyncio.to_thread(sysinfo.gpu_query)
        device = f"GPU {gpu['name']} (driver {gpu['driver']})" if gpu else "no NVIDIA GPU found (cpu only)"
        if gpu:
            try:
                pool = await asyncio.to_thread(self.pool)
            except ValueError as exc:
                raise LauncherError(str(exc)) from None
            device += f"; runs use GPU {', '.join(str(g.index) for g in pool.gpus) or 'none'}, one run per GPU"
            if any(g.minor is None for g in pool.gpus):
                device += " (the driver did not say which /dev/nvidiaN is which: each run's sandbox sees all of them)"
        sandbox = "sandboxed" if bwrap else "NOT sandboxed (allowed by KERNELCUP_ALLOW_UNSANDBOXED)"
        return f"local: {device}; {language_report(self.settings)}; {sandbox}: {note}{self.overload_report()}"

    def _probe_host(self) -> str:
        """What would make every run fail here, whatever the submission: a job folder that cannot be written
        (full or read-only disk) or an evaluation interpreter that does not start. Empty when fine."""
        root = self.settings.job_root or Path(tempfile.gettempdir())
        try:
            root.mkdir(parents=True, exist_ok=True)
            free_mb = shutil.disk_usage(root).free // (1 << 20)
            with tempfile.NamedTemporaryFile(dir=root, prefix="kernelcup-probe-") as f:
                f.write(b"\0" * 65536)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            return f"cannot write job folders in {root} ({exc.strerror or exc}); set KERNELCUP_JOB_ROOT or free it"
        if free_mb < MIN_FREE_MB:
            return f"only {free_mb} MiB free in {root}, the job folders' place (KERNELCUP_JOB_ROOT); free some space"
        python = self.settings.python or sys.executable
        try:
            done = subprocess.run(
                [python, "-I", "-c", "import sys; print(sys.version_info[0])"],
                capture_output=True,
                text=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the evaluation interpreter {python} does not start ({exc}); check KERNELCUP_PYTHON"
        if done.returncode != 0 or done.stdout.strip() != "3":
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
            return f"the evaluation interpreter {python} is broken ({tail[0][:200]}); check KERNELCUP_PYTHON"
        return ""


async def _quiet(coro: object) -> None:
    with contextlib.suppress(Exception):
        await coro  # type: ignore[misc]


def language_report(settings: RunnerSettings | None = None) -> str:
    """Every language runtime's self-test on this machine, in one line: 'languages: Python ok, CUDA: why not'
    (with the settings, whether CUTLASS's and ThunderKittens' headers are there). A language this machine cannot
    run is reported, not an error: its problems fail here with that reason."""
    from runners.submission.languages import self_tests

    parts = [f"{name} ok" if why is None else f"{name}: {why}" for name, why in self_tests(settings).items()]
    return "languages: " + ", ".join(parts)
