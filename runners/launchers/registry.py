"""The kinds of launcher a route may name (``KERNELCUP_ROUTES``' ``DEVICE=KIND[:TARGET]``), one row each.

A row says everything the router and the composition root need of a kind: its name, the settings model read at
start when a route uses it, the factory that builds its launcher from those settings and the route's target, and
the rule that checks and completes the target. A new launcher is its module plus one row in ``KINDS``; nothing
else spells the kinds. Factories import their launcher's module when first called, so reading the routes imports
no cloud client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_settings import BaseSettings

from runners.launchers.base import Launcher
from runners.launchers.settings import GithubSettings, ModalSettings
from runners.settings import RunnerSettings


@dataclass(frozen=True)
class LauncherKind:
    """One kind of launcher: one row of ``KINDS``."""

    name: str
    settings: type[BaseSettings]
    """Read by the composition root at start when a route uses this kind (a bad value stops the process there)."""
    build: Callable[[Any, str], Launcher]
    """(its settings, the route's target) -> the launcher; built on the first job that needs it."""
    target: Callable[[str, str, str], str]
    """(device, target as written, the whole entry) -> the route's target; a ``ValueError`` names what is wrong."""

    @property
    def settings_hint(self) -> str:
        """How error messages name the kind's settings, e.g. ``MODAL_*``."""
        return f"{self.settings.model_config.get('env_prefix', '')}*"


def _local(settings: RunnerSettings, target: str) -> Launcher:
    from runners.launchers.local import LocalLauncher

    return LocalLauncher(settings)


def _local_target(device: str, target: str, entry: str) -> str:
    if target:
        raise ValueError(f"entry {entry!r}: the local launcher takes no target (write {device}=local)")
    return ""


def _modal(settings: ModalSettings, target: str) -> Launcher:
    from runners.launchers.modal import ModalLauncher

    return ModalLauncher(settings, gpu=target)


def _modal_target(device: str, target: str, entry: str) -> str:
    """The Modal function's GPU (the device's name when none is written), with as many GPUs as the device."""
    from runners.devices import device_gpus
    from runners.launchers.modal import modal_gpu_for  # no modal import: just the table of GPUs

    gpu = modal_gpu_for(target or device, entry=entry)
    if device != "*" and device_gpus(device) != device_gpus(gpu):
        raise ValueError(
            f"entry {entry!r}: {device} runs {device_gpus(device)} rank(s), one per GPU, and Modal's function "
            f"for {gpu} has {device_gpus(gpu)} GPU(s); route it to a function of as many "
            f"(e.g. {device}=modal:{device})"
        )
    return gpu


def _github(settings: GithubSettings, target: str) -> Launcher:
    from runners.launchers.github import GithubLauncher

    return GithubLauncher(settings, labels=target)


def _github_target(device: str, target: str, entry: str) -> str:
    """The self-hosted runner's labels, ``LABEL[+LABEL...]`` (the device's name, lower-cased, when none is written)."""
    if device == "*" and not target:
        raise ValueError(f"entry {entry!r}: '*' needs a runner label (e.g. *=github:gpu-nvidia)")
    labels = target or device.lower()
    if any(not label or label != label.strip() or '"' in label for label in labels.split("+")):
        raise ValueError(f"entry {entry!r}: runner labels are LABEL[+LABEL...] without quotes or blanks")
    return labels


KINDS: tuple[LauncherKind, ...] = (
    LauncherKind("local", RunnerSettings, _local, _local_target),
    LauncherKind("modal", ModalSettings, _modal, _modal_target),
    LauncherKind("github", GithubSettings, _github, _github_target),
)
"""Every kind a route may name, in the order error messages list them."""


def kind_names() -> tuple[str, ...]:
    return tuple(kind.name for kind in KINDS)


def kind_named(name: str) -> LauncherKind | None:
    return next((kind for kind in KINDS if kind.name == name), None)
