"""The composition root: settings -> database -> service -> launchers (router) -> worker.

The only module that knows every layer. Commands call ``open_platform`` inside their body (never at import), and
build workers with ``build_worker``. Nothing here connects anywhere until a function is called.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernelcup.settings import SettingsError, load
from leaderboards.db import Database, open_database
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.base import Launcher

LAUNCHER_CHOICES = ("routed", "local")
"""``kernelcup worker --launcher``: ``routed`` follows KERNELCUP_ROUTES; ``local`` runs every device here."""


@dataclass
class Platform:
    """What a command needs: the core settings, the open database and the service on it."""

    core: CoreSettings
    db: Database
    service: LeaderboardService

    def close(self) -> None:
        self.db.dispose()

    def __enter__(self) -> Platform:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_platform(core: CoreSettings | None = None, *, migrate: bool | None = None) -> Platform:
    """Read the core settings (unless given), open and check the database, build the service."""
    core = core or load(CoreSettings)
    db = open_database(core, migrate=migrate)
    return Platform(core=core, db=db, service=LeaderboardService(db, core))


def launcher_for(kind: str = "routed", *, local: Launcher | None = None) -> Callable[[str], Launcher]:
    """Device name -> launcher. ``routed``: the router of ``KERNELCUP_ROUTES`` (default ``*=local``); ``local``:
    this machine's launcher for every device. ``local`` may pass a prepared local launcher (e.g. the demo's)."""
    if kind not in LAUNCHER_CHOICES:
        raise ValueError(f"unknown launcher {kind!r}; choose one of: {', '.join(LAUNCHER_CHOICES)}")
    if kind == "local":
        if local is None:
            from runners.launchers.local import LocalLauncher
            from runners.settings import RunnerSettings

            local = LocalLauncher(load(RunnerSettings))
        the_local = local
        return lambda device: the_local

    from runners.routing import RoutingSettings, build_router

    routing = load(RoutingSettings)
    router = build_router(routing, local=(lambda route: local) if local is not None else None)
    return router.launcher_for


def build_worker(
    platform: Platform,
    *,
    devices: Sequence[str] = (),
    launcher: str = "routed",
    settings: WorkerSettings | None = None,
    submission_id: int | None = None,
    local: Launcher | None = None,
) -> Worker:
    """A worker on the platform's database serving ``devices`` (all when empty) through the chosen launchers."""
    settings = settings or load(WorkerSettings)
    return Worker(
        platform.service,
        launcher_for(launcher, local=local),
        settings,
        devices=devices,
        submission_id=submission_id,
    )


def serving_worker(platform: Platform, *, devices: Sequence[str], launcher: str, settings: WorkerSettings) -> Worker:
    """The worker that ``kernelcup bot`` and ``kernelcup serve`` run in their own process; a routing setting
    that cannot be read is a ``SettingsError`` naming it."""
    if launcher not in LAUNCHER_CHOICES:
        raise SettingsError(f"--launcher must be one of: {', '.join(LAUNCHER_CHOICES)} (not {launcher!r})")
    try:
        return build_worker(platform, devices=devices, launcher=launcher, settings=settings)
    except ValueError as exc:  # routing settings
        raise SettingsError(str(exc)) from None
