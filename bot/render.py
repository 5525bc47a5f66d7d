"""Pure formatting of run results for Discord: numbers, cases, tests, benchmarks, roofline shares.

Nothing here talks to Discord or the service; every function takes plain values and returns text,
so each is tested on its own (tests/bot/test_render.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from leaderboards.formatting import (
    COMPACT_KERNEL_COLUMNS,
    compact_kernel_row,
    format_speedup,
    format_timing,
    kernels_text,
    provenance_text,
    roofline_summary,
    roofline_text,
)

# The duration and roofline formatters are the core's (one copy for every surface); re-exported here.
from leaderboards.formatting import format_ns as format_ns
from runners.contract import BenchmarkResult, KernelMetrics, RunResult, TestResult, Verdict

PASS = "✅"
FAIL = "❌"
WAIT = "⏳"

CASE_CHARS = 60
MESSAGE_LINE_CHARS = 300


def format_case(case: Mapping[str, Any], limit: int = CASE_CHARS) -> str:
    """A test or benchmark case as ``k=v, k=v``, cut to ``limit`` characters."""
    text = ", ".join(f"{k}={v}" for k, v in case.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int = MESSAGE_LINE_CHARS) -> str:
    """A message squeezed onto one line (newlines become ' / '), cut to ``limit`` characters."""
    flat = " / ".join(part.strip() for part in text.strip().splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def verdict_mark(verdict: Verdict) -> str:
    return PASS if verdict.passed else FAIL


def lines_of_tests(tests: Sequence[TestResult]) -> list[str]:
    """One line per test: the mark, the case, and for a failure its verdict and the mismatch message."""
    lines = []
    for t in tests:
        line = f"{verdict_mark(t.verdict)} test {t.index + 1} ({format_case(t.case)})"
        if not t.verdict.passed:
            line += f": {t.verdict.label}"
            if t.message:
                line += f": {one_line(t.message)}"
        lines.append(line)
    return lines


def lines_of_benchmarks(benchmarks: Sequence[BenchmarkResult]) -> list[str]:
    """One line per benchmark: the median, its interquartile range and sample count (or a warning that there are
    too few samples), and its share of the roofline bound (what the runner computed; none where unknown)."""
    lines = []
    for b in benchmarks:
        head = f"{verdict_mark(b.verdict)} bench {b.index + 1} ({format_case(b.case)})"
        if b.stats is not None and b.verdict.passed:
            line = f"{head}: {format_timing(b.stats)}"
            roofline = roofline_text(b)
            if roofline:
                line += f", {roofline}"
        else:
            line = f"{head}: {b.verdict.label}" + (f": {one_line(b.message)}" if b.message else "")
        lines.append(line)
        kernels = kernels_text(b)
        if kernels:  # a code span: kernel names are full of markdown's underscores and asterisks
            lines.append(f"  kernels: `{one_line(kernels).replace('`', chr(39))}`")
    return lines


def result_lines(result: RunResult, *, max_passing_tests: int = 5) -> list[str]:
    """The body of one run's report: its verdict, failing tests in full, passing ones counted, benchmarks.

    Passing tests beyond ``max_passing_tests`` are summarised in one line so that a long test list
    does not push the interesting lines (failures, timings) out of the message.
    """
    lines = [
        f"{verdict_mark(result.verdict)} **{result.verdict.label}**"
        + (f": {one_line(result.message)}" if result.message else "")
    ]
    if result.tests:
        passed = [t for t in result.tests if t.verdict.passed]
        failed = [t for t in result.tests if not t.verdict.passed]
        lines.append(f"tests: {len(passed)}/{len(result.tests)} passed")
        shown_passing = passed if len(passed) <= max_passing_tests else []
        lines.extend(lines_of_tests(sorted(failed + shown_passing, key=lambda t: t.index)))
    if result.benchmarks:
        lines.extend(lines_of_benchmarks(result.benchmarks))
    if result.provenance is not None:
        lines.append(one_line(provenance_text(result)))
    if result.score_ns is not None:
        overall = roofline_summary(result)
        lines.append(f"score: **{format_ns(result.score_ns)}**" + (f" · {overall}" if overall else ""))
    lines.extend(format_speedup(b) for b in result.baselines)
    if result.kernel_metrics:
        lines.extend(kernel_table(result.kernel_metrics))
    return lines


MAX_KERNEL_ROWS = 8


def kernel_table(kernels: Sequence[KernelMetrics], max_rows: int = MAX_KERNEL_ROWS) -> list[str]:
    """Profile mode's kernels as a short fixed-width table in a code block (the full metrics are in the report
    file and on the web page)."""
    rows = [COMPACT_KERNEL_COLUMNS, *(compact_kernel_row(k) for k in kernels[:max_rows])]
    rows = [tuple(cell.replace("`", "'") for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COMPACT_KERNEL_COLUMNS))]
    lines = ["kernels (Nsight Compute):", "```"]
    for row in rows:
        cells = [
            cell.ljust(w) if i in (0, len(row) - 1) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    lines.append("```")
    if len(kernels) > max_rows:
        lines.append(f"… and {len(kernels) - max_rows} more kernel launches (all of them in the report file)")
    return lines


EXCERPT_LINES = 12
EXCERPT_CHARS = 900


def failure_excerpt(result: RunResult, max_lines: int = EXCERPT_LINES, max_chars: int = EXCERPT_CHARS) -> str:
    """The tail of the output that explains a failed run, as a code block ('' when it passed or said nothing).

    A compile error shows the compiler's (or the import's) output; any other failure shows stderr, where a
    Python traceback ends. The last lines are the ones that name the error.
    """
    if result.verdict.passed:
        return ""
    text = result.compile_output if result.verdict is Verdict.COMPILE_ERROR else ""
    if not text.strip():
        text = result.stderr
    if not text.strip():
        return ""
    tail = "\n".join(text.rstrip().splitlines()[-max_lines:])[-max_chars:].replace("```", "'''")
    return f"```\n{tail}\n```"


def logs_text(result: RunResult) -> str:
    """Compile output, stdout and stderr of a run as one text file (empty when there is nothing)."""
    parts = []
    for title, text, truncated in (
        ("compile output", result.compile_output, False),
        ("stdout", result.stdout, result.stdout_truncated),
        ("stderr", result.stderr, result.stderr_truncated),
    ):
        if text.strip():
            parts.append(f"===== {title}{' (truncated)' if truncated else ''} =====\n{text.rstrip()}\n")
    return "\n".join(parts)
