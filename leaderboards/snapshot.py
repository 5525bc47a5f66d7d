"""The task snapshot a leaderboard stores, and the fingerprint of what makes its scores comparable.

A leaderboard keeps a copy of its problem (task.yml as JSON, every file that travels, the templates), so runs
never depend on the problem folder still being there or unchanged. ``TaskSnapshot`` declares that copy once: it is
built from a problem (``snapshot``), written to the leaderboard row as plain JSON (``TaskSnapshot.stored``, the
format every existing database holds) and read back from the row with ``TaskSnapshot.load``, under the rules of the
day it was stored (``problems.STORED``). Code reads its attributes, never the JSON's keys.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from leaderboards.problems import STORED, Problem, Task

RESTORE_HINT = "sync its problem again with `kernelcup problems sync <set.yaml> --force` to store a readable copy"


class SnapshotError(ValueError):
    """A leaderboard's stored snapshot that does not read as one (a row edited by hand, or cut short). Its message
    names each field and what is wrong with it, never the stored values: they hold the held-out cases and the
    reference. Not a ``UserError``: the row is the server's, and no competitor can cause or fix it."""


class TaskSnapshot(BaseModel):
    """What a leaderboard stores of its problem when it is created, and again when a sync changes the problem."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    problem: str = Field(description="The problem folder's name (its path's last part), shown with every run.")
    task: Task = Field(
        repr=False,  # the held-out cases: never in a log line that prints a snapshot
        description="task.yml as validated, read back under the rules of the day it was stored (problems.STORED).",
    )
    files: dict[str, str] = Field(
        repr=False, description="The text of every file that travels with a run (task.files, _lib/ bundled in)."
    )
    templates: dict[str, str] = Field(
        default_factory=dict,
        repr=False,
        description="The starter files' text by template label (task.templates names their paths); a row without "
        "the key reads as none.",
    )

    @classmethod
    def of(cls, problem: Problem) -> TaskSnapshot:
        """The snapshot of a loaded, validated problem (its task is kept as it is, not validated again)."""
        return cls(
            problem=problem.name, task=problem.task, files=dict(problem.files), templates=dict(problem.templates)
        )

    @classmethod
    def load(cls, stored: Mapping[str, Any]) -> TaskSnapshot:
        """The snapshot a leaderboard row stores (``Leaderboard.task``), as written by this or any earlier version.
        Raises ``SnapshotError`` naming each field that does not read and how to store the snapshot again."""
        try:
            return cls.model_validate(stored, context=STORED)
        except ValidationError as exc:  # (from None: the error's repr quotes the stored values, held-out cases too)
            raise SnapshotError(
                f"a leaderboard's stored task snapshot does not read ({_fields(exc)}): {RESTORE_HINT}"
            ) from None

    def stored(self) -> dict[str, Any]:
        """The JSON a leaderboard row stores: {'problem', 'task' (task.yml as JSON), 'files', 'templates'}."""
        return self.model_dump(mode="json")

    def with_task(self, **changes: Any) -> TaskSnapshot:
        """This snapshot with the task.yml fields ``changes`` replaced, validated as a stored one (an added held-out
        case, say). Raises ``SnapshotError`` where the task would not read (``holdout_timed`` with an unseeded case)."""
        return TaskSnapshot.load({**self.stored(), "task": {**self.task.model_dump(mode="json"), **changes}})

    def to_problem(self) -> Problem:
        """The problem a run is built from (``Problem.request``): no folder is read."""
        return Problem(path=Path(self.problem), task=self.task, files=dict(self.files), templates=dict(self.templates))


def _fields(exc: ValidationError) -> str:
    """Each error's place and message, without the input pydantic would quote."""
    shown = [
        f"{'.'.join(str(part) for part in error['loc']) or 'the snapshot'}: {error['msg']}"
        for error in exc.errors(include_url=False, include_input=False, include_context=False)[:5]
    ]
    more = exc.error_count() - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def snapshot(problem: Problem) -> TaskSnapshot:
    return TaskSnapshot.of(problem)


def problem_from_snapshot(stored: Mapping[str, Any]) -> Problem:
    """The problem of a leaderboard row's stored snapshot (``Leaderboard.task``). Raises ``SnapshotError``."""
    return TaskSnapshot.load(stored).to_problem()


def _comparable_parts(snap: TaskSnapshot) -> dict[str, Any]:
    # The keys and values hashed are those of the stored JSON: a fingerprint is what it was before the model.
    task = snap.task
    parts: dict[str, Any] = {
        "files": snap.files,
        "benchmarks": task.benchmarks,
        "lang": task.lang.value,
        "ranking_by": task.ranking_by.value,
    }
    if task.world_size != 1:  # the ranks a run has where its device names no GPU count (the CPU)
        parts["world_size"] = task.world_size  # (absent at 1: a one-GPU problem's fingerprint is what it was)
    return parts


def fingerprint(snap: TaskSnapshot) -> str:
    """A hash of the reference files, benchmark cases, language, ranking rule and world size (not tests or
    description)."""
    blob = json.dumps(_comparable_parts(snap), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def incomparable_changes(old: TaskSnapshot, new: TaskSnapshot) -> list[str]:
    """Why scores under ``old`` cannot be compared with scores under ``new``; empty when they can."""
    a, b = old.task, new.task
    reasons = []
    names = set(old.files) | set(new.files)
    changed_files = sorted(f for f in names if old.files.get(f) != new.files.get(f))
    if changed_files:
        reasons.append(f"reference files changed: {', '.join(changed_files)}")
    if a.benchmarks != b.benchmarks:
        reasons.append("benchmark cases changed")
    if a.lang != b.lang:
        reasons.append(f"language changed from {a.lang.value} to {b.lang.value}")
    if a.ranking_by != b.ranking_by:
        reasons.append(f"ranking rule changed from {a.ranking_by.value} to {b.ranking_by.value}")
    if a.world_size != b.world_size:
        reasons.append(f"world size changed from {a.world_size} to {b.world_size} ranks")
    return reasons


def template_file_name(snap: TaskSnapshot, label: str) -> str:
    """The file name a template is offered under (its name in the problem folder)."""
    rel = snap.task.templates.get(label, f"{label}.txt")
    return PurePosixPath(rel).name
