"""Every message between the runner's processes, as typed models: a malformed frame is a protocol error, never a
``KeyError`` deep in a loop.

Two conversations (docs/anti-cheat.md draws them):

- **evaluator <-> submission process** (a Unix socket, one message per datagram, file descriptors of shared memory
  alongside): the trusted evaluator (``runners.oracle``) tells the submission process (``runners.submission``) to
  map memory, load the file and call ``custom_kernel`` on inputs it placed in shared memory; the submission process
  answers where its output is. Nothing it says is a measurement the evaluator takes on trust.
- **evaluator -> entry** (a pipe only the evaluator holds): the evaluator's report, read by the trusted parent
  (``runners.entry``), which enforces the order and the caps and decides the verdict.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from runners.contract import Verdict

MAX_MESSAGE_BYTES = 256 * 1024
MAX_VALUE_NODES = 2048
MAX_VALUE_DEPTH = 8
MAX_TEXT = 64 * 1024
DTYPES = frozenset(
    {
        "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
        "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool",
        "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    }
)  # fmt: skip


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ---- values: what ``generate_input`` made and what ``custom_kernel`` returned, as references into shared memory --
class TensorRef(_Msg):
    t: Literal["tensor"] = "tensor"
    arena: str = Field(max_length=32)
    offset: int = Field(ge=0)
    dtype: str
    shape: list[Annotated[int, Field(ge=0)]] = Field(max_length=16)
    stride: list[Annotated[int, Field(ge=0)]] = Field(max_length=16)

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, v: str) -> str:
        if v not in DTYPES:
            raise ValueError(f"unsupported tensor dtype {v!r}")
        return v


class Scalar(_Msg):
    t: Literal["scalar"] = "scalar"
    v: int | float | bool | Annotated[str, Field(max_length=4096)] | None


class Seq(_Msg):
    t: Literal["tuple", "list"]
    items: list[Value] = Field(max_length=MAX_VALUE_NODES)


class Mapping(_Msg):
    t: Literal["dict"] = "dict"
    items: dict[Annotated[str, Field(max_length=256)], Value]


Value = Annotated[TensorRef | Scalar | Seq | Mapping, Field(discriminator="t")]
Seq.model_rebuild()
Mapping.model_rebuild()


def check_value_size(value: Value) -> None:
    """Bound the size of a value tree (a hostile process could send a deep or huge one)."""
    count = 0

    def walk(v: Value, depth: int) -> None:
        nonlocal count
        count += 1
        if count > MAX_VALUE_NODES or depth > MAX_VALUE_DEPTH:
            raise ValueError(f"a value with more than {MAX_VALUE_NODES} parts or {MAX_VALUE_DEPTH} levels")
        if isinstance(v, Seq):
            for item in v.items:
                walk(item, depth + 1)
        elif isinstance(v, Mapping):
            for item in v.items.values():
                walk(item, depth + 1)
        elif isinstance(v, Scalar) and isinstance(v.v, float) and not math.isfinite(v.v):
            return

    walk(value, 0)


# ---- evaluator -> submission process -----------------------------------------------------------------------------
class ArenaSpec(_Msg):
    name: str = Field(max_length=32)
    kind: Literal["cuda", "host"]
    size: int = Field(gt=0)


class Setup(_Msg):
    """Map these arenas (their file descriptors come with the message, in order); ``heap`` becomes the CUDA
    allocator of the process (``allocator`` is the path of the shared library that implements it)."""

    t: Literal["setup"] = "setup"
    device: Literal["cuda", "cpu"]
    arenas: list[ArenaSpec] = Field(max_length=8)
    heap: str | None = None
    ctrl: str | None = None
    allocator: str | None = None
    host_out: str | None = None


class AddArena(_Msg):
    t: Literal["add_arena"] = "add_arena"
    arena: ArenaSpec


class Load(_Msg):
    t: Literal["load"] = "load"
    lang: str = Field(max_length=32)
    path: str = Field(max_length=256)
    display_name: str = Field(max_length=256)


MAX_BATCH = 256


class Call(_Msg):
    """Call ``custom_kernel`` once on each of ``data``, back to back (a batch of one or more calls). On CUDA: queue
    the calls behind the wait for ``go >= k`` and write ``done = k`` after them, then answer :class:`Enqueued` at
    once; on the CPU: answer :class:`Prepared`, then run them on :class:`Go`."""

    t: Literal["call"] = "call"
    k: int = Field(ge=1, lt=2**31)
    data: list[Value] = Field(min_length=1, max_length=MAX_BATCH)
    timed: bool = True


class Go(_Msg):
    """CPU: run call ``k`` now. ``arena``: the call's inputs, in a memfd made for this call alone, whose descriptor
    comes with this message: the submission process holds no byte of a call's inputs before its window opens."""

    t: Literal["go"] = "go"
    k: int = Field(ge=1, lt=2**31)
    arena: ArenaSpec | None = None


class Fetch(_Msg):
    """Report the submission process's own reading of call ``k`` (CUDA events)."""

    t: Literal["fetch"] = "fetch"
    k: int = Field(ge=1, lt=2**31)


class Profile(_Msg):
    """Profile-mode call: run ``custom_kernel`` on ``data`` under the profiler and send back its table."""

    t: Literal["profile"] = "profile"
    k: int = Field(ge=1, lt=2**31)
    data: Value
    label: str = Field(default="", max_length=256)
    nvtx: bool = False
    recorded: Value | None = None
    """Under Nsight Compute: the inputs of the recorded call, fresh ones (``data`` serves its warm-up call); its
    output comes back in :class:`ProfileText` and is checked like a timed call's (the provenance pass)."""


class Quit(_Msg):
    t: Literal["quit"] = "quit"


class Check(_Msg):
    """Call ``k`` has kept the evaluator waiting for its GPU work: say whether this process's CUDA context has failed
    (a kernel that faulted leaves it broken, and the "done" behind that kernel never comes)."""

    t: Literal["check"] = "check"
    k: int = Field(ge=1, lt=2**31)


ToSubmission = Annotated[
    Setup | AddArena | Load | Call | Go | Fetch | Check | Profile | Quit, Field(discriminator="t")
]
TO_SUBMISSION: TypeAdapter[Any] = TypeAdapter(ToSubmission)


# ---- submission process -> evaluator -----------------------------------------------------------------------------
class Hello(_Msg):
    """The submission process is up (interpreter, sandbox, PyTorch): from here on, its failures are its own."""

    t: Literal["hello"] = "hello"
    torch: str = Field(default="", max_length=64)


class Ready(_Msg):
    t: Literal["ready"] = "ready"


class Loaded(_Msg):
    t: Literal["loaded"] = "loaded"
    compile_output: str = Field(default="", max_length=MAX_TEXT)


class LoadFailed(_Msg):
    t: Literal["load_failed"] = "load_failed"
    kind: Literal["syntax", "compile", "missing_entry", "import", "needs_cuda", "oom", "exit", "unavailable"]
    message: str = Field(max_length=MAX_TEXT)
    detail: str = Field(default="", max_length=MAX_TEXT)


class CallError(_Msg):
    kind: Literal["exception", "exit", "oom", "needs_cuda", "bad_output"]
    message: str = Field(max_length=MAX_TEXT)


class Enqueued(_Msg):
    t: Literal["enqueued"] = "enqueued"
    k: int
    outputs: list[Value] = Field(default_factory=list, max_length=MAX_BATCH)
    error: CallError | None = None
    host_ns: int = Field(default=0, ge=0)


class Prepared(_Msg):
    t: Literal["prepared"] = "prepared"
    k: int


MAX_READING_NS = 1e13
"""The largest reading a submission process may report (10,000 s, beyond any time limit): a finite 1e200 made the
trusted statistics overflow, the submission's doing reported as the runner's failure (red team, 2026-11-25)."""


class Done(_Msg):
    """CPU only: the calls returned; their outputs lie in the host output arena or in the call's own input arena."""

    t: Literal["done"] = "done"
    k: int
    outputs: list[Value] = Field(default_factory=list, max_length=MAX_BATCH)
    error: CallError | None = None
    r_ns: float = Field(default=0.0, ge=0, le=MAX_READING_NS, allow_inf_nan=False)


class Times(_Msg):
    """The submission process's own reading of a whole call (batch): its first call's start to its last's end."""

    t: Literal["times"] = "times"
    k: int
    r_ns: float = Field(ge=0, le=MAX_READING_NS, allow_inf_nan=False)


class ProfileText(_Msg):
    t: Literal["profile_text"] = "profile_text"
    k: int
    text: str = Field(default="", max_length=MAX_TEXT)
    error: CallError | None = None
    outputs: list[Value] = Field(default_factory=list, max_length=1)
    """The recorded call's output, where ``Profile.recorded`` gave it inputs."""


class Checked(_Msg):
    """The answer to :class:`Check`: the CUDA error the context reports, or none (the work may still be running)."""

    t: Literal["checked"] = "checked"
    k: int
    error: CallError | None = None


FromSubmission = Annotated[
    Hello | Ready | Loaded | LoadFailed | Enqueued | Prepared | Done | Times | Checked | ProfileText,
    Field(discriminator="t"),
]
FROM_SUBMISSION: TypeAdapter[Any] = TypeAdapter(FromSubmission)


# ---- evaluator -> entry (the trusted report) ---------------------------------------------------------------------
class ClockCalibration(_Msg):
    """What the evaluator's trusted window costs on a GPU (``runners.oracle.window.Calibration``, less its text), as
    the evaluator reports it and as a long-lived runner hands it to the next run on the same GPU."""

    overhead_ns: float = Field(ge=0, le=1e9, allow_inf_nan=False)
    event_ns: float = Field(ge=0, le=1e9, allow_inf_nan=False)
    slack_ns: float = Field(ge=0, le=1e9, allow_inf_nan=False)
    typical_ns: float = Field(default=0.0, ge=0, le=1e9, allow_inf_nan=False)
    min_call_ns: float = Field(default=0.0, ge=0, le=1e9, allow_inf_nan=False)


class Job(_Msg):
    """The first line the entry writes to the evaluator: what to do. ``secret`` never leaves the evaluator."""

    mode: Literal["test", "benchmark", "ranked", "profile", "reference"]
    device: Literal["cuda", "cpu"]
    lang: str
    submission: str
    display_name: str
    tests: list[dict[str, Any]]
    benchmarks: list[dict[str, Any]]
    timing: dict[str, Any]
    secret: int | str | None = None
    profiler: Literal["ncu", "torch"] = "torch"
    device_name: str = ""
    time_limit_s: float = Field(default=600.0, gt=0, description="The whole run's wall-time limit.")
    max_batch_calls: int = Field(default=1, ge=1, le=MAX_BATCH)
    allocator: str | None = Field(default=None, description="The submission process's CUDA allocator library.")
    heap_bytes: int | None = Field(default=None, description="Its CUDA heap (default: 32 GiB, at most half free).")
    baselines: list[tuple[str, str]] = Field(
        default_factory=list, max_length=4, description="(label, function in reference.py) to time before the load."
    )
    baselines_budget_s: float = Field(default=0.0, ge=0, description="The most the baselines may take, all of them.")
    rank: int = Field(default=0, ge=0, description="This evaluator's rank in a run of several (docs/multigpu.md).")
    world_size: int = Field(default=1, ge=1, description="The ranks of the run (1: the one-GPU path).")
    calibration: ClockCalibration | None = Field(
        default=None,
        description="A GPU calibration an earlier run on this GPU took before its submission loaded, seconds ago "
        "(docs/measurement.md, 'Pre-started processes'): used instead of timing the echo again. None: calibrate.",
    )
    calibration_age_s: float = Field(default=0.0, ge=0, description="How old ``calibration`` is.")


class RHello(_Msg):
    t: Literal["hello"] = "hello"
    torch: str = ""
    cuda: str | None = None
    gpu: str | None = None


class RProgress(_Msg):
    t: Literal["progress"] = "progress"
    phase: str = Field(max_length=32)
    detail: str = Field(default="", max_length=512)


class RCompiled(_Msg):
    t: Literal["compiled"] = "compiled"
    output: str = Field(default="", max_length=MAX_TEXT)


class RTestReference(_Msg):
    """How long the problem's ``ref_kernel`` took on a test's inputs, timed by the evaluator just before the
    submission's call on them: what that test's bound derives from (``runners.entry.clock``)."""

    t: Literal["test_reference"] = "test_reference"
    index: int = Field(ge=0)
    seconds: float = Field(ge=0, allow_inf_nan=False)


class RTest(_Msg):
    t: Literal["test"] = "test"
    index: int = Field(ge=0)
    verdict: Verdict
    message: str = Field(default="", max_length=MAX_TEXT)
    duration_s: float = 0.0


class Trust(_Msg):
    """How the trusted clock bounded a benchmark case (docs/measurement.md)."""

    overhead_ns: float = Field(description="The calibrated upper bound on the trusted window's own cost.")
    bounded_calls: int = Field(description="Calls whose own reading was below what the trusted clock allows.")
    degraded_calls: int = Field(description="Calls that synchronised inside custom_kernel (host time counted).")
    window_median_ns: float = Field(description="Median of the trusted windows, overhead included.")
    calls_per_sample: int = Field(default=1, description="Calls made back to back in one window (median).")


class RBench(_Msg):
    t: Literal["bench"] = "bench"
    index: int = Field(ge=0)
    verdict: Verdict
    message: str = Field(default="", max_length=MAX_TEXT)
    samples_ns: list[float] = Field(default_factory=list, max_length=100_000)
    bytes_moved: int | None = None
    flops: int | None = None
    trust: Trust | None = None


class RBaseline(_Msg):
    """One benchmark case of a baseline (a function of the problem's reference), timed like the submission."""

    t: Literal["baseline"] = "baseline"
    label: str = Field(max_length=40)
    index: int = Field(ge=0)
    samples_ns: list[float] = Field(default_factory=list, max_length=100_000)
    error: str = Field(default="", max_length=MAX_TEXT, description="Why the baseline could not be timed.")


class RProfile(_Msg):
    t: Literal["profile"] = "profile"
    text: str = Field(default="", max_length=MAX_TEXT)


SUBMISSION_EXITED = "the submission process exited"
"""``RFatal.message`` when the evaluator saw the submission process end mid-run: the runner then lets that process's
own exit status arrive (``Session.let_submission_end``) before it stops the sandboxes, so that the verdict can say
how it ended rather than report the runner's own kill."""


class RFatal(_Msg):
    """The evaluation stopped. ``fault`` says whose: the submission's (its verdict stands), the problem's or the
    runner's (an infrastructure error, retried by workers)."""

    t: Literal["fatal"] = "fatal"
    verdict: Verdict
    message: str = Field(max_length=MAX_TEXT)
    fault: Literal["submission", "problem", "runner"]
    compile_output: str = Field(default="", max_length=MAX_TEXT)


class RCalibration(ClockCalibration):
    """The GPU calibration this run took (before the submission's file loaded), so that the runner can reuse it."""

    t: Literal["calibration"] = "calibration"


class RDone(_Msg):
    t: Literal["done"] = "done"


Report = Annotated[
    RHello | RProgress | RCompiled | RTestReference | RTest | RBench | RBaseline | RProfile | RFatal | RCalibration
    | RDone,
    Field(discriminator="t"),
]
REPORT: TypeAdapter[Any] = TypeAdapter(Report)
