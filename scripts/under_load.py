"""Run a command on a machine made busy on purpose: the load a worker that compiles ahead, runs several slots or
shares its host puts on the runner (issue 37).

    python scripts/under_load.py [--per-core N] [--cores 0,1] -- CMD [ARG...]

Starts N busy processes pinned to each core (``os.sched_setaffinity``; every core this process may use, or those
given), runs CMD, and stops them when it ends (or when this script is interrupted). Exits with CMD's status. The busy
processes spin at normal priority, so CMD competes for every core as it would on a loaded host:

    .venv/bin/python scripts/under_load.py --per-core 4 -- .venv/bin/python -m pytest -q tests/runners/bad_submissions
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from multiprocessing import Process


def _spin(core: int) -> None:
    os.sched_setaffinity(0, {core})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        pass


def _cores(text: str | None) -> list[int]:
    allowed = sorted(os.sched_getaffinity(0))
    if not text:
        return allowed
    wanted = [int(part) for part in text.split(",") if part.strip()]
    missing = [c for c in wanted if c not in allowed]
    if missing:
        raise SystemExit(f"under_load: cores {missing} are not among this process's cores {allowed}")
    return wanted


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        print(__doc__, file=sys.stderr)
        return 2
    split = args.index("--")
    parser = argparse.ArgumentParser(prog="under_load.py", description="Run a command under artificial CPU load.")
    parser.add_argument("--per-core", type=int, default=2, help="busy processes per core (default 2)")
    parser.add_argument("--cores", default=None, help="comma-separated cores to load (default: all allowed)")
    opts = parser.parse_args(args[:split])
    command = args[split + 1 :]
    if not command or opts.per_core < 0:
        parser.error("give a command after --, and --per-core of 0 or more")
    cores = _cores(opts.cores)
    spinners = [Process(target=_spin, args=(core,), daemon=True) for core in cores for _ in range(opts.per_core)]
    for p in spinners:
        p.start()
    print(f"under_load: {len(spinners)} busy processes ({opts.per_core} on each of cores {cores})", file=sys.stderr)
    start = time.monotonic()
    child = None
    try:
        child = subprocess.Popen(command)
        status = child.wait()
    except KeyboardInterrupt:
        status = 130
        if child is not None:
            child.send_signal(signal.SIGINT)
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
    finally:
        for p in spinners:
            p.terminate()
        for p in spinners:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
    load = os.getloadavg()[0]
    print(f"under_load: the command exited {status} after {time.monotonic() - start:.0f} s (load average now "
          f"{load:.1f})", file=sys.stderr)  # fmt: skip
    return status


if __name__ == "__main__":
    raise SystemExit(main())
