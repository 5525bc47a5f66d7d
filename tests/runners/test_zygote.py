"""The evaluator's helpers forked from one zygote on the CPU (runners/oracle/helpers.py, runners/submission/zygote.py):
each is a helper as a fresh one would be (its own folder and socket, the helpers' threads rather than the
evaluator's single passive one), handled as a process is (kill, poll, wait), and a zygote that finds a thread it
cannot fork safely past starts fresh interpreters instead."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from runners.ipc.protocol import Hello
from runners.oracle.base import HELPER_THREADS_ENV
from runners.oracle.helpers import Forked, start_helpers
from runners.submission.zygote import parse

NAMES = ["echo", "baseline", "echo-baselines"]


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def _environ(pid: int) -> dict[str, str]:
    pairs = (item.partition("=") for item in Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0") if item)
    return {k: v for k, _, v in pairs}


@pytest.fixture
def evaluator_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment the entry gives a CPU evaluator: one passive OpenMP thread of its own, the submission's
    thread count for its helpers."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setenv(HELPER_THREADS_ENV, "3")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))


def _start(tmp_path: Path, names: list[str] = NAMES) -> dict[str, tuple[Forked, object]]:
    helpers = start_helpers(tmp_path, names, fork=True)
    for _, peer in helpers.values():
        peer.expect(Hello, 60)  # type: ignore[attr-defined]
    return helpers  # type: ignore[return-value]


def test_helpers_are_forked_from_one_zygote_with_the_helpers_threads(tmp_path: Path, evaluator_env: None) -> None:
    helpers = _start(tmp_path)
    try:
        procs = {name: proc for name, (proc, _) in helpers.items()}
        assert all(isinstance(p, Forked) for p in procs.values())
        pids = {name: p.zygote.pid(name, 5) for name, p in procs.items()}
        zygote = next(iter(procs.values())).zygote.proc.pid
        assert len(set(pids.values())) == 3
        for name, pid in pids.items():
            assert pid is not None
            assert _cmdline(pid)[1:3] == ["-m", "runners.submission.zygote"]  # forked, not a new interpreter
            stat = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            assert int(stat[1]) == zygote  # the zygote is its parent
            assert os.readlink(f"/proc/{pid}/cwd") == str(tmp_path / name)  # its own folder
            env = _environ(pid)  # what OpenMP read when the zygote loaded PyTorch
            assert env["OMP_NUM_THREADS"] == "3" and "OMP_WAIT_POLICY" not in env
    finally:
        for proc, _ in helpers.values():
            proc.kill()


def test_a_killed_helper_ends_alone_and_the_zygote_goes_with_the_last(tmp_path: Path, evaluator_env: None) -> None:
    helpers = _start(tmp_path)
    echo, baseline, other = (helpers[n][0] for n in NAMES)
    zygote = echo.zygote
    assert echo.poll() is None
    echo.kill()
    assert echo.wait(10) == -9 and echo.poll() == -9
    assert baseline.poll() is None and other.poll() is None and zygote.proc.poll() is None
    baseline.kill()
    other.kill()
    assert zygote.proc.wait(10) is not None
    assert baseline.wait(10) == -9 and other.wait(10) == -9


def test_a_helper_whose_evaluator_closes_its_socket_exits(tmp_path: Path, evaluator_env: None) -> None:
    helpers = _start(tmp_path)
    try:
        proc, peer = helpers["baseline"]
        peer.close()  # type: ignore[attr-defined]
        assert proc.wait(30) == -9  # (ended; its status is the zygote's)
        assert helpers["echo"][0].poll() is None
    finally:
        for proc, _ in helpers.values():
            proc.kill()


def test_a_zygote_with_a_stray_thread_starts_fresh_interpreters(tmp_path: Path, evaluator_env: None) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
    )
    os.environ["PYTHONPATH"] += os.pathsep + str(site)
    helpers = _start(tmp_path, ["echo", "baseline"])
    try:
        for name, (proc, _) in helpers.items():
            pid = proc.zygote.pid(name, 5)  # type: ignore[attr-defined]
            assert pid is not None and _cmdline(pid)[1:3] == ["-m", "runners.submission"]
    finally:
        for proc, _ in helpers.values():
            proc.kill()


def test_one_helper_or_a_gpu_run_starts_plain_interpreters(tmp_path: Path, evaluator_env: None) -> None:
    for helpers in (start_helpers(tmp_path, ["echo"], fork=True), start_helpers(tmp_path, NAMES, fork=False)):
        try:
            assert not any(isinstance(p, Forked) for p, _ in helpers.values())
            assert all(_cmdline(p.pid)[1:3] == ["-m", "runners.submission"] for p, _ in helpers.values())  # type: ignore[attr-defined]
        finally:
            for proc, _ in helpers.values():
                proc.kill()
                proc.wait(10)


def test_only_known_helpers_start() -> None:
    assert start_helpers(Path("/nonexistent"), ["nope", "../x"], fork=True) == {}


@pytest.mark.parametrize("spec", ["echo", "echo:x", "../a:3", "a/b:3", ":3", ".:3"])
def test_the_zygote_refuses_a_bad_helper_list(spec: str) -> None:
    with pytest.raises(ValueError, match="bad helper"):
        parse(spec)


def test_the_zygote_reads_its_helper_list() -> None:
    assert parse("echo:5,baseline:7,") == [("echo", 5), ("baseline", 7)]
    assert sys.executable  # (the zygote runs the evaluator's own interpreter)


def _running_in(folder: Path) -> list[int]:
    """The live (not zombie) processes whose working directory is in ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if state not in ("Z", "X") and cwd.startswith(str(folder)):
            found.append(int(entry.name))
    return found


def test_helpers_let_go_before_their_pids_are_known_die_with_the_zygote(tmp_path: Path, evaluator_env: None) -> None:
    """Killed while the zygote still imports PyTorch (no pid known yet): the children it forks after are killed
    with its process group, not left running until the evaluator exits (red team, 2026-11-29)."""
    helpers = start_helpers(tmp_path, NAMES, fork=True)
    zygote = next(iter(helpers.values()))[0].zygote  # type: ignore[attr-defined]
    assert zygote.pids == {}
    helpers["echo"][0].kill()  # let go before it was forked: the zygote forks it all the same
    for name in NAMES[1:]:
        helpers[name][1].expect(Hello, 60)  # type: ignore[attr-defined]
    for name in NAMES[1:]:
        helpers[name][0].kill()
    assert zygote.proc.wait(10) is not None
    import time

    deadline = time.monotonic() + 10
    while _running_in(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running_in(tmp_path) == []


def test_a_spare_that_ended_is_let_go_with_its_zygote(tmp_path: Path, evaluator_env: None) -> None:
    """A pre-started helper found dead when the job arrives is replaced and let go, so its zygote does not idle
    (holding its zombies) until the evaluator exits."""
    from types import SimpleNamespace

    from runners.oracle.benchmark import Benchmarking

    spares = _start(tmp_path, ["echo", "baseline"])
    zygote = spares["echo"][0].zygote
    for name in ("echo", "baseline"):
        os.kill(zygote.pid(name, 5), 9)  # type: ignore[arg-type]
        assert spares[name][0].wait(10) == -9
    fake = SimpleNamespace(spares=dict(spares), workdir=tmp_path, job=SimpleNamespace(device="cpu"))
    fresh = Benchmarking._start_helpers(fake, ["echo", "baseline"])  # type: ignore[arg-type]
    try:
        assert zygote.released and zygote.proc.wait(10) is not None
        assert all(p.zygote is not zygote for p, _ in fresh.values())  # type: ignore[attr-defined]
    finally:
        for proc, _ in fresh.values():
            proc.kill()
