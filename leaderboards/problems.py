"""The problem format: a folder with ``task.yml``, a reference and templates; problem sets list them.

A problem folder::

    problems/vectoradd/
      task.yml           # validated by ``Task`` below
      reference.py       # generate_input(**case), ref_kernel(data), check_implementation(data, output)
      templates/...      # starter files, one per language label
      solutions/correct/*, solutions/wrong/*   # run by the test-suite, each declaring its verdict

A problem set (``problems/<set>.yaml``) is validated by ``ProblemSet``. Loading never imports the
reference (that needs PyTorch and runs user-facing code); it parses it to check that the three
functions exist.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from leaderboards.errors import UserError
from runners.contract import Language, Limits, Mode, RankingRule, RunRequest, SubmissionFile

REFERENCE_FUNCTIONS = ("generate_input", "ref_kernel", "check_implementation")
CaseValue = int | float | bool | str | list[Any]
Case = dict[str, CaseValue]

SUBMISSION_SUFFIXES = {Language.PYTHON: (".py",), Language.CUDA: (".cu", ".cuh")}


class ProblemFormatError(UserError):
    """One or more errors in a problem folder or problem-set file; ``errors`` names each one (file, field, what
    was expected). A ``UserError``: every surface shows it as it is."""

    code = "problem_format"

    def __init__(self, errors: list[FormatIssue]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


@dataclass(frozen=True)
class FormatIssue:
    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Task(_Strict):
    """The schema of ``task.yml``."""

    description: str = Field(min_length=1)
    lang: Language = Language.PYTHON
    files: list[str] = Field(
        default_factory=lambda: ["reference.py"],
        description="Files of the problem folder that travel to the runner (the reference, CUDA harness sources).",
    )
    templates: dict[str, str] = Field(
        default_factory=dict, description="Starter files by language label (pytorch, triton, cuda-inline, cuda)."
    )
    tests: list[Case] = Field(min_length=1)
    benchmarks: list[Case] = Field(min_length=1)
    ranking_by: RankingRule = RankingRule.GEOMEAN
    test_timeout_s: Annotated[float, Field(gt=0)] = 180.0
    benchmark_timeout_s: Annotated[float, Field(gt=0)] = 300.0
    ranked_timeout_s: Annotated[float, Field(gt=0)] = 600.0

    @field_validator("files")
    @classmethod
    def _reference_first(cls, files: list[str]) -> list[str]:
        if "reference.py" not in files:
            raise ValueError("must include reference.py (the runner imports it to generate inputs and check outputs)")
        return files


class ProblemSetEntry(_Strict):
    directory: str = Field(description="The problem folder, relative to the problem-set file.")
    name: str | None = Field(default=None, description="The leaderboard name; the folder's name if omitted.")
    deadline: datetime = Field(description="UTC; a time without a zone is read as UTC.")
    devices: list[str] = Field(min_length=1)
    code_public_after_deadline: bool | None = Field(
        default=None, description="Override of the set's code_public_after_deadline for this leaderboard."
    )

    @field_validator("deadline")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    @property
    def leaderboard_name(self) -> str:
        return self.name or Path(self.directory).name


class ProblemSet(_Strict):
    name: str
    description: str = ""
    code_public_after_deadline: bool = Field(
        default=False, description="After a leaderboard's deadline, anyone may read its ranked entries' code."
    )
    problems: list[ProblemSetEntry] = Field(min_length=1)

    def code_public(self, entry: ProblemSetEntry) -> bool:
        """Whether ``entry``'s ranked code becomes public after its deadline (its own setting, else the set's)."""
        if entry.code_public_after_deadline is not None:
            return entry.code_public_after_deadline
        return self.code_public_after_deadline


@dataclass(frozen=True)
class Problem:
    """A loaded, validated problem folder: the task and the text of every file that travels."""

    path: Path
    task: Task
    files: dict[str, str]
    templates: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    def request(
        self,
        submission_name: str,
        submission: bytes,
        mode: Mode,
        *,
        device: str,
        device_name: str = "",
        seed: int | None = None,
        limits: Limits | None = None,
    ) -> RunRequest:
        """The run request for one submission of this problem (same for every launcher)."""
        timeout = {
            Mode.TEST: self.task.test_timeout_s,
            Mode.BENCHMARK: self.task.benchmark_timeout_s,
            Mode.PROFILE: self.task.benchmark_timeout_s,
            Mode.RANKED: self.task.ranked_timeout_s,
        }[mode]
        limits = (limits or Limits()).model_copy(update={"run_timeout_s": timeout})
        return RunRequest(
            problem=self.name,
            lang=self.task.lang,
            mode=mode,
            files=dict(self.files),
            submission=SubmissionFile(name=submission_name, content=submission),
            tests=list(self.task.tests),
            benchmarks=list(self.task.benchmarks),
            seed=seed,
            device=device,
            device_name=device_name,
            ranking_by=self.task.ranking_by,
            limits=limits,
        )


def _pydantic_issues(file: Path, exc: ValidationError) -> list[FormatIssue]:
    issues = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        expected = err["msg"]
        if err["type"] == "missing":
            expected = "this field is required"
        elif err["type"] == "extra_forbidden":
            expected = "unknown field (check its spelling)"
        issues.append(FormatIssue(str(file), loc, expected))
    return issues


def _read_yaml(file: Path) -> tuple[Any, list[FormatIssue]]:
    try:
        return yaml.safe_load(file.read_text(encoding="utf-8")), []
    except FileNotFoundError:
        return None, [FormatIssue(str(file), "", "file not found")]
    except yaml.YAMLError as exc:
        return None, [FormatIssue(str(file), "", f"not valid YAML: {exc}")]
    except UnicodeDecodeError:
        return None, [FormatIssue(str(file), "", "not UTF-8 text")]


def _check_reference(file: Path, source: str) -> list[FormatIssue]:
    try:
        tree = ast.parse(source, filename=str(file))
    except SyntaxError as exc:
        return [FormatIssue(str(file), f"line {exc.lineno}", f"syntax error: {exc.msg}")]
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    defined |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    return [
        FormatIssue(str(file), name, "must be defined at module level")
        for name in REFERENCE_FUNCTIONS
        if name not in defined
    ]


def load_problem(path: Path | str) -> Problem:
    """Load and validate a problem folder; raise ``ProblemFormatError`` listing every error found."""
    path = Path(path)
    task_file = path / "task.yml"
    if not path.is_dir():
        raise ProblemFormatError([FormatIssue(str(path), "", "is not a problem folder (expected a directory)")])
    raw, issues = _read_yaml(task_file)
    task: Task | None = None
    if not issues:
        if not isinstance(raw, dict):
            issues.append(FormatIssue(str(task_file), "", "expected a mapping of fields (description, tests, ...)"))
        else:
            try:
                task = Task.model_validate(raw)
            except ValidationError as exc:
                issues.extend(_pydantic_issues(task_file, exc))
    files: dict[str, str] = {}
    templates: dict[str, str] = {}
    if task is not None:
        for rel in task.files:
            issues.extend(_read_into(files, path, rel, task_file, "files"))
        for label, rel in task.templates.items():
            issues.extend(_read_into(templates, path, rel, task_file, f"templates.{label}", key=label))
        if "reference.py" in files:
            issues.extend(_check_reference(path / "reference.py", files["reference.py"]))
    if issues:
        raise ProblemFormatError(issues)
    assert task is not None
    return Problem(path=path, task=task, files=files, templates=templates)


def _read_into(
    out: dict[str, str], root: Path, rel: str, task_file: Path, field_name: str, key: str | None = None
) -> list[FormatIssue]:
    target = (root / rel).resolve()
    if root.resolve() not in target.parents:
        return [FormatIssue(str(task_file), field_name, f"{rel!r} must be a path inside the problem folder")]
    try:
        out[key or rel] = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        return [FormatIssue(str(task_file), field_name, f"{rel!r} does not exist in {root}")]
    except UnicodeDecodeError:
        return [FormatIssue(str(task_file), field_name, f"{rel!r} is not UTF-8 text")]
    return []


def load_problem_set(file: Path | str) -> tuple[ProblemSet, dict[str, Problem]]:
    """Load a problem-set file and every problem it lists, keyed by leaderboard name.

    Raises ``ProblemFormatError`` with every error of the set file and of each problem folder.
    """
    file = Path(file)
    raw, issues = _read_yaml(file)
    if issues:
        raise ProblemFormatError(issues)
    try:
        pset = ProblemSet.model_validate(raw)
    except ValidationError as exc:
        raise ProblemFormatError(_pydantic_issues(file, exc)) from None
    problems: dict[str, Problem] = {}
    for i, entry in enumerate(pset.problems):
        name = entry.leaderboard_name
        if name in problems:
            issues.append(FormatIssue(str(file), f"problems.{i}.name", f"leaderboard name {name!r} is used twice"))
            continue
        try:
            problems[name] = load_problem(file.parent / entry.directory)
        except ProblemFormatError as exc:
            issues.extend(exc.errors)
    if issues:
        raise ProblemFormatError(issues)
    return pset, problems


def submission_language(file_name: str) -> Language | None:
    """The language a submission file is written in, by its suffix; None if unknown."""
    for lang, suffixes in SUBMISSION_SUFFIXES.items():
        if file_name.endswith(suffixes):
            return lang
    return None
