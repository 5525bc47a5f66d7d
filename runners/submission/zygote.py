"""``python -m runners.submission.zygote``: one interpreter that imports PyTorch once and forks the evaluator's helper
processes from it (on the CPU: the calibration echo, the baseline process, the baselines' echo).

Each helper is the submission program serving the evaluator's own trusted code (``runners.submission.serve``), as
``python -m runners.submission`` would be, but without its own second of ``import torch``. The zygote is started by
the evaluator (``runners.oracle.helpers``) with the helpers' environment (``helper_env``: the submission's OpenMP
threads, not the evaluator's single passive one, which GNU OpenMP reads once, when PyTorch loads it: issue 31). It
forks before anything runs a parallel region or starts a thread (NumPy's OpenBLAS pool aside: it stops itself around
a fork); where another thread exists all the same, each child executes a fresh ``python -m runners.submission``
instead (correct, only slower).

The zygote stays the helpers' parent and never reaps them until the evaluator lets go of it (end of file on its
hold pipe): a helper that ended stays a zombie, so the pid the evaluator kills can never be another process's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback

from runners.ipc.wiring import SOCKET_FD_ENV, ZYGOTE_ENV, ZYGOTE_HOLD_ENV, ZYGOTE_PIDS_ENV


def parse(spec: str) -> list[tuple[str, int]]:
    """``name:fd,name:fd`` as pairs; a name is a plain folder name (no path), a descriptor a number."""
    helpers = []
    for item in filter(None, spec.split(",")):
        name, _, fd = item.partition(":")
        if not name or "/" in name or name in (".", "..") or not fd.isdigit():
            raise ValueError(f"bad helper {item!r} in {ZYGOTE_ENV}")
        helpers.append((name, int(fd)))
    return helpers


def _threads() -> int:
    """This process's threads (0 where /proc cannot tell)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _child(name: str, fd: int, others: list[int], forkable: bool) -> int:
    """In the forked helper: its own descriptors only, its own folder, then the submission program's main."""
    for other in others:
        with contextlib.suppress(OSError):
            os.close(other)
    os.chdir(name)
    os.environ[SOCKET_FD_ENV] = str(fd)
    if not forkable:  # a fork of a threaded process keeps locks other threads held: a fresh interpreter instead
        os.execv(sys.executable, [sys.executable, "-m", "runners.submission"])
    from runners.submission import serve

    return serve.main()


def main() -> int:
    helpers = parse(os.environ.pop(ZYGOTE_ENV, ""))
    pids_fd = int(os.environ.pop(ZYGOTE_PIDS_ENV))
    hold_fd = int(os.environ.pop(ZYGOTE_HOLD_ENV))
    # NumPy's OpenBLAS starts its thread pool when it loads and stops it around a fork (its pthread_atfork
    # handlers): those threads are allowed. Any other thread (an OpenMP pool after a parallel region) is not.
    alone = _threads() == 1
    with contextlib.suppress(ImportError):
        import numpy  # noqa: F401
    allowed = _threads()
    import torch  # noqa: F401  (the one import the helpers share)

    import runners.submission.serve  # noqa: F401  (and the program they run)

    forkable = alone and _threads() == allowed
    sys.stdout.flush()
    sys.stderr.flush()
    pids: list[tuple[str, int]] = []
    for name, fd in helpers:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                others = [pids_fd, hold_fd, *(other for _, other in helpers if other != fd)]
                code = _child(name, fd, others, forkable)
            except BaseException:
                traceback.print_exc()
            finally:
                with contextlib.suppress(Exception):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        pids.append((name, pid))
        os.write(pids_fd, f"{name} {pid}\n".encode())  # at once: should a later fork fail, this one is known
    os.close(pids_fd)
    for _, fd in helpers:
        os.close(fd)
    with contextlib.suppress(OSError):
        while os.read(hold_fd, 4096):  # until the evaluator lets go (or is gone)
            pass
    for _, pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
