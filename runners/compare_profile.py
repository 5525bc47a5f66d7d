"""``--compare --profile`` (issue 30): after a comparison's time ratio, what Nsight Compute says of each file's
dominant kernels, side by side, and the delta of each metric (DRAM %, SM %, achieved occupancy, registers per
thread, top stall).

How it runs: after the rounds, one profile-mode run of each file per benchmark case (``profile_request``: the case
alone, no tests, no baselines: the rounds already checked the files), so every launch Nsight Compute reports in a run
belongs to that case's one profiled call. The runs are ordinary ``run_request`` profile runs (Nsight Compute wraps
the sandboxed submission process; the trusted entry reads its report back, docs/profiling.md). Where a runner cannot
profile (no ncu, switched off, counters not permitted) the comparison stands and its ``metrics`` say why.

The table itself is a pure function of the two files' profile results (``metric_deltas``), tested on recorded ncu
pages: a file's launches of one kernel name are folded (times summed, percentages weighted by time), its kernels
ranked by GPU time, and the top ``TOP_KERNELS`` of each side paired, first by name, then by rank.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from runners.contract import (
    CaseMetrics,
    ComparisonMetrics,
    KernelDelta,
    KernelMetrics,
    KernelSide,
    Mode,
    RunRequest,
    RunResult,
)
from runners.provenance import short_name

if TYPE_CHECKING:
    from runners.settings import RunnerSettings

TOP_KERNELS = 3
"""Kernels of each file per case in the table: the dominant ones (a call's time is seldom spread wider)."""
NAME_CHARS = 96
MatchedBy = Literal["name", "rank", "none"]
NOTE_CHARS = 300


def profile_request(request: RunRequest, index: int, seed: int | None = None) -> RunRequest:
    """The profile-mode run of benchmark case ``index`` of a comparison's request: that case alone, without tests
    (the rounds ran them) or baselines, on inputs from ``seed`` (the request's own where None)."""
    if not 0 <= index < len(request.benchmarks):
        raise ValueError(f"the request has no benchmark case {index + 1}")
    update = {"mode": Mode.PROFILE, "tests": [], "baselines": [], "benchmarks": [request.benchmarks[index]]}
    return request.model_copy(update=update if seed is None else {**update, "seed": seed})


def profile_requests(a: RunRequest, b: RunRequest) -> list[tuple[RunRequest, RunRequest]]:
    """Per benchmark case, the profile runs of both files, on the same fresh inputs (one secret seed for both, as
    the rounds have: a file must not profile a cached answer to public inputs)."""
    seed = secrets.randbelow(2**63)
    return [(profile_request(a, i, seed), profile_request(b, i, seed)) for i in range(len(a.benchmarks))]


def cannot_profile(settings: RunnerSettings, request: RunRequest) -> str:
    """Why this machine's runner cannot give a comparison of ``request``'s problem Nsight Compute's metrics ('' when
    it can): the CPU, or ncu missing, switched off or not permitted (``runners.entry.profiling.choose_profiler``'s
    own reasons, asked of the profile run it would make)."""
    if request.device == "cpu":
        return "Nsight Compute profiles GPU kernels; this comparison ran on the CPU"
    from runners.entry.profiling import choose_profiler

    choice = choose_profiler(settings, profile_request(request, 0), Path("profile-probe"))  # (only named, not made)
    return "" if choice.ncu else _reason(choice.note)


def _reason(note: str) -> str:
    """A profiler note as a reason: its first sentence(s), without the torch fallback's lead-in."""
    return note.split(" The torch profiler's table instead:")[0].strip().rstrip(".")


@dataclass
class _Fold:
    name: str
    launches: int = 0
    duration: float = 0.0
    timed: bool = False
    weighted: dict[str, tuple[float, float]] = field(default_factory=dict)
    registers: int | None = None
    stall: tuple[float, str] | None = None

    def add(self, m: KernelMetrics) -> None:
        self.launches += 1
        if m.duration_ns is not None and m.duration_ns >= 0:
            self.duration += m.duration_ns
            self.timed = True
        weight = m.duration_ns if m.duration_ns and m.duration_ns > 0 else 1.0
        for key, value in (("dram", m.dram_throughput_pct), ("sm", m.sm_throughput_pct),
                           ("occupancy", m.achieved_occupancy_pct)):  # fmt: skip
            if value is not None:
                total, weights = self.weighted.get(key, (0.0, 0.0))
                self.weighted[key] = (total + weight * value, weights + weight)
        if m.registers_per_thread is not None:
            self.registers = max(self.registers or 0, m.registers_per_thread)
        if m.top_stalls and (self.stall is None or (m.duration_ns or 0.0) > self.stall[0]):
            self.stall = (m.duration_ns or 0.0, m.top_stalls[0].reason)

    def mean(self, key: str) -> float | None:
        total, weights = self.weighted.get(key, (0.0, 0.0))
        return total / weights if weights > 0 else None


def side_kernels(metrics: Sequence[KernelMetrics]) -> list[KernelSide]:
    """One file's kernels in one profiled call, by name (launches folded), the longest first (ties by name)."""
    folds: dict[str, _Fold] = {}
    for m in metrics:
        name = short_name(m.name, NAME_CHARS)
        folds.setdefault(name, _Fold(name)).add(m)
    total = sum(f.duration for f in folds.values())
    ordered = sorted(folds.values(), key=lambda f: (-f.duration, f.name))
    return [
        KernelSide(
            name=f.name,
            launches=f.launches,
            duration_ns=f.duration if f.timed else None,
            share=f.duration / total if f.timed and total > 0 else None,
            dram_pct=f.mean("dram"),
            sm_pct=f.mean("sm"),
            occupancy_pct=f.mean("occupancy"),
            registers=f.registers,
            top_stall=f.stall[1] if f.stall else None,
        )
        for f in ordered
    ]


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _delta(rank: int, how: MatchedBy, a: KernelSide | None, b: KernelSide | None) -> KernelDelta:
    if a is None or b is None:
        return KernelDelta(rank=rank, matched_by="none", a=a, b=b)
    ratio = a.duration_ns / b.duration_ns if a.duration_ns is not None and b.duration_ns else None
    registers = a.registers - b.registers if a.registers is not None and b.registers is not None else None
    return KernelDelta(
        rank=rank, matched_by=how, a=a, b=b, duration_ratio=ratio, dram_pct=_minus(a.dram_pct, b.dram_pct),
        sm_pct=_minus(a.sm_pct, b.sm_pct), occupancy_pct=_minus(a.occupancy_pct, b.occupancy_pct),
        registers=registers, stall_changed=a.top_stall != b.top_stall,
    )  # fmt: skip


def match(a: Sequence[KernelSide], b: Sequence[KernelSide], top: int = TOP_KERNELS) -> list[KernelDelta]:
    """The dominant ``top`` kernels of each side paired: the same name first, then the rest by rank of GPU time;
    a kernel left without a partner stands alone. Rows in A's order, then B's unpaired ones."""
    a_top, b_top = list(a[:top]), list(b[:top])
    partner: dict[int, tuple[int, MatchedBy]] = {}
    taken: set[int] = set()
    for i, ka in enumerate(a_top):
        j = next((j for j, kb in enumerate(b_top) if j not in taken and kb.name == ka.name), None)
        if j is not None:
            partner[i] = (j, "name")
            taken.add(j)
    rest = iter([j for j in range(len(b_top)) if j not in taken])
    for i in range(len(a_top)):
        if i not in partner:
            j = next(rest, None)
            if j is not None:
                partner[i] = (j, "rank")
                taken.add(j)
    rows = [_delta(i + 1, partner[i][1], ka, b_top[partner[i][0]]) if i in partner else _delta(i + 1, "none", ka, None)
            for i, ka in enumerate(a_top)]  # fmt: skip
    rows += [_delta(j + 1, "none", None, kb) for j, kb in enumerate(b_top) if j not in taken]
    return rows


def _why_none(side: str, result: RunResult) -> str:
    """Why one file's profile run of a case has no metrics ('' when it has)."""
    if not result.passed:
        return f"{side}: its profile run failed: {result.verdict.label}: {result.message}"[:NOTE_CHARS]
    if result.kernel_metrics:
        return ""
    first = (result.profile or "").split("\n\n")[0].strip()
    # Only the trusted side's own notes are quoted: the torch table after them is the submission's text.
    said = _reason(first) if first.startswith("Nsight Compute") else "the runner profiled no kernel"
    return f"{side}: no Nsight Compute metrics ({said})"[:NOTE_CHARS]


def metric_deltas(
    cases: Sequence[dict[str, Any]], results: Sequence[tuple[RunResult, RunResult]], names: tuple[str, str] = ("A", "B")
) -> ComparisonMetrics:
    """The metric table of a comparison from each case's two profile results (A's, B's), in case order."""
    if len(cases) != len(results):
        raise ValueError(f"{len(results)} pairs of profile results for {len(cases)} cases")
    out, collected = [], False
    for index, (case, (ra, rb)) in enumerate(zip(cases, results, strict=True)):
        notes = [why for why in (_why_none(names[0], ra), _why_none(names[1], rb)) if why]
        collected = collected or bool(ra.kernel_metrics or rb.kernel_metrics)
        rows = match(side_kernels(ra.kernel_metrics), side_kernels(rb.kernel_metrics))
        out.append(CaseMetrics(index=index, case=dict(case), kernels=rows, note="; ".join(notes)[:600]))
    note = "" if collected else next((c.note for c in out if c.note), "no kernel was profiled")
    return ComparisonMetrics(collector="ncu" if collected else "none", note=note[:600], cases=out)


def profile_pair(
    a: RunRequest, b: RunRequest, run: Callable[[RunRequest], RunResult], names: tuple[str, str] = ("A", "B"),
    on_case: Callable[[int, int], None] | None = None,
) -> ComparisonMetrics:  # fmt: skip
    """Profile each case of both files (``run`` runs one request; A then B, case by case) and build the table."""
    results = []
    pairs = profile_requests(a, b)
    for index, (pa, pb) in enumerate(pairs):
        if on_case is not None:
            on_case(index + 1, len(pairs))
        results.append((run(pa), run(pb)))
    return metric_deltas(a.benchmarks, results, names)


def unavailable(why: str) -> ComparisonMetrics:
    """The metrics of a comparison on a runner that cannot profile: none, and why."""
    return ComparisonMetrics(collector="none", note=f"no kernel metrics: {why}"[:600])


def _pair(a: KernelSide | None, b: KernelSide | None, key: str, delta: float | None, unit: str = "%") -> str:
    values = ["-" if s is None or getattr(s, key) is None else f"{getattr(s, key):.0f}" for s in (a, b)]
    return f"{values[0]} | {values[1]}{unit}" + (f" ({delta:+.0f})" if delta is not None else "")


def row_text(row: KernelDelta, name_chars: int = 40) -> str:
    """One row for people, each metric as 'A | B (A-B)': '1. add_kernel (both): time 0.98x; DRAM 81 | 79% (+2); SM
    14 | 15% (-1); occupancy 84 | 80% (+4); registers 26 | 26 (+0); stall long_scoreboard | long_scoreboard'."""
    a, b = row.a, row.b
    names = [short_name(s.name, name_chars) if s is not None else "-" for s in (a, b)]
    kernel = f"{names[0]} (both)" if row.matched_by == "name" else f"{names[0]} | {names[1]}"
    parts = [f"time {row.duration_ratio:.2f}x"] if row.duration_ratio is not None else []
    parts += [f"DRAM {_pair(a, b, 'dram_pct', row.dram_pct)}", f"SM {_pair(a, b, 'sm_pct', row.sm_pct)}",
              f"occupancy {_pair(a, b, 'occupancy_pct', row.occupancy_pct)}",
              f"registers {_pair(a, b, 'registers', row.registers, '')}"]  # fmt: skip
    stalls = [s.top_stall if s is not None and s.top_stall else "-" for s in (a, b)]
    parts.append(f"stall {stalls[0]} | {stalls[1]}")
    return f"{row.rank}. {kernel}: " + "; ".join(parts)
