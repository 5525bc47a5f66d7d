"""Formatting shared by every surface, written once: how a duration, its spread, a roofline share, a speedup and
a job's outcome read, and a profiled kernel.

The CLI, the bot and the web all print times through ``format_ns`` (three significant figures, the unit chosen
by size; it lives in ``runners.durations`` so that the runner's own messages read the same), a benchmark's
spread through ``format_spread`` (the interquartile range, the one spread statistic shown anywhere), a job's
outcome through ``outcome_text`` and the share of the speed of light through ``format_share``/``roofline_text``,
so one number reads the same everywhere.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from runners.durations import MISSING as MISSING  # re-exported: one formatter, in the lowest layer
from runners.durations import format_ns as format_ns
from runners.validation import error_message as error_message  # re-exported for the surfaces

if TYPE_CHECKING:  # (the CLI's help imports this module: no pydantic at import)
    from runners.contract import BaselineResult, BenchmarkResult, KernelMetrics, RunResult, StallReason, TimingStats

MIN_SAMPLES_FOR_SPREAD = 5
"""Below this many samples a spread says nothing; the surfaces say so instead of showing one."""


def format_range(low_ns: float, high_ns: float) -> str:
    """Two durations as a range in the unit of the higher one where it reads well: ``95.1–95.6 ms``."""
    low, high = format_ns(low_ns), format_ns(high_ns)
    low_value, _, low_unit = low.partition(" ")
    high_unit = high.partition(" ")[2]
    return f"{low_value}–{high}" if low_unit == high_unit else f"{low}–{high}"


def format_spread(stats: TimingStats) -> str:
    """A benchmark's spread, for after its median: the interquartile range and the sample count, or a warning
    when there are too few samples to say anything (``n=1: too few samples for a spread``)."""
    if stats.samples < MIN_SAMPLES_FOR_SPREAD:
        return f"n={stats.samples}: too few samples for a spread"
    if stats.p25_ns is not None and stats.p75_ns is not None:
        return f"IQR {format_range(stats.p25_ns, stats.p75_ns)}, n={stats.samples}"
    return f"range {format_range(stats.min_ns, stats.max_ns)}, n={stats.samples}"  # results stored before quartiles


def format_iqr(stats: TimingStats) -> str:
    """The interquartile range alone, for a table's spread column: ``95.1–95.6 ms``; ``–`` with fewer than
    MIN_SAMPLES_FOR_SPREAD samples, or for a result stored before quartiles were."""
    if stats.samples < MIN_SAMPLES_FOR_SPREAD or stats.p25_ns is None or stats.p75_ns is None:
        return MISSING
    return format_range(stats.p25_ns, stats.p75_ns)


def format_timing(stats: TimingStats) -> str:
    """The median and its spread: ``95.3 ms (IQR 95.1–95.6 ms, n=40)``."""
    return f"{format_ns(stats.median_ns)} ({format_spread(stats)})"


STATUS_WORDS = {
    "queued": "queued",
    "running": "running",
    "succeeded": "finished",
    "failed": "failed",
    "timed_out": "timed out",
    "cancelled": "cancelled",
}
"""A job's state in words, shown where it has no verdict (it has not run, or never got one). ``succeeded`` (the job
ran to a verdict, whichever) is the operators' word: a competitor sees the verdict instead."""


def verdict_words(verdict: object) -> str:
    """A verdict (``Verdict`` or its value) in words: the runner's one table of them (``Verdict.label``: "wrong
    answer", "compile error", "time limit exceeded", …)."""
    from runners.contract import Verdict  # (pydantic: imported when used, the CLI's help stays light)

    try:
        return Verdict(str(verdict)).label
    except ValueError:  # a value a newer server sent: readable all the same
        return str(verdict).replace("_", " ")


def outcome_text(status: object, verdict: object | None) -> str:
    """A job's one outcome in plain words, the same on every competitor's surface: its verdict's words once it has
    one ("accepted", "wrong answer"), else its state ("queued", "running", "timed out", "cancelled", "failed")."""
    if verdict:
        return verdict_words(verdict)
    return STATUS_WORDS.get(str(status), str(status).replace("_", " "))


def score_text(score_ns: float, ranked_score_ns: float | None, note: str | None = None) -> str:
    """A job's score as every surface shows it: the public run's, and where the ranking uses another (this run and
    the secret-seed run pooled case by case, or a case's secret-seed time where the two clearly differ:
    docs/measurement.md) that one beside it, so the rankings' figure is no surprise. ``note``, for the author only:
    why a case did not pool (``JobView.ranked_note``)."""
    text = format_ns(score_ns)
    if ranked_score_ns is not None and format_ns(ranked_score_ns) != text:
        text += f" (ranked by {format_ns(ranked_score_ns)}, from this run and the secret-seed run)"
    if note:
        text += f" [{printable(note)}]"
    return text


def format_share(share: float | None) -> str:
    """A share of the speed of light: ``85%``, ``0.4%`` (two figures below 10%), or ``–`` when unknown."""
    if share is None or not math.isfinite(share):
        return MISSING
    return f"{share:.1%}" if round(share * 100, 1) < 10 else f"{share:.0%}"


def roofline_text(bench: BenchmarkResult) -> str:
    """A benchmark's share of its roofline bound and what sets the bound: ``85% of roofline (fp16 tensor)``; ''
    when unknown (the CPU, an unknown GPU, no work declared, a result from before it was computed)."""
    if bench.roofline_share is None:
        return ""
    return f"{format_share(bench.roofline_share)} of roofline ({bench.roofline_limit or 'memory'})"


def roofline_summary(result: RunResult) -> str:
    """The run's share (the geometric mean of its cases') and whose peaks: ``72% of roofline overall (H100
    datasheet peaks: 3.35 TB/s, 989 TFLOP/s fp16)``; '' when unknown."""
    peaks = result.roofline
    if result.roofline_share is None or peaks is None:
        return ""
    flops = f"{peaks.flops_per_s / 1e12:.4g} TFLOP/s {peaks.dtype}" if peaks.flops_per_s else f"no {peaks.dtype} peak"
    where = "operator's" if peaks.source.startswith("operator") else "datasheet"
    return (
        f"{format_share(result.roofline_share)} of roofline overall ({peaks.device} {where} peaks: "
        f"{peaks.memory_bytes_per_s / 1e12:.3g} TB/s, {flops})"
    )


_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, screen clears
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks, clipboard writes
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[@-Z\\-_]?"  # any other escape (a lone ESC included)
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # C0 and C1 controls, except tab and newline
)


def printable(text: str) -> str:
    """Outside text (a submission's output, a name) without terminal control sequences: colours, cursor moves,
    title and clipboard writes and every other control character go; newlines and tabs stay."""
    return _CONTROL.sub("", text)


def _clip(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, cut after a whole word and marked with an ellipsis where it was cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;") + "…"


def format_speedup(baseline: BaselineResult) -> str:
    """One line for a baseline: 'speedup over the reference: 2.15x (cases 2.34x, 1.96x; reference timed now)'.
    Above 1 the submission is faster. Where there is no speedup, the note says why."""
    if baseline.speedup is None:
        note = _clip((baseline.note.splitlines() or ["not measured"])[0], 400)
        return f"speedup over the {baseline.label}: - ({note})"
    cases = ", ".join("-" if s is None else f"{s:.2f}x" for s in baseline.speedups)
    when = baseline.measured_at.strftime("%Y-%m-%d %H:%M UTC") if baseline.measured_at else "an unknown time"
    source = f"cached, timed {when}" if baseline.cached else "timed now"
    return f"speedup over the {baseline.label}: {baseline.speedup:.2f}x (cases {cases}; {baseline.label} {source})"


KERNEL_COLUMNS = ("kernel", "time", "grid", "block", "regs", "smem", "occupancy", "DRAM", "SM", "L1 hit", "L2 hit",
                  "tensor", "top stalls")  # fmt: skip
"""The columns of a profiled kernel's row (``kernel_row``), the same on every surface."""
COMPACT_KERNEL_COLUMNS = ("kernel", "time", "occupancy", "DRAM", "SM", "top stall")
"""The few that fit a chat message (``compact_kernel_row``)."""


def format_pct(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}%"


def format_bytes(value: int | None) -> str:
    """Bytes in the largest binary unit that keeps a whole number readable: ``0 B``, ``227 KiB``, ``1.5 MiB``."""
    if value is None:
        return MISSING
    for unit, size in (("MiB", 2**20), ("KiB", 2**10)):
        if value >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value} B"


def short_kernel_name(name: str, width: int = 48) -> str:
    """A kernel's name without its return type and parameter list, cut to ``width`` with an ellipsis:
    ``void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)`` -> ``at::native::vectorized_eleme…``."""
    text = printable(name).removeprefix("void ")
    depth, end = 0, len(text)
    for i, char in enumerate(text):  # the '(' of the parameter list: the first one outside template brackets
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "(" and depth <= 0 and i > 0:
            end = i
            break
    text = text[:end]
    return text if len(text) <= width else text[: width - 1] + "…"


COLLECTORS = {"ncu": "Nsight Compute", "torch": "the torch profiler (the submission's own word)", "none": "nothing"}


def kernels_text(bench: BenchmarkResult, top: int = 3) -> str:
    """A timed case's top kernels in one line ('' when none were recorded): ``nvjet_sm90_… (cuBLASLt) 99% DENIED,
    _token (own) 1%; coverage 99%``. The whole record is in the result's JSON."""
    if bench.kernels is None:
        return ""
    from runners.provenance import summary

    return printable(summary(bench.kernels, top))


def provenance_text(result: RunResult) -> str:
    """What recorded a timed result's kernels, the problem's library policy and what the record lacks, in a line
    ('' for a result without a provenance pass)."""
    prov = result.provenance
    if prov is None:
        return ""
    text = f"kernels recorded by {COLLECTORS.get(prov.collector, prov.collector)}"
    if prov.seconds is not None:
        text += f" in {prov.seconds:.1f} s"
    if prov.policy:
        text += f"; library policy: {prov.policy}"
    if prov.note:
        text += f"; {prov.note}"
    return printable(text)


def format_stalls(stalls: list[StallReason], count: int = 3) -> str:
    """The top stall reasons with their values: ``long_scoreboard 41.7, wait 3.12``."""
    return ", ".join(f"{s.reason} {s.value:.3g}" for s in stalls[:count]) or MISSING


def kernel_row(kernel: KernelMetrics) -> tuple[str, ...]:
    """One profiled kernel as the cells of ``KERNEL_COLUMNS``."""
    return (
        short_kernel_name(kernel.name),
        MISSING if kernel.duration_ns is None else format_ns(kernel.duration_ns),
        kernel.grid or MISSING,
        kernel.block or MISSING,
        MISSING if kernel.registers_per_thread is None else str(kernel.registers_per_thread),
        format_bytes(kernel.shared_memory_bytes),
        format_pct(kernel.achieved_occupancy_pct),
        format_pct(kernel.dram_throughput_pct),
        format_pct(kernel.sm_throughput_pct),
        format_pct(kernel.l1_hit_rate_pct),
        format_pct(kernel.l2_hit_rate_pct),
        format_pct(kernel.tensor_pipe_pct),
        format_stalls(kernel.top_stalls),
    )


def compact_kernel_row(kernel: KernelMetrics, width: int = 28) -> tuple[str, ...]:
    """One profiled kernel as the cells of ``COMPACT_KERNEL_COLUMNS``."""
    return (
        short_kernel_name(kernel.name, width),
        MISSING if kernel.duration_ns is None else format_ns(kernel.duration_ns),
        format_pct(kernel.achieved_occupancy_pct),
        format_pct(kernel.dram_throughput_pct),
        format_pct(kernel.sm_throughput_pct),
        format_stalls(kernel.top_stalls, 1),
    )
