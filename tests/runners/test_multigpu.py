"""Problems on several GPUs (docs/multigpu.md): device names with a GPU count, a pool that hands a run all its GPUs at
once, the run contract's world_size, the evaluators' group channel, and whole runs of two ranks on the CPU (gloo)
through the real sandboxes: accepted, wrong answers naming the rank, a rank that fails, a rank that exits, and the
ranks' one loopback-only network namespace."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from leaderboards.problems import load_problem
from runners.contract import Mode, TimingSettings, Verdict
from runners.devices import device_gpus, device_mismatch, split_device
from runners.entry import run_request
from runners.entry.ranks import NCCL_ENV, rank_gpus
from runners.gpus import Gpu, GpuPool
from runners.launchers.local import LocalLauncher
from runners.oracle.base import Fatal
from runners.oracle.group import Group
from runners.sandbox.view import gpu_nodes
from runners.settings import RunnerSettings
from runners.submission.ranks import rank_env

REPO = Path(__file__).resolve().parents[2]
ALLREDUCE = REPO / "problems" / "allreduce"


def _gpus(n: int, name: str = "NVIDIA H200") -> list[Gpu]:
    return [Gpu(index=i, uuid=f"GPU-{i}", name=name, minor=i) for i in range(n)]


# ---- device names and the pool ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "model", "count"),
    [("H100x8", "H100", 8), ("H200x2", "H200", 2), ("MI300Xx8", "MI300X", 8), ("L40S x 4", "L40S", 4),
     ("H100", "H100", None), ("RTX4090", "RTX4090", None), ("A10G", "A10G", None), ("cpu", "cpu", None),
     ("H100x0", "H100x0", None), ("H100x17", "H100x17", None), ("cudax4", "cuda", 4)],
)  # fmt: skip
def test_a_device_name_may_carry_its_gpu_count(name: str, model: str, count: int | None) -> None:
    assert split_device(name) == (model, count)
    assert device_gpus(name) == (count or 1)


def test_a_counted_device_matches_its_model() -> None:
    assert device_mismatch("cuda", "H200x2", "NVIDIA H200") is None
    assert "wants H100x2" in (device_mismatch("cuda", "H100x2", "NVIDIA H200") or "")


def test_the_pool_hands_a_run_all_its_gpus_at_once_or_none() -> None:
    pool = GpuPool(_gpus(3))

    async def main() -> None:
        one = await pool.acquire()
        waiter = asyncio.ensure_future(pool.acquire_many(3))
        await asyncio.sleep(0.01)
        assert not waiter.done() and len(pool.free_gpus) == 2  # two are free, but the run takes none of them yet
        pool.release(one)
        got = await asyncio.wait_for(waiter, 1.0)
        assert sorted(g.index for g in got) == [0, 1, 2] and pool.free_gpus == []
        with pytest.raises(LookupError, match="fewer than 4"):
            await pool.acquire_many(4)

    asyncio.run(main())


def test_a_worker_serves_a_counted_device_only_with_that_many_gpus() -> None:
    launcher = LocalLauncher(RunnerSettings(allow_unsandboxed=True), gpus=_gpus(2))
    launcher._gpu = ("NVIDIA H200",)
    assert launcher.cannot_serve("H200x2") is None
    assert launcher.cannot_serve("H200") is None
    refused = launcher.cannot_serve("H200x8") or ""
    assert "takes 8 GPUs" in refused and "may use 2" in refused


def test_a_run_of_several_ranks_without_enough_gpus_is_an_infrastructure_error_that_says_so() -> None:
    request = load_problem(ALLREDUCE).request("s.py", b"", Mode.TEST, device="cuda", device_name="H200x2")
    gpus, why = rank_gpus(request, _gpus(1))
    assert gpus is None and "2 ranks" in why and "1 GPU" in why
    assert rank_gpus(request, _gpus(3))[0] == _gpus(2)


def test_the_submission_sandbox_binds_the_nodes_of_the_runs_gpus_only(tmp_path: Path) -> None:
    for name in ("nvidia0", "nvidia1", "nvidia2", "nvidiactl", "nvidia-uvm"):
        (tmp_path / name).touch()
    assert {p.name for p in gpu_nodes(tmp_path, "/dev/nvidia0,/dev/nvidia2")} == {"nvidia0", "nvidia2", "nvidiactl",
                                                                                  "nvidia-uvm"}  # fmt: skip


def test_each_rank_gets_its_rendezvous_its_socket_and_only_its_gpu() -> None:
    env = rank_env(1, 2, 7, "GPU-1")
    assert env["RANK"] == "1" and env["WORLD_SIZE"] == "2" and env["MASTER_ADDR"] == "127.0.0.1"
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-1" and env["KERNELCUP_SUBMISSION_FD"] == "7"
    assert "CUDA_VISIBLE_DEVICES" not in rank_env(0, 2, 5, None)
    assert NCCL_ENV["NCCL_NVLS_ENABLE"] == "0" and NCCL_ENV["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert NCCL_ENV["NVSHMEM_DISABLE_NVLS"] == "1"


# ---- the evaluators' group channel -------------------------------------------------------------------------------
def _group(world: int, aborts: list[tuple[int, dict[str, Any]]]) -> list[Group]:
    pairs = [socket.socketpair() for _ in range(world - 1)]
    groups = [Group(0, world, [a for a, _ in pairs], lambda f: aborts.append((0, f)))]
    groups += [Group(r, world, [pairs[r - 1][1]], lambda f, r=r: aborts.append((r, f))) for r in range(1, world)]
    return groups


def _each(groups: list[Group], step: Any) -> list[Any]:
    out: list[Any] = [None] * len(groups)

    def run(r: int) -> None:
        out[r] = step(groups[r])

    threads = [threading.Thread(target=run, args=(r,)) for r in range(len(groups))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5.0)
    return out


def test_the_evaluators_agree_on_the_slowest_value_the_fewest_calls_and_rank_0s_secret() -> None:
    aborts: list[Any] = []
    groups = _group(3, aborts)
    assert _each(groups, lambda g: g.exchange(g.rank * 10)) == [[0, 10, 20]] * 3
    assert _each(groups, lambda g: g.max(1.5 + g.rank)) == [3.5] * 3
    assert _each(groups, lambda g: g.min(8 - g.rank)) == [6] * 3
    assert _each(groups, lambda g: g.first(f"secret-{g.rank}")) == ["secret-0"] * 3
    _each(groups, lambda g: g.finish())
    for g in groups:
        for s in g.socks:
            s.shutdown(socket.SHUT_RDWR)
    time.sleep(0.1)
    assert aborts == []  # a peer that leaves after the end is no failure


def test_a_rank_that_stops_aborts_the_others_and_a_dead_one_is_noticed() -> None:
    aborts: list[tuple[int, dict[str, Any]]] = []
    groups = _group(2, aborts)
    groups[1].abort({"verdict": "runtime_error", "fault": "submission", "message": "rank 1: it raised"})
    deadline = time.monotonic() + 10
    while not aborts and time.monotonic() < deadline:
        time.sleep(0.01)
    assert aborts == [(0, {"verdict": "runtime_error", "fault": "submission", "message": "rank 1: it raised"})]

    aborts.clear()
    groups = _group(2, aborts)
    groups[1].socks[0].shutdown(socket.SHUT_RDWR)  # its evaluator died (as its exit would)
    deadline = time.monotonic() + 10
    while not any(rank == 0 for rank, _ in aborts) and time.monotonic() < deadline:
        time.sleep(0.01)
    seen_by_0 = [fatal for rank, fatal in aborts if rank == 0]
    assert seen_by_0 and "rank 1 exited" in seen_by_0[0]["message"] and seen_by_0[0]["fault"] == "runner"


def test_a_peer_gone_while_finishing_is_an_infrastructure_error_not_a_hang() -> None:
    aborts: list[Any] = []
    groups = _group(2, aborts)
    groups[0].finishing = True
    groups[1].finishing = True
    groups[1].socks[0].shutdown(socket.SHUT_RDWR)
    with pytest.raises(Fatal, match="rank 1 exited before the end"):
        groups[0].exchange("end")


# ---- whole runs of two ranks on the CPU, through the sandboxes -----------------------------------------------------
def _run(tmp_path: Path, source: str, mode: Mode = Mode.TEST, **update: Any) -> Any:
    path = tmp_path / "submission.py"
    path.write_text(source)
    request = load_problem(ALLREDUCE).request(path.name, path.read_bytes(), mode, device="cpu",
                                              seed=4242 if mode is Mode.RANKED else None)  # fmt: skip
    return run_request(request.model_copy(update=update))


CORRECT = (ALLREDUCE / "templates" / "pytorch.py").read_text()  # (NCCL on a GPU, gloo here)


def test_two_ranks_are_accepted_and_timed_as_the_slowest_rank(tmp_path: Path) -> None:
    timing = TimingSettings(min_samples=5, max_samples=12, max_time_s=0.5, warmup_ms=20)
    result = _run(tmp_path, CORRECT, Mode.RANKED, benchmarks=[{"size": 4096, "seed": 7}, {"size": 65536, "seed": 9}],
                  timing=timing)  # fmt: skip
    assert result.verdict is Verdict.ACCEPTED, result.message + result.stderr[-2000:]
    assert result.system.world_size == 2 and result.system.sandboxed
    assert [t.verdict for t in result.tests] == [Verdict.ACCEPTED] * 4
    assert all(b.stats is not None and b.stats.samples >= 5 for b in result.benchmarks)
    assert result.score_ns and result.score_ns > 0 and result.baselines == []


def test_batches_of_several_calls_are_checked_call_by_call(tmp_path: Path) -> None:
    """Benchmark mode: every output of a batch is checked against its own fresh input, and every rank agrees on the
    batch size."""
    path = tmp_path / "submission.py"
    path.write_text(CORRECT)
    request = load_problem(ALLREDUCE).request(path.name, path.read_bytes(), Mode.BENCHMARK, device="cpu")
    timing = TimingSettings(min_samples=4, max_samples=8, max_time_s=0.5, warmup_ms=20)
    request = request.model_copy(update={"benchmarks": [{"size": 256, "seed": 3}], "timing": timing})
    result = run_request(request, settings=RunnerSettings(max_batch_calls=8))
    assert result.verdict is Verdict.ACCEPTED, result.message + result.stderr[-2000:]
    assert result.benchmarks[0].stats is not None and result.benchmarks[0].calls_per_sample >= 1


def test_a_wrong_rank_is_named_in_the_wrong_answer(tmp_path: Path) -> None:
    result = _run(tmp_path, (ALLREDUCE / "solutions" / "wrong" / "skip_last_rank.py").read_text())
    assert result.verdict is Verdict.WRONG_ANSWER
    assert all(t.verdict is Verdict.WRONG_ANSWER and t.message.startswith("rank ") for t in result.tests)


def test_only_one_rank_wrong_still_fails_every_rank_together(tmp_path: Path) -> None:
    wrong_on_one = "    dist.all_reduce(x)\n    if dist.get_rank() == 1:\n        x[0] += 100\n    # in place"
    source = CORRECT.replace("    dist.all_reduce(x)  # in place", wrong_on_one)
    result = _run(tmp_path, source)
    assert result.verdict is Verdict.WRONG_ANSWER
    assert result.tests[0].message.startswith("rank 1: "), result.tests[0].message


def test_a_rank_that_raises_fails_the_run_at_once_naming_it(tmp_path: Path) -> None:
    source = CORRECT.replace("    (x,) = data\n", "    (x,) = data\n    if dist.get_rank() == 1:\n"
                             "        raise ValueError('rank one gives up')\n")  # fmt: skip
    t0 = time.monotonic()
    result = _run(tmp_path, source)
    assert result.verdict is Verdict.RUNTIME_ERROR
    assert result.message.startswith("rank 1: ") and "rank one gives up" in result.message
    assert time.monotonic() - t0 < 60  # not rank 0's wait inside the collective until the time limit


def test_a_rank_whose_process_exits_is_a_runtime_error_not_a_timeout(tmp_path: Path) -> None:
    source = CORRECT.replace("    (x,) = data\n", "    (x,) = data\n    if dist.get_rank() == 1:\n"
                             "        import os\n        os._exit(3)\n")  # fmt: skip
    t0 = time.monotonic()
    result = _run(tmp_path, source)
    assert result.verdict is Verdict.RUNTIME_ERROR, result.message
    assert time.monotonic() - t0 < 60


def test_the_ranks_share_one_network_namespace_with_a_loopback_and_nothing_else(tmp_path: Path) -> None:
    source = (
        "import socket\n"
        "names = sorted(name for _, name in socket.if_nameindex())\n"
        "if names != ['lo']:\n"
        "    raise RuntimeError(f'the ranks see {names}')\n" + CORRECT
    )
    result = _run(tmp_path, source)
    assert result.verdict is Verdict.ACCEPTED, result.message  # (and gloo met over that loopback)


KILL_SIBLINGS = '''import os, signal

for pid in os.listdir("/proc"):  # at import: every other rank's submission process (one PID namespace)
    if pid.isdigit() and int(pid) not in (os.getpid(), os.getppid(), 1):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"runners.submission" in cmd:
            os.kill(int(pid), signal.SIGKILL)


def custom_kernel(data):
    (x,) = data
    return x
'''


def test_a_rank_that_kills_its_siblings_at_import_fails_as_the_submission(tmp_path: Path) -> None:
    """Red team, 2026-11-24: the first rank to load killed the others' submission processes before their evaluators
    sent "load": each called it the runner's fault (an infrastructure error, retried) after a 300 s wait. Every rank
    now waits for all the submission processes to be up before any file loads."""
    t0 = time.monotonic()
    result = _run(tmp_path, KILL_SIBLINGS)
    assert result.verdict is not Verdict.INFRASTRUCTURE_ERROR and not result.passed, result.message
    assert time.monotonic() - t0 < 120, "a killed rank must end the run, not wait out a timeout"
