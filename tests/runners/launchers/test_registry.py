"""The launcher seams: one registry row per kind of route, and capabilities declared on the base class."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from kernelcup import wiring
from leaderboards.worker import launch_timeout_s
from runners.contract import RunRequest, RunResult
from runners.launchers import registry
from runners.launchers.base import JobHandle, Launcher
from runners.launchers.fake import FakeLauncher
from runners.launchers.registry import LauncherKind
from runners.routing import RoutingSettings, parse_routes

ROOT = Path(__file__).resolve().parents[3]


class QueueSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="QUEUE_", extra="ignore")

    cluster: str = Field(default="")


class QueueLauncher(Launcher):
    """A launcher of a kind the project does not ship: it submits to a batch queue (here: answers like the fake)."""

    def __init__(self, settings: QueueSettings, partition: str) -> None:
        self.settings = settings
        self.name = f"queue:{partition}"

    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        return await FakeLauncher(name=self.name).run(request, job)

    async def check(self) -> str:
        return f"{self.name}: cluster {self.settings.cluster}"


def _partition(device: str, target: str, entry: str) -> str:
    if not target:
        raise ValueError(f"entry {entry!r}: the queue launcher needs a partition (e.g. {device}=queue:gpu)")
    return target


QUEUE = LauncherKind("queue", QueueSettings, QueueLauncher, _partition)


def test_a_new_kind_is_one_row_and_is_routable_end_to_end(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "KINDS", (*registry.KINDS, QUEUE))
    monkeypatch.setenv("KERNELCUP_ROUTES", "H100=queue:gpu-h100,cpu=local")
    monkeypatch.setenv("QUEUE_CLUSTER", "read-at-start")
    monkeypatch.chdir(ROOT / "tests")  # no .env

    launcher_for = wiring.launcher_for("routed")  # the composition root reads the new kind's settings too
    launcher = launcher_for("h100")
    assert isinstance(launcher, QueueLauncher) and launcher.name == "queue:gpu-h100"
    assert launcher.settings.cluster == "read-at-start"
    with pytest.raises(ValueError, match=r"'H100=queue': the queue launcher needs a partition"):
        parse_routes("H100=queue")
    with pytest.raises(ValueError, match="expected one of local, modal, github, queue"):
        parse_routes("H100=slurm")


def test_a_kind_not_registered_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown launcher 'queue'; expected one of local, modal, github$"):
        parse_routes("H100=queue:gpu")
    with pytest.raises(ValueError, match="unknown launcher 'queue'"):
        RoutingSettings(_env_file=None, KERNELCUP_ROUTES="H100=queue:gpu")


def test_a_launcher_that_declares_nothing_gets_the_safe_defaults(make_request: Callable[..., RunRequest]) -> None:
    """Not trusted with unsandboxed results, given no extra time, refusing no device."""
    launcher = QueueLauncher(QueueSettings(_env_file=None), "gpu")
    assert launcher.allows_unsandboxed is False
    assert launcher.wait_margin_s == 0.0
    assert launcher.cannot_serve("H100") is None
    request = make_request()
    assert launch_timeout_s(request, 30.0, launcher) == request.time_limit_s() + 30.0


def _capabilities() -> set[str]:
    """What the core asks a launcher beyond run and check: the members the base class gives a default."""
    abstract = Launcher.__abstractmethods__
    return {name for name in vars(Launcher) if not name.startswith("_") and name not in abstract} - {"name"}


def test_every_capability_is_declared_on_the_base_and_never_read_with_getattr() -> None:
    assert _capabilities() == {"allows_unsandboxed", "wait_margin_s", "cannot_serve"}
    found = []
    for layer in ("leaderboards", "runners", "kernelcup", "bot", "web"):
        for path in (ROOT / layer).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in {"getattr", "hasattr"}
                    and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in _capabilities()
                ):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [], f"read a declared launcher capability as an attribute instead: {found}"


@pytest.mark.parametrize("kind", registry.KINDS, ids=lambda kind: kind.name)
def test_every_shipped_kind_builds_a_launcher_of_the_base_from_its_settings(kind: LauncherKind) -> None:
    settings = kind.settings(_env_file=None)
    launcher = kind.build(settings, kind.target("H100", "", f"H100={kind.name}"))
    assert isinstance(launcher, Launcher) and launcher.name.startswith(kind.name)
    assert getattr(launcher, "settings", None) is settings, "the launcher reads nothing itself: it gets the row's"
