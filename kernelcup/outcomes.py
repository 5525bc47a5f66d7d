"""What a finished submission came to, for programs: a plain JSON summary (the MCP server's answers) and a reward
record (``kernelcup.client.env``), both read from the API's ``SubmissionOut``.

Nothing here measures anything: verdicts, scores and speedups are the trusted runner's, as the server stored them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from leaderboards.formatting import kernels_text, outcome_text, provenance_text
from leaderboards.reward import correct_fraction, reward_record
from runners.contract import REFERENCE_BASELINE, RunResult
from web.schemas import JobOut, SubmissionOut

MAX_MESSAGE = 2000
"""The most characters of a message, a test's failure or a log a summary carries (an agent's context is finite)."""


def _clip(text: str | None, limit: int = MAX_MESSAGE) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f" … ({len(text) - limit} more characters)"


def reference_speedup(result: RunResult | None) -> float | None:
    """The geometric-mean speedup over the problem's reference (``ref_kernel``) that the runner timed beside the
    submission, or None (test mode, or not timed)."""
    if result is None:
        return None
    for baseline in result.baselines:
        if baseline.label == REFERENCE_BASELINE.label and baseline.speedup is not None:
            return baseline.speedup
    return None


def _job_summary(job: JobOut, result: RunResult | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "device": job.device,
        "status": str(job.status),
        "verdict": str(job.verdict or (result.verdict if result else "")) or None,
        "outcome": outcome_text(job.status, job.verdict or (result.verdict if result else None)),
        "score_ns": job.score_ns,
        "rank": job.rank,
        "secret_seed_run_passed": job.secret_passed,
        "error": _clip(job.error) or None,
    }
    if result is None:
        return out
    failed = [t for t in result.tests if not t.verdict.passed]
    out.update(
        message=_clip(result.message),
        tests_passed=sum(1 for t in result.tests if t.verdict.passed),
        tests_total=len(result.tests),
        failed_tests=[
            {"case": t.case, "verdict": str(t.verdict), "message": _clip(t.message, 500)} for t in failed[:5]
        ],
        benchmarks=[
            {
                "case": b.case,
                "verdict": str(b.verdict),
                "median_ns": b.stats.median_ns if b.stats else None,
                "roofline_share": b.roofline_share,
                **({"kernels": kernels_text(b)} if b.kernels is not None else {}),
                **({"digest": b.digest} if b.digest else {}),
            }
            for b in result.benchmarks
        ],
        speedups={b.label: b.speedup for b in result.baselines if b.speedup is not None},
        roofline_share=result.roofline_share,
    )
    if result.provenance is not None:
        out["provenance"] = provenance_text(result)
    if result.compile_output and not result.verdict.passed:
        out["compile_output"] = _clip(result.compile_output)
    if result.stderr and not result.verdict.passed:
        out["stderr"] = _clip(result.stderr)
    if result.profile:
        out["profile"] = _clip(result.profile, 6000)
    return out


def summarize(sub: SubmissionOut) -> dict[str, Any]:
    """A submission's state and results as plain JSON values: per device its verdict, score, rank, failed tests (the
    first five), benchmark medians and speedups; a compare's ratio."""
    status = sub.status
    results = {r.device: r.result for r in sub.results}
    out: dict[str, Any] = {
        "submission_id": status.submission_id,
        "leaderboard": status.leaderboard,
        "file_name": status.file_name,
        "mode": str(status.mode),
        "done": status.done,
        "accepted": status.accepted,
        "devices": [_job_summary(job, results.get(job.device)) for job in status.jobs],
    }
    comparison = status.comparison
    if comparison is not None:
        out["comparison"] = comparison.result.model_dump(mode="json") if comparison.result else None
    return out


@dataclass(frozen=True)
class Reward:
    """One step's outcome for a learning loop: what the trusted side said of the kernel."""

    verdict: str
    """``accepted``, ``wrong_answer``, ``compile_error``, … (the runner's), ``refused`` (the server would not take
    the file: empty, too large, wrong type), or the job's status when it never ran (``failed``, ``cancelled``)."""
    correct_fraction: float
    """The share of test cases that passed, 0 to 1."""
    speedup: float | None
    """The geometric-mean speedup over the problem's reference, timed in the same run (None in test mode)."""
    score_ns: float | None
    """The run's score (lower is better): what a leaderboard ranks."""
    reward: float
    """The scalar reward: by default the speedup when accepted (1.0 when no speedup was timed), else 0."""
    message: str
    submission_id: int | None
    accepted: bool
    versioned: dict[str, Any] | None = None
    """The server's versioned reward record of the step (docs/schemas/reward.schema.json: verdict, correct fraction,
    speedups by baseline, roofline share, the 95% interval's half-width, flags), where the client could read it."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_reward(accepted: bool, correct: float, speedup: float | None) -> float:
    """The speedup over the reference when accepted (1.0 without one), 0 otherwise."""
    if not accepted:
        return 0.0
    return speedup if speedup is not None and math.isfinite(speedup) else 1.0


def reward_of(sub: SubmissionOut, reward_fn: Any = default_reward) -> Reward:
    """The reward record of a finished submission on one device (its first job)."""
    job = sub.status.jobs[0]
    result = next((r.result for r in sub.results if r.device == job.device), None)
    verdict = str(job.verdict or (result.verdict if result else job.status))
    correct, speedup = correct_fraction(result), reference_speedup(result)
    message = result.message if result is not None else (job.error or "")
    return Reward(
        verdict=verdict,
        correct_fraction=correct,
        speedup=speedup,
        score_ns=job.score_ns,
        reward=float(reward_fn(sub.status.accepted, correct, speedup)),
        message=_clip(message),
        submission_id=sub.status.submission_id,
        accepted=sub.status.accepted,
    )


def refused(message: str) -> Reward:
    """The reward record of a file the server would not take."""
    return Reward("refused", 0.0, None, None, 0.0, _clip(message), None, False, reward_record(None, None, refused=True))
