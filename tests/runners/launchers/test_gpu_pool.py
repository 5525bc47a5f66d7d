"""One GPU per run (runners/gpus.py): which GPUs a worker may use, a pool that never hands one GPU to two runs at
once, the run's processes seeing only their GPU (CUDA_VISIBLE_DEVICES by UUID, one device node in the sandbox)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from runners.contract import RunRequest, SystemInfo
from runners.entry.session import _env
from runners.gpus import Gpu, GpuPool, parse_smi, usable
from runners.launchers.base import DeviceUnavailable
from runners.launchers.local import LocalLauncher
from runners.sandbox.view import gpu_nodes
from runners.settings import RunnerSettings

SMI = """0, GPU-aaaa-0000, NVIDIA H100 80GB HBM3, 00000000:17:00.0
1, GPU-bbbb-1111, NVIDIA H100 80GB HBM3, 00000000:2A:00.0
2, GPU-cccc-2222, NVIDIA H200, NVL, 00000000:3B:00.0
not a row
"""


def _proc(tmp_path: Path) -> Path:
    for address, minor in (("0000:17:00.0", 4), ("0000:2a:00.0", 0)):
        folder = tmp_path / address
        folder.mkdir()
        (folder / "information").write_text(f"Model: \t NVIDIA H100\nIRQ: 1\nDevice Minor: \t {minor}\n")
    return tmp_path


def test_nvidia_smi_rows_and_the_drivers_minor_numbers(tmp_path: Path) -> None:
    gpus = parse_smi(SMI, _proc(tmp_path))
    assert [(g.index, g.uuid, g.minor) for g in gpus] == [(0, "GPU-aaaa-0000", 4), (1, "GPU-bbbb-1111", 0),
                                                          (2, "GPU-cccc-2222", None)]  # fmt: skip
    assert gpus[2].name == "NVIDIA H200, NVL" and gpus[0].node == "/dev/nvidia4" and gpus[2].node is None


def test_the_workers_own_cuda_visible_devices_chooses_and_orders_them(tmp_path: Path) -> None:
    gpus = parse_smi(SMI, _proc(tmp_path))
    assert usable(gpus, {}) == gpus
    assert [g.index for g in usable(gpus, {"CUDA_VISIBLE_DEVICES": "2, 0"})] == [2, 0]
    assert [g.index for g in usable(gpus, {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"})] == [1]
    assert usable(gpus, {"CUDA_VISIBLE_DEVICES": ""}) == []
    with pytest.raises(ValueError, match=r"names '7', which is no GPU of this machine \(it has: 0 \(GPU-aaaa"):
        usable(gpus, {"CUDA_VISIBLE_DEVICES": "0,7"})


def test_a_sandbox_binds_only_its_own_gpus_node_beside_the_drivers_shared_ones(tmp_path: Path) -> None:
    for name in ("nvidia0", "nvidia1", "nvidia4", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "null"):
        (tmp_path / name).touch()
    (tmp_path / "nvidia-caps").mkdir()
    every = [p.name for p in gpu_nodes(tmp_path, None)]
    assert {"nvidia0", "nvidia1", "nvidia4", "nvidiactl", "nvidia-uvm", "nvidia-caps"} <= set(every)
    own = {p.name for p in gpu_nodes(tmp_path, "/dev/nvidia4")}
    assert own == {"nvidia4", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-caps"}


def test_a_runs_processes_see_only_their_gpu_by_uuid() -> None:
    gpu = Gpu(index=1, uuid="GPU-bbbb-1111", name="NVIDIA H100", minor=0)
    assert _env({}, "cuda", gpu)["CUDA_VISIBLE_DEVICES"] == "GPU-bbbb-1111"
    assert _env({}, "cpu", gpu)["CUDA_VISIBLE_DEVICES"] == ""
    assert "CUDA_VISIBLE_DEVICES" not in _env({}, "cuda", None)


def test_the_pool_never_gives_one_gpu_to_two_runs_at_once() -> None:
    gpus = [Gpu(index=i, uuid=f"GPU-{i}", name="H100", minor=i) for i in range(2)]
    pool = GpuPool(gpus)
    held: list[int] = []
    most = 0

    async def run(n: int) -> int:
        nonlocal most
        gpu = await pool.acquire()
        assert gpu.index not in held
        held.append(gpu.index)
        most = max(most, len(held))
        await asyncio.sleep(0.01 * (n % 3))
        held.remove(gpu.index)
        pool.release(gpu)
        return gpu.index

    async def main() -> list[int]:
        return await asyncio.gather(*(run(n) for n in range(9)))

    used = asyncio.run(main())
    assert most == 2 and set(used) == {0, 1}


def test_a_run_gets_a_gpu_of_the_model_it_asks_for_and_never_one_that_cannot_fit() -> None:
    gpus = [Gpu(index=0, uuid="GPU-0", name="NVIDIA H100 80GB HBM3", minor=0),
            Gpu(index=1, uuid="GPU-1", name="NVIDIA H200", minor=1)]  # fmt: skip
    pool = GpuPool(gpus)

    async def main() -> tuple[str, str]:
        h200 = await pool.acquire(lambda g: "H200" in g.name)
        waiter = asyncio.ensure_future(pool.acquire(lambda g: "H200" in g.name))
        await asyncio.sleep(0.01)
        assert not waiter.done()  # the H100 is free, but it is not an H200
        pool.release(h200)
        again = await asyncio.wait_for(waiter, 1.0)
        with pytest.raises(LookupError):
            await pool.acquire(lambda g: "B200" in g.name)
        return h200.uuid, again.uuid

    assert asyncio.run(main()) == ("GPU-1", "GPU-1")


def test_the_local_launcher_gives_concurrent_runs_their_own_gpus(
    monkeypatch: pytest.MonkeyPatch, make_job: Any, make_request: Any, make_result: Any
) -> None:
    """Three H100 jobs at once on a worker with two GPUs: two run, each on its own GPU; the third says it waits for
    a free GPU and runs when one is given back."""
    import runners.entry

    gpus = [Gpu(index=i, uuid=f"GPU-{i}", name="NVIDIA H100 80GB HBM3", minor=i) for i in range(2)]
    lock = threading.Lock()
    running: list[str] = []
    seen: list[tuple[str, int]] = []

    def fake_run(request, on_progress, *, settings, require_sandbox, cancel, gpu):  # type: ignore[no-untyped-def]
        with lock:
            assert gpu is not None and gpu.uuid not in running
            running.append(gpu.uuid)
            seen.append((gpu.uuid, len(running)))
        time.sleep(0.2)
        with lock:
            running.remove(gpu.uuid)
        return make_result()

    monkeypatch.setattr(runners.entry, "run_request", fake_run)
    launcher = LocalLauncher(RunnerSettings(allow_unsandboxed=True), gpus=gpus)
    launcher._gpu = ("NVIDIA H100 80GB HBM3",)
    jobs = [make_job() for _ in range(3)]

    async def main() -> None:
        await asyncio.gather(*(launcher.run(make_request(device="cuda"), job) for job in jobs))

    asyncio.run(main())
    assert len(seen) == 3 and max(n for _, n in seen) == 2
    waited = [job for job in jobs if ("progress", "queued: waiting for a free GPU") in job.log]
    assert len(waited) == 1


# ---- runs of several ranks (docs/multigpu.md) ----------------------------------------------------------------------
def test_the_local_launcher_runs_several_ranks_on_as_many_gpus_and_gives_them_back(
    monkeypatch: pytest.MonkeyPatch, make_job: Any, make_request: Any, make_result: Any
) -> None:
    import runners.entry

    got: list[list[str]] = []

    def fake_run(request, on_progress, *, settings, require_sandbox, cancel, gpus):  # type: ignore[no-untyped-def]
        got.append([g.uuid for g in gpus])
        return make_result()

    monkeypatch.setattr(runners.entry, "run_request", fake_run)
    h200s = [Gpu(index=i, uuid=f"GPU-{i}", name="NVIDIA H200", minor=i) for i in range(3)]
    launcher = LocalLauncher(RunnerSettings(allow_unsandboxed=True), gpus=h200s)
    launcher._gpu = ("NVIDIA H200",)
    job = make_job()

    async def main() -> None:
        await launcher.run(make_request(device="cuda", device_name="H200x2", world_size=2), job)
        with pytest.raises(DeviceUnavailable, match="4 ranks"):
            await launcher.run(make_request(device="cuda", device_name="H200x4", world_size=4), make_job())

    asyncio.run(main())
    assert got == [["GPU-0", "GPU-1"]]
    assert len(launcher.pool().free_gpus) == 3


def test_world_size_is_written_only_above_one_so_a_one_gpu_request_is_what_it_was(make_request: Any) -> None:
    one = make_request()
    assert "world_size" not in json.loads(one.model_dump_json())
    two = one.model_copy(update={"world_size": 2})
    assert json.loads(two.model_dump_json())["world_size"] == 2 and two.digest() != one.digest()
    assert RunRequest.model_validate_json(two.model_dump_json()).world_size == 2
    assert "world_size" not in SystemInfo().model_dump() and SystemInfo(world_size=4).model_dump()["world_size"] == 4


def test_two_processes_pools_never_share_a_gpu(tmp_path: Path) -> None:
    """Two workers on one machine (two pools over the same GPUs, each with its own open lock files: flock treats
    them as two processes) never hold one GPU at once; a GPU the other holds is waited for, not shared."""
    import subprocess
    import sys
    import textwrap

    gpus = [Gpu(index=i, uuid=f"GPU-{i}", name="H100", minor=i) for i in range(2)]
    first, second = GpuPool(gpus, tmp_path), GpuPool(gpus, tmp_path)
    first.POLL_S = second.POLL_S = 0.02

    async def main() -> None:
        a = await first.acquire()
        b = await second.acquire()
        assert a.uuid != b.uuid  # the other worker's GPU is skipped
        waiter = asyncio.ensure_future(second.acquire())
        await asyncio.sleep(0.1)
        assert not waiter.done()  # both GPUs are taken: one by each worker
        first.release(a)  # no event reaches the other pool: it finds the GPU free on its next look
        c = await asyncio.wait_for(waiter, 2.0)
        assert c.uuid == a.uuid
        both = asyncio.ensure_future(first.acquire_many(2))
        await asyncio.sleep(0.1)
        assert not both.done()  # all or none: it holds neither GPU while the other pool has them
        assert not first._locks
        second.release(b)
        second.release(c)
        assert sorted(g.index for g in await asyncio.wait_for(both, 2.0)) == [0, 1]

    asyncio.run(main())
    # a real second process sees the lock too, and it goes with the process that held it
    probe = textwrap.dedent(f"""
        import fcntl, os, sys
        fd = os.open({str(tmp_path / "GPU-0.lock")!r}, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            sys.exit(3)
    """)
    assert subprocess.run([sys.executable, "-c", probe]).returncode == 3  # held by `first`
    for gpu in list(first.gpus):
        first.release(gpu)
    assert subprocess.run([sys.executable, "-c", probe]).returncode == 0


def test_an_unusable_lock_folder_is_an_error_that_names_the_setting(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    pool = GpuPool([Gpu(index=0, uuid="GPU-0", name="H100", minor=0)], blocker / "locks")
    with pytest.raises(RuntimeError, match="KERNELCUP_GPU_LOCK_DIR"):
        asyncio.run(pool.acquire())


def test_a_run_waiting_for_a_gpu_another_process_holds_is_told_so_once(tmp_path: Path) -> None:
    from runners.gpus import HELD_ELSEWHERE

    gpus = [Gpu(index=0, uuid="GPU-0", name="H100", minor=0)]
    other, ours = GpuPool(gpus, tmp_path), GpuPool(gpus, tmp_path)
    ours.POLL_S = 0.02
    told: list[str] = []

    async def main() -> None:
        held = await other.acquire()
        waiter = asyncio.ensure_future(ours.acquire(on_wait=told.append))
        await asyncio.sleep(0.2)  # several looks at the held GPU
        assert not waiter.done() and told == [HELD_ELSEWHERE]
        other.release(held)
        await asyncio.wait_for(waiter, 2.0)
        # A wait for this pool's own busy GPU is not "another process": its caller already says the GPU is busy.
        mine = asyncio.ensure_future(ours.acquire(on_wait=told.append))
        await asyncio.sleep(0.1)
        assert not mine.done() and told == [HELD_ELSEWHERE]
        ours.release(gpus[0])
        await asyncio.wait_for(mine, 2.0)

    asyncio.run(main())


def test_kernelcup_run_takes_its_gpu_machine_wide_and_waits_while_another_process_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], make_request: Any
) -> None:
    import runners.gpus
    from kernelcup.commands import run as run_command
    from runners.gpus import HELD_ELSEWHERE

    gpus = [Gpu(index=0, uuid="GPU-0", name="H100", minor=0), Gpu(index=1, uuid="GPU-1", name="H100", minor=1)]
    monkeypatch.setattr(runners.gpus, "list_gpus", lambda: gpus)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    settings = RunnerSettings(gpu_lock_dir=tmp_path)
    worker = GpuPool(gpus, tmp_path)  # another process's pool: it has both GPUs
    held = [asyncio.run(worker.acquire()), asyncio.run(worker.acquire())]
    got: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: got.update(zip(("placement", "release"),
                                                            run_command._take_gpus([make_request()], "cuda", settings),
                                                            strict=True)))  # fmt: skip
    thread.start()
    time.sleep(1.2)
    assert thread.is_alive()  # waiting, not timing a run beside the worker's
    worker.release(held[1])
    thread.join(5.0)
    assert got["placement"] == {"gpu": held[1]}
    assert HELD_ELSEWHERE in capsys.readouterr().err
    # held for the whole command, then let go
    assert not _free_now(tmp_path, held[1])
    got["release"]()
    assert _free_now(tmp_path, held[1])
    assert run_command._take_gpus([make_request()], "cpu", settings)[0] == {}  # the CPU takes no GPU


def _free_now(folder: Path, gpu: Gpu) -> bool:
    """Whether a third process could take ``gpu`` at once."""
    pool = GpuPool([gpu], folder)
    if not pool._lock(gpu):
        return False
    pool._unlock(gpu)
    return True
