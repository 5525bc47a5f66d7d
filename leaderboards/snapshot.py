"""The task snapshot a leaderboard stores, and the fingerprint of what makes its scores comparable.

A leaderboard keeps a copy of its problem (task.yml as JSON, every file that travels, the templates), so runs
never depend on the problem folder still being there or unchanged.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any

from leaderboards.problems import STORED, Problem, Task


def snapshot(problem: Problem) -> dict[str, Any]:
    return problem.snapshot()


def problem_from_snapshot(snap: dict[str, Any]) -> Problem:
    return Problem(
        path=Path(snap["problem"]),
        task=Task.model_validate(snap["task"], context=STORED),
        files=dict(snap["files"]),
        templates=dict(snap.get("templates", {})),
    )


def _comparable_parts(snap: dict[str, Any]) -> dict[str, Any]:
    task = snap["task"]
    parts = {
        "files": snap["files"],
        "benchmarks": task["benchmarks"],
        "lang": task["lang"],
        "ranking_by": task["ranking_by"],
    }
    if task.get("world_size", 1) != 1:  # the ranks a run has where its device names no GPU count (the CPU)
        parts["world_size"] = task["world_size"]  # (absent at 1: a one-GPU problem's fingerprint is what it was)
    return parts


def fingerprint(snap: dict[str, Any]) -> str:
    """A hash of the reference files, benchmark cases, language, ranking rule and world size (not tests or
    description)."""
    blob = json.dumps(_comparable_parts(snap), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def incomparable_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Why scores under ``old`` cannot be compared with scores under ``new``; empty when they can."""
    a, b = _comparable_parts(old), _comparable_parts(new)
    reasons = []
    changed_files = sorted(f for f in set(a["files"]) | set(b["files"]) if a["files"].get(f) != b["files"].get(f))
    if changed_files:
        reasons.append(f"reference files changed: {', '.join(changed_files)}")
    if a["benchmarks"] != b["benchmarks"]:
        reasons.append("benchmark cases changed")
    if a["lang"] != b["lang"]:
        reasons.append(f"language changed from {a['lang']} to {b['lang']}")
    if a["ranking_by"] != b["ranking_by"]:
        reasons.append(f"ranking rule changed from {a['ranking_by']} to {b['ranking_by']}")
    if a.get("world_size", 1) != b.get("world_size", 1):
        reasons.append(f"world size changed from {a.get('world_size', 1)} to {b.get('world_size', 1)} ranks")
    return reasons


def template_file_name(snap: dict[str, Any], label: str) -> str:
    """The file name a template is offered under (its name in the problem folder)."""
    rel = snap["task"].get("templates", {}).get(label, f"{label}.txt")
    return PurePosixPath(rel).name
