"""Nsight Compute's raw CSV page, parsed into :class:`runners.contract.KernelMetrics` (a pure function).

``ncu --import report.ncu-rep --csv --page raw`` prints one header row of column names (the launch's identity:
``"ID"``, ``"Kernel Name"``, ``"Block Size"``, ``"Grid Size"``, ..., then one column per metric by its ncu name),
one row of units (empty under the identity columns), and one row per profiled kernel launch. We read the raw page,
not the details page, because its columns are ncu's metric names, which stay the same across ncu versions and
locales, while the details page names rows for people ("Duration", "Registers Per Thread") and groups them by
section. Values may carry thousands separators ("1,234.5") or read "n/a".

The text comes from a report written inside the submission's sandbox, so it is treated as hostile: it is size
capped, rows and columns are bounded, nothing in it is evaluated, and a value that is not a finite number is None.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable

from runners.contract import KernelMetrics, StallReason

MAX_CSV_CHARS = 8 * 1024 * 1024
"""Characters of the CSV read at most (a raw page is about 20 KiB per kernel launch)."""
MAX_KERNELS = 256
MAX_COLUMNS = 8192
MAX_NAME_CHARS = 512

_TIME_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
_BYTES = {"byte": 1, "Kbyte": 10**3, "Mbyte": 10**6, "Gbyte": 10**9, "KB": 10**3, "MB": 10**6, "KiB": 2**10,
          "MiB": 2**20}  # fmt: skip
_DIMS = re.compile(r"\(\s*\d{1,10}\s*,\s*\d{1,10}\s*,\s*\d{1,10}\s*\)")

DURATION = "gpu__time_duration.sum"
GRID_SIZE = "launch__grid_size"
BLOCK_SIZE = "launch__block_size"
REGISTERS = "launch__registers_per_thread"
SHARED_STATIC = "launch__shared_mem_per_block_static"
SHARED_DYNAMIC = "launch__shared_mem_per_block_dynamic"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
DRAM = ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed")
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
L1_HIT = "l1tex__t_sector_hit_rate.pct"
L2_HIT = "lts__t_sector_hit_rate.pct"
TENSOR = re.compile(r"sm__pipe_tensor(?:_op_[a-z]+)?_cycles_active\.avg\.pct_of_peak_sustained_active")
"""Tensor pipe activity: hmma (Volta to Hopper), gmma (Hopper's warpgroup MMA), imma, dmma, or the pipe as a whole."""
STALL_FAMILIES = (
    re.compile(r"smsp__average_warp_latency_issue_stalled_([a-z_]+)\.ratio"),
    re.compile(r"smsp__average_warps_issue_stalled_([a-z_]+)_per_issue_active\.ratio"),
    re.compile(r"smsp__pcsamp_warps_issue_stalled_([a-z_]+)"),
)
"""Stall reasons, in the order we prefer them: the Warp State section's cycles per issued instruction (two names
across ncu versions), else the PC sampling counts. 'selected' (the warp issued) is no stall; '..._not_issued' and
a reason that extends another ('long_scoreboard_pipe_l1tex') split a reason already counted."""


class NcuCsvError(ValueError):
    """The text is not ncu's raw CSV page (no header row naming the kernel)."""


def parse_raw_csv(text: str) -> list[KernelMetrics]:
    """The kernel launches in ``ncu --csv --page raw`` output, in ncu's order (at most ``MAX_KERNELS``).

    Lines ncu prints around the table (``==PROF==``, ``==WARNING==``) are skipped; a row whose number of fields
    differs from the header's (a cut-off last line) is dropped, and the table ends at a row the csv module cannot
    read (a field over its 128 KiB limit). Raises :class:`NcuCsvError` when there is no
    table at all."""
    lines = (line for line in text[:MAX_CSV_CHARS].splitlines() if not line.startswith("=="))
    reader = csv.reader(lines)
    try:
        header = next((row for row in reader if row and row[0] == "ID"), None)
    except csv.Error as exc:
        raise NcuCsvError(f"the ncu CSV is malformed: {exc}") from None
    if header is None or ("Kernel Name" not in header and "Function Name" not in header):
        raise NcuCsvError('no ncu CSV header row ("ID", ..., "Kernel Name", ...) in the output')
    if len(header) > MAX_COLUMNS:
        raise NcuCsvError(f"the ncu CSV has {len(header)} columns, more than {MAX_COLUMNS}")
    units: list[str] = [""] * len(header)
    kernels: list[KernelMetrics] = []
    while len(kernels) < MAX_KERNELS:
        try:
            row = next(reader, None)
        except csv.Error:  # a field over the csv module's limit: the table ends at the last good row
            break
        if row is None:
            break
        if len(row) != len(header):
            continue
        if not row[0]:  # the units row: empty under the identity columns
            units = row
            continue
        kernels.append(_kernel(dict(zip(header, zip(row, units, strict=True), strict=True))))
    return kernels


def _kernel(cells: dict[str, tuple[str, str]]) -> KernelMetrics:
    def number(name: str) -> float | None:
        return _number(cells.get(name, ("", ""))[0])

    def first(names: Iterable[str]) -> float | None:
        return next((v for v in map(number, names) if v is not None), None)

    name = (cells.get("Kernel Name") or cells.get("Function Name") or ("", ""))[0]
    static, dynamic = _bytes(cells, SHARED_STATIC), _bytes(cells, SHARED_DYNAMIC)
    tensor = [v for m in cells if TENSOR.fullmatch(m) and (v := number(m)) is not None]
    return KernelMetrics(
        name=name[:MAX_NAME_CHARS] or "(unnamed kernel)",
        duration_ns=_scaled(cells.get(DURATION), _TIME_NS),
        grid=_dims(cells, "Grid Size", GRID_SIZE),
        block=_dims(cells, "Block Size", BLOCK_SIZE),
        registers_per_thread=_int(number(REGISTERS)),
        shared_memory_bytes=None if static is None and dynamic is None else (static or 0) + (dynamic or 0),
        achieved_occupancy_pct=number(OCCUPANCY),
        dram_throughput_pct=first(DRAM),
        sm_throughput_pct=number(SM),
        l1_hit_rate_pct=number(L1_HIT),
        l2_hit_rate_pct=number(L2_HIT),
        tensor_pipe_pct=max(tensor) if tensor else None,
        top_stalls=_stalls(cells),
    )


def _stalls(cells: dict[str, tuple[str, str]]) -> list[StallReason]:
    for family in STALL_FAMILIES:
        found = []
        for metric, (value, _unit) in cells.items():
            match = family.fullmatch(metric)
            if match is None:
                continue
            reason = match.group(1)
            if reason == "selected" or reason.endswith("_not_issued") or len(reason) > 64:
                continue
            number = _number(value)
            if number is not None and number > 0:
                found.append(StallReason(reason=reason, value=number, metric=metric))
        if len(found) > MAX_STALL_REASONS:  # ncu has a few dozen; more is a crafted report
            found = sorted(found, key=lambda s: (-s.value, s.reason))[:MAX_STALL_REASONS]
        reasons = {s.reason for s in found}
        found = [s for s in found if not _splits_another(s.reason, reasons)]  # 'x_pipe_y' splits 'x'
        if found:
            return sorted(found, key=lambda s: (-s.value, s.reason))[:3]
    return []


MAX_STALL_REASONS = 64


def _splits_another(reason: str, reasons: set[str]) -> bool:
    """Whether ``reason`` is a finer split of another reason of the set (each of its '_' prefixes looked up once)."""
    return any(reason[:i] in reasons for i, char in enumerate(reason) if char == "_")


def _number(value: str) -> float | None:
    """A finite number from one cell: thousands separators dropped, 'n/a' and anything else None."""
    text = value.strip().replace(",", "")
    if not text or len(text) > 40:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _scaled(cell: tuple[str, str] | None, scale: dict[str, float]) -> float | None:
    if cell is None:
        return None
    value, unit = cell
    number = _number(value)
    factor = scale.get(unit.strip()) if unit.strip() else 1.0
    return None if number is None or factor is None else number * factor


def _bytes(cells: dict[str, tuple[str, str]], name: str) -> int | None:
    """A per-block byte count: ncu 2025 writes its unit as 'byte/block' (older ones 'byte', or 'Kbyte/block')."""
    cell = cells.get(name)
    if cell is not None:
        cell = (cell[0], cell[1].strip().removesuffix("/block"))
    return _int(_scaled(cell, {k: float(v) for k, v in _BYTES.items()}))


def _int(number: float | None) -> int | None:
    return None if number is None or abs(number) >= 2**53 else round(number)


def _dims(cells: dict[str, tuple[str, str]], column: str, metric: str) -> str | None:
    """'(x, y, z)' from the launch's own column; else the metric's total, as '(n)'."""
    text = cells.get(column, ("", ""))[0].strip()
    if _DIMS.fullmatch(text):
        return ", ".join(part.strip() for part in text.split(","))
    total = _int(_number(cells.get(metric, ("", ""))[0]))
    return None if total is None else f"({total})"
