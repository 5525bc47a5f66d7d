"""`kernelcup bot`: the Discord bot, with a worker in the same process unless ``--no-worker``."""

from __future__ import annotations

import logging

import typer

from kernelcup.choices import LauncherChoice


def register(app: typer.Typer) -> None:
    @app.command("bot")
    def bot_cmd(
        no_worker: bool = typer.Option(
            False, "--no-worker", help="Only the bot: separate `kernelcup worker` processes serve the queue."
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
        """Run the Discord bot (DISCORD_TOKEN) until stopped; SIGINT/SIGTERM stop it gracefully."""
        import asyncio

        from bot.run import BotStartError, run_bot
        from bot.settings import BotSettings
        from kernelcup.commands.common import user_errors
        from kernelcup.commands.worker import refuse_missing_devices
        from kernelcup.logs import setup_logging
        from kernelcup.settings import SettingsError, load
        from kernelcup.wiring import device_check, open_platform, reference_check, serving_worker
        from leaderboards.worker import WorkerSettings

        with user_errors():
            setup_logging(verbose)
            # Everything that can be wrong before Discord is asked: the token's presence, the worker's settings,
            # the database. Each ends the command at once with a message naming what to fix.
            settings = load(BotSettings)
            worker_settings = None if no_worker else load(WorkerSettings)
            with open_platform() as platform:
                worker = None
                if worker_settings is not None:
                    worker = serving_worker(platform, devices=device, launcher=launcher.value, settings=worker_settings)
                    refuse_missing_devices(worker, device)
                logging.getLogger(__name__).info(
                    "starting the Discord bot%s (database %s)",
                    "" if worker is None else f" with an in-process worker ({launcher} launchers)",
                    platform.db.engine.url.render_as_string(hide_password=True),
                )
                # /admin sync checks a set as `kernelcup problems sync` does: devices against the routes, and (built
                # when an admin syncs, unless skip_run) each new or changed problem's reference in the sandbox.
                checks = {"reference_check": reference_check, "device_check": device_check()}
                try:
                    asyncio.run(run_bot(platform.service, settings, worker=worker, **checks))
                except BotStartError as exc:
                    raise SettingsError(str(exc)) from None
