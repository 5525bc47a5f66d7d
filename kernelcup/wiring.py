"""The composition root: settings -> database -> service -> launchers (router) -> worker.

The only module that knows every layer. Commands call ``open_platform`` inside their body (never at import), and
build workers with ``build_worker``. Nothing here connects anywhere until a function is called.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic_settings import BaseSettings

from kernelcup.settings import SettingsError, load
from leaderboards.db import Database, open_database
from leaderboards.problem_rules import DeviceCheck
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.sync import ReferenceCheck
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import RunRequest, RunResult
from runners.launchers import registry
from runners.launchers.base import Launcher
from runners.launchers.registry import LauncherKind
from runners.launchers.settings import LauncherSettings
from runners.routing import Route, Router, RoutingSettings
from runners.settings import RunnerSettings

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


def open_platform_waiting(core: CoreSettings | None = None, *, log: logging.Logger | None = None) -> Platform:
    """``open_platform`` for long-running processes (workers): while the database cannot be reached, wait and try
    again (backoff up to 30 s, logged) instead of exiting; a schema that is behind still stops at once."""
    from leaderboards.errors import DatabaseUnreachable
    from runners.retry import retrying

    policy = retrying(
        retry_if=lambda exc: isinstance(exc, DatabaseUnreachable),
        what="opening the database",
        first_s=1.0,
        max_s=30.0,
        log=log or logging.getLogger(__name__),
    )
    return policy(open_platform, core)


def launcher_settings(routing: RoutingSettings, runner: RunnerSettings | None = None) -> LauncherSettings:
    """The settings of every launcher kind the routes use, read now: a bad ``MODAL_*`` or ``GITHUB_*`` setting is a
    ``SettingsError`` naming it at start, not a failed job later. ``runner``: the local runner's, if already read."""
    read: dict[type[BaseSettings], BaseSettings] = {RunnerSettings: runner} if runner is not None else {}
    by_kind = {}
    for kind in _used_kinds(routing):
        if kind.settings not in read:
            read[kind.settings] = load(kind.settings)
        by_kind[kind.name] = read[kind.settings]
    return LauncherSettings(by_kind)


def _used_kinds(routing: RoutingSettings) -> list[LauncherKind]:
    return [kind for kind in registry.KINDS if kind.name in routing.kinds]


def launcher_for(
    kind: str = "routed", *, local: Launcher | None = None, runner: RunnerSettings | None = None
) -> Callable[[str], Launcher]:
    """Device name -> launcher. ``routed``: the router of ``KERNELCUP_ROUTES`` (default ``*=local``); ``local``:
    this machine's launcher for every device. ``local`` may pass a prepared local launcher (e.g. the demo's).
    Every setting the chosen launchers need is read here (``SettingsError`` naming a bad one)."""
    from runners.launchers.local import LocalLauncher
    from runners.routing import build_router

    if kind not in LAUNCHER_CHOICES:
        raise ValueError(f"unknown launcher {kind!r}; choose one of: {', '.join(LAUNCHER_CHOICES)}")
    if kind == "local":
        the_local = local if local is not None else LocalLauncher(runner or load(RunnerSettings))
        return lambda device: the_local

    routing = load(RoutingSettings)
    overrides = {LocalLauncher.name: lambda route: local} if local is not None else None
    router = build_router(routing, launcher_settings(routing, runner), overrides=overrides)
    return router.launcher_for


def checking_router() -> Router:
    """The router of ``kernelcup runners check``: there a launcher whose settings cannot be read is a failed row
    naming the variable, so every route is reported (a worker stops at start instead)."""
    from runners.routing import build_router

    routing = load(RoutingSettings)
    read: dict[type[BaseSettings], BaseSettings] = {RunnerSettings: load(RunnerSettings)}
    by_kind: dict[str, BaseSettings] = {}
    refused: dict[str, Callable[[Route], Launcher]] = {}
    for kind in _used_kinds(routing):
        try:
            if kind.settings not in read:
                read[kind.settings] = load(kind.settings)
            by_kind[kind.name] = read[kind.settings]
        except SettingsError as exc:
            refused[kind.name] = _refusing(str(exc))
    return build_router(routing, LauncherSettings(by_kind), overrides=refused)


def _refusing(message: str) -> Callable[[Route], Launcher]:
    from runners.launchers.base import LauncherError

    def refuse(route: Route) -> Launcher:
        raise LauncherError(message)

    return refuse


def build_worker(
    platform: Platform,
    *,
    devices: Sequence[str] = (),
    launcher: str = "routed",
    settings: WorkerSettings | None = None,
    submission_id: int | None = None,
    local: Launcher | None = None,
) -> Worker:
    """A worker on the platform's database serving ``devices`` (all when empty) through the chosen launchers.

    It keeps finished results in the spool folder until they are stored, and sweeps stale job folders and cgroups
    of this machine's runner at start and every ``KERNELCUP_WORKER_SWEEP_S``."""
    from leaderboards.board_hacks import HackRunner
    from leaderboards.holdout import SystemTestRunner
    from leaderboards.rejudge import RejudgeRunner
    from leaderboards.retiming import RetimeRunner
    from leaderboards.spool import ResultSpool
    from runners.cleanup import sweep

    settings = settings or load(WorkerSettings)
    runner = load(RunnerSettings)
    service = platform.service
    launchers = launcher_for(launcher, local=local, runner=runner)

    def housekeeping() -> list[str]:
        sweep(runner)
        return service.competition_tick()  # the deadline's system tests, then the final standings (issue 29)

    return Worker(
        service,
        launchers,
        settings,
        devices=devices,
        submission_id=submission_id,
        spool=ResultSpool(settings.resolved_spool_dir(platform.core.resolved_data_dir())),
        housekeeping=housekeeping,
        system_tests=SystemTestRunner(service, launchers, settings.launch_margin_s),
        hacks=HackRunner(service, launchers, settings.launch_margin_s),
        rejudges=RejudgeRunner(service, launchers, settings.launch_margin_s),
        retimings=RetimeRunner(service, launchers, settings.launch_margin_s),
    )


def reference_check() -> ReferenceCheck:
    """The reference check of ``problems validate --run`` and ``problems sync``: ``runners.entry.check_reference``
    with this machine's runner settings (it runs generate -> reference -> check in the sandbox on the CPU)."""
    from runners.entry import check_reference

    settings = load(RunnerSettings)

    def check(request: RunRequest, /) -> RunResult:
        return check_reference(request, settings=settings)

    return check


def device_check() -> DeviceCheck:
    """Device name -> why no launcher is routed for it in ``KERNELCUP_ROUTES`` (None when one is)."""
    from runners.launchers.base import LauncherError

    router = Router(routes=load(RoutingSettings).table, factories={})  # routes only: no launcher is built here

    def check(device: str) -> str | None:
        try:
            router.route_for(device)
        except LauncherError as exc:
            return str(exc)
        return None

    return check


def serving_worker(platform: Platform, *, devices: Sequence[str], launcher: str, settings: WorkerSettings) -> Worker:
    """The worker that ``kernelcup bot`` and ``kernelcup serve`` run in their own process; a routing setting
    that cannot be read is a ``SettingsError`` naming it."""
    if launcher not in LAUNCHER_CHOICES:
        raise SettingsError(f"--launcher must be one of: {', '.join(LAUNCHER_CHOICES)} (not {launcher!r})")
    try:
        return build_worker(platform, devices=devices, launcher=launcher, settings=settings)
    except ValueError as exc:  # routing settings
        raise SettingsError(str(exc)) from None
