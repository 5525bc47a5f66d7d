"""The exploit battery of ``problems validate --run`` and ``problems sync``: generic bad solutions against a problem.

Most cheats that topped kernel leaderboards used a loose problem, not a hole in the harness: zeros passed a check,
an answer hardly depended on its inputs, a lower precision passed an fp32 check. Before a problem opens, each bad
solution below runs as a submission would, on every test and held-out case: the battery's program
(``battery_solution.py``) is sent as the submission of one test-mode run on the CPU, in the sandbox, and the trusted
evaluator checks each of its answers with the problem's own ``check_implementation``. A bad answer that passes is an
error naming the case, the bad solution and what to change; the lower precisions are errors or warnings as the
problem's ``precision`` policy says (``task.yml``), and the lint's findings (a rough answer passes, inputs whose
rows are all alike, integer inputs the seed does not change, a benchmark case whose roofline time on an H100 is below
the launch floor, ranked cases all of one shape family, a reference far from the roofline: ``battery_lint``) are
warnings that ``--strict`` makes errors.

Benchmark cases are not in the battery: they are sized for a GPU, and the check of one bad answer costs what the
reference costs (minutes on a CPU for the largest). Test cases should cover the benchmarks' input distributions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from leaderboards.battery_lint import shape_family_lint, weak_reference_lint
from leaderboards.problems import FormatIssue, Precision, Problem
from runners.contract import DataType, Language, Mode, RunRequest, RunResult, Verdict
from runners.devices import PEAKS

__all__ = ["BAD_SOLUTIONS", "PRECISIONS", "BatteryReport", "SubmissionRun", "battery_request", "run_battery"]

FIELD = "exploit battery"
LINT_FIELD = "lint"
SOLUTION = Path(__file__).with_name("battery_solution.py")


class SubmissionRun(Protocol):
    """Runs a test-mode request with a Python submission on the CPU in the sandbox, the problem's check judging each
    test (``runners.entry.run_request`` with this machine's runner settings is the real one)."""

    def __call__(self, request: RunRequest, /) -> RunResult: ...


@dataclass(frozen=True)
class BadSolution:
    name: str
    what: str
    """What the bad solution returns, in words."""
    change: str
    """What the problem's author should change when it passes."""


_TOLERANCE = "make the tolerance relative to the expected values and derived from the computation's precision"
BAD_SOLUTIONS = (
    BadSolution("zeros", "an output of zeros", f"{_TOLERANCE}, or draw inputs whose answer is not near zero"),
    BadSolution("ones", "an output of ones", f"{_TOLERANCE}, or draw inputs whose answer is not near one"),
    BadSolution(
        "constant",
        "the mean of the expected output in every element",
        "the expected output barely varies; draw inputs whose answer varies from element to element (scale and "
        "offset them), or tighten the tolerance",
    ),
    BadSolution(
        "input",
        "the first input passed through (cast and cut to the output's shape)",
        "the answer is (nearly) the input; draw inputs that the operation changes, or tighten the tolerance",
    ),
    BadSolution(
        "other_seed",
        "the reference's answer for the next seed",
        "the answer hardly depends on the inputs, so a kernel could return a cached one; draw inputs that matter "
        "(wider ranges, no averages that wash them out), or tighten the tolerance",
    ),
    BadSolution(
        "first_row",
        "the first row (or sample) of the expected output repeated over all of it",
        "the rows are alike; give each row values of its own (scales, offsets, distributions), or tighten the "
        "tolerance",
    ),
)
PRECISIONS = (
    BadSolution("tf32", "the reference computed on its fp32 inputs rounded to TF32", ""),
    BadSolution("fp16", "the reference computed on its fp32 inputs rounded to fp16", ""),
    BadSolution("bf16", "the reference computed on its inputs rounded to bf16", ""),
    BadSolution("fp8", "the reference computed on its bf16 inputs rounded to fp8 (e4m3, scaled per tensor)", ""),
)
PRECISION_NAMES = frozenset(p.name for p in PRECISIONS)
ALLOWED: dict[Precision, frozenset[str]] = {
    Precision.EXACT: frozenset(),
    Precision.TF32_OK: frozenset({"tf32", "fp16"}),  # fp16 has TF32's 10-bit mantissa (less range)
    Precision.BF16_OK: frozenset({"tf32", "fp16", "bf16"}),
}
"""The lower precisions each policy lets pass."""
ROUGH = BadSolution(
    "rough",
    "the reference's answer off by 1/16 of its root-mean-square in every element",
    "the tolerance is more than about 6% of the output's typical magnitude, so rough answers pass; derive it from "
    "the precision of the computation",
)
LAUNCH_FLOOR_S = 1.3e-6
"""A benchmark case whose roofline time on the H100 is below this is launch-bound: an empty pair of CUDA events reads
about 1.3 us there (docs/measurement.md, "The two readings"), so the ideal kernel takes less than the timing's own
fixed cost and the case measures overhead, not the kernel."""
FLOOR_DEVICE = "H100"
"""The device whose datasheet peaks (``runners.devices.PEAKS``) give the roofline time on the CPU path."""
_LIGHT = re.compile(r"^kernelcup-battery-light (\d{1,4}) (\d{1,20}) (\d{1,20})$")
_LINE = re.compile(r"^kernelcup-battery (\d{1,6}) (same|uniform|seedless)(?: (\d{1,4}))?$")


@dataclass(frozen=True)
class Probe:
    case: dict[str, Any]
    item: str
    where: str
    """The case in words: "test 2 ({...})"."""


@dataclass(frozen=True)
class BatteryReport:
    issues: tuple[FormatIssue, ...] = ()
    warnings: tuple[FormatIssue, ...] = ()


def _items(case: dict[str, Any]) -> list[str]:
    names = [b.name for b in BAD_SOLUTIONS if b.name != "other_seed" or "seed" in case]
    return [*names, *(p.name for p in PRECISIONS), ROUGH.name]


def battery_request(problem: Problem) -> tuple[RunRequest, list[Probe]]:
    """The test-mode run of the battery's submission on ``problem`` (every test and held-out case, each once per bad
    solution) and what each of its calls tries."""
    task = problem.task
    cases = [("test", c) for c in task.cases("tests", task.world_size)]
    cases += [("held-out case", c) for c in task.cases("holdout", task.world_size)]
    counts: dict[str, int] = {}
    plan = []
    for kind, case in cases:
        counts[kind] = counts.get(kind, 0) + 1
        where = f"{kind} {counts[kind]} ({', '.join(f'{k}={v!r}' for k, v in case.items())})"
        plan += [Probe(case, item, where) for item in _items(case)]
    reference_files = {rel: text for rel, text in problem.files.items() if rel.endswith(".py")}
    source = (
        SOLUTION.read_text()
        + f"\n\nPLAN = __import__('json').loads({json.dumps([{'case': p.case, 'item': p.item} for p in plan])!r})\n"
        + f"FILES = {reference_files!r}\n"
        + f"BENCHMARKS = __import__('json').loads({json.dumps(task.cases('benchmarks', task.world_size))!r})\n"
        + f"TESTS = __import__('json').loads({json.dumps(task.cases('tests', task.world_size))!r})\n"
        + f"BASELINES = {[b.function for b in task.baselines]!r}\n"
    )
    request = problem.request("battery.py", source.encode(), Mode.TEST, device="cpu", device_name="cpu")
    return request.model_copy(update={"tests": [p.case for p in plan], "lang": Language.PYTHON}), plan


def _precision_finding(problem: Problem, name: str, where: str) -> tuple[bool, str] | None:
    """(whether it is an error, the message) for a lower precision that passed; None where the policy allows it."""
    policy = problem.task.precision
    what = next(p.what for p in PRECISIONS if p.name == name)
    if policy is not None and name in ALLOWED[policy]:
        return None
    if policy is None:
        return False, (
            f"{what} passes the check on {where}; declare the precision the problem accepts in task.yml "
            f"(precision: {'bf16_ok' if name == 'bf16' else 'tf32_ok'} where it is welcome) or tighten the tolerance "
            "to the problem's own precision (precision: exact)"
        )
    return True, (
        f"{what} passes the check on {where}, and task.yml says precision: {policy.value}; tighten the "
        f"tolerance to that precision, or declare the precision the check accepts"
    )


_EXITED = re.compile(r"exited with code -?\d+ before it finished")


def problem_code_hint(message: str) -> str:
    """What a process failure of a run of kernelcup's own code (the reference check, the battery's solutions) says
    about the problem's code, or '': only reference.py's code can have printed the output or ended the process (red
    team, 2026-11-29: "could not run ... printed more than 8 MiB" and "exited with code 0 while starting" named no
    file and no function)."""
    code = "reference.py's code (its import, generate_input, ref_kernel or check_implementation)"
    if "printed more than" in message:
        return (f"; kernelcup's own code prints nothing there, so {code} printed it: take the prints out of "
                "reference.py")  # fmt: skip
    if _EXITED.search(message):
        return (f"; the process ended inside {code}: one of them called os._exit() or exit(), or crashed; each must "
                "return (check_implementation returns (ok, message))")  # fmt: skip
    return ""


def battery_findings(
    problem: Problem, plan: list[Probe], result: RunResult, devices: Sequence[str] | None = None
) -> BatteryReport:
    """What the battery's run says about ``problem``: an issue for each bad solution that passed (its first case),
    warnings for the lint and for lower precisions a problem without a policy accepts. ``devices``: the devices its
    leaderboards run on, where a problem set names them (None: not known, every lint applies)."""
    task_yml, reference = str(problem.path / "task.yml"), str(problem.path / "reference.py")
    if result.verdict not in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER) or len(result.tests) != len(plan):
        message = result.message or result.verdict.label
        what = f"the battery could not run: {message}{problem_code_hint(message)}"
        return BatteryReport(issues=(FormatIssue(reference, FIELD, what),))
    same: set[int] = set()
    lint: list[FormatIssue] = []
    inputs_seen: set[tuple[str, int]] = set()
    for line in result.stdout.splitlines():
        match = _LINE.match(line.strip())
        if match is None or int(match[1]) >= len(plan):
            continue
        k, kind = int(match[1]), match[2]
        if kind == "same":
            same.add(k)
            continue
        index = int(match[3] or 0)
        if (kind, index) in inputs_seen:
            continue  # once per input, on its first case
        inputs_seen.add((kind, index))
        where = plan[k].where
        text = (
            f"input {index + 1} of {where} has every row (along its first dimension) alike: a kernel could compute "
            "one row and broadcast it; give each row values of its own"
            if kind == "uniform"
            else f"input {index + 1} of {where} (integers) is the same for the next seed: a kernel could key on "
            "it; draw its values from the seed"
        )
        lint.append(FormatIssue(reference, LINT_FIELD, text))
    tried: dict[str, list[Probe]] = {}
    passed: dict[str, list[Probe]] = {}
    for k, (probe, test) in enumerate(zip(plan, result.tests, strict=True)):
        if k in same:
            continue  # an answer equal to the reference's proves nothing
        tried.setdefault(probe.item, []).append(probe)
        if test.verdict is Verdict.ACCEPTED:
            passed.setdefault(probe.item, []).append(probe)
    if devices is None or any(d.strip().lower() != "cpu" for d in devices):  # (a CPU launches no kernel)
        lint += _launch_bound(problem, result.stdout)
    lint += weak_reference_lint(problem, result.stdout)
    issues: list[FormatIssue] = []
    warnings: list[FormatIssue] = []
    for item, probes in passed.items():
        every = len(probes) == len(tried[item])
        if item == ROUGH.name or item in PRECISION_NAMES:
            # A rough or lower-precision answer that some case refuses fails the tests: only one that passes every
            # case is a way in (a few ill-conditioned elements, like layernorm's constant row, may be loose).
            if not every:
                continue
            where = f"all {len(probes)} cases it changes, the first {probes[0].where}"
        else:
            more = len(probes) - 1
            where = probes[0].where + (f" (and {more} more of {len(tried[item])} cases)" if more else "")
        if item == ROUGH.name:
            lint.append(FormatIssue(reference, LINT_FIELD, f"{ROUGH.what} passes the check on {where}: {ROUGH.change}"))
        elif item in PRECISION_NAMES:
            finding = _precision_finding(problem, item, where)
            if finding is not None:
                error, text = finding
                (issues if error else warnings).append(FormatIssue(task_yml, "precision", text))
        else:
            bad = next(b for b in BAD_SOLUTIONS if b.name == item)
            issues.append(FormatIssue(reference, FIELD, f"{bad.what} passes the check on {where}: {bad.change}"))
    return BatteryReport(tuple(issues), (*warnings, *lint))


def _launch_bound(problem: Problem, stdout: str) -> list[FormatIssue]:
    """A lint warning for each benchmark case whose roofline time on ``FLOOR_DEVICE`` (its ``speed_of_light`` at the
    datasheet's peaks) is below ``LAUNCH_FLOOR_S``."""
    peaks = next(p for p in PEAKS if p.name == FLOOR_DEVICE)
    flops_per_s = peaks.flops_per_s.get(problem.task.dtype, peaks.flops_per_s[DataType.FP32])
    benchmarks = problem.task.cases("benchmarks", problem.task.world_size)
    lint = []
    for line in stdout.splitlines():
        match = _LIGHT.match(line.strip())
        if match is None or int(match[1]) >= len(benchmarks):
            continue
        i, moved, flops = int(match[1]), int(match[2]), int(match[3])
        seconds = max(moved / peaks.memory_bytes_per_s, flops / flops_per_s)
        if seconds >= LAUNCH_FLOOR_S:
            continue
        case = ", ".join(f"{k}={v!r}" for k, v in benchmarks[i].items())
        lint.append(FormatIssue(str(problem.path / "task.yml"), LINT_FIELD, (
            f"benchmark {i + 1} ({case}) is launch-bound: its speed_of_light ({moved:,} bytes, {flops:,} flops) "
            f"takes {seconds * 1e6:.2f} us on an {FLOOR_DEVICE} at its datasheet peaks "
            f"({peaks.memory_bytes_per_s / 1e12:.2f} TB/s, {flops_per_s / 1e12:.0f} TFLOP/s {problem.task.dtype}), "
            f"below the floor of {LAUNCH_FLOOR_S * 1e6:.1f} us (what an empty pair of CUDA events reads there, "
            "docs/measurement.md): it would time the launch, not the kernel; make the case larger"
        )))  # fmt: skip
    return lint


def run_battery(
    problems: Iterable[Problem],
    run: SubmissionRun,
    *,
    on_start: Callable[[Problem], None] | None = None,
    devices: Mapping[Path, Sequence[str]] | None = None,
) -> BatteryReport:
    """The battery on each problem of one rank (once per folder); a problem of several ranks is skipped (its
    reference runs on GPUs). ``devices``: by resolved folder, the devices a problem set runs it on (the launch-bound
    lint is left out for a problem that runs on the CPU alone)."""
    issues: list[FormatIssue] = []
    warnings: list[FormatIssue] = []
    seen: set[Path] = set()
    for problem in problems:
        folder = problem.path.resolve()
        if folder in seen:
            continue
        seen.add(folder)
        warnings += shape_family_lint(problem)  # a static look at task.yml: every problem, of any rank
        if problem.task.multi_rank:
            continue
        if on_start is not None:
            on_start(problem)
        request, plan = battery_request(problem)
        try:
            result = run(request)
        except Exception as exc:  # the runner itself broke: say so instead of a traceback
            result = RunResult.infrastructure_error(Mode.TEST, f"{type(exc).__name__}: {exc}")
        report = battery_findings(problem, plan, result, (devices or {}).get(folder))
        issues += report.issues
        warnings += report.warnings
    return BatteryReport(tuple(issues), tuple(warnings))
