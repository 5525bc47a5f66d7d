"""A no-op job for `kernelcup runners check`: run a trivial submission through a route end to end and say whether the
route would be trusted, that is whether its result answers the request and ran in the sandbox.

The job is pure Python (an identity "kernel" over a short list, in test mode), so it needs no GPU, no PyTorch and
no compiler: it proves the launcher, the runner's entry point and the sandbox, not the kernel toolchains. It goes
through the same check the worker applies to every result (``RunResult.mismatch``), so a route reported ok here is
one whose results the worker stores.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass

from runners.contract import Language, Limits, Mode, ProgressEvent, RunRequest, SubmissionFile, Verdict
from runners.launchers.base import Launcher

REFERENCE = """\
def generate_input(size, seed):
    return [(seed + i) % 97 for i in range(size)]

def ref_kernel(data):
    return list(data)

def check_implementation(data, output):
    return list(output) == list(data), "the no-op job's identity kernel returned something else"
"""

SUBMISSION = b"def custom_kernel(data):\n    return list(data)\n"


def noop_request(device_name: str, timeout_s: float) -> RunRequest:
    """The no-op job's request: one test case, test mode, on the CPU, with a fresh nonce."""
    return RunRequest(
        problem="kernelcup-runner-check",
        lang=Language.PYTHON,
        mode=Mode.TEST,
        files={"reference.py": REFERENCE},
        submission=SubmissionFile(name="submission.py", content=SUBMISSION),
        tests=[{"size": 8, "seed": 1}],
        device="cpu",
        device_name=device_name,
        limits=Limits(run_timeout_s=max(1.0, timeout_s), compile_timeout_s=0),
        nonce=secrets.token_hex(16),
    )


@dataclass(frozen=True)
class ProbeOutcome:
    ok: bool
    sandboxed: bool
    message: str


class _ProbeJob:
    """A job handle that keeps nothing durable: the probe never re-attaches."""

    def __init__(self) -> None:
        self.remote_ref: str | None = None
        self.phases: list[str] = []

    async def set_remote_ref(self, ref: str) -> None:
        self.remote_ref = ref

    async def progress(self, event: ProgressEvent) -> None:
        self.phases.append(event.phase.value)


async def probe(launcher: Launcher, device_name: str, timeout_s: float) -> ProbeOutcome:
    """Run the no-op job through ``launcher`` within ``timeout_s`` seconds; never raises."""
    request = noop_request(device_name, timeout_s)
    job = _ProbeJob()
    try:
        result = await asyncio.wait_for(launcher.run(request, job), timeout_s)
    except TimeoutError:
        where = f" (last phase: {job.phases[-1]})" if job.phases else ""
        return ProbeOutcome(False, False, f"the no-op job did not finish within {timeout_s:g} s{where}")
    except Exception as exc:  # a probe reports, it never crashes the table
        return ProbeOutcome(False, False, f"the no-op job failed: {str(exc) or type(exc).__name__}")
    sandboxed = result.system.sandboxed
    if result.verdict is not Verdict.ACCEPTED:
        why = (result.message or result.verdict.label).strip().splitlines()[0][:300]
        return ProbeOutcome(False, sandboxed, f"the no-op job ended {result.verdict.value}: {why}")
    problem = result.mismatch(request, allow_unsandboxed=launcher.allows_unsandboxed)
    if problem is not None:
        return ProbeOutcome(False, sandboxed, f"the worker would refuse this route's results: {problem}")
    took = f" in {result.wall_time_s:.1f} s" if result.wall_time_s is not None else ""
    if sandboxed:
        return ProbeOutcome(True, True, f"no-op job accepted{took}, sandboxed")
    note = f" ({result.system.sandbox_note})" if result.system.sandbox_note else ""
    return ProbeOutcome(True, False, f"no-op job accepted{took}, NOT sandboxed{note}: allowed on this route only")
