"""Problem sets into leaderboards: ``kernelcup problems sync`` and ``kernelcup problems validate``.

``validate`` runs every check ``sync`` runs before it touches the database: the format of every file (with the
caps and strict types of ``problems.py``), names and devices (and, given a ``device_check``, whether a runner
serves each device), the snapshot's size, a warning for a deadline in the past, and, given a
``ReferenceCheck``, the reference run on its smallest test case (generate -> reference -> check) and each
benchmark case's inputs generated once.

``sync`` applies a whole set in one transaction (every leaderboard is created or updated, or none is). Test
cases, descriptions, deadlines and devices change freely; a change that makes stored scores incomparable
(reference files, benchmark cases, language, ranking rule), or a leaderboard another set owns, needs ``force``:
without it nothing is applied and the report says why.

The problem-set file is the source of truth for what it says: a sync puts back a deadline or devices that an admin
changed since (``kernelcup admin deadline``), and ``SyncReport.changes`` says each value it changes, old and new
(``deadline 2026-12-31 18:00 -> 2030-12-31 00:00 UTC``), so that this is seen, not silent (a newcomer's walk,
2026-11-29: the report said only ``updated | deadline``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from leaderboards.battery import SubmissionRun, problem_code_hint, run_battery
from leaderboards.errors import LeaderboardNotFound
from leaderboards.problem_rules import DeviceCheck
from leaderboards.problems import (
    FormatIssue,
    Problem,
    ProblemFormatError,
    ProblemSet,
    _inside,
    deadline_warnings,
    load_problem,
    load_problem_set,
)
from leaderboards.results import LeaderboardSummary, SetEntry, SyncAction, SyncItem
from leaderboards.service import LeaderboardService
from leaderboards.snapshot import snapshot
from runners.contract import LANGUAGES, Mode, RunRequest, RunResult, Verdict

__all__ = [
    "ReferenceCheck",
    "SyncAction",
    "SyncItem",
    "SyncReport",
    "ValidationReport",
    "check_references",
    "reference_request",
    "sync_problem_set",
    "validate_path",
]

REFERENCE_STEPS = "generate_input -> ref_kernel -> check_implementation"
PLACEHOLDER_CONTENT = b"\n"
"""The submission file of a reference check (never admitted, never run: only the reference runs)."""


class ReferenceCheck(Protocol):
    """Runs a problem's reference on ``request.tests[0]`` in the sandboxed trusted evaluator: ``generate_input``,
    ``ref_kernel``, then ``check_implementation`` on the reference's own output; then ``generate_input`` once on
    each of ``request.benchmarks`` (a failure there names the benchmark: "benchmark 2: ..."). ACCEPTED when all of
    that passes; otherwise a result whose message names what the problem did wrong.

    ``runners.entry.check_reference`` is the real one (``kernelcup.wiring.reference_check`` builds it)."""

    def __call__(self, request: RunRequest, /) -> RunResult: ...


REFERENCE_CHECK_MAX_S = 600.0
"""The most a reference check may take, whatever the problem's own time limits say (sync waits for it)."""


def reference_request(problem: Problem) -> RunRequest:
    """The request a reference check runs: test mode on the CPU, every test case (the smallest first, so a broken
    reference fails fast) then every held-out case, and every benchmark case, whose inputs are generated once (never
    timed: a case that cannot be generated is refused here instead of failing every timed run);
    ``runners.oracle.evaluate``'s ``run_reference_check`` says what is checked. Its time limit covers a test run and
    a benchmark run of the problem, at most ``REFERENCE_CHECK_MAX_S``, with no compile allowance: no submission is
    compiled."""
    name = "reference-check" + LANGUAGES[problem.task.lang].suffixes[0]
    request = problem.request(name, PLACEHOLDER_CONTENT, Mode.TEST, device="cpu", device_name="cpu")
    run_s = min(problem.task.test_timeout_s + problem.task.benchmark_timeout_s, REFERENCE_CHECK_MAX_S)
    limits = request.limits.model_copy(update={"run_timeout_s": run_s, "compile_timeout_s": 0.0})
    smallest = problem.smallest_test()
    tests = [smallest, *(c for c in problem.task.cases("tests", problem.task.world_size) if c != smallest)]
    tests += problem.task.cases("holdout", problem.task.world_size)  # checked like any case (only admins read this)
    return request.model_copy(update={"tests": tests, "limits": limits})


def check_references(
    problems: Iterable[Problem],
    check: ReferenceCheck,
    *,
    on_start: Callable[[Problem, dict], None] | None = None,
) -> list[FormatIssue]:
    """Run ``check`` on each problem (once per folder); an issue for each reference that fails its own check."""
    issues = []
    seen: set[Path] = set()
    for problem in problems:
        folder = problem.path.resolve()
        if folder in seen:
            continue
        seen.add(folder)
        request = reference_request(problem)
        case = request.tests[0]
        if on_start is not None:
            on_start(problem, case)
        what = f"on the test case {case}, then each benchmark case's inputs"
        try:
            result = check(request)
        except Exception as exc:  # the checker itself broke: say so instead of a traceback
            message = f"the reference check could not run: {type(exc).__name__}: {exc}"
        else:
            if result.verdict is Verdict.ACCEPTED:
                continue
            message = result.message or result.verdict.label
            message += problem_code_hint(message)
            what = _failed_where(problem, request, result)
        lead = traceback_headline(message)
        text = f"{lead} ({what}); in full:\n{message}" if lead else f"{what}: {message}"
        issues.append(FormatIssue(str(problem.path / "reference.py"), REFERENCE_STEPS, text))
    return issues


def _failed_where(problem: Problem, request: RunRequest, result: RunResult) -> str:
    """Which case of a reference check failed, as far as its result says: the evaluator reports each case as it
    passes (or fails its check) and stops at the first that raises, so the first case not reported as passed is the
    one. The request's cases are the test cases, then the held-out ones (``reference_request``)."""
    held_out = len(problem.task.cases("holdout", problem.task.world_size))
    tests = len(request.tests) - held_out
    failed = next((t.index for t in result.tests if not t.verdict.passed), None)
    index = failed if failed is not None else len(result.tests)
    if index >= len(request.tests):
        return "after every test and held-out case passed: a baseline, or a benchmark case's inputs"
    kind = "test case" if index < tests else "held-out case"
    return f"on the {kind} {request.tests[index]}"


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_RAISED = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b.*)$", re.MULTILINE)


def traceback_headline(message: str) -> str:
    """The line that says what went wrong in a message that ends in a Python traceback, where the problem's own code
    raised it: "reference.py line 7: ModuleNotFoundError: No module named 'numpyy'" ('' when there is none). A
    newcomer read three lines of our wording and the runner's own frames before the error (2026-11-25)."""
    raised = _RAISED.findall(message)
    if not raised:
        return ""
    own = [(f, n) for f, n in _FRAME.findall(message) if "/runners/" not in f and not f.startswith("<")]
    where = f"{Path(own[-1][0]).name} line {own[-1][1]}: " if own else ""
    return where + raised[-1]


def devices_by_folder(pset: ProblemSet, problems: Mapping[str, Problem]) -> dict[Path, list[str]]:
    """The devices a problem set runs each problem folder on (resolved; all of its entries' devices together)."""
    found: dict[Path, list[str]] = {}
    for entry in pset.problems:
        problem = problems.get(entry.leaderboard_name)
        if problem is not None:
            found.setdefault(problem.path.resolve(), []).extend(entry.devices)
    return found


def _passed(problems: Iterable[Problem], issues: list[FormatIssue]) -> list[Problem]:
    """The problems whose reference passed its own check (no issue names their reference.py)."""
    failed = {issue.file for issue in issues}
    return [p for p in problems if str(p.path / "reference.py") not in failed]


@dataclass(frozen=True)
class SyncReport:
    items: tuple[SyncItem, ...]
    applied: bool
    """False when nothing was applied because an item needs --force."""
    warnings: tuple[FormatIssue, ...] = ()
    checked: tuple[str, ...] = ()
    """Leaderboards whose reference ran its smallest test case (new or changed problems)."""
    changes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per updated leaderboard, one text per entry of its ``SyncItem.changed``, in that order: the field with its old
    and new values where they are short (``deadline 2026-12-31 18:00 -> 2030-12-31 00:00 UTC``, ``devices cpu ->
    cpu, H100``), else the field's name alone (``task``, ``description``, a held-out case the sync kept)."""

    def details(self, item: SyncItem) -> tuple[str, ...]:
        """What the sync changes on ``item``'s leaderboard, with old and new values (``changes``, else ``changed``)."""
        return self.changes.get(item.leaderboard) or item.changed

    @property
    def refused(self) -> tuple[SyncItem, ...]:
        return tuple(i for i in self.items if i.action is SyncAction.NEEDS_FORCE)


def check_one_problem(
    problem: Problem | None,
    devices: Sequence[str],
    *,
    check: ReferenceCheck | None = None,
    device_check: DeviceCheck | None = None,
) -> None:
    """What ``sync_problem_set`` checks of a set, for a leaderboard created or changed one at a time (the admin
    routes): each device against the runner's routes (given ``device_check``), then the problem's reference on its
    own cases (given ``check`` and a ``problem``). Raises ``ProblemFormatError`` naming each issue."""
    where = str(problem.path) if problem is not None else ""
    issues = [FormatIssue(where, "devices", why) for d in devices if device_check and (why := device_check(d))]
    if not issues and problem is not None and check is not None:
        issues = check_references([problem], check)
    if issues:
        raise ProblemFormatError(issues)


def sync_problem_set(
    service: LeaderboardService,
    path: Path | str,
    *,
    force: bool = False,
    actor: str = "problems sync",
    check: ReferenceCheck | None = None,
    device_check: DeviceCheck | None = None,
    on_check: Callable[[Problem, dict], None] | None = None,
    battery: SubmissionRun | None = None,
) -> SyncReport:
    """Create or update one leaderboard per problem of the set, all in one transaction. ``on_check`` is told of each
    reference check as it starts (``validate_path``'s too), as each may take seconds.

    Raises ``ProblemFormatError`` when the set is invalid or (given ``check``) a new or changed problem's reference
    fails its own check, or (given ``battery`` too) a bad solution of the exploit battery passes it; raises a
    ``UserError`` for a name that collides with an existing leaderboard's. In both
    cases the database is left as it was. Returns what was done, or (``applied`` False) what needs ``force``.
    """
    pset, problems = load_problem_set(path, device_check=device_check)
    warnings = tuple(deadline_warnings(path, pset, service.clock()))
    checked: tuple[str, ...] = ()
    if check is not None:
        todo = {name: p for name, p in problems.items() if _changed(service, name, p)}
        issues = check_references(todo.values(), check, on_start=on_check)
        if not issues and battery is not None:
            report = run_battery(todo.values(), battery, devices=devices_by_folder(pset, problems))
            issues, warnings = list(report.issues), (*warnings, *report.warnings)
        if issues:
            raise ProblemFormatError(issues)
        checked = tuple(todo)
    entries = [
        SetEntry(e.leaderboard_name, problems[e.leaderboard_name], e.deadline, tuple(e.devices), pset.code_public(e))
        for e in pset.problems
    ]
    before = {b.name: b for b in service.list_leaderboards(include_hidden=True)}
    items, applied = service.apply_problem_set(pset.name, entries, force=force, actor=actor)
    by_name = {e.name: e for e in entries}
    changes = {
        i.leaderboard: tuple(
            _change_text(f, before[i.leaderboard], by_name[i.leaderboard], pset.name) for f in i.changed
        )
        for i in items
        if i.changed and i.leaderboard in before and i.leaderboard in by_name
    }
    return SyncReport(items, applied, warnings, checked, changes)


def _utc_minute(t: datetime) -> str:
    return f"{(t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)):%Y-%m-%d %H:%M}"


def _change_text(changed: str, old: LeaderboardSummary, new: SetEntry, problem_set: str) -> str:
    """One changed field of ``SyncItem.changed`` (``admin._update``'s names) as ``field old -> new``: the old value
    is the board's before the sync (an admin's change included), the new one the set's."""
    if changed == "deadline":
        return f"deadline {_utc_minute(old.deadline)} -> {_utc_minute(new.deadline)} UTC"
    if changed == "devices":
        return f"devices {', '.join(old.devices)} -> {', '.join(dict.fromkeys(new.devices))}"
    if changed == "code public after deadline":
        yes_no = {True: "yes", False: "no"}
        return f"{changed} {yes_no[old.code_public_after_deadline]} -> {yes_no[new.code_public_after_deadline]}"
    if changed == "problem set":
        return f"problem set now {problem_set!r}"
    return changed  # the task, the description (long texts), a held-out case an input hack added


def _changed(service: LeaderboardService, name: str, problem: Problem) -> bool:
    try:
        # the board's held-out cases that input hacks added are kept by the sync: they change nothing to check
        return service.task_snapshot(name) != service.with_hack_cases(name, snapshot(problem))
    except LeaderboardNotFound:
        return True


@dataclass(frozen=True)
class ValidationReport:
    problems: tuple[str, ...]
    """Every problem folder checked: those given, and those the problem sets list (each once)."""
    problem_sets: tuple[str, ...]
    issues: tuple[FormatIssue, ...]
    warnings: tuple[FormatIssue, ...] = ()
    checked: tuple[str, ...] = ()
    """Problem folders whose reference ran its smallest test case (``--run``)."""

    @property
    def ok(self) -> bool:
        return not self.issues


def _is_problem_set(file: Path) -> bool:
    return file.suffix in (".yaml", ".yml") and file.name not in ("task.yml", "task.yaml")


def validate_path(
    path: Path | str,
    *,
    check: ReferenceCheck | None = None,
    device_check: DeviceCheck | None = None,
    now: datetime | None = None,
    on_check: Callable[[Problem, dict], None] | None = None,
    battery: SubmissionRun | None = None,
    on_battery: Callable[[Problem], None] | None = None,
    strict: bool = False,
) -> ValidationReport:
    """Validate a problem folder, a problem-set file, or a folder of both (like ``problems/``); collect every error.

    Runs every check ``sync`` runs without the database; with ``check``, also each valid problem's reference on
    its smallest test case, and with ``battery`` too, the exploit battery on each problem whose reference passed
    (``leaderboards.battery``). ``strict``: the battery's warnings (lint, a lower precision a problem without a
    policy accepts) are errors. Each error is reported once even when a problem is listed by several sets.
    """
    from leaderboards.models import utcnow

    path = Path(path)
    problem_dirs: list[Path] = []
    set_files: list[Path] = []
    links: list[Path] = []
    if path.is_file() and path.name == "task.yml":  # a problem's task.yml: its folder is the problem (red team)
        problem_dirs.append(path.parent)
    elif path.is_file():
        set_files.append(path)
    elif (path / "task.yml").exists():
        problem_dirs.append(path)
    elif path.is_dir():
        # A folder of problems validates what lies in it: a problem folder or set that is a symbolic link out of it
        # is named, not followed (red team, 2026-11-29), as a set's directory may not lead out of the set's folder.
        for found in sorted(p.parent for p in path.glob("*/task.yml")):
            (problem_dirs if _inside(path, found) else links).append(found)
        for f in sorted(f for f in path.iterdir() if f.is_file() and _is_problem_set(f)):
            (set_files if _inside(path, f) else links).append(f)
    else:
        return ValidationReport((), (), (FormatIssue(str(path), "", "no such file or folder"),))
    why = f"is a symbolic link out of {path}: not validated; validate what it leads to itself, or copy it in"
    outside = [FormatIssue(str(p), "", why) for p in links]
    if not problem_dirs and not set_files:
        issue = FormatIssue(str(path), "", "no problem folders (*/task.yml) or problem-set files (*.yaml) found here")
        return ValidationReport((), (), (*outside, issue))
    seen: dict[str, FormatIssue] = {str(e): e for e in outside}
    warned: dict[str, FormatIssue] = {}
    valid: list[Problem] = []
    on_devices: dict[Path, list[str]] = {}
    folders = dict.fromkeys(str(d) for d in problem_dirs)
    for d in problem_dirs:
        try:
            valid.append(load_problem(d))
        except ProblemFormatError as exc:
            seen.update((str(e), e) for e in exc.errors)
    for f in set_files:
        try:
            pset, in_set = load_problem_set(f, device_check=device_check)
        except ProblemFormatError as exc:
            seen.update((str(e), e) for e in exc.errors)
            continue
        valid.extend(in_set.values())
        for folder, devs in devices_by_folder(pset, in_set).items():
            on_devices.setdefault(folder, []).extend(devs)
        folders.update(dict.fromkeys(str(p.path) for p in in_set.values()))
        warned.update((str(w), w) for w in deadline_warnings(f, pset, now or utcnow()))
    checked: list[str] = []
    if check is not None:
        issues = check_references(valid, check, on_start=on_check)
        seen.update((str(e), e) for e in issues)
        checked = sorted({str(p.path) for p in valid})
        if battery is not None:
            report = run_battery(_passed(valid, issues), battery, on_start=on_battery, devices=on_devices)
            seen.update((str(e), e) for e in report.issues)
            lint = seen if strict else warned
            lint.update((str(w), w) for w in report.warnings)
    return ValidationReport(
        tuple(folders),
        tuple(str(f) for f in set_files),
        tuple(seen.values()),
        tuple(warned.values()),
        tuple(checked),
    )
