"""The pieces between the runner's processes, without a GPU: messages, shared host memory, the report's rules, files
read from the job folder, the speed-of-light gate and the submission allocator."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from runners.contract import SPEED_OF_LIGHT, Mode, RunRequest, SubmissionFile, SystemInfo, TimingSettings, Verdict
from runners.devices import impossible_below_ns, peaks_for
from runners.entry.admission import allocator_library, read_capped
from runners.entry.session import Outcomes, Report, ReportError, Session, SessionSpec, make_shape
from runners.entry.verdict import blame_the_floor, build_result
from runners.ipc.arena import Arena, ArenaError, materialize, place
from runners.ipc.protocol import (
    FROM_SUBMISSION,
    TO_SUBMISSION,
    Job,
    RBench,
    RCalibration,
    RDone,
    RHello,
    RTest,
    Scalar,
    Seq,
    TensorRef,
    Times,
    check_value_size,
)
from runners.ipc.wire import PeerGone, Wire, WireError, socket_pair

torch = pytest.importorskip("torch")


# ---- messages ------------------------------------------------------------------------------------------------------
def test_a_message_over_the_size_limit_or_malformed_is_refused_and_its_descriptors_closed() -> None:
    a, b = socket_pair()
    sender, receiver = Wire(a, TO_SUBMISSION), Wire(b, FROM_SUBMISSION)
    r, w = os.pipe()
    import socket as _socket

    _socket.send_fds(a, [b'{"t": "times", "k": 1, "r_ns": -5}'], [r])  # negative reading: invalid
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(WireError, match="malformed"):
        receiver.recv(1.0)
    assert len(os.listdir("/proc/self/fd")) == before  # the descriptor that came with it was closed, not leaked
    a.send(b"x" * 300_000)
    with pytest.raises(WireError, match="size limit"):
        receiver.recv(1.0)
    a.send(b"not json")
    with pytest.raises(WireError):
        receiver.recv(1.0)
    assert receiver.recv(0.05) is None  # nothing else is waiting: a timeout, not an error
    sender.close()
    with pytest.raises(PeerGone):
        receiver.recv(1.0)
    os.close(w)


def test_values_are_bounded_in_depth_and_size() -> None:
    deep = Scalar(v=1)
    for _ in range(12):
        deep = Seq(t="tuple", items=[deep])
    with pytest.raises(ValueError, match="levels"):
        check_value_size(deep)
    with pytest.raises(ValueError, match="dtype"):
        TensorRef(arena="host_in", offset=0, dtype="object", shape=[1], stride=[1])
    with pytest.raises(ValueError):
        Times(k=1, r_ns=float("nan"))


# ---- shared host memory ----------------------------------------------------------------------------------------------
@pytest.fixture
def arenas() -> dict[str, Arena]:
    return {"host_in": Arena.create(torch, "host_in", "host", 1 << 20)}


def test_inputs_round_trip_through_shared_memory_with_their_shape_dtype_and_layout(arenas: dict[str, Arena]) -> None:
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    data = (a, a.t(), 7, "x", None, [torch.ones(2, dtype=torch.int64)], {"k": 1.5})
    placement = place(torch, data, arenas, cuda="dev_in", host="host_in")
    for dst, src in placement.copies:
        dst.copy_(src)
    other = {"host_in": Arena.open(torch, "host_in", "host", arenas["host_in"].size, os.dup(arenas["host_in"].fd))}
    got = materialize(torch, placement.value, other)  # as the other process sees it
    assert torch.equal(got[0], a) and torch.equal(got[1], a.t()) and got[1].stride() == a.t().stride()
    assert got[2:5] == (7, "x", None) and torch.equal(got[5][0], torch.ones(2, dtype=torch.int64))
    assert got[6] == {"k": 1.5}
    # each tensor's storage is its own bytes, not the whole arena (saving or resizing it touches nothing else)
    assert got[0].untyped_storage().nbytes() == 12 * 4


def test_a_reference_outside_the_arena_or_misaligned_is_refused(arenas: dict[str, Arena]) -> None:
    size = arenas["host_in"].size
    for ref in (
        TensorRef(arena="host_in", offset=size, dtype="float32", shape=[1], stride=[1]),
        TensorRef(arena="host_in", offset=size - 8, dtype="float32", shape=[4], stride=[1]),
        TensorRef(arena="host_in", offset=2, dtype="float32", shape=[1], stride=[1]),
        TensorRef(arena="elsewhere", offset=0, dtype="float32", shape=[1], stride=[1]),
    ):
        with pytest.raises(ArenaError):
            materialize(torch, ref, arenas)


def test_inputs_of_a_type_that_cannot_cross_are_the_problems_error(arenas: dict[str, Arena]) -> None:
    with pytest.raises(ArenaError, match="cannot be passed"):
        place(torch, (object(),), arenas, cuda="dev_in", host="host_in")


# ---- the evaluator's report ------------------------------------------------------------------------------------------
def _session(mode: Mode = Mode.RANKED) -> Session:
    request = RunRequest(
        problem="p", lang="py", mode=mode, files={}, submission=SubmissionFile(name="s.py", content=b"x"),
        tests=[{"n": 1}, {"n": 2}], benchmarks=[{"n": 3}], device="cpu", timing=TimingSettings(max_samples=5),
    )  # fmt: skip
    job = Job(mode=mode.value, device="cpu", lang="py", submission="s.py", display_name="s.py", tests=[],
              benchmarks=[], timing={})  # fmt: skip
    shape = make_shape(request, gpu=None, python="python3", prefix=[], extra_ro=(), submission_env=None,
                       require_sandbox=False)  # fmt: skip
    return Session(SessionSpec(request, job, None, shape, cancel=threading.Event()))


def _line(msg: object) -> bytes:
    return msg.model_dump_json().encode()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "reports",
    [
        [RTest(index=0, verdict=Verdict.ACCEPTED)],  # before hello
        [RHello(), RTest(index=1, verdict=Verdict.ACCEPTED)],  # out of order
        [RHello(), RTest(index=0, verdict=Verdict.ACCEPTED), RBench(index=0, verdict=Verdict.ACCEPTED,
                                                                     samples_ns=[1.0])],  # before every test passed
        [RHello(), RTest(index=0, verdict=Verdict.ACCEPTED), RTest(index=1, verdict=Verdict.ACCEPTED),
         RBench(index=0, verdict=Verdict.ACCEPTED, samples_ns=[1.0] * 6)],  # more samples than allowed
        [RHello(), RDone(), RHello()],  # after done
        [RHello(), RCalibration(overhead_ns=1.0, event_ns=0.0, slack_ns=0.0)],  # a calibration in a CPU run
    ],
)  # fmt: skip
def test_the_parent_refuses_a_report_out_of_order_or_over_its_caps(reports: list[object]) -> None:
    session = _session()
    with pytest.raises(ReportError):
        for msg in reports:
            session._handle(_line(msg))


def test_a_median_faster_than_the_device_can_be_is_rejected_not_ranked() -> None:
    request = _session(Mode.BENCHMARK).request
    request.tests = []
    bytes_moved = 3 * 2 * 16384 * 16384  # the large fp16 vector add: 1.6 GB, 480 µs at 3.35 TB/s
    report = Report(hello=RHello(gpu="NVIDIA H100 80GB HBM3"), done=True)
    report.benches = [RBench(index=0, verdict=Verdict.ACCEPTED, samples_ns=[50_000.0] * 3, bytes_moved=bytes_moved)]
    result = build_result(request, Outcomes(report, None, None), SystemInfo(), None)
    assert result.verdict is Verdict.REJECTED and "faster than the H100 can possibly do" in result.message
    assert result.rejection == SPEED_OF_LIGHT  # admins see it in /admin stats
    report.benches = [RBench(index=0, verdict=Verdict.ACCEPTED, samples_ns=[522_000.0] * 3, bytes_moved=bytes_moved)]
    assert build_result(request, Outcomes(report, None, None), SystemInfo(), None).verdict is Verdict.ACCEPTED


def test_a_floor_the_problems_own_reference_beats_is_the_problems_fault_not_the_submissions() -> None:
    """A speed_of_light that counts bits for bytes (8x the work): an honest 60 µs submission reads as "faster than
    light"; the reference, timed beside it, beats the same floor, so the problem is at fault (red team, 2026-11-25)."""
    request = _session(Mode.BENCHMARK).request
    request.tests = []
    bits = 8 * 3 * 2 * 4096 * 4096  # a 4096² fp16 add's bytes, counted in bits: 1.1 ms at 3.35 TB/s
    report = Report(hello=RHello(gpu="NVIDIA H100 80GB HBM3"), done=True)
    report.benches = [RBench(index=0, verdict=Verdict.ACCEPTED, samples_ns=[60_000.0] * 3, bytes_moved=bits)]
    refused = build_result(request, Outcomes(report, None, None), SystemInfo(), None)
    assert refused.rejection == SPEED_OF_LIGHT
    h100 = peaks_for("NVIDIA H100 80GB HBM3")
    blamed = blame_the_floor(request, refused, [62_000.0], h100)
    assert blamed.verdict is Verdict.INFRASTRUCTURE_ERROR and blamed.fault == "problem" and not blamed.rejection
    assert "speed_of_light for benchmark 1" in blamed.message
    assert "the problem's own reference took 62" in blamed.message
    # A reference slower than the floor (or untimed) leaves the refusal where it was: the submission's.
    assert blame_the_floor(request, refused, [1_500_000.0], h100) == refused
    assert blame_the_floor(request, refused, [None], h100) == refused


@pytest.mark.parametrize(
    ("name", "row"),
    [
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA A10G", "A10G"),
        ("Tesla T4", "T4"),
        ("AMD Instinct MI300X", "MI300X"),
    ],
)
def test_device_peaks_are_found_by_the_name_the_driver_reports(name: str, row: str) -> None:
    peaks = peaks_for(name)
    assert peaks is not None and peaks.name == row
    assert impossible_below_ns(1_000_000, 0, peaks) == pytest.approx(1e6 / peaks.memory_bytes_per_s * 1e9)


def test_an_unknown_device_has_no_gate() -> None:
    assert peaks_for("Some Future GPU") is None and peaks_for(None) is None


# ---- files from the job folder ---------------------------------------------------------------------------------------
def test_files_from_the_job_folder_are_read_without_following_links_and_capped(tmp_path: Path) -> None:
    secret = tmp_path / "environ"
    secret.write_text("DATABASE_URL=postgres://secret")
    log = tmp_path / "ncu.log"
    log.symlink_to(secret)
    assert read_capped(log, 1000) is None  # a link planted by the submission is not followed
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    assert read_capped(fifo, 1000) is None  # neither a pipe (it would block)
    real = tmp_path / "real.log"
    real.write_text("a" * 5000 + "tail")
    text = read_capped(real, 100)
    assert text is not None and len(text) == 100 and text.endswith("tail")


# ---- the submission allocator ------------------------------------------------------------------------------------
HARNESS = r"""
#include <cstdio>
#include <stdexcept>
#include <stdint.h>
#include <sys/types.h>
extern "C" { int kc_arena_init(uintptr_t, size_t); void* kc_malloc(ssize_t, int, void*);
             void kc_free(void*, ssize_t, int, void*); }
int main() {
  const uintptr_t base = 1ull << 40;
  if (kc_arena_init(base, 1 << 20) != 0) return 2;
  void* a = kc_malloc(1000, 0, nullptr);
  void* b = kc_malloc(3000, 0, nullptr);
  if (a != (void*)base || (uintptr_t)b % 512 != 0 || b <= a) return 3;
  try { kc_malloc(1 << 21, 0, nullptr); return 4; }
  catch (const std::runtime_error& e) { std::printf("%s\n", e.what()); }
  kc_free(a, 1000, 0, nullptr); kc_free(b, 3000, 0, nullptr);
  return kc_malloc(1 << 20, 0, nullptr) == (void*)base ? 0 : 5;  // freed blocks merged back into one
}
"""


def test_the_submission_allocator_carves_its_arena_and_says_out_of_memory_when_full(tmp_path: Path) -> None:
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler on this machine")
    library = allocator_library(tmp_path / "cache")
    assert allocator_library(tmp_path / "cache") == library  # built once per source version
    (tmp_path / "t.cpp").write_text(HARNESS)
    exe = tmp_path / "t"
    subprocess.run([cxx, str(tmp_path / "t.cpp"), str(library), f"-Wl,-rpath,{library.parent}", "-o", str(exe)],
                   check=True, capture_output=True)  # fmt: skip
    proc = subprocess.run([str(exe)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CUDA out of memory" in proc.stdout and "tried to allocate 2097152 bytes" in proc.stdout



def test_a_gpu_runs_calibration_is_taken_once_and_before_the_file_loads() -> None:
    from runners.ipc.protocol import RCompiled

    cal = RCalibration(overhead_ns=9000.0, event_ns=1300.0, slack_ns=2500.0)
    session = _session()
    session.job = session.job.model_copy(update={"device": "cuda"})
    session._handle(_line(RHello()))
    session._handle(_line(cal))
    assert session.report.calibration == cal
    with pytest.raises(ReportError):
        session._handle(_line(cal))  # twice
    late = _session()
    late.job = late.job.model_copy(update={"device": "cuda"})
    late._handle(_line(RHello()))
    late._handle(_line(RCompiled()))
    with pytest.raises(ReportError):
        late._handle(_line(cal))  # after the submission loaded: it could have shaped it
    with pytest.raises(ValueError):
        RCalibration(overhead_ns=float("nan"), event_ns=0.0, slack_ns=0.0)


def test_the_toolchain_warm_up_finishes_before_the_file_loads_and_never_fails_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from runners.ipc.protocol import Load, LoadFailed
    from runners.submission import serve

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    serve.warm_toolchain()  # a CPU run (Triton's interpreter): nothing to prepare, nothing raised
    monkeypatch.delenv("TRITON_INTERPRET")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    serve.warm_toolchain()  # here without CUDA's library: its build fails, quietly (the submission's compile reports)

    finished = threading.Event()
    warm = threading.Thread(target=lambda: (time.sleep(0.3), finished.set()))
    warm.start()
    a, _b = socket_pair()
    process = serve.SubmissionProcess(Wire(a, FROM_SUBMISSION), torch, tmp_path, warm)
    answer = process.load(Load(lang="py", path="missing.py", display_name="missing.py"))
    assert finished.is_set()  # the load waited for it: no warm-up work runs beside the submission's code
    assert isinstance(answer, LoadFailed)


def test_a_gpu_fault_the_submission_never_waits_for_ends_the_call_instead_of_the_time_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The "done" behind a kernel that faulted never comes: after CHECK_AFTER_S of waiting the evaluator asks the
    submission process, which reports its context's error; our stream is released and the error is the outcome."""
    from runners.ipc.protocol import CallError, Check, Checked
    from runners.oracle.peer import PeerFailed
    from runners.oracle.window import GpuWindow

    class Never:
        def query(self) -> bool:
            return False

    class Spare:
        cuda_stream = 7

        def synchronize(self) -> None:
            pass

    written: list[tuple[int, int, int]] = []

    class Driver:
        def write_value(self, stream: int, address: int, value: int) -> None:
            written.append((stream, address, value))

    class Ctrl:
        base = 4096

    fault = CallError(kind="exception", message="CUDA error: an illegal memory access was encountered")
    asked: list[object] = []

    class FakePeer:
        def send(self, msg: object) -> None:
            asked.append(msg)

        def poll(self, kind: object, timeout: float, k: int) -> Checked:
            assert kind is Checked and timeout > 0
            return Checked(k=k, error=fault)

    window = object.__new__(GpuWindow)
    window.driver, window.spare, window.ctrl = Driver(), Spare(), Ctrl()
    monkeypatch.setattr(GpuWindow, "CHECK_AFTER_S", 0.05)
    started = time.monotonic()
    got = window._wait(Never(), time.monotonic() + 60.0, 3, FakePeer())  # type: ignore[arg-type]
    assert got == fault and time.monotonic() - started < 5.0
    assert asked == [Check(k=3)]
    assert written and written[-1][2] == 3  # our stream's wait for "done" released

    class Healthy(FakePeer):
        def poll(self, kind: object, timeout: float, k: int) -> Checked:
            return Checked(k=k)  # still running, no error: keep waiting, up to the deadline

    with pytest.raises(PeerFailed, match="did not finish in time"):
        window._wait(Never(), time.monotonic() + 0.3, 4, Healthy())  # type: ignore[arg-type]
