"""The run contract: one JSON request in, one JSON result out.

Every launcher (local subprocess, Modal, GitHub Actions) carries exactly these two models, so a
runner knows nothing about databases, Discord or queues. The contract is versioned: a runner that
receives a request with a newer major version refuses it with an infrastructure error instead of
guessing, and unknown fields are rejected (``extra="forbid"``) so that a field a runner does not
understand never gets silently dropped.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from runners.contract_version import CONTRACT_VERSION as CONTRACT_VERSION  # its history is there
from runners.provenance import CaseKernels, LibraryPolicy, Provenance

MAX_WORLD_SIZE = 16


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")


def _single_rank(world_size: int) -> bool:
    """``world_size`` is left out of a dump where it is 1 (see ``CONTRACT_VERSION``)."""
    return world_size == 1


WorldSize = Annotated[int, Field(ge=1, le=MAX_WORLD_SIZE, exclude_if=_single_rank)]
"""Ranks, one per GPU: 1 to ``MAX_WORLD_SIZE``, omitted from the JSON when 1."""


class Mode(enum.StrEnum):
    TEST = "test"
    BENCHMARK = "benchmark"
    RANKED = "ranked"
    PROFILE = "profile"


class Language(enum.StrEnum):
    PYTHON = "py"
    CUDA = "cu"
    CUTLASS = "cutlass"
    THUNDERKITTENS = "tk"
    HELION = "helion"
    TILELANG = "tilelang"
    CUTE_DSL = "cute-dsl"


@dataclass(frozen=True)
class LanguageInfo:
    """The static facts of a language, readable by every layer. Its behaviour (compile, load, self-test) is one
    runtime class in ``runners/submission/languages.py``; adding a language is one row here and one class there."""

    key: Language
    display: str
    suffixes: tuple[str, ...]
    needs_cuda: bool
    problem_files: tuple[str, ...] = ()
    """Files of the problem the submission is compiled against (besides the reference, which it never sees)."""
    compile_step: bool = False
    """A separate compile before the run (on its own budget, taken out of the board's limit); Python's JIT builds
    (Triton, ``load_inline``) happen inside the run instead."""
    short: str = ""
    """The name in one word, for messages ('takes Python files (.py)')."""

    def takes(self, name: str) -> bool:
        """Whether a file of this name is one of this language's (by its suffix)."""
        return "." in name and "." + name.rsplit(".", 1)[-1].lower() in self.suffixes


LANGUAGES: dict[Language, LanguageInfo] = {
    Language.PYTHON: LanguageInfo(
        Language.PYTHON, "Python (PyTorch, Triton, inline CUDA)", (".py",), needs_cuda=False, short="Python"
    ),
    Language.CUDA: LanguageInfo(
        Language.CUDA,
        "CUDA C++",
        (".cu", ".cuh"),
        needs_cuda=True,
        problem_files=("harness.cu",),
        compile_step=True,
        short="CUDA",
    ),
    Language.CUTLASS: LanguageInfo(
        Language.CUTLASS,
        "CUTLASS / CuTe C++ (CUDA)",
        (".cu", ".cuh"),
        needs_cuda=True,
        problem_files=("harness.cu",),
        compile_step=True,
        short="CUTLASS",
    ),
    Language.THUNDERKITTENS: LanguageInfo(
        Language.THUNDERKITTENS,
        "ThunderKittens (CUDA C++20, Hopper)",
        (".cu", ".cuh"),
        needs_cuda=True,
        problem_files=("harness.cu",),
        compile_step=True,
        short="ThunderKittens",
    ),
    # Python kernel DSLs: a .py file with custom_kernel(data), like Python's, whose runtime checks the DSL's package,
    # reports its version and keeps its compile cache in the job's folder. Helion runs on a CPU in its interpret mode.
    Language.HELION: LanguageInfo(
        Language.HELION, "Helion (Python DSL over Triton)", (".py",), needs_cuda=False, short="Helion"
    ),
    Language.TILELANG: LanguageInfo(
        Language.TILELANG, "TileLang (Python DSL over TVM)", (".py",), needs_cuda=True, short="TileLang"
    ),
    Language.CUTE_DSL: LanguageInfo(
        Language.CUTE_DSL, "CuTe DSL (CUTLASS Python)", (".py",), needs_cuda=True, short="CuTe DSL"
    ),
}


def language_of_file(name: str) -> LanguageInfo | None:
    """The first language a file name's suffix fits, or None (``.cu`` is CUDA's first; CUTLASS and ThunderKittens
    take ``.cu`` too: a leaderboard's own language decides, with :meth:`LanguageInfo.takes`)."""
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return next((info for info in LANGUAGES.values() if suffix in info.suffixes), None)


class DataType(enum.StrEnum):
    """The arithmetic a problem's work is counted in, naming the peak its ``flops`` are bounded by: ``fp32`` on the
    CUDA cores (vector units), the others on the tensor (matrix) cores. The keys of every row of
    ``runners.devices.PEAKS``."""

    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    INT8 = "int8"
    FP4 = "fp4"

    @property
    def unit(self) -> str:
        """Its peak in words, for reports: ``fp32``, ``fp16 tensor``."""
        return self.value if self is DataType.FP32 else f"{self.value} tensor"


class RankingRule(enum.StrEnum):
    """How the per-benchmark medians become one score (lower is better)."""

    LAST = "last"
    MEAN = "mean"
    GEOMEAN = "geom"


class Verdict(enum.StrEnum):
    """The overall outcome of a run. ``ACCEPTED`` is the only passing verdict.

    The order of the members is the display priority: when several things went wrong, the first one
    in this list is what the user is told about (a compile error hides everything after it).
    """

    INFRASTRUCTURE_ERROR = "infrastructure_error"
    REJECTED = "rejected"
    NEEDS_CUDA = "needs_cuda"
    COMPILE_ERROR = "compile_error"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out_of_memory"
    RUNTIME_ERROR = "runtime_error"
    WRONG_ANSWER = "wrong_answer"
    ACCEPTED = "accepted"

    @property
    def passed(self) -> bool:
        return self is Verdict.ACCEPTED

    @property
    def user_fault(self) -> bool:
        """False only for failures that are the platform's, which workers may retry."""
        return self is not Verdict.INFRASTRUCTURE_ERROR

    @property
    def label(self) -> str:
        return _VERDICT_LABELS[self]


_VERDICT_LABELS = {
    Verdict.INFRASTRUCTURE_ERROR: "infrastructure error (not your fault)",
    Verdict.REJECTED: "submission rejected",
    Verdict.NEEDS_CUDA: "this submission needs a CUDA device",
    Verdict.COMPILE_ERROR: "compile error",
    Verdict.TIMEOUT: "time limit exceeded",
    Verdict.OUT_OF_MEMORY: "out of memory",
    Verdict.RUNTIME_ERROR: "runtime error",
    Verdict.WRONG_ANSWER: "wrong answer",
    Verdict.ACCEPTED: "accepted",
}


def worst(verdicts: list[Verdict]) -> Verdict:
    """The verdict to show for several outcomes: the one with the highest display priority."""
    order = list(Verdict)
    return min(verdicts, key=order.index, default=Verdict.ACCEPTED)


class Phase(enum.StrEnum):
    """Progress phases a launcher reports while a run is under way."""

    QUEUED = "queued"
    STARTING = "starting"
    COMPILING = "compiling"
    TESTING = "testing"
    BENCHMARKING = "benchmarking"
    PROFILING = "profiling"
    DONE = "done"


class ProgressEvent(_Model):
    phase: Phase
    detail: str = ""
    waited_s: float | None = Field(
        default=None,
        description="Set on the line the runner sends at least every 10 s while a step goes on with nothing new to "
        "report (a slow or hanging kernel): the seconds that step has run so far. None on every other event.",
    )


class SubmissionFile(_Model):
    name: str = Field(description="The file name the user uploaded, e.g. 'submission.py' or 'kernel.cu'.")
    content: bytes = Field(description="The raw bytes of the file (base64 in JSON).")


class Limits(_Model):
    """Bounds on one run. Every wait in the runner is bounded by one of these."""

    compile_timeout_s: float = Field(
        default=300.0, ge=0, description="Wall time of a separate compile step (native CUDA); 0 where there is none."
    )
    run_timeout_s: float = Field(default=300.0, gt=0, description="Wall time for tests + benchmarks, per run.")
    output_cap_bytes: int = Field(default=16 * 1024, gt=0, description="Kept bytes of stdout and of stderr each.")
    host_memory_mb: int = Field(default=16 * 1024, gt=0, description="Resident memory cap of the submission.")
    max_submission_bytes: int = Field(default=1024 * 1024, gt=0)


class TimingSettings(_Model):
    """How benchmarks are timed; see docs/measurement.md."""

    warmup_ms: float = Field(default=100.0, ge=0)
    warmup_min_calls: int = Field(default=3, ge=0)
    min_samples: int = Field(default=10, ge=2)
    max_samples: int = Field(default=1000, ge=2)
    max_time_s: float = Field(default=2.0, gt=0, description="Per benchmark case: warm-up, timed calls, checks.")
    target_rel_error: float = Field(
        default=0.002, gt=0, description="Stop when the median's standard error / the median falls below this."
    )


class BaselineSpec(_Model):
    """A function of the problem's reference.py timed like a submission, so results can say "1.8x faster than X"."""

    label: str = Field(min_length=1, max_length=40, description="What reports call it, e.g. 'reference'.")
    function: str = Field(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$", description="Its name in reference.py (same signature as ref_kernel)."
    )


REFERENCE_BASELINE = BaselineSpec(label="reference", function="ref_kernel")
BASELINES_BUDGET_S = 90.0
"""The most the baselines of one run may take, all of them (when none is cached): every time limit of a benchmark or
ranked run grows by it (``RunRequest.time_limit_s``), so timing them never eats the submission's time."""
PROVENANCE_RUN_S = 120.0
"""The most the provenance pass (one untimed call per benchmark case under Nsight Compute, after a warm-up call) may
run: its calls are the timed run's, and a run whose pass overruns it gets no record (a policy then rejects it)."""


class RunRequest(_Model):
    version: int = CONTRACT_VERSION
    problem: str = Field(description="The leaderboard/problem name, for logs and reports.")
    lang: Language
    mode: Mode
    files: dict[str, str] = Field(description="The problem's files (reference.py, harness sources), by path.")
    submission: SubmissionFile
    tests: list[dict[str, Any]] = Field(default_factory=list)
    benchmarks: list[dict[str, Any]] = Field(default_factory=list)
    seed: int | None = Field(
        default=None,
        description="The secret that a ranked run's timed inputs are made from (a compare's runs share one); None: "
        "a random one per run (the timed calls of a benchmark run and of a ranked run's public half).",
    )
    device: str = Field(default="cuda", description="Where the harness runs kernels: 'cuda' or 'cpu'.")
    device_name: str = Field(default="", description="The leaderboard's device name (H100, cpu, ...).")
    ranking_by: RankingRule = RankingRule.GEOMEAN
    dtype: DataType = Field(
        default=DataType.FP32, description="The problem's data type: whose peak bounds its flops in the roofline."
    )
    limits: Limits = Field(default_factory=Limits)
    timing: TimingSettings = Field(default_factory=TimingSettings)
    baseline_group: str = Field(
        default="",
        max_length=128,
        exclude=True,
        description="Benchmark-mode runs whose requests name the same group may take the baselines a long-lived runner "
        "timed for an earlier run of the group on the same GPU (KERNELCUP_BASELINE_REUSE_S): the service names the "
        "submitting account, `kernelcup run` its own invocation. '' (default): the run times its own. A hint to a "
        "runner in the same process only: never serialized, so it is in no digest and no remote runner sees it.",
    )
    baselines: list[BaselineSpec] = Field(
        default_factory=lambda: [REFERENCE_BASELINE],
        max_length=4,
        description="What benchmark and ranked runs report a speedup over: the reference, and any the problem names.",
    )
    nonce: str = Field(
        default="",
        max_length=128,
        description="A per-job random value the result must echo, so a result cannot be replayed for another job.",
    )
    world_size: WorldSize = Field(
        default=1,
        description="Ranks (one per GPU) the submission runs as (docs/multigpu.md); omitted from the JSON when 1.",
    )
    library_policy: LibraryPolicy | None = Field(
        default=None,
        description="The problem's library policy (task.yml; runners/provenance.py): a timed GPU run whose denied "
        "kernels take more than a small share of a call is rejected. Omitted from the JSON when None.",
        exclude_if=lambda policy: policy is None,
    )

    def baselines_allowance_s(self) -> float:
        """What timing the baselines may add (``BASELINES_BUDGET_S`` for a benchmark or ranked run that has any)."""
        timed = self.mode in (Mode.BENCHMARK, Mode.RANKED) and bool(self.benchmarks) and bool(self.baselines)
        return BASELINES_BUDGET_S if timed else 0.0

    def provenance_allowance_s(self) -> float:
        """What the provenance pass may add (issue 30: a second, untimed run of a timed run of one rank on a GPU,
        ``runners.entry``): its compile limit and at most ``PROVENANCE_RUN_S`` of running."""
        timed = self.mode in (Mode.BENCHMARK, Mode.RANKED) and bool(self.benchmarks)
        if not timed or self.device == "cpu" or self.world_size != 1:
            return 0.0
        return self.limits.compile_timeout_s + self.provenance_run_s()

    def provenance_run_s(self) -> float:
        """The provenance pass's own run limit: the run's, at most ``PROVENANCE_RUN_S``."""
        return min(self.limits.run_timeout_s, PROVENANCE_RUN_S)

    def time_limit_s(self) -> float:
        """The whole run's limit, which every bound on it starts from: compile, run, the baselines' budget and the
        provenance pass's (red team, 2026-11-28: without it a slow but honest run plus its pass overran the worker's
        bound and was blamed on the platform)."""
        return (self.limits.compile_timeout_s + self.limits.run_timeout_s + self.baselines_allowance_s()
                + self.provenance_allowance_s())  # fmt: skip

    def digest(self) -> str:
        """SHA-256 of the request's canonical JSON: what a result echoes to prove which request it answers."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    @field_validator("version")
    @classmethod
    def _known_version(cls, v: int) -> int:
        if v != CONTRACT_VERSION:
            raise ValueError(f"run contract version {v} is not supported by this runner (it speaks {CONTRACT_VERSION})")
        return v


class TimingStats(_Model):
    """Statistics of one benchmark case's timed calls, all in nanoseconds."""

    samples: int
    median_ns: float
    mean_ns: float
    std_ns: float
    stderr_ns: float
    min_ns: float
    max_ns: float
    p25_ns: float | None = Field(default=None, description="First quartile (results from before it was kept: none).")
    p75_ns: float | None = Field(default=None, description="Third quartile (results from before it was kept: none).")


class TestResult(_Model):
    __test__ = False  # not a pytest class

    index: int
    case: dict[str, Any]
    verdict: Verdict
    message: str = Field(default="", description="Where the output differs, or what went wrong.")
    duration_s: float = 0.0


class BenchmarkResult(_Model):
    index: int
    case: dict[str, Any]
    verdict: Verdict
    message: str = ""
    stats: TimingStats | None = None
    bytes_moved: int | None = Field(default=None, description="Speed of light: the bytes a kernel must move.")
    flops: int | None = Field(default=None, description="Speed of light: the operations a kernel must do.")
    calls_per_sample: int = Field(default=1, description="Calls timed back to back in one window per sample.")
    window_overhead_ns: float | None = Field(
        default=None, description="The calibrated upper bound on what the evaluator's trusted window adds to a call."
    )
    bounded_samples: int = Field(
        default=0, description="Samples where the evaluator's clock, not the submission process's, set the time."
    )
    degraded_samples: int = Field(default=0, description="Samples where custom_kernel synchronised with the GPU.")
    roofline_ns: float | None = Field(
        default=None,
        description="The roofline bound: max(bytes_moved / bandwidth, flops / peak of the problem's data type), in ns "
        "(None: unknown device, CPU, or no work declared).",
    )
    roofline_share: float | None = Field(
        default=None, description="roofline_ns / the median: the share of the device's speed of light reached."
    )
    roofline_limit: str = Field(
        default="", description="What sets the bound: 'memory', or the peak's unit ('fp16 tensor', 'fp32')."
    )
    digest: str = Field(
        default="",
        max_length=2048,
        description="The case's bottleneck in a sentence, from its roofline share and its recorded kernels "
        "(runners/provenance_digest.py): 'memory-bound: 81% of the DRAM bound, headroom <= 19% of the time; ...'.",
        exclude_if=lambda text: not text,
    )
    kernels: CaseKernels | None = Field(
        default=None,
        description="The kernels one call of the case launched, recorded by the provenance pass after timing "
        "(RunResult.provenance says by what): the longest first, with library, share and coverage.",
        exclude_if=lambda kernels: kernels is None,
    )


class SystemInfo(_Model):
    hostname: str = ""
    platform: str = ""
    python: str = ""
    device: str = ""
    gpu_name: str | None = None
    gpu_count: int = 0
    driver: str | None = None
    cuda: str | None = None
    torch: str | None = None
    triton: str | None = None
    nvcc: str | None = None
    headers: str | None = Field(
        default=None,
        description="The library the submission's language compiles against, with its version and where it came "
        "from (e.g. 'CUTLASS 4.2.0 (nvidia-cutlass package)', 'Helion 1.5.1 (helion package)'); None for languages "
        "that need none.",
    )
    sm_clock_start_mhz: int | None = None
    sm_clock_end_mhz: int | None = None
    sandboxed: bool = False
    sandbox_note: str = ""
    ran: bool = Field(default=True, description="False when the file was refused before anything ran.")
    calibration_age_s: float | None = Field(
        default=None,
        description="When the run reused its GPU's clock calibration from an earlier run on that GPU (a long-lived "
        "runner's back-to-back runs): how old it was, in seconds. None: calibrated in this run.",
    )
    world_size: WorldSize = Field(
        default=1,
        description="Ranks the run had, one per GPU; omitted from the JSON when 1.",
    )


class BaselineResult(_Model):
    """A baseline's timing on the same device, inputs and harness as the submission, and the speedup over it."""

    label: str
    function: str
    case_medians_ns: list[float | None] = Field(
        default_factory=list, description="The baseline's median per benchmark case (None: not timed)."
    )
    speedups: list[float | None] = Field(
        default_factory=list, description="Per case: the baseline's median over the submission's (above 1: faster)."
    )
    speedup: float | None = Field(default=None, description="Geometric mean of the cases' speedups.")
    cached: bool = Field(
        default=False,
        description="True when the baseline was not timed in this run: a long-lived runner's benchmark-mode run on "
        "a GPU takes the timing an earlier run on the same GPU made within KERNELCUP_BASELINE_REUSE_S (measured_at "
        "says when); ranked runs time their own. (Results of runners before issue 31: from the runner's cache.)",
    )
    measured_at: datetime | None = Field(default=None, description="When the baseline was timed (UTC).")
    note: str = Field(default="", description="Why there is no speedup, when there is none.")


class RooflinePeaks(_Model):
    """The peaks a result's roofline bounds were computed with."""

    device: str = Field(description="The row of the peaks table (runners/devices.py) the GPU matched, e.g. 'H100'.")
    dtype: DataType
    memory_bytes_per_s: float
    flops_per_s: float | None = Field(description="The peak for dtype; None where the device has none (memory only).")
    source: str = Field(description="Where the figures come from: a datasheet, or the operator's override.")


class StallReason(_Model):
    """One warp stall reason of a kernel, as Nsight Compute measured it."""

    reason: str = Field(max_length=64, description="ncu's name for it, e.g. 'long_scoreboard', 'barrier', 'wait'.")
    value: float = Field(description="Its share: cycles per issued instruction, or PC samples (see ``metric``).")
    metric: str = Field(
        max_length=128,
        description="The ncu metric the value is, e.g. "
        "'smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio'.",
    )


class KernelMetrics(_Model):
    """What Nsight Compute measured of one kernel launch in profile mode. Any field ncu did not report is None."""

    name: str = Field(max_length=512, description="The kernel's (demangled) name.")
    duration_ns: float | None = Field(default=None, description="gpu__time_duration.sum, in nanoseconds.")
    grid: str | None = Field(default=None, max_length=64, description="Grid dimensions, e.g. '(128, 1, 1)'.")
    block: str | None = Field(default=None, max_length=64, description="Block dimensions, e.g. '(256, 1, 1)'.")
    registers_per_thread: int | None = None
    shared_memory_bytes: int | None = Field(default=None, description="Static plus dynamic shared memory per block.")
    achieved_occupancy_pct: float | None = Field(default=None, description="Active warps, % of the SM's peak.")
    dram_throughput_pct: float | None = Field(default=None, description="DRAM throughput, % of peak.")
    sm_throughput_pct: float | None = Field(default=None, description="SM (compute) throughput, % of peak.")
    l1_hit_rate_pct: float | None = None
    l2_hit_rate_pct: float | None = None
    tensor_pipe_pct: float | None = Field(default=None, description="The busiest tensor pipe, % of peak active.")
    top_stalls: list[StallReason] = Field(default_factory=list, max_length=3, description="Top three stall reasons.")


SPEED_OF_LIGHT = "speed_of_light"
"""``RunResult.rejection`` of a score faster than the device can possibly do the work (never ranked)."""


class RunResult(_Model):
    version: int = CONTRACT_VERSION
    verdict: Verdict
    message: str = Field(default="", description="One or two sentences for the user about the verdict.")
    mode: Mode
    tests: list[TestResult] = Field(default_factory=list)
    benchmarks: list[BenchmarkResult] = Field(default_factory=list)
    score_ns: float | None = Field(default=None, description="The ranking score (lower is better), if timed.")
    roofline_share: float | None = Field(
        default=None, description="The geometric mean of the benchmarks' roofline shares (None unless all are known)."
    )
    roofline: RooflinePeaks | None = Field(default=None, description="The peaks the roofline bounds used.")
    compile_output: str = ""
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    profile: str | None = Field(default=None, description="Nsight Compute or torch profiler summary, profile mode.")
    baselines: list[BaselineResult] = Field(
        default_factory=list, description="Speedups over the reference and the problem's other baselines (timed modes)."
    )
    kernel_metrics: list[KernelMetrics] = Field(
        default_factory=list, description="Profile mode under Nsight Compute: its metrics of each kernel launch."
    )
    provenance: Provenance | None = Field(
        default=None,
        description="Timed GPU runs: what recorded each case's kernels (benchmarks[i].kernels), the problem's library "
        "policy, and what the record lacks.",
        exclude_if=lambda provenance: provenance is None,
    )
    ncu_report: bytes | None = Field(
        default=None,
        description="Profile mode: Nsight Compute's report (.ncu-rep) to open in its GUI, when it is under the "
        "runner's size cap (base64 in JSON).",
    )
    system: SystemInfo = Field(default_factory=SystemInfo)
    wall_time_s: float = 0.0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    phase_times: dict[str, float] = Field(
        default_factory=dict,
        description="Seconds from the run's start to the first report of each phase, and to the end of each benchmark "
        "case ('benchmark 1', ...): where the time went.",
    )
    request_sha256: str = Field(default="", description="RunRequest.digest() of the request this result answers.")
    nonce: str = Field(default="", description="The request's nonce, echoed.")
    rejection: str = Field(
        default="",
        description="Why a REJECTED verdict, when an admin should see it: 'speed_of_light' (SPEED_OF_LIGHT) for a "
        "score faster than the device's datasheet peaks allow.",
    )
    fault: Literal["runner", "problem"] | None = Field(
        default=None,
        description="Whose an INFRASTRUCTURE_ERROR is: the runner's (a worker retries the job elsewhere) or the "
        "problem's own code (every attempt would fail the same way: the job fails at once, and no worker is blamed). "
        "None for every other verdict, and where the runner could not tell.",
    )

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @classmethod
    def infrastructure_error(cls, mode: Mode, message: str, **kwargs: Any) -> RunResult:
        return cls(verdict=Verdict.INFRASTRUCTURE_ERROR, mode=mode, message=message, **kwargs)

    def mismatch(self, request: RunRequest, *, allow_unsandboxed: bool = False) -> str | None:
        """Why this result cannot be stored as ``request``'s (None when it can): it must echo the request's SHA-256
        and nonce, match its mode and its numbers of tests and benchmarks, and have been sandboxed unless the route
        allows otherwise. A result is otherwise trusted on its schema alone; this binds it to the job."""
        if self.request_sha256 != request.digest() or self.nonce != request.nonce:
            return "the runner's result does not answer this job's request (its hash or nonce differs)"
        if self.mode is not request.mode:
            return f"the runner answered a {self.mode.value} run for a {request.mode.value} request"
        if len(self.tests) > len(request.tests) or len(self.benchmarks) > len(request.benchmarks):
            return "the runner's result has more tests or benchmarks than the request"
        timed = request.mode in (Mode.BENCHMARK, Mode.RANKED)
        if self.passed and (
            (request.mode is not Mode.BENCHMARK and len(self.tests) != len(request.tests))
            or (timed and len(self.benchmarks) != len(request.benchmarks))
        ):
            return "the runner's result is accepted with tests or benchmarks missing"
        # "Nothing ran" excuses the sandbox only for a result that shows nothing run (red team, 2026-11-25: an
        # accepted result with timed benchmarks and ran=False was stored and ranked on a route that must sandbox).
        ran = self.system.ran or self.passed or bool(self.tests) or bool(self.benchmarks)
        if ran and not self.system.sandboxed and not allow_unsandboxed:
            why = f" ({self.system.sandbox_note})" if self.system.sandbox_note else ""
            return f"the runner ran the submission without its sandbox{why}; this route must sandbox"
        return None


class CaseComparison(_Model):
    """One benchmark case of a comparison: each file's median over the rounds and their paired ratio."""

    index: int
    case: dict[str, Any]
    median_a_ns: float = Field(description="Median over the rounds of the first file's per-run medians.")
    median_b_ns: float
    ratio: float = Field(description="Geometric mean over the rounds of A's median / B's (below 1: A is faster).")
    ci_low: float = Field(description="95% paired t interval of the ratio, low end.")
    ci_high: float


class KernelSide(_Model):
    """One file's kernel in a comparison's metric table: Nsight Compute's metrics of its launches in one call of the
    case (launches of one name folded: times summed, percentages weighted by time; ``runners.compare_profile``)."""

    name: str = Field(max_length=128, description="The kernel's name, without 'void ' and its parameter list.")
    launches: int = Field(default=1, description="Launches of this name in the profiled call.")
    duration_ns: float | None = Field(default=None, description="Their GPU time (gpu__time_duration), summed.")
    share: float | None = Field(default=None, description="Of the GPU time of the file's profiled call, 0 to 1.")
    dram_pct: float | None = Field(default=None, description="DRAM throughput, % of peak.")
    sm_pct: float | None = Field(default=None, description="SM (compute) throughput, % of peak.")
    occupancy_pct: float | None = Field(default=None, description="Achieved occupancy, % of the SM's warps.")
    registers: int | None = Field(default=None, description="Registers per thread (the most of the launches).")
    top_stall: str | None = Field(default=None, max_length=64, description="The longest launch's top stall reason.")


class KernelDelta(_Model):
    """One row of a case's metric table: A's kernel beside B's, and A minus B of each metric."""

    rank: int = Field(description="1: the kernels taking the most GPU time, A's rank where both sides have one.")
    matched_by: Literal["name", "rank", "none"] = Field(
        description="'name': the same kernel name on both sides; 'rank': the kernels of the same rank by GPU time "
        "after the name matches; 'none': only one side has a kernel there."
    )
    a: KernelSide | None = None
    b: KernelSide | None = None
    duration_ratio: float | None = Field(default=None, description="A's GPU time over B's (below 1: A's is shorter).")
    dram_pct: float | None = Field(default=None, description="A minus B, percentage points.")
    sm_pct: float | None = Field(default=None, description="A minus B, percentage points.")
    occupancy_pct: float | None = Field(default=None, description="A minus B, percentage points.")
    registers: int | None = Field(default=None, description="A minus B, registers per thread.")
    stall_changed: bool = Field(default=False, description="Whether the two kernels' top stall reasons differ.")


class CaseMetrics(_Model):
    """One benchmark case of a comparison's metrics: the dominant kernels of each file matched, side by side."""

    index: int
    case: dict[str, Any]
    kernels: list[KernelDelta] = Field(default_factory=list, max_length=8)
    note: str = Field(default="", max_length=600, description="Why a side has no metrics for this case, if so.")


class ComparisonMetrics(_Model):
    """``--compare --profile``: after the ratio, one profile-mode run of each file per case under Nsight Compute."""

    collector: Literal["ncu", "none"] = Field(
        description="'ncu': the table is Nsight Compute's; 'none': this runner could not profile (``note``)."
    )
    note: str = Field(default="", max_length=600, description="What is missing, and why (no ncu, a run failed).")
    cases: list[CaseMetrics] = Field(default_factory=list)


class Comparison(_Model):
    """Two submissions' benchmark runs, interleaved on one machine, compared (``runners.compare``)."""

    a: str = Field(description="The first file's name.")
    b: str
    rounds: int = Field(description="Rounds completed (one benchmark run of each file per round).")
    verdict: Verdict = Field(description="Accepted when every run was; else the first failed run's verdict.")
    message: str = ""
    cases: list[CaseComparison] = Field(default_factory=list)
    ratio: float | None = Field(default=None, description="Paired ratio of the runs' scores, A over B.")
    ci_low: float | None = None
    ci_high: float | None = None
    metrics: ComparisonMetrics | None = Field(
        default=None,
        description="With --profile (the API's profile=true): per case, the dominant kernels' Nsight Compute metrics "
        "of each file side by side and their deltas (runners.compare_profile). Omitted without it.",
        exclude_if=lambda metrics: metrics is None,
    )
