"""The service functions workers call: the run requests of a job, and storing a run's result with its score,
the ranking update and rank changes in one transaction."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from leaderboards import pooling, ranking
from leaderboards.archive import refresh_archive_entries
from leaderboards.errors import (
    LeaseLost,
    NotFound,
)
from leaderboards.models import (
    BestScore,
    Job,
    JobStatus,
    Leaderboard,
    Run,
    Submission,
    SubmissionComparison,
)
from leaderboards.moderation import flag_unmoderated
from leaderboards.moderation_states import ranks
from leaderboards.problems import Problem
from leaderboards.replay import seed_submission
from leaderboards.results import (
    PlannedRun,
    RankChangeView,
    RecordedRun,
    SubmissionMode,
)
from leaderboards.scoring import run_score
from leaderboards.service_base import ServiceBase
from leaderboards.snapshot import (
    problem_from_snapshot,
)
from runners.contract import LANGUAGES, Comparison, Limits, Mode, RankingRule, RunRequest, RunResult, Verdict, worst
from runners.validation import bound_profile

SUPERSEDED = "superseded"
"""The fingerprint a run is stored under when it answered an earlier version of its job's request (the problem
changed while it ran): it never matches a leaderboard's, so the run is never ranked."""


def harness_device(device: str) -> str:
    """What the harness runs kernels on for a leaderboard device name: 'cpu' for cpu, else 'cuda'."""
    return "cpu" if device.lower() == "cpu" else "cuda"


def secret_seed_for(secret_seed: int, submission_id: int, device: str) -> int:
    """The seed of a submission's secret run: fresh per submission and device, underivable without the secret."""
    digest = hashlib.sha256(f"{secret_seed}:{submission_id}:{device}".encode()).digest()
    # 63 bits: the evaluator keys every timed call's seed with it, so it must be beyond a search over candidates
    # (31 bits could be found in minutes by native code that regenerates its inputs).
    return int.from_bytes(digest[:8], "big") & 0x7FFF_FFFF_FFFF_FFFF


def run_nonce(secret_seed: int, job_id: int, secret: bool, *, compare_side: str = "") -> str:
    """The nonce a run's result must echo: this job and this kind of run, stable across worker restarts (a worker
    that re-attaches to a remote run checks the same value), unguessable without the leaderboard's secret. A
    compare's two files (``compare_side`` 'a', 'b') have one each."""
    side = f":{compare_side}" if compare_side else ""
    return hashlib.sha256(f"nonce:{secret_seed}:{job_id}:{int(secret)}{side}".encode()).hexdigest()[:32]


class RecordingMixin(ServiceBase):
    """What workers call (``leaderboards/worker.py``): build a job's run requests, store each result."""

    def run_requests(self, job_id: int, *, session: Session | None = None) -> tuple[PlannedRun, ...]:
        """The run request(s) of a job from the leaderboard's task snapshot: the public run, and for ranked jobs
        the secret-seed run too (``recorded`` marks those an earlier attempt already stored)."""
        with self._tx(session) as s:
            job = s.get(Job, job_id)
            if job is None:
                raise NotFound(f"There is no job {job_id}.")
            sub = job.submission
            lb = sub.leaderboard
            problem = problem_from_snapshot(lb.task)
            if sub.mode == SubmissionMode.COMPARE.value:
                return (self._compare_plan(s, job, sub, problem),)
            mode = Mode(sub.mode)
            done = set(s.scalars(select(Run.secret).where(Run.job_id == job.id)))
            kinds = [False, True] if mode is Mode.RANKED else [False]
            return tuple(
                PlannedRun(
                    job_id=job.id,
                    secret=secret,
                    request=self._request(
                        problem,
                        sub,
                        job.device,
                        mode,
                        secret,
                        run_nonce(lb.secret_seed, job.id, secret),
                        seed_id=seed_submission(s, sub),
                    ),
                    recorded=secret in done,
                )
                for secret in kinds
            )

    def _request(
        self,
        problem: Problem,
        sub: Submission,
        device: str,
        mode: Mode,
        secret: bool,
        nonce: str,
        *,
        seed_id: int | None = None,
    ) -> RunRequest:
        """The request of one run of ``sub`` on ``device`` (its secret-seed run with ``secret``), bounded by the
        leaderboard's time limit. ``seed_id``: the submission whose secret-seed inputs it times (a replay's original,
        ``leaderboards/replay.py``; default ``sub``)."""
        lb = sub.leaderboard
        return self._within_board_limit(
            problem.request(
                sub.file_name,
                sub.code.content,
                mode,
                device=harness_device(device),
                device_name=device,
                seed=secret_seed_for(lb.secret_seed, seed_id or sub.id, device) if secret else None,
                limits=Limits(max_submission_bytes=self.settings.max_submission_bytes),
            ).model_copy(update={"nonce": nonce, "baseline_group": _baseline_group(sub, mode)})
        )

    def _compare_plan(self, s: Session, job: Job, sub: Submission, problem: Problem) -> PlannedRun:
        """A compare job's one planned item: both files' benchmark requests (public cases, no baselines: a ratio
        needs no speedups), and the rounds; ``recorded`` once its comparison is stored."""
        row = s.get(SubmissionComparison, sub.id)
        if row is None:
            raise NotFound(f"Submission #{sub.id} is a compare without its second file.")
        lb = sub.leaderboard

        def request(name: str, content: bytes, side: str) -> RunRequest:
            made = problem.request(
                name,
                content,
                Mode.BENCHMARK,
                device=harness_device(job.device),
                device_name=job.device,
                seed=None,
                limits=Limits(max_submission_bytes=self.settings.max_submission_bytes),
            )
            nonce = run_nonce(lb.secret_seed, job.id, False, compare_side=side)
            return self._within_board_limit(made.model_copy(update={"baselines": [], "nonce": nonce}))

        return PlannedRun(
            job_id=job.id,
            secret=False,
            request=request(sub.file_name, sub.code.content, "a"),
            recorded=row.result is not None,
            against=request(row.file_b_name, row.code_b.content, "b"),
            rounds=row.rounds,
            profile=row.profile,
        )

    def record_comparison(
        self, job_id: int, comparison: Comparison, *, owner: str | None = None, session: Session | None = None
    ) -> bool:
        """Store a compare job's comparison (fenced like ``record_run``: with ``owner``, only while that lease holds
        the running job, else ``LeaseLost``); the job's verdict is the comparison's. False when one was stored
        already (the first one stays)."""
        with self._tx(session) as s:
            job = self._held_job(s, job_id, owner)
            row = s.get(SubmissionComparison, job.submission_id)
            if row is None:
                raise NotFound(f"Job {job_id} is not a compare.")
            if row.result is not None:
                return False
            row.result = comparison.model_dump(mode="json")
            row.finished_at = self.clock()
            job.verdict = comparison.verdict.value
            return True

    def _held_job(self, s: Session, job_id: int, owner: str | None) -> Job:
        """The job's row, locked; with ``owner``, only while that lease holds the running job (else ``LeaseLost``)."""
        job = s.scalar(select(Job).where(Job.id == job_id).with_for_update())
        if job is None and owner is not None:  # deleted with its board while it ran: nobody holds it any more, and
            raise LeaseLost(job_id, owner)  # its result (live, or replayed from the spool) is dropped, not kept
        if job is None:
            raise NotFound(f"There is no job {job_id}.")
        if owner is not None and (job.lease_owner != owner or job.status != JobStatus.RUNNING.value):
            raise LeaseLost(job_id, owner)
        return job

    def _answers_the_current_task(self, s: Session, job: Job, result: RunResult, secret: bool) -> bool:
        """Whether ``result`` answers the request this job would be given now. A run planned before the problem was
        changed (``--force``: the ranking started over) but stored after it, from a worker that was still running or
        from a restarted worker's spool, timed the old cases: it is kept, under ``SUPERSEDED``, and never ranked
        (red team, 2026-11-25: both runs of the old problem ranked first in the new ranking). A result without the
        hash (written by hand, in tests) is taken as current."""
        if not result.request_sha256 or SubmissionMode(job.submission.mode) is SubmissionMode.COMPARE:
            return True
        planned = next((p for p in self.run_requests(job.id, session=s) if p.secret == secret), None)
        return planned is not None and planned.request.digest() == result.request_sha256

    def _within_board_limit(self, request: RunRequest) -> RunRequest:
        """Bound a run by the leaderboard's time limit for its mode, compile step included.

        ``Problem.request`` sets the run budget from task.yml. A Python submission has no compile step of its own
        (Triton and ``load_inline`` build inside the run, on the run's clock), so its compile budget is zero; a
        native CUDA submission's compile budget (``compile_budget_s``, at most half the limit) is taken out of the
        limit, not added to it. Either way compile + run is the board's limit, which bounds the worker's wait.
        """
        board = request.limits.run_timeout_s
        compile_s = 0.0
        if LANGUAGES[request.lang].compile_step:
            compile_s = min(self.settings.compile_budget_s, board / 2)
        limits = request.limits.model_copy(update={"compile_timeout_s": compile_s, "run_timeout_s": board - compile_s})
        return request.model_copy(update={"limits": limits})

    def public_run_failed(self, job_id: int, *, session: Session | None = None) -> str | None:
        """The job's verdict ('' when it has none yet) when its stored public run failed; None when no public run is
        stored or it passed. A ranked job whose public run failed needs no secret run: it cannot become eligible."""
        with self._tx(session) as s:
            job = s.get(Job, job_id)
            if job is None:
                raise NotFound(f"There is no job {job_id}.")
            public = s.scalar(select(Run).where(Run.job_id == job_id, Run.secret.is_(False)))
            if public is None or public.passed:
                return None
            return job.verdict or ""

    def record_run(
        self,
        job_id: int,
        result: RunResult,
        *,
        secret: bool = False,
        owner: str | None = None,
        session: Session | None = None,
    ) -> RecordedRun:
        """Store one run result with its score, and update the ranking and rank changes, in one transaction.

        With ``owner``, the job must still be running under that lease owner (checked on the locked job row),
        else ``LeaseLost`` is raised and nothing is stored. A job stores at most one result per kind (public,
        secret): a second call returns the first one with ``created=False``. Pass ``session`` to make this part
        of the caller's transaction (e.g. together with completing the job).
        """
        with self._tx(session) as s:
            job = self._held_job(s, job_id, owner)
            runs = {r.secret: r for r in s.scalars(select(Run).where(Run.job_id == job.id))}
            existing = runs.get(secret)
            if existing is not None:
                return RecordedRun(
                    existing.id,
                    job.id,
                    job.submission_id,
                    job.device,
                    secret,
                    existing.passed,
                    existing.verdict,
                    None if secret else existing.score,
                    created=False,
                )
            result = bound_profile(result)  # a profile run's text, metrics and report, bounded as they are stored
            sub = job.submission
            lb = sub.leaderboard
            score = run_score(result, RankingRule(lb.ranking_by))
            fingerprint = lb.fingerprint if self._answers_the_current_task(s, job, result, secret) else SUPERSEDED
            run = Run(
                job_id=job.id,
                submission_id=sub.id,
                device=job.device,
                mode=sub.mode,
                secret=secret,
                passed=result.passed,
                verdict=result.verdict.value,
                score=score,
                fingerprint=fingerprint,
                result=result.model_dump(mode="json"),
                system=result.system.model_dump(mode="json"),
                started_at=result.started_at,
                finished_at=result.finished_at,
                created_at=self.clock(),
            )
            s.add(run)
            s.flush()
            runs[secret] = run
            if not secret:  # the archive's kept row of a licensed submission (issue 34)
                refresh_archive_entries(s, sub.id)
            job.verdict = worst([Verdict(r.verdict) for r in runs.values()]).value
            shown_score = None if secret else score  # a secret run's timings stay in the database
            recorded = RecordedRun(
                run.id, job.id, sub.id, job.device, secret, run.passed, run.verdict, shown_score, created=True,
                superseded=fingerprint == SUPERSEDED,
            )  # fmt: skip
            public, secret_run = runs.get(False), runs.get(True)
            if (
                sub.mode != Mode.RANKED.value
                or sub.deleted
                or not ranks(sub.moderation)
                or ranking.practice_only(s, sub.id)
                or public is None
                or secret_run is None
                or not (public.passed and secret_run.passed)
                or public.score is None
                or secret_run.score is None
                or public.fingerprint != lb.fingerprint
                or secret_run.fingerprint != lb.fingerprint
            ):
                return recorded
            if not self._still_ranks(s, lb, sub):
                return recorded
            pooled = self._pooled(public, secret_run, RankingRule(lb.ranking_by))
            score_ranked = ranking.ranked_score(public.score, secret_run.score) if pooled is None else pooled.score_ns
            if pooled is not None:
                job.ranked_score, job.ranked_flagged, job.ranked_note = pooled.score_ns, pooled.flagged, pooled.note
                if pooled.flagged:  # a moderator should look (it still ranks): leaderboards/moderation.py
                    flag_unmoderated(s, sub, actor="pooling", reason=pooled.note or "slower on the secret inputs",
                                     now=self.clock())  # fmt: skip
            best = ranking.offer(s, lb, sub, job.device, score_ranked, announce_top=self.settings.announce_top)
            change = None
            if best.change is not None:
                c = best.change
                change = RankChangeView(
                    c.id,
                    lb.name,
                    c.device,
                    sub.user_id,
                    sub.user.name,
                    sub.user.discord_id,
                    sub.id,
                    c.old_rank,
                    c.new_rank,
                    c.score,
                    c.previous_score,
                    c.created_at,
                )
            return replace(
                recorded, eligible=True, rank=best.rank, personal_best=best.personal_best, rank_change=change
            )

    @staticmethod
    def _still_ranks(s: Session, lb: Leaderboard, sub: Submission) -> bool:
        """Whether ``sub`` may still rank, read again under the leaderboard's row lock (PostgreSQL), the lock that
        ``moderate`` holds while it rebuilds the ranking: a quarantine or a practice marking committed after this
        transaction first read the entry is seen here, so ``ranking.offer`` never ranks it back in."""
        ranking.lock_leaderboard(s, lb)
        s.refresh(sub, ["moderation", "deleted"])
        return ranks(sub.moderation) and not sub.deleted and not ranking.practice_only(s, sub.id)

    @staticmethod
    def _pooled(public: Run, secret: Run, rule: RankingRule) -> pooling.RankedScore | None:
        """The job's ranked score from both stored runs (``leaderboards.pooling``); None when a stored result cannot
        be read back (the slower run's score then counts, as before pooling)."""
        try:
            return pooling.ranked_score(
                RunResult.model_validate(public.result), RunResult.model_validate(secret.result), rule
            )
        except ValueError:
            return None

    def rebuild_rankings(self, name: str) -> int:
        """Recompute a leaderboard's ranking from its runs (repairs; also what the tests compare against)."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, name, lock=True)
            ranking.rebuild(s, lb)
            return int(
                s.scalar(select(func.count()).select_from(BestScore).where(BestScore.leaderboard_id == lb.id)) or 0
            )


def _baseline_group(sub: Submission, mode: Mode) -> str:
    """Whose earlier benchmark-mode runs on the same GPU may lend this run their baselines (``RunRequest.
    baseline_group``; a runner keeps them ``KERNELCUP_BASELINE_REUSE_S``): the submitting account's own, never
    another's, so no one's run decides another's speedups. Other modes time their own."""
    return f"account {sub.user_id}" if mode is Mode.BENCHMARK else ""
