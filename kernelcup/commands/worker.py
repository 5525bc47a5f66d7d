"""`kernelcup worker`: serve the queue (claim jobs, run them through their device's launcher, store results)."""

from __future__ import annotations

import asyncio
import logging
import signal

import typer

from kernelcup.settings import SettingsError, load
from leaderboards.worker import Worker, WorkerSettings


def setup_logging(verbose: bool = False) -> None:
    from rich.logging import RichHandler

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(message)s",
        handlers=[RichHandler(show_path=False, rich_tracebacks=False)],
        force=True,
    )
    for noisy in ("sqlalchemy", "alembic", "httpx", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


async def serve(worker: Worker, *, once: bool = False) -> int:
    """Run ``worker`` until SIGTERM/SIGINT (graceful: running jobs get the grace period, then are requeued) or,
    with ``once``, until the queue has nothing for it. A second signal stops at once (jobs are requeued)."""
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
        launcher: str = typer.Option(
            "routed",
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
        from kernelcup.commands.common import user_errors
        from kernelcup.wiring import LAUNCHER_CHOICES, build_worker, open_platform_waiting

        if launcher not in LAUNCHER_CHOICES:
            raise typer.BadParameter(f"choose one of: {', '.join(LAUNCHER_CHOICES)}", param_hint="--launcher")
        setup_logging(verbose)
        with user_errors():
            overrides = {"concurrency": concurrency} if concurrency else {}
            settings = load(WorkerSettings, **overrides)
            with open_platform_waiting(log=logging.getLogger(__name__)) as platform:
                try:
                    worker = build_worker(platform, devices=device, launcher=launcher, settings=settings)
                except ValueError as exc:  # routing settings
                    raise SettingsError(str(exc)) from None
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
