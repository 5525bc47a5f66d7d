"""A timed case's bottleneck in one or two sentences (issue 30), made only from what its result already holds:
the roofline share and what sets the bound (``runners.verdict``), the provenance pass's kernels, and, where a run
has them (profile mode), Nsight Compute's stall reasons. Deterministic: the same result reads the same digest.

    memory-bound: 81% of the DRAM bound, headroom <= 19% of the time; dominant kernel add_kernel (own, 100% of the
    recorded time)

At most ``MAX_DIGEST_CHARS`` (2 KB) per case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from runners.provenance import LABELS, short_name

if TYPE_CHECKING:
    from runners.contract import BenchmarkResult, KernelMetrics

MAX_DIGEST_CHARS = 2048


def digest(bench: BenchmarkResult, metrics: Sequence[KernelMetrics] = ()) -> str:
    """The case's digest ('' when its result holds nothing to say it from)."""
    parts = []
    share, limit = bench.roofline_share, bench.roofline_limit
    if share is not None and share > 0 and limit:
        if limit == "memory":
            head = f"memory-bound: {share:.0%} of the DRAM bound"
        else:
            head = f"compute-bound: {share:.0%} of the {limit} peak"
        headroom = (f"headroom <= {max(1.0 - share, 0.0):.0%} of the time" if share >= 0.5
                    else f"headroom up to {1 / share:.1f}x")  # fmt: skip
        parts.append(f"{head}, {headroom}")
    record = bench.kernels
    if record is not None and record.kernels and record.recorded_ns:
        top = record.kernels[0]
        of = (top.duration_ns or 0.0) / record.recorded_ns
        line = f"dominant kernel {short_name(top.name, 60)} ({LABELS.get(top.library, top.library)}, {of:.0%} of the " \
               "recorded time)"  # fmt: skip
        stalls = next((m.top_stalls for m in metrics if same_kernel(m.name, top.name) and m.top_stalls), [])
        if stalls:
            line += "; top stall " + ", ".join(f"{s.reason} {s.value:.3g}" for s in stalls[:2])
        parts.append(line)
        if record.coverage is not None and record.coverage < 0.8:
            parts.append(f"the kernels explain only {record.coverage:.0%} of the timed call (launch overhead, or "
                         "work the collector did not see)")  # fmt: skip
    return "; ".join(parts)[:MAX_DIGEST_CHARS]


def _base(name: str) -> str:
    """A kernel's function name alone: 'void at::native::f<4, ...>(int, ...)' and 'f' both read 'f'."""
    text = short_name(name, len(name) + 1)
    return text.split("<", 1)[0].rsplit("::", 1)[-1].strip()


def same_kernel(a: str, b: str) -> bool:
    """Whether two names are one kernel's. The provenance pass records whole demangled names (``void
    at::native::vectorized_elementwise_kernel<4, ...>(int, float, ...)``, what its classifier reads); profile mode
    reads ncu's default names, which may differ in the parameter list (``(int, T2, T3)``), or be the function alone
    (``matmul_naive``): one kernel when the function names agree."""
    return a == b or (bool(_base(a)) and _base(a) == _base(b))
