"""What the evaluator's parts share: the pipe names the entry sets, the failure that ends a job (:class:`Fatal`,
with whose fault it is), the ranked per-call seeds, the report channel and small helpers over inputs."""

from __future__ import annotations

import hashlib
import hmac
import os
import time
import traceback
from typing import Any

from runners.contract import Verdict

REPORT_FD_ENV = "KERNELCUP_REPORT_FD"
JOB_FD_ENV = "KERNELCUP_JOB_FD"
PRESTART_ENV = "KERNELCUP_PRESTARTED"
HELPER_THREADS_ENV = "KERNELCUP_HELPER_OMP_NUM_THREADS"
"""On the CPU: the ``OMP_NUM_THREADS`` the submission process runs with ('' for none), which the evaluator's helpers
(the echo, the baseline process) get instead of the evaluator's own single passive thread."""
EVALUATOR_ONLY_ENV = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")
"""What the entry sets for the evaluator alone on the CPU (its checks must not leave threads spinning)."""
"""Set (to the helpers to start, comma-separated) for an evaluator started before its job: it starts them and
imports PyTorch, then waits for the job on its pipe."""
PROBLEM_DIR = "problem"
MIB = 1024 * 1024
DEFAULT_HEAP = 32 * 1024 * MIB
"""A submission-protocol process's GPU memory unless the runner says otherwise (and never more than half the free)."""


class Fatal(Exception):
    def __init__(self, verdict: Verdict, message: str, fault: str, compile_output: str = "") -> None:
        super().__init__(message)
        self.verdict, self.message, self.fault, self.compile_output = verdict, message, fault, compile_output


MAX_DERIVED_SEED = 2**31 - 1
"""The largest seed a timed call gets: within what every seeding API takes (a positive int32, ``np.random.seed``,
``random.seed``, ``torch.manual_seed``). Nothing is lost by so few bits: each call's seed is an HMAC of the run's
secret, so knowing one (by a search over the generator) tells nothing of the next."""


def derive_seed(secret: int | str, case: int, call: int) -> int:
    """The seed of one timed call: unpredictable without the secret, reproducible with it."""
    digest = hmac.new(str(secret).encode(), f"{case}:{call}".encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:4], "big") & MAX_DERIVED_SEED


class Reporter:
    """One JSON line per report on the pipe to the entry."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def send(self, report: Any) -> None:
        data = (report.model_dump_json() + "\n").encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]


def since(t0: float) -> float:
    return time.perf_counter() - t0


def case_text(case: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in case.items())[:200]


def trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]


def clone(torch: Any, data: Any) -> Any:
    if isinstance(data, torch.Tensor):
        return data.clone()
    if isinstance(data, tuple | list):
        return type(data)(clone(torch, x) for x in data)
    if isinstance(data, dict):
        return {k: clone(torch, v) for k, v in data.items()}
    return data


def tensor_bytes(torch: Any, data: Any, cuda: bool) -> int:
    if isinstance(data, torch.Tensor):
        return -(-data.numel() * data.element_size() // 512) * 512 + 512 if data.is_cuda == cuda else 0
    if isinstance(data, tuple | list):
        return sum(tensor_bytes(torch, x, cuda) for x in data)
    if isinstance(data, dict):
        return sum(tensor_bytes(torch, x, cuda) for x in data.values())
    return 0
