"""The reward record (issue 33): what a finished candidate came to, in one versioned JSON object a learning loop reads
without parsing reports. Its JSON Schema is ``docs/schemas/reward.schema.json`` (tests validate the API's output
against it); a change of meaning or of a field's type is a new ``version``.

Nothing here measures anything: the verdict, the timings and the speedups are the trusted runner's, as stored.
"""

from __future__ import annotations

import math
from typing import Any

from leaderboards.results import JobStatus, JobView
from runners.contract import SPEED_OF_LIGHT, RunResult, Verdict

REWARD_VERSION = 2
Z95 = 1.959964
"""The normal quantile of a two-sided 95% interval."""
NOISY_HALF_WIDTH = 0.05
"""A case whose 95% interval's half-width is above 5% of its median makes the record ``noisy``."""

FLAGS: dict[str, str] = {
    "refused": "the server did not take the file (empty, too large, wrong type, over a limit): it never ran",
    "duplicate": "the same file was sent a moment ago: this is that earlier submission's outcome, not a new run",
    "not_run": "the job ended without a verdict of the submission's own (cancelled, or failed on the platform's side)",
    "platform_failure": "the job failed for a reason that is not the submission's fault; sending it again may pass",
    "unsandboxed": "the run was not sandboxed (a development runner): its numbers are not evidence",
    "speed_of_light": "faster than the device's roofline bound allows: rejected, never ranked",
    "synchronised": "custom_kernel synchronised with the GPU in some timed samples (their times are upper bounds)",
    "noisy": "a benchmark case's 95% interval is wider than ±5% of its median",
    "secret_run_failed": "ranked mode: the run on the secret-seed inputs did not pass",
    "moderated": "a moderator flagged, quarantined or marked the submission (see its status)",
}
"""Every flag a record may carry, with its meaning (the schema's enum is these keys)."""


def correct_fraction(result: RunResult | None) -> float:
    """The share of the run's checked cases that passed: its test cases and its benchmark cases (every timed call's
    outputs are checked against the reference as a test's are), 0 when none ran (a compile error, a refusal).
    Version 1 of the record counted test cases only, so an accepted benchmark-mode run, which runs none, read 0."""
    if result is None:
        return 0.0
    verdicts = [t.verdict for t in result.tests] + [b.verdict for b in result.benchmarks]
    return sum(1 for v in verdicts if v.passed) / len(verdicts) if verdicts else 0.0


def ci_half_width(result: RunResult | None) -> float | None:
    """The widest relative 95% half-width over the run's timed cases (1.96 · standard error / median), or None when
    nothing was timed."""
    widths = [
        Z95 * b.stats.stderr_ns / b.stats.median_ns
        for b in (result.benchmarks if result is not None else [])
        if b.stats is not None and b.stats.median_ns > 0 and math.isfinite(b.stats.stderr_ns)
    ]
    return round(max(widths), 6) if widths else None


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def reward_record(
    job: JobView | None,
    result: RunResult | None,
    *,
    duplicate: bool = False,
    moderation: str | None = None,
    refused: bool = False,
) -> dict[str, Any]:
    """The record of one candidate on one device: ``job`` (None for a refused file) and its public run's ``result``
    (None when it has none)."""
    flags: list[str] = []
    if refused or job is None:
        flags.append("refused")
        verdict = "refused"
    else:
        verdict = str(job.verdict or (result.verdict if result is not None else job.status.value))
        if job.verdict is None and job.status in (JobStatus.CANCELLED, JobStatus.FAILED, JobStatus.TIMED_OUT):
            flags.append("not_run")
        if job.status in (JobStatus.FAILED, JobStatus.TIMED_OUT) and job.verdict in (
            None,
            Verdict.INFRASTRUCTURE_ERROR,
        ):
            flags.append("platform_failure")
        if job.secret_passed is False:
            flags.append("secret_run_failed")
    if duplicate:
        flags.append("duplicate")
    if moderation and moderation != "cleared":
        flags.append("moderated")
    half = ci_half_width(result)
    if result is not None:
        ran = bool(result.tests or result.benchmarks)
        if ran and not result.system.sandboxed:
            flags.append("unsandboxed")
        if result.rejection == SPEED_OF_LIGHT:
            flags.append("speed_of_light")
        if any(b.degraded_samples for b in result.benchmarks):
            flags.append("synchronised")
        if half is not None and half > NOISY_HALF_WIDTH:
            flags.append("noisy")
    accepted = job is not None and job.accepted
    return {
        "version": REWARD_VERSION,
        "verdict": verdict,
        "accepted": accepted,
        "correct_fraction": round(correct_fraction(result), 6),
        "speedups": {
            b.label: round(b.speedup, 6)
            for b in (result.baselines if result is not None else [])
            if b.speedup is not None and math.isfinite(b.speedup) and b.speedup > 0
        },
        "score_ns": _finite(job.score_ns) if job is not None else None,
        "roofline_share": _finite(result.roofline_share) if result is not None else None,
        "ci_half_width": half,
        "flags": sorted(set(flags)),
    }
