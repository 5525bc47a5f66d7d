"""`kernelcup submit`: send a file through the service and the queue, follow its progress, print the report.

When no live worker serves a device of the submission (no recent heartbeat in the ``workers`` table), the command
runs a worker in-process, limited to this submission's jobs, until they are done — so one command works on a
laptop. Progress comes from ``job_events`` (``leaderboards.events.follow``), never from the runner directly.
"""

from __future__ import annotations

import asyncio
import getpass
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import typer
from rich.console import Console

from kernelcup.commands.common import print_json, user_errors
from leaderboards.events import ProgressUpdate, follow
from leaderboards.formatting import format_ns
from leaderboards.queue import WORKER_ALIVE_S, JobQueue
from leaderboards.results import SubmissionDetails, UserRef
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import Mode

DEFAULT_TIMEOUT_S = 3 * 3600.0


class InProcessWorker:
    """A worker on a background thread with its own event loop, serving one submission's jobs."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="kernelcup-inprocess-worker", daemon=True)

    def _main(self) -> None:
        async def run() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._ready.set()
            await self.worker.run(self._stop)

        try:
            asyncio.run(run())
        finally:
            self._ready.set()

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(30)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float) -> None:
        """Ask it to stop (a running job gets the worker's grace period, then goes back to the queue)."""
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout_s)


def ensure_served(queue: JobQueue, devices: Sequence[str], start: Callable[[], None]) -> bool:
    """Start an in-process worker (``start()``) when some device of the submission has no live worker."""
    if any(not queue.alive_workers(device=d, within_s=WORKER_ALIVE_S) for d in devices):
        start()
        return True
    return False


def describe(update: ProgressUpdate, many_devices: bool) -> str:
    where = f"[{update.device}] " if many_devices else ""
    detail = f": {update.detail}" if update.detail else ""
    return f"{where}{update.phase}{detail}"


def render_details(console: Console, details: SubmissionDetails) -> None:
    """The report: per device the job's outcome, score and rank, then the public run's tests and benchmarks."""
    from kernelcup.commands.run import render

    status = details.status
    console.print(
        f"[bold]submission #{status.submission_id}[/] · {status.leaderboard} · {status.file_name} · {status.mode}"
    )
    results = {r.device: r.result for r in details.results}
    for job in status.jobs:
        colour = "green" if job.accepted else "red"
        line = f"[bold]{job.device}[/]: [{colour}]{job.status.value}[/]"
        if job.verdict:
            line += f", {job.verdict.value}"
        if job.score_ns is not None:
            line += f", score {format_ns(job.score_ns)}"
        if status.mode is Mode.RANKED and job.secret_passed is not None:
            line += f", secret-seed run {'passed' if job.secret_passed else 'failed'}"
        if job.rank is not None:
            line += f", [bold]rank {job.rank}[/]"
        console.print(line)
        if job.error:
            console.print(f"  {job.error}", markup=False)
        if job.device in results:
            render(results[job.device], status.leaderboard, status.file_name, job.device)


def register(app: typer.Typer) -> None:
    @app.command("submit")
    def submit_cmd(
        file: Path = typer.Argument(..., help="The submission file (.py, or .cu for CUDA problems)."),
        leaderboard: str = typer.Option(..., "--leaderboard", "-l", help="The leaderboard to submit to."),
        device: list[str] = typer.Option(
            [], "--device", "-d", help="Device to run on (repeatable); default: the leaderboard's only device."
        ),
        mode: Mode = typer.Option(Mode.RANKED, "--mode", "-m", help="test, benchmark, ranked or profile."),
        user: str = typer.Option("", "--user", "-u", help="Submit as this local user (default: your login name)."),
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON (no progress display)."),
        no_wait: bool = typer.Option(False, "--no-wait", help="Queue it and return at once with its id."),
        timeout: float = typer.Option(DEFAULT_TIMEOUT_S, "--timeout", min=1, help="Longest wait for the result (s)."),
    ) -> None:
        """Submit a kernel: queue it, run it (here, if no worker is running), and print the report."""
        from kernelcup.settings import load
        from kernelcup.wiring import build_worker, open_platform

        console = Console(stderr=json_out)
        with user_errors():
            if not file.is_file():
                raise typer.BadParameter(f"{file} is not a file", param_hint="FILE")
            who = UserRef(user or getpass.getuser())
            worker_settings = load(WorkerSettings)
            with open_platform() as platform:
                service = platform.service
                receipt = service.submit(who, file.name, file.read_bytes(), leaderboard, device or None, mode)
                if no_wait:
                    if json_out:
                        print_json(receipt)
                    else:
                        console.print(
                            f"queued submission #{receipt.submission_id}: "
                            + ", ".join(f"{j.device} (position {j.queue_position})" for j in receipt.jobs)
                        )
                    return
                devices = [j.device for j in receipt.jobs]
                queue = JobQueue(platform.db)
                local: list[InProcessWorker] = []

                def start_local() -> None:
                    if local and local[0].alive:
                        return
                    w = InProcessWorker(
                        build_worker(platform, settings=worker_settings, submission_id=receipt.submission_id)
                    )
                    w.start()
                    local[:] = [w]
                    if not json_out:
                        console.print("[dim]no worker is running for this device: running the job here[/]")

                polls = 0

                def on_poll() -> None:
                    nonlocal polls
                    if polls % 25 == 0:  # every ~5 s: a worker may have died meanwhile
                        ensure_served(queue, devices, start_local)
                    polls += 1

                try:
                    with console.status("waiting for a worker…", spinner="dots") as spinner:
                        for update in follow(platform.db, receipt.submission_id, timeout_s=timeout, on_poll=on_poll):
                            text = describe(update, len(devices) > 1)
                            spinner.update(text)
                            if not json_out:
                                console.print(f"[dim]·[/] {text}", markup=True, highlight=False)
                except KeyboardInterrupt:
                    console.print(
                        f"stopped waiting; submission #{receipt.submission_id} stays queued "
                        "(a job this command was running goes back to the queue)"
                    )
                    raise typer.Exit(130) from None
                finally:
                    for w in local:
                        w.stop(worker_settings.stop_grace_s + 5)
                details = service.submission_details(receipt.submission_id, who)
        if json_out:
            print_json(details)
        else:
            render_details(console, details)
        raise typer.Exit(0 if details.accepted else 1)
