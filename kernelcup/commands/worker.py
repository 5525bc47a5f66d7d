"""`kernelcup worker`: serve the queue (claim jobs, run them through their device's launcher, store results)."""

from __future__ import annotations

import logging
import signal
from typing import TYPE_CHECKING

import typer

from kernelcup.choices import LauncherChoice

if TYPE_CHECKING:
    from leaderboards.worker import Worker


def refuse_missing_devices(worker: Worker, devices: list[str]) -> None:
    """Refuse to start serving a device whose launcher runs here when this machine lacks it (no GPU, or another
    model): a ``SettingsError`` naming what it has and what to do, before any job is claimed."""
    from kernelcup.settings import SettingsError
    from runners.launchers.base import LauncherError

    for device in devices:
        try:
            launcher = worker.launcher_for(device)
        except (LauncherError, ValueError):
            continue  # an unrouted device: its jobs fail with the routing message
        problem = launcher.cannot_serve(device)
        if problem is not None:
            raise SettingsError(f"cannot serve --device {device}: {problem}")


async def serve(worker: Worker, *, once: bool = False) -> int:
    """Run ``worker`` until SIGTERM/SIGINT (graceful: running jobs get the grace period, then are requeued) or,
    with ``once``, until the queue has nothing for it. A second signal stops at once (jobs are requeued)."""
    import asyncio

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    main = asyncio.current_task()
    signals = 0

    def on_signal(signum: int) -> None:
        nonlocal signals
        signals += 1
        if signals == 1:
            logging.getLogger(__name__).info(
                "%s: finishing running jobs (up to %.0f s), then stopping; send it again to stop now",
                signal.Signals(signum).name,
                worker.settings.stop_grace_s,
            )
            stop.set()
        elif main is not None:
            main.cancel()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        await worker.run(stop, once=once)
    except asyncio.CancelledError:
        return 130
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return 0


def register(app: typer.Typer) -> None:
    @app.command("worker")
    def worker_cmd(
        device: list[str] = typer.Option(
            [], "--device", "-d", help="Serve only jobs for this device (repeatable); default: every device."
        ),
        launcher: LauncherChoice = typer.Option(
            LauncherChoice.ROUTED,
            "--launcher",
            help="'routed': each device's launcher from KERNELCUP_ROUTES (default *=local); 'local': run every "
            "job on this machine.",
        ),
        once: bool = typer.Option(False, "--once", help="Serve what is queued now, then exit."),
        concurrency: int | None = typer.Option(
            None, "--concurrency", "-c", min=1, help="Jobs at once (default KERNELCUP_WORKER_CONCURRENCY, 1)."
        ),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
    ) -> None:
        """Serve queued jobs until stopped (SIGTERM/SIGINT stop gracefully)."""
        import asyncio

        from kernelcup.commands.common import user_errors
        from kernelcup.logs import setup_logging
        from kernelcup.settings import SettingsError, load
        from kernelcup.wiring import build_worker, open_platform_waiting
        from leaderboards.worker import WorkerSettings

        with user_errors():
            setup_logging(verbose)
            overrides = {"concurrency": concurrency} if concurrency else {}
            settings = load(WorkerSettings, **overrides)
            with open_platform_waiting(log=logging.getLogger(__name__)) as platform:
                try:
                    worker = build_worker(platform, devices=device, launcher=launcher.value, settings=settings)
                except ValueError as exc:  # routing settings
                    raise SettingsError(str(exc)) from None
                refuse_missing_devices(worker, device)
                logging.getLogger(__name__).info(
                    "worker %s serving %s through %s launchers, %d at a time (database %s)",
                    worker.worker_id,
                    ", ".join(device) or "every device",
                    launcher,
                    settings.concurrency,
                    platform.db.engine.url.render_as_string(hide_password=True),
                )
                code = asyncio.run(serve(worker, once=once))
        raise typer.Exit(code)
