"""Profile mode under Nsight Compute: whether it can run here, the command that wraps the submission process, and,
after the run, the report read back by trusted code.

ncu runs inside the submission's sandbox (it wraps ``python -m runners.submission``) and writes its report into
the submission's job folder, so nothing leaves the sandbox. The report is therefore the submission's to tamper
with: the entry opens it without following links, copies it into a folder of its own, and reads it with
``ncu --import ... --csv --page raw`` in a second sandbox (no GPU, no network, capped output), then parses the CSV
itself (:mod:`runners.ncu`). Where ncu is missing, switched off or not permitted to read the GPU's counters, profile
mode falls back to the torch profiler's table and says why.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from runners.contract import KernelMetrics, Mode, RunRequest
from runners.entry.admission import read_capped
from runners.ncu import MAX_CSV_CHARS, NcuCsvError, parse_raw_csv
from runners.provenance import MAX_LAUNCHES_RECORDED
from runners.sandbox import SandboxSpec, run_sandboxed
from runners.settings import RunnerSettings

NCU_LOG = "ncu.log"
NCU_REPORT = "profile.ncu-rep"
NVIDIA_PARAMS = Path("/proc/driver/nvidia/params")
SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "MemoryWorkloadAnalysis", "ComputeWorkloadAnalysis",
            "WarpStateStats")  # fmt: skip
"""What ncu collects: the sections that hold every field of ``KernelMetrics`` (sections, not a list of metric
names, because ncu refuses a metric the GPU does not have, and each section knows its own per architecture)."""
_MAX_IMPORT_BYTES = 1024 * 1024 * 1024
_LOG_CHARS = 16_000
PERMISSION_HELP = (
    "an administrator can allow it with the nvidia driver option NVreg_RestrictProfilingToAdminUsers=0 "
    "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)


@dataclass(frozen=True)
class ProfilerChoice:
    """Which profiler wraps profile mode, the command prefix for the submission process, and why not ncu."""

    kind: str = "torch"
    prefix: list[str] = field(default_factory=list)
    ncu: str | None = None
    note: str = ""


def choose_profiler(
    settings: RunnerSettings, request: RunRequest, sub_dir: Path, *, params: Path = NVIDIA_PARAMS
) -> ProfilerChoice:
    """Nsight Compute in profile mode on a GPU where it is installed, switched on and permitted; else the torch
    profiler, with a note that says why (none outside profile mode or on the CPU, where ncu has nothing to do)."""
    if request.mode is not Mode.PROFILE or request.device == "cpu":
        return ProfilerChoice()
    fallback = " The torch profiler's table instead:"
    if not settings.ncu:
        return ProfilerChoice(note="Nsight Compute is switched off on this runner (KERNELCUP_NCU=false)." + fallback)
    ncu = shutil.which("ncu")
    if ncu is None:
        return ProfilerChoice(note="Nsight Compute (ncu) is not installed on this runner." + fallback)
    denied = counters_denied(params)
    if denied:
        return ProfilerChoice(note=f"Nsight Compute is not permitted on this runner: {denied}." + fallback)
    from runners.submission.serve import NVTX_RANGE

    sections = [arg for name in SECTIONS for arg in ("--section", name)]
    prefix = [
        ncu, "--target-processes", "all", "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/", "--clock-control", "none",
        *sections, "--launch-count", str(settings.ncu_max_kernels), "--export", str(sub_dir / NCU_REPORT),
        "--force-overwrite", "--log-file", str(sub_dir / NCU_LOG),
    ]  # fmt: skip
    return ProfilerChoice("ncu", prefix, ncu)


PROVENANCE_METRICS = "gpu__time_duration.sum,launch__grid_size,launch__block_size"
"""What the provenance pass asks ncu for: one pass per kernel, no replay (what a kernel is, and how long it ran)."""


def cannot_record_kernels(settings: RunnerSettings, *, params: Path = NVIDIA_PARAMS) -> str:
    """Why this runner cannot record the kernels of a GPU call with Nsight Compute ('' when it can)."""
    if settings.provenance == "off":
        return "the provenance pass is switched off on this runner (KERNELCUP_PROVENANCE=off)"
    if not settings.ncu:
        return "Nsight Compute is switched off on this runner (KERNELCUP_NCU=false)"
    if shutil.which("ncu") is None:
        return "Nsight Compute (ncu) is not installed on this runner"
    return counters_denied(params)


def provenance_profiler(settings: RunnerSettings, sub_dir: Path, *, params: Path = NVIDIA_PARAMS) -> ProfilerChoice:
    """The ncu prefix of the provenance pass (``runners.provenance``): every kernel launched between the submission
    side's cudaProfilerStart and cudaProfilerStop, from any thread or stream, with its duration, grid and block, at
    the GPU's own clocks; or the torch profiler's choice with a note saying why not."""
    why = cannot_record_kernels(settings, params=params)
    ncu = shutil.which("ncu")
    if why or ncu is None:
        return ProfilerChoice(note=why or "Nsight Compute (ncu) is not installed on this runner")
    prefix = [
        ncu, "--target-processes", "all", "--profile-from-start", "off", "--clock-control", "none",
        "--metrics", PROVENANCE_METRICS, "--launch-count", str(MAX_LAUNCHES_RECORDED),
        "--export", str(sub_dir / NCU_REPORT), "--force-overwrite", "--log-file", str(sub_dir / NCU_LOG),
    ]  # fmt: skip
    return ProfilerChoice("ncu", prefix, ncu)


def counters_denied(params: Path = NVIDIA_PARAMS, euid: int | None = None) -> str:
    """Why ncu cannot read the GPU's performance counters here ('' when it can, or when the driver does not say):
    the driver restricts them to administrators (``RmProfilingAdminOnly: 1``) and this process is not root."""
    text = read_capped(params, 64 * 1024) or ""
    restricted = any(line.replace(" ", "") == "RmProfilingAdminOnly:1" for line in text.splitlines())
    if restricted and (os.geteuid() if euid is None else euid) != 0:
        return f"the GPU's performance counters are restricted to administrators (ERR_NVGPUCTRPERM); {PERMISSION_HELP}"
    return ""


@dataclass
class NcuOutcome:
    metrics: list[KernelMetrics] = field(default_factory=list)
    report: bytes | None = None
    notes: list[str] = field(default_factory=list)


def collect(
    ncu: str,
    sub_dir: Path,
    work: Path,
    *,
    max_report_bytes: int,
    require_sandbox: bool,
    profiled: bool,
    demangled: bool = False,
) -> NcuOutcome:
    """After the run: ncu's report from the submission's folder, its metrics read by a sandboxed ``ncu --import``
    and parsed here, and the report itself when it is at most ``max_report_bytes``. ``profiled``: the evaluator
    reached profile mode (else a missing report is no news: the run failed before it). ``demangled``: kernels by
    their whole demangled names (``void at::native::reduce_kernel<...>(...)``, what the provenance pass classifies),
    else by ncu's default, the function's name alone."""
    out = NcuOutcome()
    log = read_capped(sub_dir / NCU_LOG, _LOG_CHARS) or ""
    if "ERR_NVGPUCTRPERM" in log:
        out.notes.append(f"Nsight Compute was not permitted to read the GPU's counters (ERR_NVGPUCTRPERM); "
                         f"{PERMISSION_HELP}. No kernel metrics.")  # fmt: skip
        return out
    work.mkdir(parents=True, exist_ok=True)
    copy = work / NCU_REPORT
    size = _copy_regular(sub_dir / NCU_REPORT, copy, _MAX_IMPORT_BYTES)
    if size is None:
        if profiled:
            errors = [line for line in log.splitlines() if line.startswith("==ERROR==")][-5:]
            # (ncu's log lies in the submission's folder, which the submission can write: quoted as such)
            why = ("; the log in the submission's folder says: " + " ".join(errors)[:1000]) if errors else ""
            out.notes.append(f"Nsight Compute wrote no report{why}.")
        return out
    if size <= max_report_bytes:
        out.report = copy.read_bytes()
    else:
        out.notes.append(
            f"The Nsight Compute report ({size / 2**20:.1f} MiB) is over this runner's cap of "
            f"{max_report_bytes / 2**20:.0f} MiB (KERNELCUP_NCU_REPORT_MAX_MB), so it is not attached."
        )
    csv_text, problem = import_csv(ncu, work, require_sandbox=require_sandbox, demangled=demangled)
    if problem:
        out.notes.append(problem)
        return out
    try:
        out.metrics = parse_raw_csv(csv_text)
    except NcuCsvError as exc:
        out.notes.append(f"Nsight Compute's report could not be read: {exc}.")
    return out


def import_csv(ncu: str, work: Path, *, require_sandbox: bool, demangled: bool = False) -> tuple[str, str]:
    """``ncu --import`` of ``work/profile.ncu-rep`` as the raw CSV page, in a sandbox without the GPU: (the CSV,
    '') or ('', what went wrong)."""
    spec = SandboxSpec(
        argv=[ncu, "--import", NCU_REPORT, "--csv", "--page", "raw", "--print-units", "base",
              *(["--print-kernel-base", "demangled"] if demangled else [])],
        workdir=work,
        env={},
        timeout_s=120.0,
        output_cap_bytes=MAX_CSV_CHARS,
        memory_mb=4096,
        ro_paths=tuple(dict.fromkeys((Path(ncu).parent, Path(ncu).resolve().parent))),  # where ncu lives
        allow_gpu=False,
        require_sandbox=require_sandbox,
    )
    outcome = run_sandboxed(spec)
    if not outcome.ok:
        why = outcome.killed_reason or f"exit status {outcome.returncode}"
        tail = (outcome.stderr or outcome.stdout).strip()[-500:]
        return "", f"Reading the Nsight Compute report failed ({why}): {tail}"
    return outcome.stdout, ""


def _copy_regular(src: Path, dst: Path, limit: int) -> int | None:
    """Copy a regular file the submission could have touched, never through a link; its size, or None when it is
    missing, not a regular file, or over ``limit``."""
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        copied = 0
        with open(dst, "wb") as writer:
            while copied < st.st_size and (chunk := os.read(fd, min(1 << 20, st.st_size - copied))):
                writer.write(chunk)
                copied += len(chunk)
        return copied
    finally:
        os.close(fd)
