"""Which launcher runs which device: the ``KERNELCUP_ROUTES`` setting and the router built from it.

``KERNELCUP_ROUTES`` is a comma-separated list of ``DEVICE=LAUNCHER[:TARGET]``::

    KERNELCUP_ROUTES="H100=modal:H100,A100=modal:A100,NVIDIA=github:gpu-nvidia,cpu=local"

- ``local`` runs on this machine (no target);
- ``modal:GPU`` runs on the deployed Modal app's function for that GPU (``modal`` alone: the device name);
- ``github:LABEL[+LABEL...]`` dispatches the workflow to a self-hosted runner carrying those labels
  (``github`` alone: the device name, lower-cased).

Each kind is one row of ``runners/launchers/registry.py``. Device names match case-insensitively; ``*`` matches
every device no other route names. The default, ``*=local``, runs everything here. A device with no route is
refused with a message naming the setting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from runners.launchers import registry
from runners.launchers.base import Launcher, LauncherError
from runners.launchers.registry import LauncherKind
from runners.launchers.settings import LauncherSettings

SETTING = "KERNELCUP_ROUTES"
DEFAULT_ROUTES = "*=local"


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
    """Parse ``KERNELCUP_ROUTES`` against the kinds of ``registry.KINDS``; ``ValueError`` says which entry is wrong
    and what was expected."""
    routes: list[Route] = []
    seen: set[str] = set()
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        device, sep, spec = (part.strip() for part in entry.partition("="))
        if not sep or not device or not spec:
            raise ValueError(f"entry {entry!r} is not DEVICE=LAUNCHER[:TARGET] (e.g. H100=modal:H100)")
        name, _, target = (part.strip() for part in spec.partition(":"))
        kind = registry.kind_named(name.lower())
        if kind is None:
            known = ", ".join(registry.kind_names())
            raise ValueError(f"entry {entry!r}: unknown launcher {name.lower()!r}; expected one of {known}")
        target = kind.target(device, target, entry)
        key = device.casefold()
        if key in seen:
            raise ValueError(f"device {device!r} is routed twice")
        seen.add(key)
        routes.append(Route(device=device, kind=kind.name, target=target))
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


def _built(kind: LauncherKind, launchers: LauncherSettings) -> LauncherFactory:
    """The factory of ``kind``'s launchers, from its settings in ``launchers``."""

    def build(route: Route) -> Launcher:
        settings = launchers.by_kind.get(kind.name)
        if settings is None:  # the composition root loads the settings of every kind the routes name
            raise LauncherError(
                f"route {route} needs the {kind.settings_hint} settings, and none were given to the router"
            )
        return kind.build(settings, route.target)

    return build


def build_router(
    settings: RoutingSettings, launchers: LauncherSettings, *, overrides: Mapping[str, LauncherFactory] | None = None
) -> Router:
    """The router for ``settings``: a factory per kind of ``registry.KINDS``, building the real launchers on first
    use from ``launchers`` (loaded by the composition root: a bad setting has failed before this), unless
    ``overrides`` gives a kind's own; nothing connects here."""
    overrides = overrides or {}
    return Router(
        routes=settings.table,
        factories={kind.name: overrides.get(kind.name) or _built(kind, launchers) for kind in registry.KINDS},
    )
