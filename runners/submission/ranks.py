"""``python -m runners.submission.ranks``: start the ranks of one submission, inside its one sandbox.

A run of several ranks (docs/multigpu.md) puts every rank's submission process in one sandbox, so that they share a
loopback-only network namespace, a ``/dev/shm`` and the run's GPUs, and nothing else. This launcher is the first
process there: it starts ``python -m runners.submission`` once per rank, each with its own socket to its rank's
evaluator, its GPU (``CUDA_VISIBLE_DEVICES``: only its own, seen as device 0) and the variables
``torch.distributed.init_process_group()`` reads (``env://``), then waits for them. It is no more trusted than
the ranks it starts: the evaluators decide everything.
"""

from __future__ import annotations

import os
import subprocess
import sys

from runners.ipc.wiring import RANK_DEVICES_ENV, RANK_FDS_ENV, SOCKET_FD_ENV

MASTER_PORT = 29500
"""Where rank 0's rendezvous store listens: on the sandbox's own loopback, so no other run's can collide."""


def rank_env(rank: int, world_size: int, fd: int, device: str | None) -> dict[str, str]:
    """The variables a rank's process gets on top of the sandbox's environment."""
    env = {
        SOCKET_FD_ENV: str(fd),
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_WORLD_SIZE": str(world_size),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(MASTER_PORT),
    }
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = device
    return env


def main() -> int:
    fds = [int(x) for x in os.environ.pop(RANK_FDS_ENV, "").split(",") if x]
    devices_text = os.environ.pop(RANK_DEVICES_ENV, None)
    devices = devices_text.split(",") if devices_text is not None else None
    if not fds or (devices is not None and len(devices) != len(fds)):
        print("runners.submission.ranks: the runner gave no rank sockets, or not one GPU per rank", file=sys.stderr)
        return 2
    procs = []
    for rank, fd in enumerate(fds):
        env = {**os.environ, **rank_env(rank, len(fds), fd, devices[rank] if devices is not None else None)}
        procs.append(subprocess.Popen([sys.executable, "-m", "runners.submission"], env=env, pass_fds=(fd,)))
        os.close(fd)
    return wait_all(procs)


def wait_all(procs: list[subprocess.Popen[bytes]]) -> int:
    """Wait for every rank; the first that fails (an exit code, a signal) ends the others and this launcher, so the
    sandbox ends with it. A rank killed by another (one PID namespace) left its evaluator waiting out the whole time
    limit: the sandbox's first process still held that rank's socket (red team, 2026-11-24)."""
    alive = {p.pid: p for p in procs}
    while alive:
        pid, status = os.wait()
        if alive.pop(pid, None) is None:
            continue  # an orphan the sandbox's init handed us
        code = os.waitstatus_to_exitcode(status)
        if code:
            for p in alive.values():
                p.kill()
            return code if code > 0 else 128 - code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
