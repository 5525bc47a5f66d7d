"""Which library a GPU kernel comes from, by its name: the one table of named groups of kernel-name patterns that
a problem's library policy (``task.yml``'s ``library_policy``) and every result's ``kernels`` use (issue 30).

A kernel is known by its name only: what Nsight Compute (or the torch profiler) prints for it, demangled
(``nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT``, ``void at::vectorized_elementwise_kernel<...>``) or mangled
(``_ZN2at6native...``). Each group below is a list of regular expressions searched in that name; a kernel belongs
to every group one of whose patterns it contains, its *library* is the first of them in the table's order, and a
kernel that no pattern matches is the submission's ``own`` (a Triton kernel is named after its Python function,
``_mm``, with nothing to say it is Triton; so is a CUDA kernel the submission compiled).

Names to know (recorded on an H200 with torch 2.11 + CUDA 13, tests/runners/fixtures/kernels_h200/):

- cuBLAS's fp16 GEMMs on Hopper are cuBLASLt's ``nvjet_*`` kernels (a ``Memset (Device)`` beside them zeroes a
  workspace); its fp32 SIMT GEMM is named ``cutlass::Kernel2<cutlass_80_simt_sgemm_...>``: cuBLAS ships kernels
  built from CUTLASS under CUTLASS's name, so a ``cutlass`` name alone is not the submission's own CUTLASS. cuBLAS's
  own names have ``cutlass_<arch>_`` inside; the submission's CUTLASS templates (``cutlass::device_kernel<...>``,
  ``cutlass::Kernel<...GemmUniversal...>``) do not.
- cuDNN's convolution is ``cudnn::nchwToNhwcKernel``, ``sm90_xmma_fprop_implicit_gemm_...``,
  ``cudnn::nhwcToNchwKernel``; its attention (what ``scaled_dot_product_attention`` picks on Hopper) is
  ``cudnn_generated_fort_native_sdpa_sm90_flash_fprop_...``: groups ``cudnn`` and ``attention`` both.
- ATen's own kernels name ``at::`` (``at::native::`` in CUPTI's names; ncu prints ``at::`` alone).

The table is data: adding a pattern for a name a new library version prints is a one-line change, with a test on
the recorded name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


@dataclass(frozen=True)
class Group:
    name: str
    label: str
    """What results print beside a kernel: 'cuBLASLt'."""
    doc: str
    patterns: tuple[str, ...]
    excludes: tuple[str, ...] = ()
    """Names that contain one of these are not the group's, whatever else they contain."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", re.compile("|".join(f"(?:{p})" for p in self.patterns)))
        object.__setattr__(self, "_excludes", re.compile("|".join(f"(?:{p})" for p in self.excludes or ("$^",))))

    def matches(self, name: str) -> bool:
        return self._regex.search(name) is not None and self._excludes.search(name) is None  # type: ignore[attr-defined]


OWN = "own"
CUBLAS_CUTLASS = r"cutlass_\d+_(?:simt|tensorop|wmma)"
"""cuBLAS's CUTLASS-built kernels: ``cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>``."""
GROUPS: tuple[Group, ...] = (
    Group("cudnn", "cuDNN", "cuDNN: convolutions, its layout transforms, its generated attention and fused graphs.",
          (r"cudnn", r"_ZN5cudnn", r"xmma_(?:fprop|dgrad|wgrad)", r"implicit_gemm", r"_cudnn\b")),
    Group("cublaslt", "cuBLASLt", "cuBLASLt's GEMMs: the nvjet kernels torch.matmul runs in fp16/bf16 on Hopper.",
          (r"^(?:void )?nvjet_", r"cublasLt", r"_ZN8cublasLt")),
    Group("cublas", "cuBLAS", "cuBLAS's other kernels: its xmma/ampere GEMMs, its CUTLASS-built kernels "
          "(cutlass_80_simt_sgemm...), GEMV, split-K reductions and level-1 routines.",
          (CUBLAS_CUTLASS, r"\bsm\d+_xmma_gemm", r"\b(?:ampere|volta|turing|hopper)_\w*gemm",
           r"^(?:void )?(?:gemv2?[NT]?_kernel|gemvx|gemvNSP|gemmSN|gemmk1_kernel|gemm_kernel|splitKreduce_kernel|"
           r"dot_kernel|scal_kernel|axpy_kernel|nrm2_kernel|asum_kernel|trsm_|syrk_|herk_|ger_kernel)",
           r"cublas", r"_Z\d+(?:gemv|gemmSN|gemmk1|splitKreduce)")),
    Group("aten_mm", "ATen matmul", "ATen's own GEMM-class kernels (scaled/grouped mm, its CUTLASS and FBGEMM "
          "GEMMs), not cuBLAS's.",
          (r"(?<!\w)at::(?:native::)?\S*(?:gemm|gemv|scaled_mm|grouped_mm|_mm_|bmm|addmm)",
           r"at::cuda::detail::enable_\dx_kernel", r"f8f8bf16", r"fbgemm", r"_ZN2at\w*(?:gemm|gemv|scaled_mm)")),
    Group("attention", "attention", "Library attention kernels: FlashAttention (PyTorch's and the package), "
          "memory-efficient attention, cuDNN's SDPA.",
          (r"flash_fwd", r"flash_bwd", r"pytorch_flash", r"flash_attn", r"fmha_", r"_sdpa_", r"efficient_attention",
           r"\bmha_")),
    Group("inductor", "torch.compile", "Triton kernels that torch.compile (Inductor) generated.",
          (r"^triton_(?:poi|red|per|tem|for|mm|bmm)_",)),
    Group("aten", "ATen", "ATen's native kernels: element-wise, copies, reductions, softmax, indexing, its cub.",
          (r"(?<![\w:])at::", r"at_cuda_detail", r"_ZN2at", r"(?<![\w:])c10::", r"_ZN3c10")),
    Group("nccl", "NCCL", "NCCL's collectives.", (r"nccl",)),
    Group("cub", "CUB/Thrust", "CUB and Thrust kernels the submission called (ATen's own cub counts as aten).",
          (r"(?<![\w:])cub::", r"_ZN3cub", r"(?<![\w:])thrust::", r"_ZN6thrust", r"\bCUB_\d")),
    Group("cutlass", "CUTLASS", "The submission's own CUTLASS / CuTe templates (cuBLAS's CUTLASS-built kernels are "
          "cublas).", (r"cutlass::", r"_ZN7cutlass", r"(?<![\w:])cute::", r"_ZN4cute"), (CUBLAS_CUTLASS,)),
    Group("runtime", "CUDA runtime", "The runtime's own operations: memset and memcpy.",
          (r"^Memset\b", r"^Memcpy\b", r"^\[CUDA mem")),
)  # fmt: skip
GROUP_NAMES: tuple[str, ...] = (*(g.name for g in GROUPS), OWN)
LABELS: dict[str, str] = {**{g.name: g.label for g in GROUPS}, OWN: "own"}

MARKER = re.compile(r"\bspin_kernel\b")
"""The kernel the submission side launches at the start of each recorded call (``torch.cuda._sleep``): where one
benchmark case's kernels begin in the collector's record. Never a kernel of the call."""


def groups_of(name: str) -> tuple[str, ...]:
    """Every group ``name`` belongs to, in the table's order; ``('own',)`` when none."""
    found = tuple(g.name for g in GROUPS if g.matches(name))
    return found or (OWN,)


def library_of(name: str) -> str:
    """The kernel's library: the first group it belongs to."""
    return groups_of(name)[0]


DENIED_SHARE_LIMIT = 0.05
"""A run is rejected when kernels its problem's policy denies take more than this share of a call's recorded GPU
time (a few percent lets a stray copy or the runtime's memset through, never a GEMM)."""
COVERAGE_FLAG = 0.80
"""Below this share of the timed call explained by the recorded kernels, a result is flagged: the time went
somewhere the collector did not see."""
COVERAGE_POLICY_MIN = 0.80
"""Under a library policy, a call whose recorded kernels explain less than this share of its timed median is
rejected: the work ran where the policy cannot be checked (a thread that outlives the call, kernels hidden from the
collector). Nsight Compute's durations of one call's kernels land within a few percent of the harness's median for
calls of 10 µs and more (docs/measurement.md); 0.8 leaves room for the gaps between kernels, which it does not count
(red team, 2026-11-28: at 0.5 a submission could hide half its work)."""
COVERAGE_POLICY_MAX = 1.25
"""Under a library policy, a call whose recorded kernels take more than this multiple of its timed median is
rejected: the submission ran other work under the collector than it was timed with (red team, 2026-11-28: at 2x a
kernel of its own twice as slow as the library it was timed with passed)."""


class LibraryPolicy(BaseModel):
    """``task.yml``'s ``library_policy``: ``{deny: [cublas, cublaslt]}`` or ``{allow: [aten, own]}``, by the group
    names of :data:`GROUPS` (and ``own``). A denied kernel is one in a denied group (deny), or in no allowed group
    (allow)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deny: list[str] | None = Field(default=None, max_length=len(GROUP_NAMES),
                                   description="Groups whose kernels the problem does not allow.")  # fmt: skip
    allow: list[str] | None = Field(default=None, max_length=len(GROUP_NAMES),
                                    description="The only groups whose kernels the problem allows.")  # fmt: skip

    @model_validator(mode="after")
    def _one_known_list(self) -> LibraryPolicy:
        if (self.deny is None) == (self.allow is None):
            raise ValueError("library_policy takes one of deny: [...] or allow: [...]")
        names = self.deny if self.deny is not None else self.allow
        assert names is not None
        unknown = [n for n in names if n not in GROUP_NAMES]
        if unknown:
            raise ValueError(f"library_policy names unknown kernel group(s) {', '.join(map(repr, unknown))}; the "
                             f"groups are {', '.join(GROUP_NAMES)} (runners/provenance.py)")  # fmt: skip
        if not names:
            raise ValueError("library_policy's list is empty")
        # Red team, 2026-11-29: {deny: [own]} or an allow list without own rejected every kernel a competitor wrote,
        # so no submission could pass a timed run.
        if self.deny is not None and OWN in self.deny:
            raise ValueError("library_policy denies 'own', the submission's own kernels, so every submission would be "
                             "rejected: deny the libraries instead (e.g. deny: [cublas, cublaslt])")  # fmt: skip
        if self.allow is not None and OWN not in self.allow:
            raise ValueError(f"library_policy's allow list ({', '.join(self.allow)}) lacks 'own', the submission's "
                             "own kernels, so every submission would be rejected: add it, e.g. allow: "
                             f"[{', '.join([OWN, *self.allow])}]")  # fmt: skip
        return self

    def denies(self, groups: tuple[str, ...]) -> bool:
        if self.deny is not None:
            return any(g in self.deny for g in groups)
        assert self.allow is not None
        return not any(g in self.allow for g in groups)

    def describe(self) -> str:
        if self.deny is not None:
            return "denies " + ", ".join(LABELS[g] for g in self.deny)
        return "allows only " + ", ".join(LABELS[g] for g in self.allow or [])


class KernelRow(BaseModel):
    """One kernel launch of one recorded call, as results carry it (``BenchmarkResult.kernels``)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(max_length=256, description="The kernel's demangled name (cut to 256 characters).")
    library: str = Field(max_length=32, description="Its library group (runners/provenance.py), 'own' when none.")
    groups: list[str] = Field(default_factory=list, max_length=len(GROUP_NAMES))
    duration_ns: float | None = None
    grid: str | None = Field(default=None, max_length=64)
    block: str | None = Field(default=None, max_length=64)
    launches: int = Field(default=1, ge=1, description="Launches of this kernel, grid and block folded into the row.")
    denied: bool = Field(default=False, description="The problem's library policy does not allow it.")


MAX_ROWS_PER_CASE = 16
"""Rows kept per case: the longest first (launches of one kernel, grid and block are folded into one row first);
the rest is summed into ``other_ns`` of the case's record."""


class CaseKernels(BaseModel):
    """What the provenance pass recorded of one benchmark case's call."""

    model_config = ConfigDict(extra="forbid")

    kernels: list[KernelRow] = Field(default_factory=list, max_length=MAX_ROWS_PER_CASE)
    other_ns: float = Field(default=0.0, description="The recorded time of the kernels left out of the rows.")
    other_launches: int = 0
    recorded_ns: float = Field(default=0.0, description="The recorded kernels' total GPU time.")
    coverage: float | None = Field(
        default=None, description="recorded_ns / the case's timed median: the share of the call the kernels explain."
    )
    denied_share: float = Field(default=0.0, description="The denied kernels' share of recorded_ns.")


class Provenance(BaseModel):
    """A timed result's record of which kernels did the work (``RunResult.provenance``)."""

    model_config = ConfigDict(extra="forbid")

    collector: Literal["ncu", "torch", "none"] = Field(
        description="What recorded the kernels: 'ncu' (Nsight Compute, around a separate run of the submission), "
        "'torch' (the torch profiler inside the submission's process: names only, the submission's own word), or "
        "'none' (this runner could not record kernels)."
    )
    policy: str = Field(default="", max_length=300, description="The problem's library policy, in words.")
    cases: list[CaseKernels] = Field(default_factory=list, max_length=64)
    note: str = Field(default="", max_length=2000, description="What the record lacks, and why.")
    seconds: float | None = Field(default=None, description="Wall time the provenance pass added to the run.")


@dataclass
class Launch:
    name: str
    duration_ns: float | None
    grid: str | None = None
    block: str | None = None


def split_cases(launches: list[Launch], cases: int) -> list[list[Launch]] | None:
    """The record cut at each marker into one list per case (the markers left out); None when the markers do not
    make exactly ``cases`` parts (the submission launched a kernel of the marker's name itself)."""
    parts: list[list[Launch]] = []
    for launch in launches:
        if MARKER.search(launch.name):
            parts.append([])
        elif parts:
            parts[-1].append(launch)
        else:
            return None  # a kernel before the first marker: not the evaluator's order
    return parts if len(parts) == cases else None


def case_record(
    launches: list[Launch], median_ns: float | None, policy: LibraryPolicy | None, *, rows: int = MAX_ROWS_PER_CASE
) -> CaseKernels:
    """One case's record: launches of the same kernel, grid and block folded, the longest ``rows`` kept."""
    folded: dict[tuple[str, str | None, str | None], KernelRow] = {}
    for launch in launches:
        key = (launch.name, launch.grid, launch.block)
        row = folded.get(key)
        if row is None:
            groups = groups_of(launch.name)
            folded[key] = KernelRow(name=launch.name[:256], library=groups[0], groups=list(groups),
                                    duration_ns=launch.duration_ns, grid=launch.grid, block=launch.block,
                                    denied=policy is not None and policy.denies(groups))  # fmt: skip
        else:
            row.launches += 1
            if launch.duration_ns is not None:
                row.duration_ns = (row.duration_ns or 0.0) + launch.duration_ns
    ordered = sorted(folded.values(), key=lambda r: (-(r.duration_ns or 0.0), r.name))
    total = sum(r.duration_ns or 0.0 for r in ordered)
    denied = sum(r.duration_ns or 0.0 for r in ordered if r.denied)
    kept, rest = ordered[:rows], ordered[rows:]
    return CaseKernels(
        kernels=kept,
        other_ns=sum(r.duration_ns or 0.0 for r in rest),
        other_launches=sum(r.launches for r in rest),
        recorded_ns=total,
        coverage=round(total / median_ns, 4) if median_ns and total else None,
        denied_share=round(denied / total, 4) if total else 0.0,
    )


def short_name(name: str, limit: int = 48) -> str:
    """A kernel name for one line: 'void ' and the parameter list dropped, cut with '…'."""
    text = name.removeprefix("void ").strip()
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):  # the '(' of the parameter list: the first one outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0 and i > 0:
            cut = i
            break
    text = text[:cut]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def policy_violation(case: CaseKernels, index: int, policy: LibraryPolicy) -> str:
    """Why case ``index`` (0-based) breaks the policy ('' when it does not): its denied kernels' share over
    :data:`DENIED_SHARE_LIMIT`, or its recorded kernels far from its timed median."""
    if case.denied_share > DENIED_SHARE_LIMIT:
        denied = [r for r in case.kernels if r.denied]
        top = denied[0] if denied else None
        names = (f"{short_name(top.name)} ({LABELS.get(top.library, top.library)})" if top else "denied kernels")
        more = f" and {len(denied) - 1} more denied kernel(s)" if len(denied) > 1 else ""
        return (f"benchmark {index + 1}: {case.denied_share:.0%} of the time in {names}{more}, which this problem "
                f"does not allow (its library policy {policy.describe()})")  # fmt: skip
    if case.coverage is not None and case.coverage < COVERAGE_POLICY_MIN:
        return (f"benchmark {index + 1}: the kernels recorded in the call explain only {case.coverage:.0%} of its "
                "timed time, so the library policy cannot be checked: the work ran where the collector did not see "
                "it (a thread or process that outlives the call?)")  # fmt: skip
    if case.coverage is not None and case.coverage > COVERAGE_POLICY_MAX:
        return (f"benchmark {index + 1}: the kernels recorded in the call took {case.coverage:.1f}x its timed time: "
                "the submission ran other work under the collector than it was timed with")  # fmt: skip
    if case.recorded_ns == 0:
        return f"benchmark {index + 1}: no kernel was recorded in the call, so the library policy cannot be checked"
    return ""


def summary(case: CaseKernels, top: int = 3) -> str:
    """One line of a case's top kernels: 'nvjet_sm90_… (cuBLASLt) 99%, _token (own) 1%; coverage 98%'."""
    total = case.recorded_ns or 0.0
    parts = []
    for row in case.kernels[:top]:
        share = f" {(row.duration_ns or 0.0) / total:.0%}" if total else ""
        mark = " DENIED" if row.denied else ""
        times = f" x{row.launches}" if row.launches > 1 else ""
        parts.append(f"{short_name(row.name, 40)}{times} ({LABELS.get(row.library, row.library)}){share}{mark}")
    hidden = len(case.kernels) - top + (1 if case.other_launches else 0)
    if hidden > 0:
        parts.append(f"+{hidden} more")
    text = ", ".join(parts) or "no kernels recorded"
    if case.coverage is not None:
        text += f"; coverage {case.coverage:.0%}"
    return text


REJECTION = "library_policy"
"""``RunResult.rejection`` of a run its problem's library policy refused."""
CANNOT_CHECK = "this runner cannot check the library policy"


def record(
    launches: list[Launch] | None,
    medians: list[float | None],
    policy: LibraryPolicy | None,
    *,
    note: str = "",
    parts: list[list[Launch]] | None = None,
) -> tuple[list[CaseKernels | None], list[str], str]:
    """Each case's record (None where there is none), the policy's violations in words, and what the record lacks.

    ``launches``: the collector's record of the pass in order, a marker before each case's call (None: nothing was
    recorded, ``note`` says why), or ``parts``: the launches already cut per case. ``medians``: each case's timed
    median (ns)."""
    notes = [note] if note else []
    if launches is None and parts is None:
        why = note or "no kernels were recorded"
        violations = [f"the library policy could not be checked: {why}"] if policy is not None else []
        return [None] * len(medians), violations, note
    launches = launches if launches is not None else [x for part in parts or [] for x in part]
    parts = parts if parts is not None else split_cases(launches, len(medians))
    if parts is None:  # a kernel named like the marker, or a pass that stopped early: one record for the whole
        calls = [x for x in launches if not MARKER.search(x.name)]
        known = [m for m in medians if m]
        whole = case_record(calls, sum(known) if len(known) == len(medians) else None, policy)
        marks = sum(1 for x in launches if MARKER.search(x.name))
        notes.append(f"the record could not be cut into the {len(medians)} case(s) (it has {marks} markers): it is "
                     "shown on the first, for all")  # fmt: skip
        cases: list[CaseKernels | None] = [whole, *([None] * (len(medians) - 1))]
    else:
        cases = [case_record(part, median, policy) for part, median in zip(parts, medians, strict=True)]
    if len(launches) >= MAX_LAUNCHES_RECORDED:
        notes.append(f"the collector stopped at {MAX_LAUNCHES_RECORDED} kernel launches: later ones are not recorded")
    low = [i + 1 for i, c in enumerate(cases) if c and c.coverage is not None and c.coverage < COVERAGE_FLAG]
    if low:
        notes.append(f"the recorded kernels explain under {COVERAGE_FLAG:.0%} of the timed call in benchmark(s) "
                     f"{', '.join(map(str, low))}: part of the time went where the collector did not see")  # fmt: skip
    violations = []
    if policy is not None:
        violations = [v for i, c in enumerate(cases) if c is not None and (v := policy_violation(c, i, policy))]
        if len(launches) >= MAX_LAUNCHES_RECORDED:  # what ran after the cap is unknown, so it may be what is denied
            violations.append(f"the library policy could not be checked: the recorded calls launched "
                              f"{MAX_LAUNCHES_RECORDED} kernels or more, more than the collector records")  # fmt: skip
    return cases, violations, "; ".join(notes)


MAX_LAUNCHES_RECORDED = 256
"""Launches the collector records in one pass at most (``runners.ncu.MAX_KERNELS``)."""


_TORCH_LABEL = re.compile(r"^benchmark (\d{1,3}) .*:$")
_TORCH_TIME = re.compile(r"^(\d+(?:\.\d+)?)(ns|us|ms|s)$")
_TORCH_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
TORCH_CALLS = 3
"""Calls of each case inside the torch profiler's window (runners/submission/serve.py, profile mode)."""


def parse_torch_tables(text: str, cases: int) -> list[list[Launch]] | None:
    """The GPU operations of each case from profile mode's torch profiler tables (``key_averages().table()`` of
    ``TORCH_CALLS`` calls, under a 'benchmark N ...:' line each): the rows the GPU ran and the CPU did not (a
    kernel, a memset), each with its time per call. None when the text has no table for some case. The text is
    the submission process's own: names only, its word, never enough for a library policy."""
    found: dict[int, list[Launch]] = {}
    current: int | None = None
    header: list[str] = []
    gpu = "Self CUDA"
    for line in text[:MAX_TORCH_CHARS].splitlines():
        label = _TORCH_LABEL.match(line.strip())
        if label:
            current, header = int(label.group(1)) - 1, []
            found.setdefault(current, [])
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if "Name" in cells and "Self CPU" in cells:
            header = cells
            gpu = next((c for c in cells if c.startswith("Self ") and c not in ("Self CPU", "Self CPU %")
                        and not c.endswith("%")), "Self CUDA")  # fmt: skip
            continue
        if current is None or not header or len(cells) != len(header) or len(found[current]) >= MAX_ROWS_PER_CASE * 4:
            continue
        row = dict(zip(header, cells, strict=True))
        self_cpu, self_cuda = _torch_ns(row.get("Self CPU", "")), _torch_ns(row.get(gpu, ""))
        calls = row.get("# of Calls", "")
        if self_cpu == 0.0 and self_cuda and calls.isdigit():
            found[current].append(Launch(row["Name"][:MAX_NAME], self_cuda / TORCH_CALLS))
    if sorted(found) != list(range(cases)):
        return None
    return [found[i] for i in range(cases)]


MAX_TORCH_CHARS = 200_000
MAX_NAME = 256


def _torch_ns(cell: str) -> float | None:
    match = _TORCH_TIME.match(cell.strip())
    return float(match.group(1)) * _TORCH_UNITS[match.group(2)] if match else None
