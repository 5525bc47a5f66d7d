"""The CLI's fixed choices as enums, so ``--help`` and shell completion list them.

This module imports nothing but the standard library: Typer reads command signatures when the CLI is built, and
``kernelcup --help`` must not import pydantic, the database layer or the runner to show them. The values mirror
``runners.contract.Mode`` and ``kernelcup.wiring.LAUNCHER_CHOICES``; ``tests/kernelcup/test_cli_conventions.py``
checks that they do.
"""

from __future__ import annotations

import enum


class ModeChoice(enum.StrEnum):
    """``--mode``: the same values as ``runners.contract.Mode``, and ``leaderboard``, popcorn-cli's name of ranked."""

    TEST = "test"
    BENCHMARK = "benchmark"
    RANKED = "ranked"
    PROFILE = "profile"
    LEADERBOARD = "leaderboard"

    @property
    def mode(self) -> str:
        """The ``runners.contract.Mode`` value this choice runs (``leaderboard`` runs ``ranked``)."""
        return ModeChoice.RANKED.value if self is ModeChoice.LEADERBOARD else self.value


class LangChoice(enum.StrEnum):
    """``kernelcup run --lang``: the same values as ``runners.contract.Language``."""

    PY = "py"
    CU = "cu"
    CUTLASS = "cutlass"
    TK = "tk"
    HELION = "helion"
    TILELANG = "tilelang"
    CUTE_DSL = "cute-dsl"


class RunDevice(enum.StrEnum):
    """``kernelcup run --device``: this machine's GPU (through CUDA) or its CPU."""

    CUDA = "cuda"
    CPU = "cpu"


class LauncherChoice(enum.StrEnum):
    """``--launcher`` of ``worker``, ``bot`` and ``serve``: ``routed`` follows KERNELCUP_ROUTES; ``local`` runs
    every device on this machine."""

    ROUTED = "routed"
    LOCAL = "local"


class SchemaChoice(enum.StrEnum):
    """``kernelcup schema``: which JSON Schema to print."""

    TASK = "task"
    RESULT = "result"
