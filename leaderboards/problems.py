"""The problem format: a folder with ``task.yml``, a reference and templates; problem sets list them.

A problem folder::

    problems/vectoradd/
      task.yml           # validated by ``Task`` below
      reference.py       # generate_input(**case), ref_kernel(data), check_implementation(data, output)
      templates/...      # starter files, one per language label
      solutions/correct/*, solutions/wrong/*   # run by the test-suite, each declaring its verdict

A problem set (``problems/<set>.yaml``) is validated by ``ProblemSet``. Loading never imports the
reference (that needs PyTorch and runs user-facing code); it parses it to check that the three
functions exist and that every case's keys are parameters of ``generate_input``.

References share their checking code through ``problems/_lib`` (``from _lib import Inputs, compare``): a problem
whose files import it carries it among its own files (``leaderboards.problem_lib``), so it travels and counts in
the fingerprint like the reference does.

Problem files are trusted to be honest, not to be well-formed: every file is read through
``leaderboards.problem_files`` (regular files only, size caps, bounded YAML), and the models below cap the
number of cases, the timeouts and the snapshot a leaderboard stores. A mistake is a ``FormatIssue`` naming the
file, the field and what was expected, never a traceback.
"""

from __future__ import annotations

import ast
import bisect
import json
import math
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from leaderboards.errors import UserError
from leaderboards.hack_space import HackSpace
from leaderboards.problem_files import (
    MAX_FILE_BYTES,
    MAX_YAML_BYTES,
    FileRefused,
    load_yaml,
    nearest_problem_folders,
    read_text,
)
from leaderboards.problem_lib import LibRefused, bundle_lib
from leaderboards.problem_rules import (
    CASE_KEY,
    MAX_CASES,
    MAX_DEVICES,
    MAX_PROBLEM_FILES,
    MAX_SET_PROBLEMS,
    MAX_SNAPSHOT_BYTES,
    MAX_TEMPLATES,
    MAX_TIMEOUT_S,
    TEMPLATE_LABEL,
    DeviceCheck,
    check_case,
    devices_issue,
    leaderboard_name_issue,
    name_key,
    problem_name_issue,
    problem_path_issue,
    seed_issue,
    text_issue,
)
from runners.contract import (
    LANGUAGES,
    MAX_WORLD_SIZE,
    REFERENCE_BASELINE,
    BaselineSpec,
    DataType,
    Language,
    Limits,
    Mode,
    RankingRule,
    RunRequest,
    SubmissionFile,
)
from runners.devices import split_device
from runners.provenance import LibraryPolicy
from runners.validation import error_message

REFERENCE_FUNCTIONS = ("generate_input", "ref_kernel", "check_implementation")
CaseValue = int | float | bool | str | list[Any]
Case = dict[str, CaseValue]


STORED: dict[str, Any] = {"stored": True}
"""The validation context of a leaderboard's stored snapshot (``leaderboards.snapshot``): it passed the rules of the
day it was synced, and a rule added since must not make a running leaderboard unreadable, so the rules on free text
and cases are not applied again (the runner refuses a ranked run of an unseeded case on its own)."""


def _stored(info: ValidationInfo) -> bool:
    return bool(info.context and info.context.get("stored"))


def _free_text(value: str, info: ValidationInfo) -> str:
    issue = None if _stored(info) else text_issue(value)
    if issue:
        raise ValueError(issue)
    return value


def _case_rules(case: dict[str, Any]) -> dict[str, Any]:
    """``problem_rules.check_case``, and what a case holds past its types (red team, 2026-11-29): a ``seed`` is a
    non-negative whole number (``true``, text or a list passed, and reached generate_input as a seed), and text values
    follow the rules on text (every message that names the case shows them)."""
    check_case(case)
    if "seed" in case:
        seed = case["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"'seed': {seed!r} is not a seed; a seed is a non-negative whole number (seed: 1234), "
                             "not true/false, text, a fraction or a list")  # fmt: skip

    def texts(value: Any) -> list[str]:
        if isinstance(value, list):
            return [t for item in value for t in texts(item)]
        return [value] if isinstance(value, str) else []

    for key, value in case.items():
        for text in texts(value):
            issue = text_issue(text)
            if issue:
                raise ValueError(f"{key!r}: the text {issue}")
    return case


def _test_case(case: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    return case if _stored(info) else _case_rules(case)


def _benchmark_case(case: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
    issue = None if _stored(info) else seed_issue(_case_rules(case))
    if issue:
        raise ValueError(issue)
    return case


FreeText = Annotated[str, AfterValidator(_free_text)]
"""Text a person wrote (a description, a set's name): no control characters except newline and tab, no bidi
overrides (``problem_rules.text_issue``)."""
_KEYS = {"propertyNames": {"pattern": f"^{CASE_KEY.pattern}$"}}
TestCase = Annotated[dict[str, Any], AfterValidator(_test_case), Field(json_schema_extra=_KEYS)]
BenchmarkCase = Annotated[
    dict[str, Any], AfterValidator(_benchmark_case), Field(json_schema_extra={**_KEYS, "required": ["seed"]})
]
"""A test case that also has a ``seed`` (a ranked run draws fresh inputs from it)."""
Seconds = Annotated[float, Field(strict=True, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)]
"""A timeout: a number (an integer is fine), never true/false or text."""


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


class Precision(StrEnum):
    """The lower precisions a problem's check accepts (``task.yml``'s ``precision``): the exploit battery
    (``leaderboards.battery``) recomputes the reference on inputs rounded to TF32, fp16 and bf16 (an fp32 problem),
    bf16 (fp16) or fp8 (bf16), and refuses the problem where one that the policy does not allow passes the check on
    every case (docs/authoring.md, "The exploit battery")."""

    EXACT = "exact"
    """No lower precision: the check must refuse each."""
    TF32_OK = "tf32_ok"
    """10-bit mantissas may pass: TF32 (tensor cores on fp32 data) and fp16, which has TF32's precision in less
    range; bf16 and fp8 may not."""
    BF16_OK = "bf16_ok"
    """TF32, fp16 and bf16 may pass; fp8 may not."""


class LintItem(StrEnum):
    """The lint items a problem may be exempted from, with its reason (``task.yml``'s ``lint_exempt``)."""

    SHAPE_FAMILY = "shape_family"
    """The ranked cases are all one shape family (``leaderboards.battery_lint``)."""
    WEAK_REFERENCE = "weak_reference"
    """The reference (or a baseline) is far from the roofline (``leaderboards.battery_lint``)."""


class LintExemption(_Strict):
    lint: LintItem
    reason: FreeText = Field(
        min_length=20, max_length=1000, description="Why the lint is right about the problem and it stays as it is."
    )


class Task(_Strict):
    """The schema of ``task.yml``."""

    description: FreeText = Field(min_length=1)
    lang: Language = Language.PYTHON
    files: list[str] = Field(
        default_factory=lambda: ["reference.py"],
        validate_default=True,  # a C++ language's default lacks the harness it compiles against
        description="Files of the problem folder that travel to the runner (the reference, CUDA harness sources).",
    )
    templates: dict[str, str] = Field(
        default_factory=dict, description="Starter files by language label (pytorch, triton, cuda-inline, cuda)."
    )
    tests: list[TestCase] = Field(min_length=1, max_length=MAX_CASES)
    benchmarks: list[BenchmarkCase] = Field(
        min_length=1, max_length=MAX_CASES, description="Timed cases; each needs a seed (fresh inputs per call)."
    )
    holdout: list[TestCase] = Field(
        default_factory=list,
        max_length=MAX_CASES,
        description="Held-out system-test cases, typed like tests: checked only in the system tests of the best "
        "entries (docs/competitions.md), never shown by any surface nor sent with a competitor's own run.",
        exclude_if=lambda cases: not cases,  # a problem without them keeps the snapshot (and fingerprint) it had
    )
    system_test_top: int = Field(
        default=10,
        strict=True,
        ge=1,
        le=1000,
        description="How many of each device's best entries the nightly system tests run on the holdout cases while "
        "the board is open (at the deadline every ranked entry is tested).",
        exclude_if=lambda top: top == 10,
    )
    holdout_timed: bool = Field(
        default=False,
        strict=True,
        description="Whether the system tests time the held-out cases too (each then needs a seed): the final "
        "standings then rank by the public benchmarks and the held-out cases together (docs/competitions.md).",
        exclude_if=lambda timed: not timed,
    )
    ranking_by: RankingRule = RankingRule.GEOMEAN
    baselines: list[BaselineSpec] = Field(
        default_factory=list,
        max_length=3,
        description="Other functions of reference.py to report a speedup over, besides ref_kernel (e.g. a "
        "torch.compile of it, or a library call), each with a label: [{label: torch.compile, function: compiled}].",
    )
    dtype: DataType = Field(
        default=DataType.FP32,
        description="The data type the work is done in, naming the peak its flops are bounded by in the roofline: "
        "fp32 (CUDA cores; the default, for elementwise work, reductions, scans) or tf32/fp16/bf16/fp8/int8/fp4 "
        "(tensor cores).",
    )
    precision: Precision | None = Field(
        default=None,
        description="The lower precisions the check accepts: exact (none), tf32_ok (TF32 and fp16 on fp32 inputs) "
        "or bf16_ok (TF32, fp16 and bf16). The exploit battery refuses the problem where one it does not allow "
        "passes the check on every case; left out, a lower precision that passes is a warning.",
        exclude_if=lambda policy: policy is None,  # a problem without one keeps the snapshot (and fingerprint) it had
    )
    lint_exempt: list[LintExemption] = Field(
        default_factory=list,
        max_length=len(LintItem),
        description="Lint items that rightly flag the problem and why it stays as it is: [{lint: weak_reference, "
        "reason: ...}]. An exempted item is not reported (docs/authoring.md section 8).",
        exclude_if=lambda items: not items,
    )
    hack_space: HackSpace | None = Field(
        default=None,
        description="The cases of generate_input anyone may submit as an input hack against the board's entries: "
        "each parameter's type and range, and a cap on the product of the sizes (docs/authoring.md, input hacks).",
        exclude_if=lambda space: space is None,
    )
    library_policy: LibraryPolicy | None = Field(
        default=None,
        description="Which libraries' kernels a timed GPU run may spend its time in: {deny: [cublas, cublaslt, "
        "cudnn, aten_mm]} or {allow: [own, aten]}, by the kernel groups of runners/provenance.py. A run whose denied "
        "kernels take more than 5% of a call is rejected; a runner that cannot record kernels refuses the problem.",
        exclude_if=lambda policy: policy is None,  # a problem without one keeps the snapshot (and fingerprint) it had
    )
    test_timeout_s: Seconds = 180.0
    benchmark_timeout_s: Seconds = 300.0
    ranked_timeout_s: Seconds = 600.0
    world_size: int = Field(
        default=1,
        strict=True,
        ge=1,
        le=MAX_WORLD_SIZE,
        description="Ranks (one per GPU) the problem runs with where the device names no GPU count (the CPU, "
        "'cuda'); a device like H100x8 runs that many. A case with a world_size key runs only at that world size "
        "(docs/multigpu.md).",
        exclude_if=lambda size: size == 1,  # a one-GPU problem's snapshot is what it was
    )

    @model_validator(mode="after")
    def _ranks(self) -> Task:
        cases = [*self.tests, *self.benchmarks, *self.holdout]
        for case in cases:
            size = case.get("world_size", 1)
            if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_WORLD_SIZE:
                raise ValueError(f"a case's world_size must be a whole number from 1 to {MAX_WORLD_SIZE}, not {size!r}")
        if self.multi_rank:
            if self.baselines:
                raise ValueError("a problem of several ranks has no baselines (its reference runs on one device)")
            if self.library_policy is not None:  # (red team, 2026-11-28: it was silently not enforced)
                raise ValueError("a problem of several ranks cannot have a library_policy: the kernels its ranks "
                                 "run are not recorded (the provenance pass runs on one GPU)")  # fmt: skip
            for kind in ("tests", "benchmarks"):
                if not self.cases(kind, self.world_size):
                    raise ValueError(f"no {kind[:-1]} runs at world_size {self.world_size} (give a case without a "
                                     "world_size key, or one with it)")  # fmt: skip
        return self

    @model_validator(mode="after")
    def _hack_space_covers_the_cases(self) -> Task:
        if len({e.lint for e in self.lint_exempt}) != len(self.lint_exempt):
            raise ValueError("lint_exempt names a lint item twice")
        if self.hack_space is None:
            return self
        keys = {k for case in self.tests for k in case if k != "world_size"}
        if set(self.hack_space.params) != keys:
            raise ValueError(f"hack_space's params ({', '.join(sorted(self.hack_space.params))}) must be the tests' "
                             f"parameters of generate_input ({', '.join(sorted(keys))})")  # fmt: skip
        return self

    @model_validator(mode="after")
    def _hack_space_rules(self, info: ValidationInfo) -> Task:
        """What ``HackSpace`` alone lets through (red team, 2026-11-29): a choice is text shown with every hack, so it
        follows the rules on text; ``sizes`` names size parameters, and the seed says nothing of a case's size."""
        if self.hack_space is None or _stored(info):
            return self
        if "seed" in self.hack_space.sizes:
            raise ValueError("hack_space.sizes names 'seed': sizes are the parameters whose product is the input's "
                             "size (sizes: [rows, cols]); the seed is not one, leave it out")  # fmt: skip
        for name, param in self.hack_space.params.items():
            for choice in param.choices or []:
                issue = text_issue(choice)
                if issue:
                    raise ValueError(f"hack_space.params.{name}.choices: the choice {choice!a} {issue}")
        return self

    @field_validator("description")
    @classmethod
    def _not_blank(cls, value: str, info: ValidationInfo) -> str:
        if not value.strip() and not _stored(info):
            raise ValueError("is blank: say what the kernel computes, its inputs and what the check accepts")
        return value

    def exempt(self, item: LintItem) -> bool:
        """Whether task.yml exempts the problem from the lint ``item`` (with its reason)."""
        return any(e.lint is item for e in self.lint_exempt)

    @property
    def multi_rank(self) -> bool:
        """Whether the problem runs as several ranks (docs/multigpu.md): its reference takes rank and world_size."""
        return self.world_size > 1 or any("world_size" in c for c in [*self.tests, *self.benchmarks, *self.holdout])

    @model_validator(mode="after")
    def _holdout_is_new(self, info: ValidationInfo) -> Task:
        """A held-out case tests what the public cases do not: one equal to a test or a benchmark (the same keys and
        values, the seed included) checks nothing new and tells a competitor that public case is held out too, and a
        repeated one runs twice for nothing. Not applied to a stored snapshot, whose held-out cases input hacks may
        have added."""
        if _stored(info):
            return self
        earlier = [
            (f"{kind}.{i}", case) for kind in ("tests", "benchmarks") for i, case in enumerate(getattr(self, kind))
        ]
        for i, case in enumerate(self.holdout):
            same = next((where for where, other in earlier if _same_case(case, other)), None)
            earlier.append((f"holdout.{i}", case))
            if same is not None:
                raise ValueError(f"holdout.{i} is the same case as {same}: a held-out case must differ from the tests, "
                                 "the benchmarks and the other held-out cases (change a size or its seed, or drop "
                                 "it)")  # fmt: skip
        return self

    @model_validator(mode="after")
    def _holdout_stays_in(self) -> Task:
        if self.holdout and "task.yml" in self.files:
            raise ValueError("a problem with holdout cases cannot list task.yml in files: the files travel with every "
                             "run and are shown with the task, so the held-out cases would be too")  # fmt: skip
        if self.holdout_timed and not self.holdout:
            raise ValueError("holdout_timed: true needs holdout: cases to time")
        if self.holdout_timed and any("seed" not in c for c in self.holdout):
            raise ValueError("holdout_timed: true needs a seed in every holdout case (timed calls get fresh inputs "
                             "from it, as benchmarks do)")  # fmt: skip
        return self

    def cases(self, kind: str, world_size: int) -> list[dict[str, Any]]:
        """The ``tests``, ``benchmarks`` or ``holdout`` cases that run at ``world_size``, without their ``world_size``
        key."""
        cases: list[dict[str, Any]] = getattr(self, kind)
        if not self.multi_rank:
            return list(cases)
        return [{k: v for k, v in c.items() if k != "world_size"} for c in cases if c.get("world_size", world_size)
                == world_size]  # fmt: skip

    @field_validator("files")
    @classmethod
    def _reference_first(cls, files: list[str], info: ValidationInfo) -> list[str]:
        if "reference.py" not in files:
            raise ValueError("must include reference.py (the runner imports it to generate inputs and check outputs)")
        if len(files) > MAX_PROBLEM_FILES:
            raise ValueError(f"lists {len(files)} files; at most {MAX_PROBLEM_FILES} travel with a problem")
        twice = sorted({f for f in files if files.count(f) > 1})
        if twice:
            raise ValueError(f"lists {', '.join(map(repr, twice))} twice")
        lang: Language | None = info.data.get("lang")  # absent when lang: itself is wrong (its own error says why)
        missing = [f for f in LANGUAGES[lang].problem_files if f not in files] if lang and not _stored(info) else []
        if lang and missing:  # else every submission is refused at the runner, as if the competitor's mistake
            raise ValueError(
                f"lang: {lang.value} compiles every submission against the problem's {', '.join(missing)}: add it "
                f"to the folder and list it, e.g. files: [{', '.join(['reference.py', *missing])}]"
            )
        return files

    @field_validator("baselines")
    @classmethod
    def _baseline_labels(cls, specs: list[BaselineSpec]) -> list[BaselineSpec]:
        labels = [spec.label for spec in specs]
        for label in labels:
            if not label.strip():
                raise ValueError("a baseline's label is blank: name it as results show it (label: torch.compile)")
            if label == REFERENCE_BASELINE.label or labels.count(label) > 1:
                raise ValueError(f"the label {label!r} is taken (ref_kernel is always 'reference'; labels differ)")
            if text_issue(label):
                raise ValueError(f"the label {label!a}: {text_issue(label)}")
        return specs

    @field_validator("templates")
    @classmethod
    def _template_labels(cls, templates: dict[str, str]) -> dict[str, str]:
        if len(templates) > MAX_TEMPLATES:
            raise ValueError(f"has {len(templates)} templates; at most {MAX_TEMPLATES}")
        for label in templates:
            if not TEMPLATE_LABEL.fullmatch(label):
                raise ValueError(f"{label!a} is not a template label (1 to 32 ASCII letters, digits, '.', '_', '-')")
        return templates


def _same_case(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two cases are one: the same keys with the same values, typed (``1``, ``1.0`` and ``true`` differ, as
    they do for generate_input)."""
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


class ProblemSetEntry(_Strict):
    directory: str = Field(description="The problem folder, relative to the problem-set file.")
    name: str | None = Field(default=None, description="The leaderboard name; the folder's name if omitted.")
    deadline: datetime = Field(description="UTC; a time without a zone is read as UTC.")
    devices: list[str] = Field(min_length=1, max_length=MAX_DEVICES)
    code_public_after_deadline: bool | None = Field(
        default=None, strict=True, description="Override of the set's code_public_after_deadline for this leaderboard."
    )
    lang: Language | None = Field(
        default=None,
        description="The leaderboard's language when it is not the problem's own: a Python kernel DSL (helion, "
        "tilelang, cute-dsl) on a Python problem; it takes the same files. Its templates are the problem's "
        "templates of that label, if it has any.",
    )

    @field_validator("directory")
    @classmethod
    def _relative(cls, value: str) -> str:
        issue = text_issue(value)
        if issue:
            raise ValueError(f"{value!a} {issue}")
        parts = PurePosixPath(value.replace("\\", "/")).parts
        if not value.strip() or value.startswith(("/", "\\")) or ".." in parts:
            raise ValueError(f"{value!r} must be a folder inside the problem set's folder (a relative path)")
        issue = problem_name_issue(parts[-1] if parts else "")
        if issue:
            raise ValueError(issue)
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        issue = leaderboard_name_issue(value) if value is not None else None
        if issue:
            raise ValueError(issue)
        return value

    @field_validator("deadline", mode="before")
    @classmethod
    def _not_a_number(cls, value: Any) -> Any:
        text = str(value).strip() if isinstance(value, str | int | float) and not isinstance(value, bool) else None
        if text is not None and re.fullmatch(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?", text):
            raise ValueError(
                f"{value!r} is a number, which would be read as seconds since 1970; "
                "write the date like 2030-12-31 or 2030-12-31T23:59:59Z"
            )
        return value

    @field_validator("deadline")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        try:
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        except OverflowError:
            raise ValueError(f"{value.isoformat()} is out of the range of dates (in UTC)") from None

    @field_validator("devices")
    @classmethod
    def _devices(cls, devices: list[str]) -> list[str]:
        issue = devices_issue(devices)
        if issue:
            raise ValueError(issue)
        return devices

    @model_validator(mode="after")
    def _usable_name(self) -> ProblemSetEntry:
        if self.name is None:
            issue = leaderboard_name_issue(self.leaderboard_name)
            if issue:
                raise ValueError(f"{issue}; give the entry a 'name:'")
        return self

    @property
    def leaderboard_name(self) -> str:
        return self.name or PurePosixPath(self.directory.replace("\\", "/")).name


class ProblemSet(_Strict):
    name: FreeText = Field(min_length=1, max_length=200)
    description: FreeText = ""
    code_public_after_deadline: bool = Field(
        default=False,
        strict=True,
        description="After a leaderboard's deadline, anyone may read its ranked entries' code.",
    )
    problems: list[ProblemSetEntry] = Field(min_length=1, max_length=MAX_SET_PROBLEMS)

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

    def snapshot(self) -> dict[str, Any]:
        """What a leaderboard stores of its problem (``leaderboards.snapshot``): plain JSON values."""
        return {
            "problem": self.name,
            "task": self.task.model_dump(mode="json"),
            "files": dict(self.files),
            "templates": dict(self.templates),
        }

    def in_language(self, lang: Language) -> Problem:
        """This problem as a leaderboard in another language that takes the same files (a Python DSL on a Python
        problem): the templates labelled with that language's key where there are any, else all of them. Raises
        ``ValueError`` (naming both languages) when the two take different files."""
        if lang == self.task.lang:
            return self
        own, other = LANGUAGES[self.task.lang], LANGUAGES[lang]
        if own.suffixes != other.suffixes or own.problem_files != other.problem_files:
            raise ValueError(f"{other.display} takes other files than the problem's {own.display}; write a problem "
                             f"folder with lang: {lang.value} instead")  # fmt: skip
        paths = {label: rel for label, rel in self.task.templates.items() if label == lang.value}
        if not paths:
            return replace(self, task=self.task.model_copy(update={"lang": lang}))
        task = self.task.model_copy(update={"lang": lang, "templates": paths})
        return replace(self, task=task, templates={k: v for k, v in self.templates.items() if k in paths})

    def smallest_test(self) -> dict[str, Any]:
        """The test case with the fewest elements (the product of its integer sizes, seeds left out): the one a
        reference check runs."""

        def ints(value: Any) -> list[int]:
            if isinstance(value, list):
                return [i for item in value for i in ints(item)]
            return [abs(value)] if isinstance(value, int) and not isinstance(value, bool) else []

        def size(case: dict[str, Any]) -> tuple[float, int]:
            sizes = [i for k, v in case.items() if k != "seed" for i in ints(v)]  # shapes may be lists: [m, n]
            return math.prod(sizes) if sizes else 0, len(json.dumps(case, default=str))

        return min(self.task.cases("tests", self.task.world_size), key=size)

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
        world_size = split_device(device_name)[1] or self.task.world_size if device != "cpu" else self.task.world_size
        tests, benchmarks = self.task.cases("tests", world_size), self.task.cases("benchmarks", world_size)
        if not tests or not benchmarks:
            raise ProblemFormatError([FormatIssue(str(self.path / "task.yml"), "tests" if not tests else "benchmarks",
                                                  f"no case runs at world_size {world_size} ({device_name or device} "
                                                  "runs that many ranks)")])  # fmt: skip
        return RunRequest(
            problem=self.name,
            lang=self.task.lang,
            mode=mode,
            files=dict(self.files),
            submission=SubmissionFile(name=submission_name, content=submission),
            tests=tests,
            benchmarks=benchmarks,
            seed=seed,
            device=device,
            device_name=device_name,
            ranking_by=self.task.ranking_by,
            dtype=self.task.dtype,
            limits=limits,
            baselines=[REFERENCE_BASELINE, *self.task.baselines] if world_size == 1 else [],
            world_size=world_size,
            library_policy=self.task.library_policy,
        )

    def system_test_request(
        self,
        submission_name: str,
        submission: bytes,
        *,
        device: str,
        device_name: str = "",
        limits: Limits | None = None,
    ) -> RunRequest:
        """The run request of a system test (``leaderboards.holdout``): the held-out cases as its tests and nothing
        else, in test mode; where the problem times them (``holdout_timed``), a ranked-mode run that checks them and
        times them too (as its benchmarks, with fresh inputs; no baseline). The only request that carries them:
        ``request`` (a competitor's own run) never does. Raises ``ProblemFormatError`` when no held-out case runs on
        ``device_name``'s ranks."""
        mode = Mode.RANKED if self.task.holdout_timed else Mode.TEST
        made = self.request(submission_name, submission, mode, device=device, device_name=device_name,
                            limits=limits)  # fmt: skip
        holdout = self.task.cases("holdout", made.world_size)
        if not holdout:
            what = f"no held-out case runs at world_size {made.world_size}"
            raise ProblemFormatError([FormatIssue(str(self.path / "task.yml"), "holdout", what)])
        timed = holdout if self.task.holdout_timed else []
        # The limit scales with the cases (input hacks add held-out cases): the task's limit is for its public cases,
        # so a run of more held-out cases than that gets the same time per case, never less than the task's limit.
        public = len(self.task.cases("tests", made.world_size)) + (
            len(self.task.cases("benchmarks", made.world_size)) if self.task.holdout_timed else 0
        )
        scale = max(1.0, (len(holdout) + len(timed)) / max(1, public))
        limits = made.limits.model_copy(update={"run_timeout_s": made.limits.run_timeout_s * scale})
        return made.model_copy(update={"tests": holdout, "benchmarks": timed, "baselines": [], "limits": limits})


def _pydantic_issues(file: Path, exc: ValidationError, prefix: str = "") -> list[FormatIssue]:
    issues = []
    for err in exc.errors():
        loc = prefix + ".".join(str(p) for p in err["loc"])
        expected = error_message(err)
        if err["type"] == "missing":
            expected = "this field is required"
        elif err["type"] == "extra_forbidden":
            expected = "unknown field (check its spelling)"
        issues.append(FormatIssue(str(file), loc, expected))
    return issues


def _yaml_message(exc: yaml.YAMLError) -> str:
    """A YAML error on one line: where, then what (PyYAML's own text spans several lines)."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        return f"not valid YAML: {where}{exc.problem}"
    return f"not valid YAML: {' '.join(str(exc).split())}"


def _read_yaml(file: Path) -> tuple[Any, list[FormatIssue]]:
    try:
        return load_yaml(read_text(file, MAX_YAML_BYTES)), []
    except FileRefused as exc:
        return None, [FormatIssue(str(file), "", "file not found" if str(exc) == "does not exist" else str(exc))]
    except yaml.YAMLError as exc:
        return None, [FormatIssue(str(file), "", _yaml_message(exc))]
    except ValueError as exc:
        return None, [FormatIssue(str(file), "", str(exc))]


def _parse_python(file: Path, source: str) -> tuple[ast.Module | None, FormatIssue | None]:
    """The module ``source`` is, or the issue saying where and why Python would refuse it. It is compiled as well as
    parsed (``dont_inherit``: this module's own ``from __future__`` must not apply), so what only the compiler refuses
    (a ``from __future__`` import after other code, ``return`` outside a function) is caught before a run; a leading
    UTF-8 byte-order mark is accepted, as Python accepts it in a file; a NUL byte is named by its line and column
    (red team, 2026-11-29)."""
    source = source.removeprefix("\ufeff")
    nul = source.find("\0")
    if nul >= 0:
        line, column = source.count("\n", 0, nul) + 1, nul - (source.rfind("\n", 0, nul) + 1) + 1
        return None, FormatIssue(str(file), f"line {line}", f"column {column}: a NUL byte (U+0000), which Python "
                                 "source cannot hold: delete it (write '\\0' in a string)")  # fmt: skip
    try:
        tree = ast.parse(source, filename=str(file))
        compile(source, str(file), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" if exc.lineno else ""
        return None, FormatIssue(str(file), where, f"syntax error: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:  # absurd nesting
        return None, FormatIssue(str(file), "", f"cannot be parsed as Python ({type(exc).__name__}: an expression "
                                 "nested or chained too deeply for the parser): split it into statements")  # fmt: skip
    return tree, None


def _raw_cases(raw: object) -> tuple[dict[str, list[dict[str, Any]]], bool]:
    """The cases of a task.yml that did not validate, where they are lists of mappings, and whether it runs as several
    ranks (as ``Task.multi_rank`` reads them): so that ``_check_case_keys`` still looks at them, and one pass of
    ``validate`` reports a misspelt case key beside a misspelt field."""
    if not isinstance(raw, dict):
        return {}, False
    cases = {
        kind: [c for c in raw[kind] if isinstance(c, dict) and all(isinstance(k, str) for k in c)]
        for kind in ("tests", "benchmarks", "holdout")
        if isinstance(raw.get(kind), list)
    }
    world = raw.get("world_size", 1)
    multi = (isinstance(world, int) and world > 1) or any("world_size" in c for group in cases.values() for c in group)
    return cases, multi


def _check_reference(file: Path, source: str, task: Task | None = None, raw: object = None) -> list[FormatIssue]:
    tree, issue = _parse_python(file, source)
    if tree is None:
        return [issue] if issue else []
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    defined |= {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    issues = [
        FormatIssue(str(file), name, "must be defined at module level")
        for name in REFERENCE_FUNCTIONS
        if name not in defined
    ]
    if task is not None:
        cases = {kind: list(getattr(task, kind)) for kind in ("tests", "benchmarks", "holdout")}
        issues.extend(_check_case_keys(file, tree, cases, task.multi_rank))
    elif raw is not None:
        issues.extend(_check_case_keys(file, tree, *_raw_cases(raw)))
    return issues


def _check_case_keys(
    file: Path, tree: ast.Module, cases: dict[str, list[dict[str, Any]]], multi_rank: bool
) -> list[FormatIssue]:
    """Every case's keys are keyword arguments ``generate_input`` takes, and no case lacks one it needs.

    Only a plain ``def generate_input(...)`` is checked (one that is assigned or imported is left to
    ``validate --run``); the last definition wins, as at import."""
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "generate_input"]
    if not defs:
        return []
    args = defs[-1].args
    named = [*args.args, *args.kwonlyargs]
    takes = {a.arg for a in named}
    required = {a.arg for a in args.args[: len(args.args) - len(args.defaults)]}
    required |= {a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None}
    signature = f"generate_input({', '.join(a.arg for a in named)}{', **' + args.kwarg.arg if args.kwarg else ''})"
    task_file = str(file.with_name("task.yml"))
    issues = []
    given = {"rank", "world_size"} if multi_rank else set()  # the harness passes them to each rank's call
    if given and not args.kwarg and not given <= takes:
        what = f"a problem of several ranks needs generate_input(rank, world_size, ...); reference.py has {signature}"
        issues.append(FormatIssue(str(file), "generate_input", what))
    for kind, group in cases.items():
        for i, case in enumerate(group):
            unknown = [] if args.kwarg else sorted(set(case) - takes)
            missing = sorted(required - set(case) - given)
            where = f"{kind}.{i}"
            if unknown:
                verb = "is not a parameter" if len(unknown) == 1 else "are not parameters"
                what = f"{', '.join(map(repr, unknown))} {verb} of {signature} in reference.py"
                issues.append(FormatIssue(task_file, where, what))
            if missing:
                what = f"lacks {', '.join(map(repr, missing))}, which {signature} needs"
                issues.append(FormatIssue(task_file, where, what))
    return issues


def load_problem(path: Path | str) -> Problem:
    """Load and validate a problem folder; raise ``ProblemFormatError`` listing every error found."""
    path = Path(path)
    task_file = path / "task.yml"
    if not path.is_dir():
        near = nearest_problem_folders(path)
        hint = f"; did you mean {' or '.join(map(str, near))}?" if near else ""
        raise ProblemFormatError([FormatIssue(str(path), "", f"is not a problem folder (expected a directory){hint}")])
    if problem_name_issue(path.name):
        raise ProblemFormatError([FormatIssue(str(path.parent), "", str(problem_name_issue(path.name)))])
    if not _inside(path, task_file):
        issue = "is a symbolic link out of the problem folder; task.yml must be a file inside the problem folder"
        raise ProblemFormatError([FormatIssue(str(task_file), "", issue)])
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
    # The files are read and reference.py checked even when task.yml has errors, so one pass reports them all.
    if task is not None:
        listed, listed_templates = task.files, task.templates
    else:  # no task.yml at all: not a problem folder, so no more to say
        listed, listed_templates = _listed_files(raw) if task_file.exists() else ([], {})
    for rel in listed:
        issues.extend(_read_into(files, path, rel, task_file, "files"))
    for label, rel in listed_templates.items():
        issues.extend(_read_into(templates, path, rel, task_file, f"templates.{label}", key=label))
        issues.extend(_check_template(path / rel, f"templates.{label}", templates.get(label)))
    if "reference.py" in files:
        issues.extend(_check_reference(path / "reference.py", files["reference.py"], task, raw))
    shipped = sum(len(t) for t in files.values()) + sum(len(t) for t in templates.values())
    if task is not None and task.holdout and shipped <= MAX_SNAPSHOT_BYTES:  # (over it: refused below, unscanned)
        issues.extend(_holdout_leaks(path, task, files, templates))
    try:
        files = bundle_lib(files)
    except LibRefused as exc:
        issues.append(FormatIssue(str(path / exc.file), exc.field, str(exc)))
    if issues:
        raise ProblemFormatError(issues)
    assert task is not None
    problem = Problem(path=path, task=task, files=files, templates=templates)
    size = len(json.dumps(problem.snapshot(), allow_nan=False, separators=(",", ":")).encode())
    if size > MAX_SNAPSHOT_BYTES:
        raise ProblemFormatError(
            [
                FormatIssue(
                    str(path),
                    "",
                    f"task.yml, its files and templates come to {size / (1 << 20):.1f} MiB; a leaderboard stores "
                    f"at most {MAX_SNAPSHOT_BYTES // (1 << 20)} MiB (keep large data out of the problem folder: "
                    "generate_input makes the inputs)",
                )
            ]
        )
    return problem


def _check_template(file: Path, field: str, text: str | None) -> list[FormatIssue]:
    """A template is what every competitor starts from: not empty, and a Python one must parse."""
    if text is None:
        return []  # unreadable: _read_into said why
    if not text.strip():
        return [FormatIssue(str(file), field, "the template is empty; give competitors a file that runs")]
    if file.suffix == ".py":
        _, issue = _parse_python(file, text)
        if issue is not None:
            where = f"{issue.field}: " if issue.field else ""
            return [FormatIssue(str(file), field, f"the template is not valid Python: {where}{issue.message}")]
    return []


def _holdout_leaks(root: Path, task: Task, files: dict[str, str], templates: dict[str, str]) -> list[FormatIssue]:
    """The shipped files and templates that would give away a held-out case: every one travels with each run request
    and is shown with the task (the public snapshot), so none may be task.yml under another name (a link, ``t.yml ->
    task.yml``, or a template naming it) nor hold a held-out case's text (a copy of task.yml, a template that quotes
    the cases). Red team of the problem format, 2026-11-29: the guard saw only the literal name ``task.yml``."""
    task_file = root / "task.yml"
    try:
        task_yml = task_file.resolve()
    except (OSError, RuntimeError):
        task_yml = None
    shipped = [("files", rel, rel, files.get(rel)) for rel in task.files]
    shipped += [(f"templates.{label}", rel, label, templates.get(label)) for label, rel in task.templates.items()]
    issues = []
    for i, case in enumerate(task.holdout):  # the description is shown with the task too
        if _holds_case(task.description, case):
            issues.append(FormatIssue(str(task_file), "description", f"writes the held-out case holdout.{i} (its keys "
                                      "with its values): the description is public, so the case would be too; take "
                                      "it out"))  # fmt: skip
            break
    for field_name, rel, _key, text in shipped:
        try:
            same = task_yml is not None and (root / rel).resolve() == task_yml
        except (OSError, RuntimeError, ValueError):
            same = False
        if same:
            issues.append(FormatIssue(str(task_file), field_name, f"{rel!r} is task.yml itself (or a link to it): the "
                                      "files and templates travel with every run and are shown with the task, so the "
                                      "held-out cases would be too; leave it out"))  # fmt: skip
            continue
        if text is None:
            continue
        for i, case in enumerate(task.holdout):
            if _holds_case(text, case):
                issues.append(FormatIssue(str(root / rel), field_name, f"holds the held-out case holdout.{i} (its "
                                          "keys with its values): it travels with every run and is shown with the "
                                          "task, so the case would be public; take it out of the file (or change "
                                          "the case)"))  # fmt: skip
                break
    return issues


CASE_WINDOW = 200
"""How close (in characters) a held-out case's key-value pairs must lie to each other for a file to count as quoting
the case: the span of one written case (``{size: 1000, seed: 7101}``, ``size=1000, seed=7101``), not a file that
happens to use the same numbers in different places."""


def _value_pattern(value: Any) -> str | None:
    """A regular expression for ``value`` as YAML, JSON or Python write it; None for a value too vague to look for."""
    if isinstance(value, bool):
        return "(?:true|True)" if value else "(?:false|False)"
    if isinstance(value, int):
        return rf"(?<![\w.]){re.escape(str(value))}(?![\w]|\.\d)"
    if isinstance(value, float):
        forms = {repr(value), f"{value:g}", str(int(value)) if value.is_integer() else repr(value)}
        return rf"(?<![\w.])(?:{'|'.join(map(re.escape, sorted(forms)))})(?![\w]|\.\d)"
    if isinstance(value, str):
        return rf"[\"']?{re.escape(value)}[\"']?(?![\w])" if value else None
    if isinstance(value, list):
        items = [_value_pattern(v) for v in value]
        if any(item is None for item in items):
            return None
        return r"[\[(]\s*" + r"\s*,\s*".join(items) + r"\s*,?\s*[\])]"  # type: ignore[arg-type]
    return None


def _holds_case(text: str, case: dict[str, Any]) -> bool:
    """Whether ``text`` writes every key of ``case`` with its value (``key: value``, ``"key": value``, ``key=value``,
    ``key value``) within ``CASE_WINDOW`` characters of each other: a copy of the case, in task.yml's form, a dict or
    call's, or prose."""
    spans: list[list[int]] = []
    for key, value in case.items():
        pattern = _value_pattern(value)
        if pattern is None:
            continue
        # ``\s*(?:[:=]\s*)?``, not ``\s*[:=]?\s*``: two blank runs in a row split a long run of blanks every way
        # before failing (a reference ending in a key and 32,000 spaces took 17 s; a red team's finding).
        key_value = rf"(?<![\w])[\"']?{re.escape(key)}[\"']?\s*(?:[:=]\s*)?{pattern}"
        found = [m.start() for m in re.finditer(key_value, text)]
        if not found:
            return False
        spans.append(found)  # (ascending: finditer's order)
    if not spans:
        return False
    return any(all(_near(p, others) for others in spans[1:]) for p in spans[0])


def _near(position: int, ascending: list[int]) -> bool:
    """Whether a position in ``ascending`` lies within ``CASE_WINDOW`` of ``position`` (a binary search: a file of
    many matches of two keys made the pairwise test quadratic, 162 s for one 936 KB file)."""
    i = bisect.bisect_left(ascending, position - CASE_WINDOW)
    return i < len(ascending) and ascending[i] <= position + CASE_WINDOW


def _listed_files(raw: Any) -> tuple[list[str], dict[str, str]]:
    """The files and templates a ``task.yml`` that failed validation names, as far as they can be read (its own
    errors are reported already): what ``load_problem`` still reads and checks. The default is reference.py."""
    fields = raw if isinstance(raw, dict) else {}
    files = fields.get("files", ["reference.py"])
    templates = fields.get("templates", {})
    listed = [f for f in files if isinstance(f, str)][:MAX_PROBLEM_FILES] if isinstance(files, list) else []
    if not isinstance(templates, dict):
        return listed, {}
    usable = {k: v for k, v in templates.items() if isinstance(k, str) and isinstance(v, str)}
    return listed, dict(list(usable.items())[:MAX_TEMPLATES])


def _valid_entries(raw: Any) -> list[tuple[int, ProblemSetEntry]]:
    """The entries of a problem set that failed validation which are valid on their own (the set's errors are
    reported already), with their index: their folders are still loaded, so one pass reports every error."""
    entries = raw.get("problems") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        return []
    valid = []
    for i, entry in enumerate(entries[:MAX_SET_PROBLEMS]):
        try:
            valid.append((i, ProblemSetEntry.model_validate(entry)))
        except ValidationError:
            continue
    return valid


def _inside(folder: Path, path: Path) -> bool:
    """Whether ``path``, its symbolic links followed, is ``folder`` or lies below it (``folder`` resolved too)."""
    try:
        resolved, root = path.resolve(), folder.resolve()
    except (OSError, ValueError, RuntimeError):  # a loop of links, a NUL byte
        return False
    return resolved == root or root in resolved.parents


def _read_into(
    out: dict[str, str], root: Path, rel: str, task_file: Path, field_name: str, key: str | None = None
) -> list[FormatIssue]:
    """Read the listed file ``rel`` of the problem folder ``root`` into ``out``; the issues if it cannot be. Its path
    follows the runner's rule (``problem_rules.problem_path_issue``) and, links followed, stays in the folder."""
    issue = problem_path_issue(rel)
    if issue:
        return [FormatIssue(str(task_file), field_name, issue)]
    target = root / rel
    if not _inside(root, target):
        return [FormatIssue(str(task_file), field_name, f"{rel!r} must be a path inside the problem folder")]
    try:
        out[key or rel] = read_text(target, MAX_FILE_BYTES)
    except FileRefused as exc:
        where = f" in {root}" if str(exc) == "does not exist" else ""
        return [FormatIssue(str(task_file), field_name, f"{rel!r} {exc}{where}")]
    return []


def load_problem_set(
    file: Path | str, *, device_check: DeviceCheck | None = None
) -> tuple[ProblemSet, dict[str, Problem]]:
    """Load a problem-set file and every problem it lists, keyed by leaderboard name.

    Raises ``ProblemFormatError`` with every error of the set file and of each problem folder. ``device_check``
    (built from the routes by the composition root) refuses devices no runner can serve.
    """
    file = Path(file)
    raw, issues = _read_yaml(file)
    if issues:
        raise ProblemFormatError(issues)
    if not isinstance(raw, dict):
        raise ProblemFormatError([FormatIssue(str(file), "", "expected a mapping with name and problems")])
    pset: ProblemSet | None = None
    try:
        pset = ProblemSet.model_validate(raw)
        entries = list(enumerate(pset.problems))
    except ValidationError as exc:
        issues.extend(_pydantic_issues(file, exc))
        entries = _valid_entries(raw)
    problems: dict[str, Problem] = {}
    keys: dict[str, tuple[int, str]] = {}
    loaded: dict[Path, Problem] = {}
    for i, entry in entries:
        name = entry.leaderboard_name
        first = keys.setdefault(name_key(name), (i, name))
        if first[0] != i:
            same = "" if first[1] == name else f" (as {first[1]!r}: names are compared ignoring case and look-alikes)"
            issues.append(
                FormatIssue(str(file), f"problems.{i}.name", f"leaderboard name {name!r} is used twice{same}")
            )
            continue
        if device_check is not None:
            for d in entry.devices:
                why = device_check(d)
                if why:
                    issues.append(FormatIssue(str(file), f"problems.{i}.devices", why))
        if not _inside(file.parent, file.parent / entry.directory):
            issues.append(
                FormatIssue(
                    str(file),
                    f"problems.{i}.directory",
                    f"{entry.directory!r} must be a folder inside the problem set's folder "
                    "(it leads outside, through a symbolic link)",
                )
            )
            continue
        folder = (file.parent / entry.directory).resolve()
        if folder not in loaded:
            try:
                loaded[folder] = load_problem(file.parent / entry.directory)
            except ProblemFormatError as exc:
                issues.extend(exc.errors)
                continue
        try:
            problems[name] = loaded[folder].in_language(entry.lang) if entry.lang else loaded[folder]
        except ValueError as exc:
            issues.append(FormatIssue(str(file), f"problems.{i}.lang", str(exc)))
            continue
        issues.extend(_device_issues(file, i, entry, name, problems[name].task))
    if issues or pset is None:
        raise ProblemFormatError(issues)
    return pset, problems


def _device_issues(file: Path, i: int, entry: ProblemSetEntry, name: str, task: Task) -> list[FormatIssue]:
    """A language that compiles for the GPU is offered on no CPU (the runner would refuse every submission there). A
    device of a problem on several GPUs names its GPU count (``H100x8``; the CPU runs the task's world size), and
    every device's world size has cases; a one-GPU problem runs on devices of one GPU (docs/multigpu.md)."""
    issues = []
    lang = LANGUAGES[task.lang]
    for device in entry.devices:
        count = split_device(device)[1]
        where = f"problems.{i}.devices"
        if lang.needs_cuda and device.lower() == "cpu":
            why = (f"{device}: {name} takes {lang.display} (lang: {task.lang.value}), which needs a CUDA device; "
                   "no submission could run on the CPU: leave it out of the devices")  # fmt: skip
            issues.append(FormatIssue(str(file), where, why))
        elif not task.multi_rank and (count or 1) > 1:
            why = f"{device} runs {count} ranks; {entry.directory} runs on one GPU"
            issues.append(FormatIssue(str(file), where, why))
        elif task.multi_rank and device.lower() != "cpu" and count is None:
            why = f"{entry.directory} runs on several GPUs: name the count, e.g. {device}x{task.world_size}"
            issues.append(FormatIssue(str(file), where, why))
        elif task.multi_rank:
            world = count or task.world_size
            if not task.cases("tests", world) or not task.cases("benchmarks", world):
                issues.append(FormatIssue(str(file), where, f"{device}: {entry.directory} has no test or benchmark "
                                          f"for world_size {world}"))  # fmt: skip
    return issues


def deadline_warnings(file: Path | str, pset: ProblemSet, now: datetime) -> list[FormatIssue]:
    """Entries whose deadline has passed: their leaderboards would be closed from the start."""
    return [
        FormatIssue(
            str(file),
            f"problems.{i}.deadline",
            f"{entry.deadline:%Y-%m-%d %H:%M} UTC is in the past: {entry.leaderboard_name!r} will refuse submissions",
        )
        for i, entry in enumerate(pset.problems)
        if entry.deadline <= now
    ]
