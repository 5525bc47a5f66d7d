"""Whose time is it? The bounds of one run, the step the run is in, and what to say when a bound runs out.

A run has two clocks (issue 37). The platform's start-up (the sandboxes, the interpreters, ``import torch``, the
clock's calibration, the baselines) runs before the submission's code does: it has its own generous limit
(``KERNELCUP_STARTUP_TIMEOUT_S``, plus the baselines' budget), and running out of it means the runner is
overloaded, an infrastructure error that is retried, never the submission's timeout. The submission's limit (its
compile allowance, where its language has a compile step, and its run) counts from the moment the evaluator says it
loads the file ("compiling"). Within it each test and each benchmark case is a step of its own, bounded by a limit
derived from the reference's own time where it is known (``call_bound_s``: this run's timing of the reference, or
this runner's cache of an earlier run's), and a hang names the step. A reference check (``problems validate``/
``sync``) bounds each case by a limit derived from the case.

The entry enforces all of this from outside (``Session._read``): nothing the evaluator or the submission does
moves these deadlines, and the evaluator is told a limit (``Job.time_limit_s``) that is never earlier than ours.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from runners.contract import LANGUAGES, Mode, RunRequest
from runners.oracle.timing import case_budget_s

OVERLOADED = "the runner is overloaded"
"""How an overloaded start's message begins (the local launcher counts them; operators grep for it)."""
HEARTBEAT_S = 10.0
"""With no report for this long, the run's progress repeats its step with the time so far (a line every 10 s)."""
FIRST_TEST_FLOOR_S = 120.0
"""The least the first test gets, whatever the reference's time: the submission's first call pays for CUDA's and
its libraries' start, Triton's JIT build, ``torch.compile`` and the Python DSLs' compiles."""
TEST_FLOOR_S = 60.0
"""The least a later test, and the calls of a benchmark case, get: a JIT build for a new shape (``torch.compile``
compiles again for one) on a slow or loaded machine."""
REFERENCE_FACTOR = 200.0
"""A call may take this many times the reference's own time (above the floor)."""
CASE_FLOOR_S = 20.0
"""A reference check's bound on one case: this, plus ``CASE_NS_PER_UNIT`` for each unit of the case's size."""
CASE_NS_PER_UNIT = 20.0
IMPORT_S = 30.0
"""A reference check's allowance for importing the problem's reference.py (before its first case)."""


def case_size(case: dict[str, Any]) -> int:
    """The product of a case's whole-number sizes (its seed left out; lists multiply in), at least 1: the work of an
    elementwise case's elements, of a matmul its m*n*k."""

    def ints(value: Any) -> list[int]:
        if isinstance(value, list):
            return [i for item in value for i in ints(item)]
        return [abs(value)] if isinstance(value, int) and not isinstance(value, bool) and value else []

    sizes = [i for k, v in case.items() if k != "seed" for i in ints(v)]
    return max(math.prod(sizes), 1) if sizes else 1


def case_bound_s(case: dict[str, Any]) -> float:
    """What one call of the problem's own code on ``case`` may take in a reference check."""
    return CASE_FLOOR_S + case_size(case) * CASE_NS_PER_UNIT * 1e-9


def call_bound_s(reference_s: float, floor_s: float) -> float:
    """The rule every bound on the submission's own steps comes from: ``floor_s``, or ``REFERENCE_FACTOR`` times the
    reference's time where that is larger."""
    return max(floor_s, REFERENCE_FACTOR * reference_s)


def case_text(case: dict[str, Any]) -> str:
    text = ", ".join(f"{k}: {v}" for k, v in case.items())
    return "{" + (text if len(text) <= 200 else text[:200] + "...") + "}"


@dataclass(frozen=True)
class Bounds:
    """One run's limits, in seconds."""

    startup_s: float
    """The platform's start-up: until the evaluator says it loads the submission (baselines' budget included)."""
    compile_s: float
    """The submission's compile allowance: the request's, where its language has a compile step; else 0."""
    run_s: float
    reference_ns: tuple[float | None, ...] = ()
    """The reference's median per benchmark case (ns; None: not known), where it is known: timed in this run before
    the submission loaded, or in an earlier run on this runner (its cache). Tests and benchmark cases are bounded by
    it; with none known, only the run's limit bounds them."""
    case_budget_s: float = 0.0
    """The evaluator's own budget for one benchmark case's warm-up and timed calls (``timing.case_budget_s``)."""

    @property
    def user_s(self) -> float:
        """The submission's own limit, from the moment its file starts loading."""
        return self.compile_s + self.run_s

    @property
    def total_s(self) -> float:
        """The longest a run can be: what the evaluator and the sandboxes are told (our deadlines come first)."""
        return self.startup_s + self.user_s

    @property
    def reference_s(self) -> float | None:
        """The reference's slowest known benchmark median (s): what a test's bound derives from where the reference's
        time on the test's own inputs is not known (a run of several ranks; tests are no larger than the benchmarks,
        as a rule)."""
        known = [m for m in self.reference_ns if m is not None and m > 0]
        return max(known) / 1e9 if known else None

    def test_bound_s(self, index: int, own_s: float | None = None) -> float | None:
        """The bound on test ``index`` alone (None: only the run's limit bounds it), from the reference's time on the
        test's own inputs (``own_s``) where the evaluator measured it, else its slowest benchmark median. The first
        test carries the submission's first call, so its floor is the larger one."""
        reference = own_s if own_s is not None else self.reference_s
        if reference is None:
            return None
        return call_bound_s(reference, FIRST_TEST_FLOOR_S if index == 0 else TEST_FLOOR_S)

    def bench_bound_s(self, index: int) -> float | None:
        """The bound on benchmark case ``index`` alone (None: only the run's limit bounds it): the evaluator's budget
        for the case, plus the bound of one call twice (its first warm-up call, which may build for a new shape, and
        the call in flight when the budget runs out), from the reference's median on this very case."""
        ref = self.reference_ns[index] if index < len(self.reference_ns) else None
        if ref is None or ref <= 0:
            return None
        return self.case_budget_s + 2 * call_bound_s(ref / 1e9, TEST_FLOOR_S)

    def with_reference(self, index: int, median_ns: float, cases: int) -> Bounds:
        """These bounds with the reference's median on benchmark case ``index`` (of ``cases``) as this run timed it."""
        known = list(self.reference_ns) + [None] * (cases - len(self.reference_ns))
        known[index] = median_ns
        return replace(self, reference_ns=tuple(known[:cases]))


def bounds_for(request: RunRequest, startup_s: float, reference_ns: tuple[float | None, ...] = ()) -> Bounds:
    """``request``'s bounds on a runner whose start-up limit is ``startup_s``, with the reference's medians per
    benchmark case where this runner knows them. A language without a compile step (Python and its DSLs: their JIT
    builds run inside the run) gets no compile allowance, whatever the request says (``kernelcup run`` asked for
    300 s of it: a hanging Python kernel took 8 minutes to be told)."""
    compiles = LANGUAGES[request.lang].compile_step
    return Bounds(
        startup_s=startup_s + request.baselines_allowance_s(),
        compile_s=request.limits.compile_timeout_s if compiles else 0.0,
        run_s=request.limits.run_timeout_s,
        reference_ns=tuple(reference_ns),
        case_budget_s=case_budget_s(request.timing),
    )


@dataclass
class Step:
    """What the run is doing, from the reports seen so far: whose clock runs, since when, until when, and in words."""

    kind: str
    """'startup' (the platform's), 'submission' (the user's), or 'reference' (the problem's code, a check)."""
    since: float
    deadline: float
    what: str
    limit_s: float
    details: dict[str, Any] = field(default_factory=dict)


class RunClock:
    """The deadlines of one run as its reports arrive (all times ``time.monotonic()``, from the hand-over)."""

    def __init__(self, request: RunRequest, bounds: Bounds, started: float, *, reference_only: bool = False) -> None:
        self.request = request
        self.bounds = bounds
        self.started = started
        self.reference_only = reference_only
        self.loaded_at: float | None = None
        self.hello_at: float | None = None
        self.tests_done = 0
        self.last_test_at: float | None = None
        self.testing_at: float | None = None
        self.timing_at: float | None = None
        """When benchmarking or profiling began (the steps after the tests)."""
        self.benches_done = 0
        self.last_bench_at: float | None = None
        self.test_reference_s: dict[int, float] = {}
        """The reference's time on each test's own inputs, as the evaluator measured it just before the test's call."""

    # -- what the reports say -------------------------------------------------------------------------------------
    def saw(self, kind: str, now: float) -> None:
        """A report of ``kind`` ('hello', 'compiling', 'testing', 'test', ...) arrived at ``now``."""
        if kind == "hello" and self.hello_at is None:
            self.hello_at = now
        elif kind == "compiling" and self.loaded_at is None:
            self.loaded_at = now
        elif kind == "testing" and self.testing_at is None:
            self.testing_at = now
        elif kind == "test":
            self.tests_done += 1
            self.last_test_at = now
        elif kind in ("benchmarking", "profiling") and self.timing_at is None:
            self.timing_at = now
        elif kind == "bench":
            self.benches_done += 1
            self.last_bench_at = now

    def saw_test_reference(self, index: int, seconds: float) -> None:
        """The evaluator timed the reference on test ``index``'s inputs (before the submission's call on them)."""
        self.test_reference_s[index] = seconds

    def saw_reference(self, index: int, median_ns: float) -> None:
        """This run timed the reference on benchmark case ``index`` (before the submission loaded)."""
        if median_ns > 0 and 0 <= index < len(self.request.benchmarks):
            self.bounds = self.bounds.with_reference(index, median_ns, len(self.request.benchmarks))

    # -- the step now ---------------------------------------------------------------------------------------------
    def step(self) -> Step:
        if self.reference_only:
            return self._reference_step()
        b = self.bounds
        if self.loaded_at is None:
            return Step("startup", self.started, self.started + b.startup_s, "starting", b.startup_s)
        user_end = self.loaded_at + b.user_s
        tests, benches = self.request.tests, self.request.benchmarks
        if self.timing_at is not None:
            since = self.last_bench_at or self.timing_at
            if self.request.mode is Mode.PROFILE:
                return Step("submission", since, user_end, "profiling", b.user_s)
            if self.benches_done < len(benches):
                i = self.benches_done
                what = f"benchmark {i + 1} of {len(benches)} ({case_text(benches[i])})"
                bound = b.bench_bound_s(i)
                if bound is not None and since + bound < user_end:
                    return Step("submission", since, since + bound, what, bound, {"bench_bound": True, "index": i})
                return Step("submission", since, user_end, what, b.user_s, {"index": i})
            return Step("submission", since, user_end, "finishing", b.user_s)
        if self.testing_at is None:
            return Step("submission", self.loaded_at, user_end, "loading and compiling", b.user_s)
        if self.tests_done < len(tests) and self.request.mode in (Mode.TEST, Mode.RANKED, Mode.PROFILE):
            i = self.tests_done
            since = self.last_test_at if self.last_test_at is not None else self.testing_at
            what = f"test {i + 1} of {len(tests)} ({case_text(tests[i])})"
            own = self.test_reference_s.get(i)
            bound = b.test_bound_s(i, own)
            if bound is not None and since + bound < user_end:
                details = {"test_bound": True, "index": i, "own_s": own}
                return Step("submission", since, since + bound, what, bound, details)
            return Step("submission", since, user_end, what, b.user_s, {"index": i})
        since = self.last_test_at or self.testing_at
        return Step("submission", since, user_end, "finishing the tests", b.user_s)

    def _reference_step(self) -> Step:
        """A reference check: after the platform's start-up (until hello), each test case its own bound (the first
        with the import of reference.py), then the baselines and the benchmark cases' inputs, each bounded by its
        case (a benchmark case's inputs are made up to three times: public, and two more seeds)."""
        b, tests = self.bounds, self.request.tests
        if self.hello_at is None:
            return Step("startup", self.started, self.started + b.startup_s, "starting", b.startup_s)
        if self.tests_done < len(tests):
            i = self.tests_done
            since = self.last_test_at if self.last_test_at is not None else self.hello_at
            bound = case_bound_s(tests[i]) + (IMPORT_S if i == 0 else 0.0)
            what = f"test {i + 1} ({case_text(tests[i])})"
            return Step("reference", since, since + bound, what, bound, {"case": tests[i]})
        since = self.last_test_at if self.last_test_at is not None else self.hello_at
        extra = len(self.request.baselines) * (case_bound_s(tests[0]) if tests else 0.0)
        bound = extra + sum(3 * case_bound_s(c) for c in self.request.benchmarks)
        what = "the baselines and the benchmark cases' inputs"
        return Step("reference", since, since + max(bound, CASE_FLOOR_S), what, max(bound, CASE_FLOOR_S))

    def elapsed(self, now: float) -> float:
        return now - self.started


def overloaded_message(step: Step, now: float, phase: str, detail: str) -> str:
    """What an overloaded start says (to the user: not their fault, retried; to the operator: where it stuck)."""
    where = f"{phase}: {detail}" if detail else phase
    return (f"{OVERLOADED}: the platform's own start-up (sandboxes, interpreters, PyTorch, the clock's calibration) "
            f"did not finish within {step.limit_s:.0f} s (KERNELCUP_STARTUP_TIMEOUT_S; it was {where}); the "
            "submission's code never ran, and the run is retried later")  # fmt: skip


def user_timeout_message(clock: RunClock, step: Step, now: float) -> str:
    """What a submission that ran out of its time is told: which limit, which step, for how long."""
    b = clock.bounds
    ran = now - step.since
    hint = "look for an endless loop or a far too slow kernel"
    if step.details.get("test_bound"):
        own = step.details.get("own_s")
        ref, whose = (own, "time on this test") if own is not None else (b.reference_s or 0.0, "slowest benchmark")
        floor = FIRST_TEST_FLOOR_S if step.details["index"] == 0 else TEST_FLOOR_S
        return (f"{step.what} did not finish within {step.limit_s:.0f} s, the bound on one test (the larger of "
                f"{floor:.0f} s and {REFERENCE_FACTOR:.0f}x the reference's {whose}, {ref * 1e3:.3g} ms on this "
                f"runner); {hint}")  # fmt: skip
    if step.details.get("bench_bound"):
        ref = (b.reference_ns[step.details["index"]] or 0.0) / 1e9
        return (f"{step.what} did not finish within {step.limit_s:.0f} s, the bound on one benchmark case (the "
                f"evaluator's {b.case_budget_s:.0f} s for its timed calls, plus twice the larger of "
                f"{TEST_FLOOR_S:.0f} s and {REFERENCE_FACTOR:.0f}x the reference's time on this case, {ref * 1e3:.3g} "
                f"ms on this runner); {hint}")  # fmt: skip
    parts = f"{b.run_s:.0f} s for this mode's run"
    if b.compile_s:
        parts += f", {b.compile_s:.0f} s for compiling"
    return (f"the run did not finish within {b.user_s:.0f} s ({parts}; counted from loading the file, the platform's "
            f"start-up not included): it was {step.what}, for {ran:.0f} s; {hint}")  # fmt: skip


_FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')
PROBLEM_CALLS = ("generate_input", "ref_kernel", "check_implementation", "speed_of_light")


def hung_call(stack_text: str, problem_dir: str) -> str:
    """From a faulthandler dump of the evaluator: the problem's function it was in ('generate_input (reference.py
    line 7)'), or '' when the dump names none. Frames are most recent first; the outermost frame of the problem's
    own files is the function the evaluator called."""
    frames = [(path, int(line), fn) for path, line, fn in _FRAME.findall(stack_text)]
    own = [(p, n, fn) for p, n, fn in frames if p.startswith(problem_dir.rstrip("/") + "/")]
    if not own:
        return ""
    outer = own[-1][2]
    inner_path, inner_line, inner_fn = own[0]
    name = inner_path.rsplit("/", 1)[-1]
    where = f"{name} line {inner_line}" + (f", in {inner_fn}" if inner_fn != outer else "")
    return f"{outer} ({where})"


def reference_hang_message(step: Step, call: str) -> str:
    """A reference check's case that did not finish in its bound: which case, which function, what bound and how
    that bound was made (``_reference_step``: the first test's includes the import of reference.py)."""
    who = f"{call} did not return" if call else "the problem's code did not finish"
    per_case = f"{CASE_FLOOR_S:g} s plus {CASE_NS_PER_UNIT:g} ns per unit of the case's size"
    if step.what.startswith("test 1 "):
        how = f"{per_case}, and {IMPORT_S:g} s for importing reference.py before it"
    elif step.what.startswith("test "):
        how = per_case
    else:
        how = f"three times each benchmark case's bound ({per_case}) and one per baseline, at least {CASE_FLOOR_S:g} s"
    return (f"{step.what}: {who} within {step.limit_s:.0f} s, the bound on this step ({how}); a sleep, a wait for "
            "input or an endless loop in the reference would hang every run of the problem")  # fmt: skip
