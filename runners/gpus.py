"""One GPU per run (a run of several ranks: one per rank, docs/multigpu.md): the GPUs a worker may use, and a pool
that hands each run one of them to itself.

Two runs timed on one GPU at once spoil each other's numbers (the GPU time-slices their contexts). A worker with
several slots on a machine with several GPUs therefore gives each run a GPU of its own and makes a run wait while
every GPU is busy. A run's processes see only their GPU: ``CUDA_VISIBLE_DEVICES`` names it by UUID (so CUDA's
device order does not matter), and its sandbox binds only that GPU's device node (``/dev/nvidiaN``, N its minor
number) beside the driver's shared nodes, so a submission cannot reach another GPU by changing the variable in a
child process.

The GPUs a worker may use: those in the worker's own ``CUDA_VISIBLE_DEVICES`` (indices or UUIDs) when set, else all
that ``nvidia-smi`` lists.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from runners.sysinfo import smi_query

PROC_GPUS = Path("/proc/driver/nvidia/gpus")


@dataclass(frozen=True)
class Gpu:
    index: int
    """nvidia-smi's index (PCI order)."""
    uuid: str
    name: str
    minor: int | None
    """The number of its device node ``/dev/nvidia<minor>``; None when the driver did not say."""

    @property
    def node(self) -> str | None:
        return f"/dev/nvidia{self.minor}" if self.minor is not None else None


def parse_smi(text: str, proc_gpus: Path = PROC_GPUS) -> list[Gpu]:
    """``nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader`` into GPUs, each with the minor
    number the driver gives its PCI address (``/proc/driver/nvidia/gpus/<address>/information``)."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[0].isdigit():
            continue
        index, uuid, bus = int(parts[0]), parts[1], parts[-1]
        name = ", ".join(parts[2:-1])
        gpus.append(Gpu(index=index, uuid=uuid, name=name, minor=_minor(bus, proc_gpus)))
    return gpus


def _minor(bus_id: str, proc_gpus: Path) -> int | None:
    address = bus_id.lower()[-12:]  # nvidia-smi: 00000000:17:00.0; the driver's folder: 0000:17:00.0
    try:
        text = (proc_gpus / address / "information").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Device Minor" and value.strip().isdigit():
            return int(value.strip())
    return None


def list_gpus() -> list[Gpu]:
    """This machine's NVIDIA GPUs (empty without a driver)."""
    out = smi_query("index,uuid,name,pci.bus_id")
    return parse_smi(out) if out else []


def usable(gpus: list[Gpu], environ: Mapping[str, str] = os.environ) -> list[Gpu]:
    """The GPUs the worker may use: those its own ``CUDA_VISIBLE_DEVICES`` names (by index or UUID, in its order),
    or all. A name that matches no GPU is an error that says which, rather than a silent loss of a GPU."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return list(gpus)
    chosen = []
    for item in (v.strip() for v in visible.split(",") if v.strip()):
        match = [g for g in gpus if str(g.index) == item or g.uuid == item or (item.startswith("GPU-") and
                 g.uuid.startswith(item))]  # fmt: skip
        if not match:
            known = ", ".join(f"{g.index} ({g.uuid})" for g in gpus) or "none"
            raise ValueError(f"CUDA_VISIBLE_DEVICES names {item!r}, which is no GPU of this machine (it has: {known})")
        chosen.append(match[0])
    return chosen


HELD_ELSEWHERE = "waiting for a free GPU: another kernelcup process on this machine is using it"


def _once(on_wait: Callable[[str], None] | None) -> Callable[[], None] | None:
    """``on_wait`` told :data:`HELD_ELSEWHERE` the first time it is called, and never again (None: nobody to tell)."""
    if on_wait is None:
        return None
    told: list[bool] = []

    def tell() -> None:
        if not told:
            told.append(True)
            on_wait(HELD_ELSEWHERE)

    return tell


class GpuPool:
    """Hands each run a GPU of its own; a run waits while every GPU that fits it is taken.

    ``acquire`` and ``release`` run on one event loop (the worker's), so picking a GPU and marking it taken
    happen with no await in between; a release wakes every waiter, and each looks again.

    With ``lock_dir`` (``KERNELCUP_GPU_LOCK_DIR``) a GPU is also taken machine-wide: an exclusive ``flock`` on
    ``<lock_dir>/<uuid>.lock``, held while the run has the GPU, so two worker processes (or a worker and
    ``kernelcup run``) on one machine never time two runs on one GPU either. A GPU another process holds is skipped
    and looked at again every ``POLL_S``; the lock goes with the process if it dies."""

    POLL_S = 0.5

    def __init__(self, gpus: list[Gpu], lock_dir: Path | None = None) -> None:
        self.gpus = list(gpus)
        self._free = list(gpus)
        self._wake: asyncio.Event | None = None
        self.lock_dir = lock_dir
        self._lock_dir_ready = False
        self._locks: dict[str, int] = {}

    def _event(self) -> asyncio.Event:
        if self._wake is None:  # made on first use, inside the event loop that uses it
            self._wake = asyncio.Event()
        return self._wake

    def _lock(self, gpu: Gpu) -> bool:
        """Take ``gpu`` machine-wide (True), or False while another process holds it. A lock folder that cannot be
        used is an error that says so: running unlocked could time two runs on one GPU."""
        if self.lock_dir is None:
            return True
        try:
            if not self._lock_dir_ready:  # once per pool, not on every look of a waiting run
                self.lock_dir.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(OSError):  # every user's workers share the folder, as /tmp itself
                    os.chmod(self.lock_dir, 0o1777)
                self._lock_dir_ready = True
            fd = os.open(self.lock_dir / f"{gpu.uuid}.lock", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise RuntimeError(f"the GPU lock folder {self.lock_dir} cannot be used ({exc}); set "
                               "KERNELCUP_GPU_LOCK_DIR to a folder every kernelcup process on this machine can "
                               "write") from None  # fmt: skip
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._locks[gpu.uuid] = fd
        return True

    def _unlock(self, gpu: Gpu) -> None:
        fd = self._locks.pop(gpu.uuid, None)
        if fd is not None:
            os.close(fd)  # closing the only descriptor of the open file releases its flock

    async def _wait(self, wake: asyncio.Event, held_elsewhere: bool, tell: Callable[[], None] | None) -> None:
        """Until a release here wakes us, or (a GPU that fits is another process's: ``tell`` is called) the next
        look."""
        wake.clear()
        if held_elsewhere and tell is not None:
            tell()
        if not held_elsewhere:
            await wake.wait()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wake.wait(), self.POLL_S)

    async def acquire(
        self, fits: Callable[[Gpu], bool] = lambda gpu: True, on_wait: Callable[[str], None] | None = None
    ) -> Gpu:
        """A free GPU for which ``fits`` holds, waiting for one; LookupError when none of the pool's ever fits.
        ``on_wait``: told once, the first time the wait is for a GPU another process holds (this pool's own
        callers know when its GPUs are busy)."""
        if not any(fits(g) for g in self.gpus):
            raise LookupError("no GPU of this worker fits the run")
        wake, tell = self._event(), _once(on_wait)
        while True:
            elsewhere = False
            for gpu in list(self._free):
                if fits(gpu):
                    if self._lock(gpu):
                        self._free.remove(gpu)
                        return gpu
                    elsewhere = True
            await self._wait(wake, elsewhere, tell)

    async def acquire_many(
        self, count: int, fits: Callable[[Gpu], bool] = lambda gpu: True, on_wait: Callable[[str], None] | None = None
    ) -> list[Gpu]:
        """``count`` free GPUs for which ``fits`` holds, all at once (a run of several ranks: docs/multigpu.md),
        waiting until that many are free together; never a part of them, so two waiting runs cannot each hold half.
        LookupError when the pool never has that many that fit. ``on_wait``: as for :meth:`acquire`."""
        if sum(fits(g) for g in self.gpus) < count:
            raise LookupError(f"this worker has fewer than {count} GPUs that fit the run")
        wake, tell = self._event(), _once(on_wait)
        while True:
            free = sorted((g for g in self._free if fits(g)), key=lambda g: g.index)
            taken: list[Gpu] = []
            for gpu in free:
                if len(taken) == count:
                    break
                if self._lock(gpu):
                    taken.append(gpu)
            if len(taken) == count:
                for gpu in taken:
                    self._free.remove(gpu)
                return taken
            for gpu in taken:  # all or none
                self._unlock(gpu)
            await self._wait(wake, len(free) >= count, tell)

    def release(self, gpu: Gpu) -> None:
        """Give ``gpu`` back (call on the pool's event loop, e.g. from a future's done-callback)."""
        self._unlock(gpu)
        self._free.append(gpu)
        self._event().set()

    @property
    def free_gpus(self) -> list[Gpu]:
        return list(self._free)
