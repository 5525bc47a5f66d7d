"""Settings of a runner (the machine that evaluates submissions), read from ``KERNELCUP_*`` variables."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from runners.devices import DevicePeaks, check_overrides, with_overrides


class RunnerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELCUP_", extra="ignore")

    allow_unsandboxed: bool = Field(
        default=False,
        description=(
            "Let the local launcher (what a worker uses) run submissions where bubblewrap cannot sandbox them. "
            "Off by default: a worker serving other people's submissions refuses unsandboxed runs. `kernelcup run` "
            "(your own code) and `python -m runners.entry` on a dedicated remote machine never require the sandbox; "
            "either way the result's system info says whether the run was sandboxed."
        ),
    )
    job_root: Path | None = Field(default=None, description="Where job folders are made (default: the system temp).")
    keep_job_dirs: bool = Field(default=False, description="Keep job folders after a run, for debugging.")
    python: str | None = Field(default=None, description="The interpreter of the evaluation process (default: ours).")
    ncu: bool = Field(default=True, description="Use Nsight Compute for profile mode where `ncu` is on PATH.")
    ncu_report_max_mb: int = Field(
        default=4,
        ge=0,
        le=4,
        description="Largest Nsight Compute report (.ncu-rep) a profile run's result carries, in MiB (a normal one "
        "is about 0.3 MiB); a larger one is left out (its metrics still come back) with a note saying so. 0: never "
        "attach it. docs/profiling.md lists every bound on a profile result.",
    )
    startup_timeout_s: float = Field(
        default=90.0,
        ge=5,
        le=600,
        description="The platform's own start-up limit for one run (the sandboxes, the interpreters, PyTorch's import, "
        "the clock's calibration), before the submission's code starts; the submission's time limit counts from "
        "then. A start that does not finish within it is the runner being overloaded: an infrastructure error, "
        "retried, never the submission's timeout. Keep it below KERNELCUP_WORKER_LAUNCH_MARGIN_S (120).",
    )
    ncu_max_kernels: int = Field(
        default=64, ge=1, le=1000, description="Kernel launches Nsight Compute profiles at most in one profile run."
    )
    cache_dir: Path | None = Field(
        default=None,
        description="Where the runner keeps what it builds once per machine (the submission allocator); default: "
        "the user cache directory (~/.cache/kernelcup/runner on Linux).",
    )
    gpu_heap_mb: int | None = Field(
        default=None,
        gt=0,
        description="GPU memory for the submission process's allocations (default: 32 GiB, at most half the free).",
    )

    cutlass_include: Path | None = Field(
        default=None,
        description="The CUTLASS include folder (holding cutlass/ and cute/) the CUTLASS language compiles against "
        "(its tools/util/include beside it is added when there). Default: the headers of the nvidia-cutlass package "
        "where it is installed; neither: this runner does not offer CUTLASS.",
    )
    thunderkittens_include: Path | None = Field(
        default=None,
        description="The ThunderKittens include folder (holding kittens.cuh; its prototype/ beside it is added when "
        "there) the ThunderKittens language compiles against. Unset: this runner does not offer ThunderKittens.",
    )

    max_batch_calls: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Most calls timed back to back in one trusted window. 1 (the default) times every call in a "
        "window of its own, the most accurate; more makes what a rewritten reading could hide a smaller share of "
        "µs-scale kernels, at some accuracy (docs/measurement.md has both measured).",
    )

    provenance: Literal["always", "ranked", "policy", "off"] = Field(
        default="ranked",
        description="Which timed GPU runs get the provenance pass (issue 30: a second, untimed run under "
        "Nsight Compute that records which kernels each case launched; 7-10 s a run on the lent H200): `always`; "
        "`ranked` (the default: ranked runs, and every timed run of a problem with a library_policy); `policy` "
        "(only those); `off` (none: a problem with a policy is then refused by this runner).",
    )

    time_baselines: bool = Field(
        default=True,
        description="Time the reference (and the problem's other baselines) like the submission in every benchmark "
        "and ranked run, before its file loads, to report speedups (never against a time of another run; the "
        "reference's times are kept in the cache folder to bound the steps of later runs that do not time it).",
    )

    device_peaks: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Corrections to the datasheet peaks the roofline share uses (runners/devices.py), as JSON: "
        '`{"H100": {"memory": 3.35e12, "fp16": 989e12}}`: per device, `memory` in bytes/s and any data type '
        "(fp32, tf32, fp16, bf16, fp8, int8, fp4) in FLOP/s; a device not in the table is added (it needs "
        "`memory`). The same figures decide which times are too fast to be real.",
    )

    @field_validator("device_peaks")
    @classmethod
    def _peaks(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        check_overrides(value)  # a ValueError names the device, the key and what is allowed
        return value

    def peaks_table(self) -> tuple[DevicePeaks, ...]:
        """The device peaks this runner computes roofline bounds with: the datasheets, with the operator's
        corrections."""
        return with_overrides(self.device_peaks)

    prestart: bool = Field(
        default=True,
        description="Long-lived runners (a worker's local launcher, `kernelcup run` with several files) keep the "
        "next run's processes started per GPU, PyTorch imported, waiting in fresh sandboxes for their job "
        "(docs/measurement.md, 'Pre-started processes'). `python -m runners.entry` (one run, then gone) never does.",
    )
    prestart_idle_s: float = Field(
        default=300.0,
        ge=10,
        le=3600,
        description="Seconds a pre-started set waits for a job before it is killed (the next run then starts cold).",
    )
    prestart_sets: int | None = Field(
        default=None,
        ge=1,
        le=4,
        description="Pre-started sets kept waiting per GPU (default: 2 on a machine of 8 or more cores, else 1). With "
        "two, the set a run takes was started two runs earlier, so back-to-back short runs find PyTorch imported.",
    )

    calibration_reuse_s: float = Field(
        default=60.0,
        ge=0,
        le=3600,
        description="A long-lived runner hands a GPU's clock calibration (taken by a run before its submission "
        "loaded) to the next runs on that GPU for this many seconds, instead of timing the echo again (0.5 s a "
        "run); 0: every run calibrates. The one-shot entry always calibrates (docs/measurement.md).",
    )

    baseline_reuse_s: float = Field(
        default=60.0,
        ge=0,
        le=3600,
        description="A long-lived runner hands the baselines' timings (the reference's and the problem's own, timed "
        "by a run on a GPU before its submission loaded) to the next benchmark-mode runs of the same problem and the "
        "same account (the request's baseline_group) on that GPU for this many seconds from their timing, under the "
        "same calibration, instead of timing them again (about 1 s a run on the H200); such a result's baselines say "
        "`cached` and when they were timed. Ranked runs always time their own; 0: every run does "
        "(docs/measurement.md, 'Baselines reused').",
    )

    def prestart_depth(self) -> int:
        """How many sets wait per GPU: the setting, else 2 where the cores allow both imports beside a run."""
        if self.prestart_sets is not None:
            return self.prestart_sets
        return 2 if (os.cpu_count() or 1) >= 8 else 1

    baseline_cache_dir: Path | None = Field(
        default=None,
        description="Where the baselines' medians are kept between runs, to bound the steps of later runs that do not "
        "time the reference (default: a `baselines` folder in the cache folder; speedups use only the run's own). The "
        "Modal app points it at a Volume its single-use containers share.",
    )

    gpu_lock_dir: Path | None = Field(
        default=Path(tempfile.gettempdir()) / "kernelcup-gpus",
        description="Where each GPU's machine-wide lock lives (a flock per GPU while a run has it), so that two "
        "worker processes on one machine never time two runs on one GPU. Shared by every kernelcup process there.",
    )
    baseline_cache_max_age_s: float = Field(
        default=7 * 24 * 3600.0,
        gt=0,
        description="A cached baseline median older than this bounds nothing (default 7 days).",
    )

    def baseline_cache_path(self) -> Path:
        return self.baseline_cache_dir or self.cache_path() / "baselines"

    def cache_path(self) -> Path:
        if self.cache_dir is not None:
            return self.cache_dir
        import platformdirs

        return Path(platformdirs.user_cache_dir("kernelcup")) / "runner"
