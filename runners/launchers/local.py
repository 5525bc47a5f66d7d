"""The local launcher: evaluates on this machine through ``runners.entry.run_request`` in a worker thread."""

from __future__ import annotations

import asyncio
import contextlib
import shutil

from runners.contract import ProgressEvent, RunRequest, RunResult
from runners.launchers.base import JobHandle, LauncherError
from runners.settings import RunnerSettings


class LocalLauncher:
    """Runs the harness here. A worker serving others refuses unsandboxed runs unless the setting allows them."""

    name = "local"

    def __init__(self, settings: RunnerSettings | None = None) -> None:
        self.settings = settings or RunnerSettings()

    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        from runners.entry import run_request

        loop = asyncio.get_running_loop()
        pending: set[asyncio.Future[None]] = set()

        def on_progress(event: ProgressEvent) -> None:  # called from the harness thread
            def schedule() -> None:
                task = asyncio.ensure_future(_quiet(job.progress(event)))
                pending.add(task)
                task.add_done_callback(pending.discard)

            with contextlib.suppress(RuntimeError):  # the loop is closing: progress is best effort
                loop.call_soon_threadsafe(schedule)

        result = await asyncio.to_thread(
            run_request,
            request,
            on_progress,
            settings=self.settings,
            require_sandbox=not self.settings.allow_unsandboxed,
        )
        await asyncio.sleep(0)  # let the last scheduled progress callbacks start
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        return result

    async def check(self) -> str:
        from runners import sysinfo
        from runners.sandbox import probe_sandbox

        bwrap, _, note = await asyncio.to_thread(probe_sandbox)
        if bwrap is None and not self.settings.allow_unsandboxed:
            raise LauncherError(
                f"local runner cannot sandbox submissions ({note}); install bubblewrap (`make setup`) or set "
                "KERNELCUP_ALLOW_UNSANDBOXED=true on a machine that runs only your own code"
            )
        gpu = await asyncio.to_thread(sysinfo.gpu_query)
        device = f"GPU {gpu['name']} (driver {gpu['driver']})" if gpu else "no NVIDIA GPU found (cpu only)"
        nvcc = "nvcc found" if shutil.which("nvcc") else "no nvcc (native .cu problems cannot run here)"
        sandbox = "sandboxed" if bwrap else "NOT sandboxed (allowed by KERNELCUP_ALLOW_UNSANDBOXED)"
        return f"local: {device}; {nvcc}; {sandbox}: {note}"


async def _quiet(coro: object) -> None:
    with contextlib.suppress(Exception):
        await coro  # type: ignore[misc]
