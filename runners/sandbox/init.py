"""The sandbox's first process: set limits, start the command, reap everything it leaves behind.

Run as ``python -I -S init.py CONFIG_JSON`` by :func:`runners.sandbox.run_sandboxed`, *outside* bubblewrap and
before any untrusted code runs. It uses the standard library only (``-I -S`` skips site-packages for a fast start).
Why a separate process rather than ``preexec_fn``: ``preexec_fn`` is unsafe in a threaded parent (the worker runs
evaluations in threads), and this process can also act as a child subreaper, so that grandchildren which
double-fork or ``setsid()`` out of the process group are re-parented here and killed when the command ends.

CONFIG_JSON: {"argv": [...], "cgroup_procs": [paths], "rlimits": {"RLIMIT_FSIZE": n, ...}, "parent_pid": pid,
"ready_fd": fd, "status_fd": fd}; on ready_fd it writes one byte, b"J" when it joined every cgroup, b"N" when not,
then closes it. On status_fd it writes, as it ends, how its command ended: b"exit N" or b"signal N". Exit status: the
command's (a command killed by signal N kills this process with signal N too); so a SIGKILL with nothing on status_fd
is a kill of this process itself, which nothing inside the sandbox can send (it is outside its pid namespace).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import signal
import sys
import time

_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1


def _children(pid: int) -> list[int]:
    """Direct children of ``pid``, from /proc (no psutil here: the standard library only)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:  # kernel without CONFIG_PROC_CHILDREN: scan every process's parent
        pass
    except OSError:
        return []
    kids: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                kids.append(int(entry))
    return kids


def _kill_leftovers(me: int) -> None:
    """SIGKILL every process still below us (orphans come to us as subreaper), until none is left."""
    for _ in range(10_000):
        kids = _children(me)
        if not kids:
            try:
                while os.waitpid(-1, os.WNOHANG)[0] > 0:
                    pass
            except ChildProcessError:
                return
            time.sleep(0.001)
            continue
        for kid in kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(kid, signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return


def main(config_json: str) -> None:
    config = json.loads(config_json)
    me = os.getpid()
    joined = True
    for procs in config.get("cgroup_procs", []):
        # Join the run's cgroups before anything else exists, so nothing can start outside them.
        try:
            with open(procs, "w") as f:
                f.write(str(me))
        except OSError as exc:
            joined = False
            os.write(2, f"kernelcup-sandbox: could not join {procs}: {exc.strerror}\n".encode())
    for name, value in config.get("rlimits", {}).items():
        res = getattr(resource, name)
        _soft, hard = resource.getrlimit(res)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(res, (value, value))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # If the parent (the runner) dies, take the whole tree down with us.
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != config.get("parent_pid", os.getppid()):
        os._exit(125)

    ready_fd = config.get("ready_fd")
    if ready_fd is not None:
        # Tell the runner whether its cgroup counters describe this run (else it watches the process tree).
        os.write(ready_fd, b"J" if joined else b"N")
        os.close(ready_fd)

    argv = config["argv"]
    if config.get("status_fd") is not None:
        os.set_inheritable(config["status_fd"], False)  # ours alone: never bubblewrap's nor the submission's to write
    child = os.fork()
    if child == 0:
        # The command dies with us too (bubblewrap's --die-with-parent does the same for the sandbox inside).
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"kernelcup-sandbox: cannot start {argv[0]!r}: {exc}\n".encode())
        os._exit(127)

    status = None
    while status is None:
        try:
            pid, st = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            break
        if pid == child:
            status = st
    _kill_leftovers(me)
    if status is None:
        os._exit(125)
    status_fd = config.get("status_fd")
    if status_fd is not None:
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.waitstatus_to_exitcode(status)}"
        with contextlib.suppress(OSError):
            os.write(status_fd, how.encode())
            os.close(status_fd)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(me, sig)
        time.sleep(1)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main(sys.argv[1])
