"""The wiring of a run of several ranks (runners/entry/ranks.py), without processes: which descriptors and variables
each rank's evaluator and the submission's sandbox get, and that the parent closes its copies of the ends a process
holds once it has started, and the rest at the end (test_multigpu.py runs the ranks themselves)."""

from __future__ import annotations

import os

import pytest

from runners.entry.ranks import NCCL_ENV, _Wiring, evaluator_env, submission_env
from runners.gpus import Gpu
from runners.ipc.wiring import GATE_FD_ENV, GROUP_FDS_ENV, RANK_DEVICES_ENV, RANK_FDS_ENV, SOCKET_FD_ENV
from runners.oracle.base import JOB_FD_ENV, REPORT_FD_ENV


def test_rank_0_alone_gets_the_report_pipe_and_every_rank_its_job_socket_and_group() -> None:
    env, fds = evaluator_env(0, job_fd=10, sub_fd=11, group_fds=[12, 13], report_fd=9, gate_fd=20, on_gpu=True)
    assert env == {JOB_FD_ENV: "10", SOCKET_FD_ENV: "11", GROUP_FDS_ENV: "12,13", REPORT_FD_ENV: "9",
                   GATE_FD_ENV: "20"}  # fmt: skip
    assert fds == [10, 11, 12, 13, 9, 20]
    env, fds = evaluator_env(1, job_fd=14, sub_fd=15, group_fds=[16], report_fd=9, gate_fd=20, on_gpu=True)
    assert REPORT_FD_ENV not in env and 9 not in fds and env[GROUP_FDS_ENV] == "16" and fds == [14, 15, 16, 20]


def test_on_the_cpu_no_start_word_and_the_checks_run_on_one_passive_thread() -> None:
    env, fds = evaluator_env(1, job_fd=14, sub_fd=15, group_fds=[16], report_fd=9, gate_fd=-1, on_gpu=False)
    assert GATE_FD_ENV not in env and -1 not in fds
    assert env["OMP_NUM_THREADS"] == "1" and env["OMP_WAIT_POLICY"] == "PASSIVE"
    env, _ = evaluator_env(1, job_fd=14, sub_fd=15, group_fds=[16], report_fd=9, gate_fd=20, on_gpu=True)
    assert "OMP_NUM_THREADS" not in env


def test_the_submission_sandbox_gets_each_ranks_socket_and_device_or_its_share_of_the_cores() -> None:
    gpus = [Gpu(index=i, uuid=f"GPU-{i}", name="NVIDIA H200", minor=i) for i in range(2)]
    env = submission_env({"LANG_ENV": "x"}, [30, 31], gpus, on_gpu=True, cpus=16)
    assert env == {"LANG_ENV": "x", **NCCL_ENV, RANK_FDS_ENV: "30,31", RANK_DEVICES_ENV: "GPU-0,GPU-1"}
    env = submission_env({}, [30, 31, 32], None, on_gpu=False, cpus=16)
    assert env[RANK_FDS_ENV] == "30,31,32" and env["OMP_NUM_THREADS"] == "5" and RANK_DEVICES_ENV not in env
    assert submission_env({}, [30, 31], None, on_gpu=False, cpus=1)["OMP_NUM_THREADS"] == "1"
    assert env["NCCL_NVLS_ENABLE"] == "0"  # the lent machines' rule: never NVLink multicast


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.mark.parametrize("on_gpu", [False, True])
def test_each_process_holds_its_own_ends_and_the_parent_releases_them(on_gpu: bool) -> None:
    wiring = _Wiring(3, on_gpu)
    try:
        assert (wiring.gate >= 0) is on_gpu and len(wiring.group) == 2 and len(wiring.subs) == 3
        assert wiring.held(0) == [wiring.subs[0][0], wiring.group[0][0], wiring.group[1][0]]
        assert wiring.held(2) == [wiring.subs[2][0], wiring.group[1][1]]
        assert wiring.report_w in wiring.ends["rank0"] and wiring.report_w not in wiring.ends["rank1"]
        assert wiring.ends["submission"] == [pair[1] for pair in wiring.subs]
        env, fds = wiring.evaluator(1, on_gpu)
        job_r = wiring.jobs[1][0]
        assert env[JOB_FD_ENV] == str(job_r) and os.get_inheritable(job_r) and fds[0] == job_r
        wiring.started("rank1")  # rank 1 has started: the parent's copies of its ends are closed
        assert not _open(job_r) and job_r not in wiring.fds and wiring.group[0][1].fileno() == -1
        assert wiring.ends["rank1"] == [] and _open(wiring.report_w)
    finally:
        wiring.close()
    assert not any(_open(fd) for fd in (wiring.report_r, wiring.report_w, wiring.jobs[0][1]))
    assert all(s.fileno() == -1 for s in wiring.sockets)
