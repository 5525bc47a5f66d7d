"""Pre-started process sets (runners/entry/prestart.py): used once, only for a job of their shape, limits and phases
counted from the hand-over, killed when idle, nothing of one job visible to the next, secrets only after hand-over."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from harness_helpers import FIXTURES, SUBMISSIONS, build_request

from leaderboards.problems import load_problem
from runners.contract import Mode, RunRequest, RunResult, Verdict
from runners.entry import run_request
from runners.entry.prestart import Prestarter
from runners.entry.session import Launch, Shape, make_shape
from runners.launchers.local import LocalLauncher
from runners.sandbox import Handover, SandboxSpec, probe_sandbox, run_sandboxed
from runners.settings import RunnerSettings

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(probe_sandbox()[0] is None, reason="bubblewrap cannot run here: " + probe_sandbox()[2])


@pytest.fixture
def settings(tmp_path: Path) -> RunnerSettings:
    return RunnerSettings(job_root=tmp_path / "jobs", time_baselines=False, prestart=True, prestart_sets=1)


@pytest.fixture
def prestart(settings: RunnerSettings) -> Iterator[Prestarter]:
    p = Prestarter(settings)
    yield p
    p.close()


def _shape(request: RunRequest, **changes: object) -> Shape:
    shape = make_shape(request, gpu=None, python=sys.executable, prefix=[], extra_ro=(), submission_env=None,
                       require_sandbox=True)  # fmt: skip
    return Shape(**{**shape.__dict__, **changes})  # type: ignore[arg-type]


def _run(request: RunRequest, settings: RunnerSettings, prestart: Prestarter | None) -> RunResult:
    return run_request(request, settings=settings, require_sandbox=True, prestart=prestart)


def _sets(prestart: Prestarter) -> list[Launch]:
    return [launch for queue in prestart._sets.values() for launch in queue]


def _wait_until_ready(prestart: Prestarter, timeout_s: float = 120.0) -> Launch:
    """The waiting set, once each of its interpreters has PyTorch loaded."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        sets = _sets(prestart)
        if sets and sets[0].waiting() and _torch_loaded(sets[0]):
            return sets[0]
        time.sleep(0.2)
    sets = _sets(prestart)
    state = [(x.waiting(), x.errors, [(_cmdline(q)[-30:], _maps(q.pid)) for q in _set_processes(x)]) for x in sets]
    raise AssertionError(f"no pre-started set became ready: {state}")


def _torch_loaded(launch: Launch) -> bool:
    interpreters = [
        p
        for p in _set_processes(launch)
        if _cmdline(p).endswith(("runners.oracle", "runners.submission")) and "bwrap" not in _cmdline(p)
    ]
    wanted = 2 + len([n for n in launch.oracle.env.get("KERNELCUP_PRESTARTED", "").split(",") if n])
    if len(interpreters) < wanted:
        return False
    for proc in interpreters:
        try:
            if "libtorch_cpu" not in Path(f"/proc/{proc.pid}/maps").read_text():
                return False
        except OSError:
            return False
    return True


def _maps(pid: int) -> str:
    try:
        return str("libtorch_cpu" in Path(f"/proc/{pid}/maps").read_text())
    except OSError as exc:
        return str(exc)


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def _set_processes(launch: Launch) -> list[psutil.Process]:
    """Every process of a set's two sandboxes (init.py's descendants: bwrap, the interpreters, the helpers)."""
    me = psutil.Process()
    procs = []
    for child in me.children(recursive=True):
        try:
            if str(launch.dirs.root) in " ".join(child.cmdline()) or str(launch.dirs.root) in child.cwd():
                procs.append(child)
                procs.extend(child.children(recursive=True))
        except psutil.Error:
            continue
    return list({p.pid: p for p in procs}.values())


def test_a_set_is_used_once_and_the_next_job_gets_a_fresh_one(settings: RunnerSettings, prestart: Prestarter) -> None:
    request = build_request("submissions/correct_torch.py")
    first = _run(request, settings, prestart)
    assert first.verdict is Verdict.ACCEPTED and "prestarted" not in first.phase_times  # nothing was waiting
    waiting = _wait_until_ready(prestart)
    second = _run(request, settings, prestart)
    assert second.verdict is Verdict.ACCEPTED, second.message
    assert second.phase_times["prestarted"] < 0  # started before the hand-over, which the phases count from
    assert second.phase_times["hello"] < 5.0  # PyTorch was imported already
    assert waiting.handed_over and not waiting.waiting()  # the set is spent: nothing can take it again
    assert not any(t.is_alive() for t in waiting.threads)  # and its processes are gone
    assert not Path(waiting.dirs.root).exists()
    following = _wait_until_ready(prestart)
    assert following is not waiting and following.dirs.root != waiting.dirs.root
    assert prestart.take(_shape(request)) is following
    assert prestart.take(_shape(request)) is None  # taken once; the second ask finds nothing
    following.stop()


def test_a_job_of_another_shape_starts_cold_and_the_set_is_killed(settings: RunnerSettings,
                                                                  prestart: Prestarter) -> None:  # fmt: skip
    request = build_request("submissions/correct_torch.py")
    prestart.prepare(_shape(request, host_memory_mb=request.limits.host_memory_mb + 1))
    other = _wait_until_ready(prestart)
    result = _run(request, settings, prestart)
    assert result.verdict is Verdict.ACCEPTED, result.message
    assert "prestarted" not in result.phase_times
    assert not other.handed_over and not any(t.is_alive() for t in other.threads)
    assert not Path(other.dirs.root).exists()


def test_profile_runs_and_prestart_off_start_cold(settings: RunnerSettings, prestart: Prestarter) -> None:
    request = build_request("submissions/correct_torch.py", Mode.PROFILE)
    prestart.prepare(_shape(request))
    _wait_until_ready(prestart)
    assert "prestarted" not in _run(request, settings, prestart).phase_times
    off = settings.model_copy(update={"prestart": False})
    assert LocalLauncher(off).prestart is None
    test = build_request("submissions/correct_torch.py")
    assert "prestarted" not in _run(test, off, prestart).phase_times


def test_a_set_that_waits_too_long_is_killed(settings: RunnerSettings) -> None:
    prestart = Prestarter(settings)
    prestart.idle_s = 3.0
    try:
        request = build_request("submissions/correct_torch.py")
        prestart.prepare(_shape(request))
        (launch,) = _sets(prestart)
        for t in launch.threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in launch.threads)
        outcome = launch.outcomes["oracle"]
        assert outcome is not None and "waited 3 s for a job (its idle limit)" in outcome.killed_reason
        assert prestart.take(_shape(request)) is None and prestart.waiting() == 0
        assert not Path(launch.dirs.root).exists()  # taken away with it
        assert _run(request, settings, prestart).verdict is Verdict.ACCEPTED  # the next job starts cold
    finally:
        prestart.close()


def test_the_time_limit_counts_from_the_hand_over(tmp_path: Path) -> None:
    handover = Handover(idle_s=60.0)
    spec = SandboxSpec(argv=[sys.executable, "-c", "import time; time.sleep(30)"], workdir=tmp_path, env={},
                       timeout_s=1.0, output_cap_bytes=1024, memory_mb=512, allow_gpu=False,
                       handover=handover)  # fmt: skip
    timer = threading.Timer(2.0, handover.give, args=(1.5,))
    timer.start()
    t0 = time.monotonic()
    outcome = run_sandboxed(spec)
    elapsed = time.monotonic() - t0
    timer.join()
    assert outcome.timed_out and "time limit of 1.5 s exceeded" in outcome.killed_reason
    assert 3.3 <= elapsed < 10  # 2 s waiting (not counted), then 1.5 s of limit


def test_the_idle_limit_ends_a_process_that_never_gets_its_job(tmp_path: Path) -> None:
    spec = SandboxSpec(argv=[sys.executable, "-c", "import time; time.sleep(30)"], workdir=tmp_path, env={},
                       timeout_s=60.0, output_cap_bytes=1024, memory_mb=512, allow_gpu=False,
                       handover=Handover(idle_s=1.0))  # fmt: skip
    t0 = time.monotonic()
    outcome = run_sandboxed(spec)
    assert outcome.timed_out and "its idle limit" in outcome.killed_reason
    assert time.monotonic() - t0 < 10


LEAVE = """
import contextlib, os, pathlib, tempfile, torch
with contextlib.suppress(OSError):  # (the sandbox's /tmp is read-only; its TMPDIR is in the job folder)
    pathlib.Path("/tmp/kc-left-by-job-1").write_text("x")
pathlib.Path(tempfile.gettempdir(), "kc-left-by-job-1").write_text("x")
pathlib.Path("/dev/shm/kc-left-by-job-1").write_text("x")
pathlib.Path(os.environ["HOME"], "kc-left-by-job-1").write_text("x")
os.environ["KC_LEFT_BY_JOB_1"] = "1"
torch.kc_left_by_job_1 = True

def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""

LOOK = """
import glob, os, pathlib, tempfile, torch
seen = [p for p in ("/tmp/kc-left-by-job-1", "/dev/shm/kc-left-by-job-1", os.path.join(tempfile.gettempdir(),
                    "kc-left-by-job-1"), os.path.join(os.environ["HOME"], "kc-left-by-job-1")) if os.path.exists(p)]
seen += glob.glob("/tmp/**/kc-left-by-job-1", recursive=True) + glob.glob("/dev/shm/**/*", recursive=True)
if "KC_LEFT_BY_JOB_1" in os.environ or hasattr(torch, "kc_left_by_job_1"):
    seen.append("the first job's environment or module state")
jobs = os.listdir(pathlib.Path.cwd().parent.parent)  # the job root as this sandbox sees it: only its own job
if len(jobs) != 1:
    seen.append(f"other job folders: {jobs}")
if seen:
    raise RuntimeError(f"saw what job 1 left: {seen}")

def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""


def test_two_consecutive_jobs_see_nothing_of_each_other(settings: RunnerSettings, prestart: Prestarter) -> None:
    first = _run(build_request("leave.py", content=LEAVE.encode()), settings, prestart)
    assert first.verdict is Verdict.ACCEPTED, first.message
    _wait_until_ready(prestart)
    second = _run(build_request("look.py", content=LOOK.encode()), settings, prestart)
    assert "prestarted" in second.phase_times
    assert second.verdict is Verdict.ACCEPTED, second.message


SEED = 918273645546372819


def test_the_ranked_seed_reaches_neither_a_waiting_set_nor_the_submission(settings: RunnerSettings,
                                                                        prestart: Prestarter) -> None:  # fmt: skip
    request = build_request("submissions/correct_torch.py", Mode.RANKED, seed=SEED)
    prestart.prepare(_shape(request), ("echo",))
    waiting = _wait_until_ready(prestart)
    procs = _set_processes(waiting)
    assert len(procs) >= 3  # the evaluator, the submission process and the echo are up, waiting
    for proc in procs:
        with _no_error():
            text = " ".join(proc.cmdline()) + " ".join(f"{k}={v}" for k, v in proc.environ().items())
            assert str(SEED) not in text
    for path in Path(waiting.dirs.root).rglob("*"):
        assert not path.is_file() or str(SEED).encode() not in path.read_bytes()
    # The submission looks for the seed everywhere it can (its environment, its processes, its folder).
    half = str(SEED)[:9], str(SEED)[9:]
    probe = f"""
import os, pathlib, torch
secret = {half[0]!r} + {half[1]!r}
places = [" ".join(os.environ.values())]
for pid in os.listdir("/proc"):
    if pid.isdigit():
        for name in ("cmdline", "environ"):
            try:
                places.append(pathlib.Path("/proc", pid, name).read_bytes().decode(errors="replace"))
            except OSError:
                pass
for path in pathlib.Path.cwd().rglob("*"):
    if path.is_file() and path.name != "submission.py":
        places.append(path.read_bytes().decode(errors="replace"))
if any(secret in place for place in places):
    raise RuntimeError("found the ranked seed")

def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""
    ranked = build_request("probe.py", Mode.RANKED, seed=SEED, content=probe.encode())
    result = _run(ranked, settings, prestart)
    assert "prestarted" in result.phase_times
    assert result.verdict is Verdict.ACCEPTED, result.message


class _no_error:
    """A context manager that lets a process that vanished meanwhile pass."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return isinstance(exc, psutil.Error)


@pytest.mark.parametrize("mode", [Mode.TEST, Mode.RANKED])
def test_a_pre_started_run_gets_the_verdicts_of_a_cold_one(settings: RunnerSettings, prestart: Prestarter,
                                                           mode: Mode) -> None:  # fmt: skip
    files = ["correct_torch.py", "wrong_off_by_one.py", "raises.py", "no_entry.py"]
    # The first cold run goes through the Prestarter: no set waits yet, so it starts cold (asserted below), and it
    # starts the set the first warm run takes (a run of its own just to start that set cost one evaluation more).
    cold = {f: _run(build_request(SUBMISSIONS / f, mode), settings, prestart if f == files[0] else None) for f in files}
    assert not any("prestarted" in result.phase_times for result in cold.values())
    for f in files:
        _wait_until_ready(prestart)
        warm = _run(build_request(SUBMISSIONS / f, mode), settings, prestart)
        assert "prestarted" in warm.phase_times
        assert (warm.verdict, [t.verdict for t in warm.tests]) == (cold[f].verdict, [t.verdict for t in cold[f].tests])
        assert warm.message.split(";")[0] == cold[f].message.split(";")[0]


def _gpu_files(proc: psutil.Process) -> list[str]:
    """The GPU device files a process has open (a CUDA context, even CUDA's initialisation, opens /dev/nvidiactl)."""
    try:
        return [f.path for f in proc.open_files() if f.path.startswith("/dev/nvidia")] + [
            os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{proc.pid}/fd")
            if os.readlink(f"/proc/{proc.pid}/fd/{fd}").startswith("/dev/nvidia")
        ]  # fmt: skip
    except (psutil.Error, OSError):
        return []


@pytest.mark.gpu
def test_on_the_gpu_a_waiting_set_holds_no_cuda_and_a_pre_started_ranked_run_matches_a_cold_one(
    settings: RunnerSettings, prestart: Prestarter
) -> None:
    problem = load_problem(REPO / "problems" / "vectoradd")
    path = problem.path / "solutions" / "correct" / "triton.py"

    def request() -> RunRequest:
        return problem.request(path.name, path.read_bytes(), Mode.RANKED, device="cuda", device_name="cuda",
                               seed=12345)  # fmt: skip

    cold = _run(request(), settings, None)
    assert cold.verdict is Verdict.ACCEPTED, cold.message + cold.stderr[-2000:]
    _run(request(), settings, prestart)  # starts the first set
    waiting = _wait_until_ready(prestart)
    procs = _set_processes(waiting)
    assert procs and not [f for p in procs for f in _gpu_files(p)]  # PyTorch imported, no CUDA anywhere
    warm = _run(request(), settings, prestart)
    assert warm.verdict is Verdict.ACCEPTED, warm.message + warm.stderr[-2000:]
    assert warm.phase_times["prestarted"] < 0 and warm.phase_times["hello"] < 3.0
    # The clock's calibration of the run before it on this GPU, seconds old: no echo timed again.
    assert cold.system.calibration_age_s is None
    assert warm.system.calibration_age_s is not None and 0 <= warm.system.calibration_age_s < 60
    assert "echo ready" not in warm.phase_times and "echo ready" in cold.phase_times
    assert [t.verdict for t in warm.tests] == [t.verdict for t in cold.tests]
    assert len(warm.benchmarks) == len(cold.benchmarks) and all(b.stats for b in warm.benchmarks)
    for w, c in zip(warm.benchmarks, cold.benchmarks, strict=True):  # same kernel, same GPU: the same time, roughly
        assert w.stats is not None and c.stats is not None
        assert 0.8 < w.stats.median_ns / c.stats.median_ns < 1.25


def test_kernelcup_run_with_several_files_hands_each_after_the_first_to_a_pre_started_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from kernelcup.cli import build_app

    monkeypatch.setenv("KERNELCUP_PRESTART", "true")
    monkeypatch.setenv("KERNELCUP_JOB_ROOT", str(tmp_path / "jobs"))
    files = [str(SUBMISSIONS / f) for f in ("correct_torch.py", "raises.py", "wrong_off_by_one.py")]
    done = CliRunner().invoke(build_app(), ["run", str(FIXTURES / "vectoradd"), *files, "--device", "cpu", "--json"])
    assert done.exit_code == 1, done.output  # not every file passed
    results = [RunResult.model_validate(r) for r in json.loads(done.stdout)]
    assert [r.verdict for r in results] == [Verdict.ACCEPTED, Verdict.RUNTIME_ERROR, Verdict.WRONG_ANSWER]
    assert ["prestarted" in r.phase_times for r in results] == [False, True, True]
    assert not list((tmp_path / "jobs").iterdir())  # the set started after the last run was killed with its folder


def test_the_local_launcher_hands_the_next_run_to_its_pre_started_set(settings: RunnerSettings) -> None:
    import asyncio

    from runners.launchers.base import DetachedJob

    launcher = LocalLauncher(settings.model_copy(update={"allow_unsandboxed": False}))
    assert launcher.prestart is not None
    try:
        request = build_request("submissions/correct_torch.py")
        first = asyncio.run(launcher.run(request, DetachedJob()))
        second = asyncio.run(launcher.run(request, DetachedJob()))
        assert first.verdict is second.verdict is Verdict.ACCEPTED, second.message
        assert "prestarted" not in first.phase_times and "prestarted" in second.phase_times
    finally:
        launcher.close()
    assert launcher.prestart.waiting() == 0 and not list(Path(settings.job_root or "").iterdir())


class _FakeLaunch:
    """A set that starts no process: what the Prestarter's bookkeeping sees of one."""

    def __init__(self, shape: Shape, dirs: object, idle_s: float, helpers: tuple[str, ...]) -> None:
        self.shape, self.dirs = shape, dirs
        self.alive = False

    def start(self) -> None:
        self.alive = True

    def waiting(self, margin_s: float = 0.0) -> bool:
        return self.alive

    def stop(self, join_s: float = 0.0) -> None:
        self.alive = False


def test_two_sets_wait_per_gpu_where_asked_and_the_oldest_is_taken_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runners.entry.prestart as module

    monkeypatch.setattr(module, "Launch", _FakeLaunch)
    settings = RunnerSettings(job_root=tmp_path / "jobs", time_baselines=False, prestart_sets=2)
    prestart = Prestarter(settings)
    shape = _shape(build_request("submissions/correct_torch.py"))
    try:
        prestart.prepare(shape)
        first, second = _sets(prestart)
        assert prestart.waiting() == 2
        assert prestart.take(shape) is first  # the one started longest ago: the likeliest to be ready
        prestart.prepare(shape)  # topped up again after the hand-over
        assert _sets(prestart)[0] is second and prestart.waiting() == 2
        other = _shape(build_request("submissions/correct_torch.py"), host_memory_mb=1)
        assert prestart.take(other) is None  # another shape: none fits, and the sets of the old shape are killed
        assert prestart.waiting() == 0 and not second.alive
    finally:
        prestart.close()
    assert RunnerSettings(prestart_sets=None).prestart_depth() in (1, 2)


def test_a_gpus_calibration_is_handed_on_only_to_that_gpu_and_only_while_it_is_young(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runners.entry.prestart as module
    from runners.gpus import Gpu
    from runners.ipc.protocol import ClockCalibration

    now = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    request = build_request("submissions/correct_torch.py")
    gpu0 = _shape(request, gpu=Gpu(index=0, uuid="GPU-0", name="H100", minor=0))
    gpu1 = _shape(request, gpu=Gpu(index=1, uuid="GPU-1", name="H100", minor=1))
    cal = ClockCalibration(overhead_ns=9000.0, event_ns=1300.0, slack_ns=2500.0)
    prestart = Prestarter(RunnerSettings(job_root=tmp_path / "jobs", calibration_reuse_s=60))
    try:
        assert prestart.calibration(gpu0) is None  # none taken yet
        prestart.remember_calibration(gpu0, cal)
        now[0] += 5.0
        assert prestart.calibration(gpu0) == (cal, 5.0)
        assert prestart.calibration(gpu1) is None  # another GPU's window costs its own
        from runners.ipc.protocol import Job, RCalibration

        prestart.remember_calibration(gpu1, RCalibration(**cal.model_dump()))  # as the evaluator reports it
        handed = prestart.calibration(gpu1)
        assert handed is not None and type(handed[0]) is ClockCalibration and handed[0] == cal
        job = Job(mode="ranked", device="cuda", lang="py", submission="s.py", display_name="s.py", tests=[],
                  benchmarks=[], timing={}, calibration=handed[0], calibration_age_s=handed[1])  # fmt: skip
        assert Job.model_validate_json(job.model_dump_json()).calibration == cal  # what the evaluator reads
        now[0] += 56.0
        assert prestart.calibration(gpu0) is None  # older than calibration_reuse_s: the next run calibrates
    finally:
        prestart.close()
    off = Prestarter(RunnerSettings(job_root=tmp_path / "jobs", calibration_reuse_s=0))
    off.remember_calibration(gpu0, cal)
    assert off.calibration(gpu0) is None  # 0: every run calibrates
    off.close()
