"""Pre-started process sets: the next runs' two sandboxes, started while this run goes, waiting for their job.

A long-lived runner (the local launcher a worker uses, ``kernelcup run`` with several files) keeps, per GPU it owns,
one or two sets (``RunnerSettings.prestart_depth``) of the next runs' processes already started: the evaluator and
the submission process, each in a fresh sandbox exactly as strict as a cold one (same binds, namespaces and limits),
in a fresh empty job folder made for them, with ``import torch`` done (and the evaluator's calibration echo started,
which imports it too) and nothing else: no CUDA context (importing PyTorch creates none; CUDA starts when the job
arrives), so a waiting set never touches a GPU another run is timing. A job whose sandbox shape (``Shape``: device
and GPU, the interpreter, the read-only binds of its language, its memory and output limits, no profiler in front)
equals the set's is handed to the oldest such set: its files are written into the set's folder and its job (the
ranked secret among it) down the evaluator's pipe, and its time limit counts from then. Right after, the sets are
topped up again. A set is used at most once; one that does not fit the job, that waits longer than the idle limit,
or whose runner stops is killed with its folder. docs/measurement.md ("Pre-started processes") says what is reused
and why that is safe.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from dataclasses import dataclass
from datetime import datetime

from runners.entry.admission import job_dirs, new_job_root
from runners.entry.session import Launch, Shape
from runners.ipc.protocol import ClockCalibration, RBaseline
from runners.sandbox.remove import remove_tree
from runners.settings import RunnerSettings

HANDOVER_MARGIN_S = 5.0
"""A set with less than this left of its idle limit is not handed a job (its watchdog could kill it meanwhile)."""


@dataclass(frozen=True)
class TimedBaseline:
    """A baseline's timing kept by a long-lived runner: the evaluator's reports, when the last of them arrived (UTC,
    for the result; and on the runner's monotonic clock, for the reuse limit), and when the calibration they were
    corrected with was taken (``Prestarter.calibration_stamp``)."""

    reports: list[RBaseline]
    measured_at: datetime
    monotonic: float
    calibration: float


class Prestarter:
    """Up to ``depth`` waiting sets per GPU (None: a run without a GPU of its own), all of the shape last prepared
    for it, taken oldest first; thread-safe (a worker runs one run per GPU at a time, each in a thread of its own)."""

    def __init__(self, settings: RunnerSettings) -> None:
        self.idle_s = settings.prestart_idle_s
        self.job_root = settings.job_root
        self.depth = settings.prestart_depth()
        self._sets: dict[str | None, list[Launch]] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._registered = False
        self.calibration_reuse_s = settings.calibration_reuse_s
        self._calibrations: dict[str | None, tuple[ClockCalibration, float]] = {}
        self.baseline_reuse_s = settings.baseline_reuse_s
        self._baselines: dict[tuple[str | None, str, str], TimedBaseline] = {}
        self._last_group: dict[str | None, str] = {}

    def calibration(self, shape: Shape) -> tuple[ClockCalibration, float] | None:
        """The calibration the last run on ``shape``'s GPU took and how old it is (seconds), if it is younger than
        ``calibration_reuse_s``: a trusted measurement made before that run's submission loaded, of this GPU's
        window cost, which does not depend on the submission or the problem."""
        got = self.calibration_entry(shape)
        return (got[0], got[1]) if got is not None else None

    def calibration_entry(self, shape: Shape) -> tuple[ClockCalibration, float, float] | None:
        """``calibration``'s answer and, read under the same lock, when that calibration was taken (this runner's
        monotonic clock): what a kept baseline corrected with it is paired with."""
        with self._lock:
            got = self._calibrations.get(_key(shape))
        if got is None:
            return None
        age = time.monotonic() - got[1]
        return (got[0], age, got[1]) if 0 <= age < self.calibration_reuse_s else None

    def remember_calibration(self, shape: Shape, calibration: ClockCalibration, taken_at: float | None = None) -> None:
        """Keep ``calibration`` (the evaluator's report of it, or the figures alone) for the next runs on its GPU;
        ``taken_at``: when it was taken (``time.monotonic``; default now), from which its reuse limit counts."""
        figures = ClockCalibration.model_validate(calibration.model_dump(include=set(ClockCalibration.model_fields)))
        with self._lock:
            self._calibrations[_key(shape)] = (figures, time.monotonic() if taken_at is None else taken_at)

    def calibration_stamp(self, shape: Shape) -> float | None:
        """When the calibration ``calibration`` hands out for ``shape``'s GPU was taken, if it is still handed out."""
        got = self.calibration_entry(shape)
        return got[2] if got is not None else None

    def follows(self, shape: Shape, group: str, others: tuple[str, ...] = ()) -> bool:
        """Record that a run of ``group`` ('' for none) starts on ``shape``'s GPU (and, a run of several ranks, on
        the GPUs of UUIDs ``others``), and say whether the run before it on ``shape``'s GPU was of the same
        (non-empty) group: only such a run's baselines are kept, so that what another account's run left on the GPU
        (its heat, its clocks) is in no baseline lent to this group."""
        with self._lock:
            before = self._last_group.get(_key(shape))
            for key in (_key(shape), *others):
                self._last_group[key] = group
        return bool(group) and before == group

    def baselines(self, shape: Shape, group: str, key: str, calibration: float | None) -> TimedBaseline | None:
        """The reports of the baseline ``key`` (``runners.baselines.cache_key``: the problem, its cases, the timing
        settings, the GPU model, the driver, the versions) timed for a run of ``group`` on ``shape``'s GPU less than
        ``baseline_reuse_s`` ago, under the calibration taken at ``calibration`` (the one this run reuses; None: it
        takes its own, so nothing is reused): a trusted measurement of the problem's own code, made before that
        run's submission loaded, on this GPU as it is these seconds."""
        if not group or calibration is None:
            return None
        with self._lock:
            got = self._baselines.get((_key(shape), group, key))
        if got is None or got.calibration != calibration:
            return None
        if not 0 <= time.monotonic() - got.monotonic < self.baseline_reuse_s:
            return None
        return got

    def remember_baselines(self, shape: Shape, group: str, key: str, kept: TimedBaseline) -> None:
        """Keep a baseline's reports (every case timed, none failed) for the next runs of ``group`` on its GPU; what
        is past its reuse limit is dropped meanwhile."""
        if self.baseline_reuse_s <= 0 or not group:
            return
        now = time.monotonic()
        with self._lock:
            self._baselines = {k: v for k, v in self._baselines.items() if now - v.monotonic < self.baseline_reuse_s}
            self._baselines[(_key(shape), group, key)] = kept

    def take(self, shape: Shape) -> Launch | None:
        """The oldest waiting set for ``shape``'s GPU if it fits ``shape`` and still waits (it is then this caller's,
        to hand its job over and stop); else None. Sets that do not fit (another shape) or wait no longer are
        killed."""
        with self._lock:
            queue = self._sets.get(_key(shape), [])
            stale = _prune(queue, shape, HANDOVER_MARGIN_S)
            launch = queue.pop(0) if queue else None
        for old in stale:
            discard(old)
        return launch

    def prepare(self, shape: Shape, helpers: tuple[str, ...] = ()) -> None:
        """Start sets for ``shape`` until ``depth`` wait on its GPU (sets of another shape there are killed);
        ``helpers``: the evaluator's helper processes to start with each (``echo`` for a timed run)."""
        with self._lock:
            if self._closed:
                return
            queue = self._sets.setdefault(_key(shape), [])
            stale = _prune(queue, shape)
            missing = self.depth - len(queue)
            if not self._registered:  # a runner that exits without close() still takes its sets (and folders) along
                atexit.register(self.close)
                self._registered = True
        for old in stale:
            discard(old)
        for _ in range(missing):
            self._start_one(shape, helpers)

    def _start_one(self, shape: Shape, helpers: tuple[str, ...]) -> None:
        root = new_job_root(self.job_root)
        try:
            launch = Launch(shape, job_dirs(root, shape.shared_ro), idle_s=self.idle_s, helpers=helpers)
        except BaseException:
            remove_tree(root)
            raise
        launch.start()
        with self._lock:
            closed = self._closed
            if not closed:
                self._sets.setdefault(_key(shape), []).append(launch)
        if closed:
            discard(launch)

    def waiting(self) -> int:
        """How many sets are waiting now."""
        with self._lock:
            return sum(1 for queue in self._sets.values() for launch in queue if launch.waiting())

    def close(self) -> None:
        """Kill every waiting set (the runner stops); later ``prepare`` calls start nothing."""
        with self._lock:
            self._closed = True
            sets = [launch for queue in self._sets.values() for launch in queue]
            self._sets = {}
        for launch in sets:
            discard(launch)


def _prune(queue: list[Launch], shape: Shape, margin_s: float = 0.0) -> list[Launch]:
    """Take out of ``queue`` (in place) the sets that do not fit ``shape`` or no longer wait (with ``margin_s`` of
    their idle limit left); returns them, to be discarded outside the lock."""
    stale = [launch for launch in queue if launch.shape != shape or not launch.waiting(margin_s)]
    queue[:] = [launch for launch in queue if launch not in stale]
    return stale


def _key(shape: Shape) -> str | None:
    return shape.gpu.uuid if shape.gpu is not None else None


def discard(launch: Launch) -> None:
    """Kill a set that will never get a job, and remove its folder."""
    launch.stop(join_s=10.0)
    with contextlib.suppress(Exception):
        remove_tree(launch.dirs.root)
