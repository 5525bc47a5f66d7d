"""`kernelcup serve`: the HTTP API on uvicorn, with a worker in the same process unless ``--no-worker``."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import tempfile
from typing import TYPE_CHECKING, Any

import typer

from kernelcup.choices import LauncherChoice

if TYPE_CHECKING:
    from web.settings import WebSettings

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
MAX_REQUEST_HEAD_BYTES = 16 * 1024
"""Request line and headers together; a longer head is refused with 400 before the app sees it."""


def serve_processes(settings: WebSettings, common: dict[str, Any]) -> None:
    """``settings.workers`` uvicorn processes of ``kernelcup.asgi:create`` on one socket, under a supervisor that
    replaces a process that exited or hung, not one that answers its health check late on a busy machine."""
    import uvicorn

    from kernelcup.commands.serve_supervisor import PatientMultiprocess

    config = uvicorn.Config("kernelcup.asgi:create", factory=True, workers=settings.workers, **common)
    sock = config.bind_socket()  # a port in use: SystemExit, as uvicorn.run
    try:
        PatientMultiprocess(config, [sock], hang_s=settings.worker_hang_s).run()
    finally:
        sock.close()


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve_cmd(
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
        port: int = typer.Option(8000, "--port", "-p", min=1, max=65535, help="Port to listen on."),
        workers: int | None = typer.Option(
            None, "--workers", min=1, max=64, help="uvicorn worker processes (default KERNELCUP_API_WORKERS, 1)."
        ),
        no_worker: bool = typer.Option(
            False, "--no-worker", help="Only the API: separate `kernelcup worker` processes serve the queue."
        ),
        launcher: LauncherChoice = typer.Option(
            LauncherChoice.ROUTED,
            "--launcher",
            help="The in-process worker's launchers: 'routed' (KERNELCUP_ROUTES, default *=local) or 'local'.",
        ),
        device: list[str] = typer.Option(
            [], "--device", "-d", help="The in-process worker serves only this device (repeatable); default: all."
        ),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging."),
    ) -> None:
        """Serve the HTTP API (docs at /api/docs) until stopped; SIGINT/SIGTERM stop it gracefully."""
        import uvicorn

        from kernelcup.commands.common import user_errors
        from kernelcup.commands.worker import refuse_missing_devices
        from kernelcup.inprocess import InProcessWorker
        from kernelcup.logs import setup_logging
        from kernelcup.settings import SettingsError, load
        from kernelcup.wiring import device_check, open_platform, reference_check, serving_worker
        from leaderboards.worker import WorkerSettings
        from web.app import create_app
        from web.settings import WebSettings

        log = logging.getLogger(__name__)
        with user_errors():
            setup_logging(verbose)
            settings = load(WebSettings, **({"workers": workers} if workers else {}))
            worker_settings = None if no_worker else load(WorkerSettings)
            with open_platform() as platform:  # the database is checked (and SQLite migrated) before listening
                background = None
                if worker_settings is not None:
                    worker = serving_worker(platform, devices=device, launcher=launcher.value, settings=worker_settings)
                    refuse_missing_devices(worker, device)
                    background = InProcessWorker(worker)
                log.info(
                    "serving the API on http://%s:%d (%d process%s)%s; database %s",
                    host,
                    port,
                    settings.workers,
                    "es" if settings.workers > 1 else "",
                    "" if background is None else f" with an in-process worker ({launcher} launchers)",
                    platform.db.engine.url.render_as_string(hide_password=True),
                )
                common: dict[str, Any] = {
                    "host": host,
                    "port": port,
                    "log_config": None,
                    "access_log": verbose,
                    "lifespan": "off",
                    # h11 bounds a request's head (httptools would buffer any size of headers): larger is refused
                    "http": "h11",
                    "h11_max_incomplete_event_size": MAX_REQUEST_HEAD_BYTES,
                }
                metrics_dir = None
                if background is not None:
                    background.start()
                # uvicorn stops on SIGINT/SIGTERM and then raises the signal again for the handler that was there
                # before it: this one, which only notes it, so the worker below still stops gracefully.
                stopped_by: list[int] = []
                previous = {sig: signal.signal(sig, lambda s, _f: stopped_by.append(s)) for sig in STOP_SIGNALS}
                try:
                    if settings.workers == 1:
                        app = create_app(
                            platform.service, settings, reference_check=reference_check, device_check=device_check()
                        )
                        uvicorn.run(app, **common)
                    else:
                        if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # one /metrics over every process
                            metrics_dir = tempfile.mkdtemp(prefix="kernelcup-metrics-")
                            os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
                        serve_processes(settings, common)
                except SystemExit as exc:  # uvicorn logs why it could not start (a port in use), then exits
                    if exc.code in (0, None):
                        raise
                    raise SettingsError(
                        f"the API did not start on {host}:{port} (the reason is logged above: a port in use needs "
                        "another --port, an address not of this machine another --host)"
                    ) from None
                finally:
                    if background is not None and worker_settings is not None:
                        log.info(
                            "stopping the in-process worker (running jobs get %.0f s)", worker_settings.stop_grace_s
                        )
                        background.stop(worker_settings.stop_grace_s + 5)
                    if metrics_dir is not None:
                        shutil.rmtree(metrics_dir, ignore_errors=True)
                    for sig, handler in previous.items():
                        signal.signal(sig, handler)
                if stopped_by:
                    log.info("stopped (%s)", signal.Signals(stopped_by[0]).name)
