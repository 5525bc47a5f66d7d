"""Input hacks (issue 35): a case inside a problem's ``hack_space`` tried against kernels, judged against the reference.

A hack is one case of ``generate_input``. It is checked strictly against the problem's declared space first
(``leaderboards.hack_space``: every parameter, its type and range, the cap on the sizes), then it runs:

1. the reference on it, as a submission of a test-mode run (its ``ref_kernel`` through the problem's own check, in the
   sandbox): a case where the reference fails its own check is refused, it is no hack;
2. each kernel on it, one test-mode run each (correctness only, never timed).

A kernel is **broken** where the reference passed and it did not: a wrong answer, a crash, a timeout, running out of
memory. One that could not be judged (it does not compile here, it needs CUDA on a CPU run, the runner failed) is not
broken: the report says why. ``kernelcup problems hack`` runs this judge over files on this machine; against a board
(``leaderboards/board_hacks.py``) a worker runs the same requests (``reference_request``, ``hack_request``) and judges
them with ``judged``. A hack space must cap its sizes (``sizes``): one without is refused here, so that no hack is an
unbounded run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from leaderboards.battery import SubmissionRun
from leaderboards.errors import UserError
from leaderboards.hack_space import HackField, hack_case_issues, normal_case
from leaderboards.problems import Problem
from runners.contract import Language, Limits, Mode, RunRequest, RunResult, Verdict

__all__ = [
    "EntryOutcome",
    "HackRefused",
    "HackReport",
    "check_hack",
    "hack_request",
    "judged",
    "reference_refusal",
    "reference_request",
    "try_hack",
]

BROKEN = frozenset({Verdict.WRONG_ANSWER, Verdict.RUNTIME_ERROR, Verdict.TIMEOUT, Verdict.OUT_OF_MEMORY})
"""Verdicts of a kernel that the hack broke (where the reference passed)."""
MAX_ENTRIES = 50
"""Kernels one hack runs against at most."""

_REFERENCE_AS_SUBMISSION = '''"""The reference as a submission: an input hack's first run."""
import importlib.util
import sys
import tempfile
from pathlib import Path

FILES = {files!r}
_folder = Path(tempfile.mkdtemp(prefix="hack-reference-"))
for _rel, _text in FILES.items():
    (_folder / _rel).parent.mkdir(parents=True, exist_ok=True)
    (_folder / _rel).write_text(_text)
sys.path.insert(0, str(_folder))
_spec = importlib.util.spec_from_file_location("hack_reference", _folder / "reference.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)


def custom_kernel(data):
    return _module.ref_kernel(data)
'''


class HackRefused(UserError):
    """An input hack that is not a case of the problem's hack space, or one the reference fails; ``fields`` names
    each parameter that is wrong (the API answers 422 with them)."""

    code = "hack_refused"

    def __init__(self, message: str, fields: Sequence[HackField] = ()) -> None:
        self.fields = tuple(fields)
        detail = "; ".join(f"{f.field}: {f.message}" for f in self.fields)
        first = self.fields[0].field if self.fields else "case"
        field = first if first == "case" or "." in first else f"case.{first}"  # a parameter of the case: case.rows
        super().__init__(f"{message}: {detail}" if detail else message, field=field)


@dataclass(frozen=True)
class EntryOutcome:
    """One kernel's run on the hack."""

    name: str
    verdict: Verdict
    broken: bool
    message: str
    """What the run said (a local run's own file: the person running it wrote or holds the kernel)."""


@dataclass(frozen=True)
class HackReport:
    problem: str
    case: dict[str, Any]
    entries: tuple[EntryOutcome, ...]

    @property
    def broken(self) -> tuple[EntryOutcome, ...]:
        return tuple(e for e in self.entries if e.broken)


def check_hack(problem: Problem, case: Any) -> dict[str, Any]:
    """``case`` as a case of ``problem``'s hack space, or ``HackRefused`` naming every field that is wrong."""
    space = problem.task.hack_space
    if space is None:
        raise HackRefused(
            f"{problem.name} declares no hack_space, so it takes no input hacks (its author adds one to task.yml: "
            "docs/authoring.md, input hacks)"
        )
    if not space.sizes:
        raise HackRefused(
            f"{problem.name}'s hack_space caps no size, so a hack could be an unbounded run: its author names the int "
            "parameters that size the input in hack_space.sizes (their product is capped by max_size)",
            [HackField("hack_space.sizes", "is empty (name the size parameters, e.g. sizes: [rows, cols])")],
        )
    issues = hack_case_issues(space, case)
    if issues:
        raise HackRefused(f"not a case of {problem.name}'s hack space", issues)
    assert isinstance(case, dict)
    return normal_case(space, case)


def hack_request(
    problem: Problem,
    case: dict[str, Any],
    file_name: str,
    code: bytes,
    device: str,
    *,
    device_name: str | None = None,
    limits: Limits | None = None,
) -> RunRequest:
    """A test-mode run of ``code`` on the one case ``case`` (no benchmark, no baseline); ``device`` is the harness's
    (cpu, cuda), ``device_name`` the board's (H100)."""
    request = problem.request(
        file_name, code, Mode.TEST, device=device, device_name=device_name or device, limits=limits
    )
    return request.model_copy(update={"tests": [case], "benchmarks": [], "baselines": []})


def reference_request(
    problem: Problem, case: dict[str, Any], device: str, *, device_name: str | None = None, limits: Limits | None = None
) -> RunRequest:
    """The reference's run on ``case`` as a Python submission (its ``ref_kernel`` through the problem's own check)."""
    files = {rel: text for rel, text in problem.files.items() if rel.endswith(".py")}
    source = _REFERENCE_AS_SUBMISSION.format(files=files).encode()
    request = hack_request(
        problem, case, "reference_as_submission.py", source, device, device_name=device_name, limits=limits
    )
    return request.model_copy(update={"lang": Language.PYTHON})


def reference_refusal(reference: RunResult) -> HackRefused | None:
    """The refusal of a hack whose reference run did not pass its own check (None where it passed)."""
    if reference.verdict is Verdict.ACCEPTED:
        return None
    said = judged("reference", reference, False).message
    return HackRefused(
        f"the reference does not pass its own check on this case ({reference.verdict.label}: {said[:500]}): it is "
        "no hack; choose a case the problem's own computation handles",
        [HackField("case", "the reference fails on it")],
    )


def judged(name: str, result: RunResult, reference_ok: bool) -> EntryOutcome:
    """One kernel's run on a hack: broken where the reference passed (``reference_ok``) and it did not."""
    test = result.tests[0] if result.tests else None
    verdict = test.verdict if test is not None and result.verdict is Verdict.WRONG_ANSWER else result.verdict
    message = (test.message if test is not None and test.message else result.message) or verdict.label
    return EntryOutcome(name, verdict, reference_ok and verdict in BROKEN, message)


def try_hack(
    problem: Problem,
    case: Any,
    entries: Sequence[tuple[str, bytes]],
    run: SubmissionRun,
    *,
    device: str = "cpu",
) -> HackReport:
    """Check ``case`` against the hack space, run the reference on it, then each of ``entries`` (file name, code);
    ``HackRefused`` where the case is outside the space or the reference fails its own check on it."""
    case = check_hack(problem, case)
    if len(entries) > MAX_ENTRIES:
        raise HackRefused(f"a hack runs against at most {MAX_ENTRIES} kernels, not {len(entries)}")
    refused = reference_refusal(run(reference_request(problem, case, device)))
    if refused is not None:
        raise refused
    outcomes = [judged(name, run(hack_request(problem, case, name, code, device)), True) for name, code in entries]
    return HackReport(problem.name, case, tuple(outcomes))
