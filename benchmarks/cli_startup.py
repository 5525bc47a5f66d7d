"""How long ``kernelcup --help`` takes to start (issue 15: under 0.5 s), against Python and Typer alone.

Each command runs --runs times as a fresh process (``python -m kernelcup --help``, so the checkout's code is timed
whether or not it is installed); the median wall time of each is printed. ``python -c "import typer.rich_utils"`` is
the floor: Typer with its Rich help, which any Typer CLI pays. Each line gives the median wall time and the median
CPU time (user + system) of the process; on a machine busy with other work the CPU time is what an idle machine's
wall time would be, near enough (a start-up does no I/O waits to speak of). The target is checked against the
median wall time of ``kernelcup --help``, or with ``--cpu`` against its CPU time.

    .venv/bin/python benchmarks/cli_startup.py            # median of 10 runs; exit status 1 when over 0.5 s
    .venv/bin/python benchmarks/cli_startup.py --cpu      # the target on CPU time (a machine busy with other work)
    .venv/bin/python benchmarks/cli_startup.py --root /tmp/old   # time another checkout's code (before and after)

The console script loads each command's modules only when that command runs (``kernelcup.cli.LazyGroup``), so
``--help``, ``--version`` and ``version`` import no command module; ``python -X importtime -m kernelcup --help``
shows what remains.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.5

COMMANDS = {
    "python (no imports)": [sys.executable, "-c", "pass"],
    "typer with Rich help (the floor)": [sys.executable, "-c", "import typer.rich_utils"],
    "kernelcup --help": [sys.executable, "-m", "kernelcup", "--help"],
    "kernelcup --version": [sys.executable, "-m", "kernelcup", "--version"],
    "kernelcup run --help": [sys.executable, "-m", "kernelcup", "run", "--help"],
    "kernelcup leaderboard --help": [sys.executable, "-m", "kernelcup", "leaderboard", "--help"],
}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def medians_s(command: list[str], runs: int, root: Path = ROOT) -> tuple[float, float]:
    """(median wall time, median CPU time) of ``runs`` fresh processes of ``command``, run in ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    wall, cpu = [], []
    for _ in range(runs):
        cpu_before = _children_cpu_s()
        started = time.perf_counter()
        subprocess.run(command, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        wall.append(time.perf_counter() - started)
        cpu.append(_children_cpu_s() - cpu_before)
    return statistics.median(wall), statistics.median(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (default 10)")
    parser.add_argument("--cpu", action="store_true", help="check the target against the CPU time, not wall time")
    parser.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout whose code is timed (default: this one's)"
    )
    args = parser.parse_args()
    results = {name: medians_s(command, args.runs, args.root) for name, command in COMMANDS.items()}
    for name, (wall, cpu) in results.items():
        print(f"{name:<36} median of {args.runs}: {wall * 1000:6.0f} ms wall, {cpu * 1000:6.0f} ms CPU")
    help_s = results["kernelcup --help"][1 if args.cpu else 0]
    verdict = "meets" if help_s <= TARGET_S else "misses"
    measure = "CPU time" if args.cpu else "wall time"
    print(
        f"kernelcup --help {verdict} the {TARGET_S * 1000:.0f} ms target on {measure} ({os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f})"
    )
    return 0 if help_s <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
