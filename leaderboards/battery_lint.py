"""Two lint items of the exploit battery (``leaderboards.battery``): ranked cases of one shape family, and a weak
reference.

- **One shape family.** Where every benchmark case (the ranked ones) has the same alignment in every size (each a
  multiple of 128, say) and no held-out case lies outside that family, a kernel that assumes it (tiles without
  bounds checks, a fast path keyed on the shape) ranks while it solves a narrower problem than the one stated. The
  fix is held-out cases outside the family: the final system test checks the best entries on them, unseen.
- **A weak reference.** Speedups are reported over the reference (and the problem's other baselines): a reference
  far from the roofline inflates them. On the CPU there is no GPU time, so the battery measures what the reference
  must cost on any GPU: the bytes its operators read and write and the flops they do, by dtype (each op at the
  roofline; ``kernelcup-battery-work`` lines of ``battery_solution.py``), on the largest benchmark case with fake
  tensors (shapes, no data; a test case where the shapes depend on the data), against ``speed_of_light`` of the
  same case. Where the ops alone take ``WEAK_FACTOR`` times the speed of light or more at the H100's peaks, no GPU
  can bring the reference within ``1 / WEAK_FACTOR`` of the roofline. Where another baseline of the task
  (``baselines:``, a library call) is within it, the speedup over that one is honest and nothing is reported. The
  count is a lower bound: how far the reference really is (launches, occupancy) only a GPU timing tells
  (``benchmarks/problems_table.py``).

A problem the lint rightly flags and that stays as it is says why in ``task.yml`` (``lint_exempt: [{lint:
weak_reference, reason: ...}]``); the item is then not reported.
"""

from __future__ import annotations

import re
from typing import Any

from leaderboards.problems import FormatIssue, LintItem, Problem
from runners.contract import DataType
from runners.devices import PEAKS, DevicePeaks

__all__ = ["ALIGN_CAP", "WEAK_FACTOR", "shape_family", "shape_family_lint", "weak_reference_lint"]

LINT_FIELD = "lint"
ALIGN_CAP = 128
"""The alignments the shape family tells apart: powers of two up to 128 (tensor-core tiles are 16 to 256 wide; a
size that is a multiple of 128 fits all but the largest)."""
NOT_SIZES = frozenset({"seed", "world_size"})
"""Integer case keys that are not sizes."""
WEAK_FACTOR = 8.0
"""A reference whose operators alone (each at the roofline) take this many times the speed of light of a case is
weak: its best possible share of the roofline is 1/8 (12.5%), so any kernel near the roofline shows a speedup of 8 or
more over it for nothing. Measured on the shipped references: 1.0 (vector add, sum, a cuBLAS baseline) to 7.4
(conv2d), and 10 to 29.5 for the six that say why in their lint_exempt (docs/authoring.md section 8)."""

FLOOR_DEVICE = "H100"
_WORK = re.compile(
    r"^kernelcup-battery-work (\d{1,2}) (\d{1,20}) ([-a-z0-9_:,]{1,400}) (\d{1,20}) (\d{1,20}) ([bt])(\d{1,3})$"
)
_DTYPES = {"float32": DataType.FP32, "float64": DataType.FP32, "float16": DataType.FP16, "bfloat16": DataType.BF16,
           "int8": DataType.INT8}  # fmt: skip
"""The peak a reference's flops in a torch dtype are bounded by: fp32 (and fp64, at best as fast) on the CUDA cores
(PyTorch's fp32 matmuls use no TF32 unless asked), the 16-bit types and int8 on the tensor cores, fp8 types at fp8's.
"""


def _flops_s(text: str, peaks: DevicePeaks) -> float:
    """The least time the flops of a ``dtype:flops,...`` list take at ``peaks``."""
    seconds = 0.0
    for item in text.split(","):
        dtype, _, count = item.partition(":")
        if not count.isdigit():
            continue
        kind = DataType.FP8 if dtype.startswith("float8") else _DTYPES.get(dtype, DataType.FP32)
        seconds += int(count) / peaks.flops_per_s.get(kind, peaks.flops_per_s[DataType.FP32])
    return seconds


def _alignment(value: int) -> int:
    """The largest power of two dividing ``value``, capped at ``ALIGN_CAP`` (0 stays 0)."""
    return min(value & -value, ALIGN_CAP) if value else 0


def shape_family(case: dict[str, Any]) -> tuple[tuple[str, int], ...]:
    """The shape family of a case: each size (an integer key other than seed and world_size) by its alignment."""
    return tuple(
        sorted(
            (k, _alignment(abs(v)))
            for k, v in case.items()
            if isinstance(v, int) and not isinstance(v, bool) and k not in NOT_SIZES
        )
    )


def _family_words(family: tuple[tuple[str, int], ...]) -> str:
    parts = []
    for key, align in family:
        if align >= ALIGN_CAP:
            parts.append(f"{key} a multiple of {ALIGN_CAP}")
        elif align > 1:
            parts.append(f"{key} a multiple of {align} (not of {2 * align})")
        elif align == 1:
            parts.append(f"{key} odd")
        else:
            parts.append(f"{key} 0")
    return ", ".join(parts)


def _outside(case: dict[str, Any], family: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    """A suggestion: ``case`` with each aligned size one less (an odd size where it was even, and vice versa)."""
    sizes = dict(family)
    return {k: (v - 1 if k in sizes and v > 1 else v) for k, v in case.items() if k != "world_size"}


def shape_family_lint(problem: Problem) -> list[FormatIssue]:
    """A warning where the ranked (benchmark) cases all have one shape family with sizes in it, and no held-out case
    lies outside it."""
    task = problem.task
    if task.exempt(LintItem.SHAPE_FAMILY):
        return []
    benchmarks = list(task.benchmarks)
    families = {shape_family(c) for c in benchmarks}
    if len(families) != 1:
        return []
    (family,) = families
    if not family or any(shape_family(c) != family for c in task.holdout):
        return []
    smallest = min(benchmarks, key=lambda c: sum(v for k, v in c.items() if k in dict(family)))
    example = ", ".join(f"{k}: {v!r}" for k, v in _outside(smallest, family).items())
    held = f"its {len(task.holdout)} held-out cases are in it too" if task.holdout else "it has no held-out cases"
    return [FormatIssue(str(problem.path / "task.yml"), LINT_FIELD, (
        f"the {len(benchmarks)} benchmark case{'s are' if len(benchmarks) > 1 else ' is'} (ranked) all one shape "
        f"family ({_family_words(family)}) and {held}: a kernel keyed on that family (tiles without bounds checks, "
        "a fast path for those sizes) would rank without solving the stated problem; add held-out cases outside "
        f"it (holdout: in task.yml, e.g. {{{example}}}, sized so the reference runs them on the CPU), which the "
        "final system test checks unseen"
    ))]  # fmt: skip


def _words(case: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in case.items())


def weak_reference_lint(problem: Problem, stdout: str) -> list[FormatIssue]:
    """A warning for each baseline (the reference, the task's ``baselines:``) whose operators, each at the H100's
    roofline, take ``WEAK_FACTOR`` times the case's ``speed_of_light`` or more, unless one of them is within it (a
    strong baseline is offered: the speedup over it is honest) (``kernelcup-battery-work`` lines:
    the baseline's index, the ops' bytes and flops by dtype, the speed of light's bytes and flops, the case)."""
    task = problem.task
    if task.exempt(LintItem.WEAK_REFERENCE):
        return []
    peaks = next(p for p in PEAKS if p.name == FLOOR_DEVICE)
    flops_per_s = peaks.flops_per_s.get(task.dtype, peaks.flops_per_s[DataType.FP32])
    cases = {"b": ("benchmark", task.cases("benchmarks", task.world_size)),
             "t": ("test", task.cases("tests", task.world_size))}  # fmt: skip
    labels = ["reference (ref_kernel)", *(f"baseline {b.label!r} ({b.function})" for b in task.baselines)]
    lint = []
    strong = False
    for line in stdout.splitlines():
        match = _WORK.match(line.strip())
        if match is None or int(match[1]) >= len(labels) or int(match[7]) >= len(cases[match[6]][1]):
            continue
        index, moved, light_bytes, light_flops = int(match[1]), int(match[2]), int(match[4]), int(match[5])
        kind, case = cases[match[6]][0], cases[match[6]][1][int(match[7])]
        ops_s = max(moved / peaks.memory_bytes_per_s, _flops_s(match[3], peaks))
        light_s = max(light_bytes / peaks.memory_bytes_per_s, light_flops / flops_per_s)
        if light_s <= 0 or ops_s < WEAK_FACTOR * light_s:
            strong = True
            continue
        share = light_s / ops_s
        flops = "no counted" if match[3] == "-" else match[3].replace(",", ", ").replace(":", " ")
        lint.append(FormatIssue(str(problem.path / "reference.py"), LINT_FIELD, (
            f"the {labels[index]} is far from the roofline: on {kind} {int(match[7]) + 1} ({_words(case)}) its "
            f"operators read and write {moved:,} bytes and do {flops} flops; at the {FLOOR_DEVICE}'s peaks that "
            f"takes {1 / share:.1f} times its speed_of_light ({light_bytes:,} bytes, {light_flops:,} flops), so "
            f"even with every operator at the roofline it reaches at most {share:.0%} of it and speedups over it "
            "are inflated; compute it in fewer passes at the problem's own precision (no upcast copies, fused "
            "operations, a library call), or add a strong baseline (baselines: in task.yml). A lower bound "
            "measured on the CPU: how far it really is needs a GPU timing (benchmarks/problems_table.py)"
        )))  # fmt: skip
    return [] if strong else lint
