"""Which launcher runs which device: the ``KERNELCUP_ROUTES`` setting and the router built from it.

``KERNELCUP_ROUTES`` is a comma-separated list of ``DEVICE=LAUNCHER[:TARGET]``::

    KERNELCUP_ROUTES="H100=modal:H100,A100=modal:A100,NVIDIA=github:gpu-nvidia,cpu=local"

- ``local`` runs on this machine (no target);
- ``modal:GPU`` runs on the deployed Modal app's function for that GPU (``modal`` alone: the device name);
- ``github:LABEL[+LABEL...]`` dispatches the workflow to a self-hosted runner carrying those labels
  (``github`` alone: the device name, lower-cased).

Device names match case-insensitively; ``*`` matches every device no other route names. The default,
``*=local``, runs everything here. A device with no route is refused with a message naming the setting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from runners.launchers.base import Launcher, LauncherError
from runners.launchers.settings import LauncherSettings

SETTING = "KERNELCUP_ROUTES"
DEFAULT_ROUTES = "*=local"
KINDS = ("local", "modal", "github")
S = TypeVar("S")


@dataclass(frozen=True)
class Route:
    device: str
    kind: str
    target: str = ""

    @property
    def launcher_name(self) -> str:
        return f"{self.kind}:{self.target}" if self.target else self.kind

    def __str__(self) -> str:
        return f"{self.device}={self.launcher_name}"


def parse_routes(text: str) -> tuple[Route, ...]:
    """Parse ``KERNELCUP_ROUTES``; ``ValueError`` says which entry is wrong and what was expected."""
    from runners.devices import device_gpus
    from runners.launchers.modal import modal_gpu_for  # no modal import: just the table of GPUs

    routes: list[Route] = []
    seen: set[str] = set()
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        device, sep, spec = (part.strip() for part in entry.partition("="))
        if not sep or not device or not spec:
            raise ValueError(f"entry {entry!r} is not DEVICE=LAUNCHER[:TARGET] (e.g. H100=modal:H100)")
        kind, _, target = (part.strip() for part in spec.partition(":"))
        kind = kind.lower()
        if kind not in KINDS:
            raise ValueError(f"entry {entry!r}: unknown launcher {kind!r}; expected one of {', '.join(KINDS)}")
        if kind == "local" and target:
            raise ValueError(f"entry {entry!r}: the local launcher takes no target (write {device}=local)")
        if kind == "modal":
            target = modal_gpu_for(target or device, entry=entry)
            if device != "*" and device_gpus(device) != device_gpus(target):
                raise ValueError(
                    f"entry {entry!r}: {device} runs {device_gpus(device)} rank(s), one per GPU, and Modal's function "
                    f"for {target} has {device_gpus(target)} GPU(s); route it to a function of as many "
                    f"(e.g. {device}=modal:{device})"
                )
        if kind == "github":
            if device == "*" and not target:
                raise ValueError(f"entry {entry!r}: '*' needs a runner label (e.g. *=github:gpu-nvidia)")
            target = target or device.lower()
            if any(not label or label != label.strip() or '"' in label for label in target.split("+")):
                raise ValueError(f"entry {entry!r}: runner labels are LABEL[+LABEL...] without quotes or blanks")
        key = device.casefold()
        if key in seen:
            raise ValueError(f"device {device!r} is routed twice")
        seen.add(key)
        routes.append(Route(device=device, kind=kind, target=target))
    if not routes:
        raise ValueError(f"no routes; the default is {DEFAULT_ROUTES!r}")
    return tuple(routes)


class RoutingSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    routes: str = Field(
        default=DEFAULT_ROUTES,
        validation_alias=SETTING,
        description="DEVICE=LAUNCHER[:TARGET],... e.g. H100=modal:H100,NVIDIA=github:gpu-nvidia,cpu=local",
    )

    @field_validator("routes")
    @classmethod
    def _parses(cls, v: str) -> str:
        parse_routes(v)
        return v

    @property
    def table(self) -> tuple[Route, ...]:
        return parse_routes(self.routes)

    @property
    def kinds(self) -> frozenset[str]:
        """The launcher kinds the routes use (their settings are loaded at start, and only theirs)."""
        return frozenset(route.kind for route in self.table)


LauncherFactory = Callable[[Route], Launcher]


@dataclass(frozen=True)
class CheckRow:
    """One line of `kernelcup runners check`."""

    route: Route
    ok: bool
    message: str


@dataclass
class Router:
    """Maps a device name to its launcher; launchers are built on first use and shared by routes alike."""

    routes: tuple[Route, ...]
    factories: dict[str, LauncherFactory]
    _launchers: dict[str, Launcher] = field(default_factory=dict, repr=False)

    def route_for(self, device: str) -> Route:
        wanted = device.casefold()
        for route in self.routes:
            if route.device.casefold() == wanted:
                return route
        for route in self.routes:
            if route.device == "*":
                return route
        known = ", ".join(r.device for r in self.routes)
        raise LauncherError(
            f"no launcher is routed for device {device!r} (routed: {known}); add {device}=LAUNCHER[:TARGET] "
            f"or a '*' entry to {SETTING}"
        )

    def launcher_for(self, device: str) -> Launcher:
        return self.launcher_for_route(self.route_for(device))

    def launcher_for_route(self, route: Route) -> Launcher:
        name = route.launcher_name
        if name not in self._launchers:
            factory = self.factories.get(route.kind)
            if factory is None:
                raise LauncherError(f"launcher {route.kind!r} is not available in this process (route {route})")
            self._launchers[name] = factory(route)
        return self._launchers[name]

    async def check(self, limit_s: float = 15.0) -> list[CheckRow]:
        """Check every route's launcher concurrently, each within ``limit_s`` seconds; never raises."""

        async def one(route: Route) -> CheckRow:
            try:
                launcher = self.launcher_for_route(route)
                message = await asyncio.wait_for(launcher.check(), limit_s)
            except TimeoutError:
                return CheckRow(route, False, f"no answer within {limit_s:g} s (network down or blocked?)")
            except Exception as exc:  # a check reports, it never crashes the table
                return CheckRow(route, False, str(exc) or type(exc).__name__)
            return CheckRow(route, True, message)

        return list(await asyncio.gather(*(one(r) for r in self.routes)))


def _local(route: Route, settings: LauncherSettings) -> Launcher:
    from runners.launchers.local import LocalLauncher

    return LocalLauncher(settings.runner)


def _modal(route: Route, settings: LauncherSettings) -> Launcher:
    from runners.launchers.modal import ModalLauncher

    return ModalLauncher(_needed(settings.modal, route, "MODAL_*"), gpu=route.target)


def _github(route: Route, settings: LauncherSettings) -> Launcher:
    from runners.launchers.github import GithubLauncher

    return GithubLauncher(_needed(settings.github, route, "GITHUB_*"), labels=route.target)


def _needed(settings: S | None, route: Route, what: str) -> S:
    if settings is None:  # the composition root loads the settings of every kind the routes name
        raise LauncherError(f"route {route} needs the {what} settings, and none were given to the router")
    return settings


def build_router(
    settings: RoutingSettings,
    launchers: LauncherSettings,
    *,
    local: LauncherFactory | None = None,
    modal: LauncherFactory | None = None,
    github: LauncherFactory | None = None,
) -> Router:
    """The router for ``settings``. Factories default to the real launchers, built on first use from
    ``launchers`` (loaded by the composition root: a bad setting has failed before this); nothing connects here."""
    return Router(
        routes=settings.table,
        factories={
            "local": local or (lambda route: _local(route, launchers)),
            "modal": modal or (lambda route: _modal(route, launchers)),
            "github": github or (lambda route: _github(route, launchers)),
        },
    )
