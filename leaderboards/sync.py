"""Problem sets into leaderboards: ``kernelcup problems sync`` and ``kernelcup problems validate``.

Sync creates missing leaderboards and updates existing ones. Test cases, descriptions, deadlines and devices
change freely; a change that makes stored scores incomparable (reference files, benchmark cases, language,
ranking rule) is refused with the reasons unless forced, and a forced one starts that ranking over.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from leaderboards.errors import LeaderboardNotFound, NeedsForce
from leaderboards.problems import FormatIssue, ProblemFormatError, load_problem, load_problem_set
from leaderboards.service import LeaderboardService


class SyncAction(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    NEEDS_FORCE = "needs --force"


@dataclass(frozen=True)
class SyncItem:
    leaderboard: str
    action: SyncAction
    changed: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    ranking_reset: bool = False


def sync_problem_set(
    service: LeaderboardService, path: Path | str, *, force: bool = False, actor: str = "problems sync"
) -> tuple[SyncItem, ...]:
    """Create or update one leaderboard per problem of the set; raise ``ProblemFormatError`` if the set is invalid.

    Each leaderboard is its own transaction: one that needs ``--force`` is reported and left as it was while the
    others are synced.
    """
    pset, problems = load_problem_set(path)
    items = []
    for entry in pset.problems:
        name = entry.leaderboard_name
        problem = problems[name]
        try:
            service.leaderboard(name, include_hidden=True)
        except LeaderboardNotFound:
            service.create_leaderboard(
                problem,
                name=name,
                deadline=entry.deadline,
                devices=entry.devices,
                creator=actor,
                problem_set=pset.name,
                code_public_after_deadline=pset.code_public(entry),
            )
            items.append(SyncItem(name, SyncAction.CREATED))
            continue
        try:
            update = service.update_leaderboard(
                name,
                problem=problem,
                deadline=entry.deadline,
                devices=entry.devices,
                force=force,
                actor=actor,
                code_public_after_deadline=pset.code_public(entry),
            )
        except NeedsForce as exc:
            items.append(SyncItem(name, SyncAction.NEEDS_FORCE, reasons=tuple(exc.reasons)))
            continue
        action = SyncAction.UPDATED if update.changed else SyncAction.UNCHANGED
        items.append(SyncItem(name, action, update.changed, ranking_reset=update.ranking_reset))
    return tuple(items)


@dataclass(frozen=True)
class ValidationReport:
    problems: tuple[str, ...]
    problem_sets: tuple[str, ...]
    issues: tuple[FormatIssue, ...]

    @property
    def ok(self) -> bool:
        return not self.issues


def _is_problem_set(file: Path) -> bool:
    return file.suffix in (".yaml", ".yml") and file.name not in ("task.yml", "task.yaml")


def validate_path(path: Path | str) -> ValidationReport:
    """Validate a problem folder, a problem-set file, or a folder of both (like ``problems/``); collect every error.

    Each error is reported once even when a problem is listed by several sets.
    """
    path = Path(path)
    problem_dirs: list[Path] = []
    set_files: list[Path] = []
    if path.is_file():
        set_files.append(path)
    elif (path / "task.yml").exists():
        problem_dirs.append(path)
    elif path.is_dir():
        problem_dirs = sorted(p.parent for p in path.glob("*/task.yml"))
        set_files = sorted(f for f in path.iterdir() if f.is_file() and _is_problem_set(f))
    else:
        return ValidationReport((), (), (FormatIssue(str(path), "", "no such file or folder"),))
    if not problem_dirs and not set_files:
        issue = FormatIssue(str(path), "", "no problem folders (*/task.yml) or problem-set files (*.yaml) found here")
        return ValidationReport((), (), (issue,))
    seen: dict[str, FormatIssue] = {}
    for d in problem_dirs:
        try:
            load_problem(d)
        except ProblemFormatError as exc:
            seen.update((str(e), e) for e in exc.errors)
    for f in set_files:
        try:
            load_problem_set(f)
        except ProblemFormatError as exc:
            seen.update((str(e), e) for e in exc.errors)
    return ValidationReport(tuple(str(d) for d in problem_dirs), tuple(str(f) for f in set_files), tuple(seen.values()))
