"""GPU-second budgets (issue 33): how much evaluation time on devices an account, or one of its API tokens, may spend
per period.

- A budget is set by an admin (``set_budget``; ``kernelcup admin budget``, ``PUT /api/v1/admin/budgets/...``) for an
  account or a token: ``seconds`` per ``period_s``. Periods start at whole multiples of ``period_s`` since the Unix
  epoch (a day's budget refills at 00:00 UTC), so "when it refills" is one instant everyone can read.
- It is **spent** by the evaluation time each run used on its device: the runner's own start and end of the run
  (``Run.started_at``/``finished_at``, the result's), counted in the period the run finished in; a compare, which
  stores no run rows, spends its job's time, and so does a job cancelled or killed while it ran (charged to the
  moment it was stopped, whatever it would have stored). An input hack spends the seconds of every run it made
  (``hacks.gpu_seconds``, ``leaderboards/board_hacks.py``). A token's budget is spent by the submissions and hacks
  that token sent (``submission_origins.token_id``, ``hacks.token_id``); an account's by all of its submissions and
  hacks, whatever sent them.
- A token with its own budget makes no tokens (``leaderboards/accounts.py``: a fresh token would escape the budget)
  and revokes only itself.
- A submission (or batch, replay, or input hack) is refused while a budget it would spend is used up:
  ``BudgetExhausted``, a 429 that says how much is left, how much was spent and when it refills. A run already queued
  finishes; the budget may go past its limit by the runs in flight when it ran out, never by a new one.

No row: no budget (the hourly rate limit and the pending-job quota still hold).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from leaderboards.errors import InvalidChange, NotFound, RateLimited
from leaderboards.models import ApiToken, GpuBudget, Hack, Job, Run, Submission, SubmissionOrigin, User
from leaderboards.results import JobStatus, SubmissionMode, UserRef
from leaderboards.service_base import ServiceBase

DEFAULT_PERIOD_S = 86_400
"""A budget's period unless the admin gives one: a day (UTC)."""
MIN_PERIOD_S = 60
MAX_PERIOD_S = 366 * 86_400
MAX_BUDGET_S = 1e9


class BudgetExhausted(RateLimited):
    """A GPU-second budget is used up until its next period (a 429 with Retry-After)."""

    code = "gpu_budget_exhausted"


@dataclass(frozen=True)
class BudgetView:
    """A budget and what of it is spent in the current period."""

    subject: str
    """``account`` or ``token``."""
    user: str
    """The account's identity (a token's owner for a token's budget)."""
    token_id: int | None
    seconds: float
    """GPU seconds per period."""
    period_s: int
    spent_s: float
    """Evaluation time spent in the current period."""
    left_s: float
    """What is left of it (0 when used up)."""
    period_start: datetime
    refills_at: datetime
    """When the next period starts and the whole budget is there again."""
    set_by: str
    updated_at: datetime


def period_bounds(now: datetime, period_s: int) -> tuple[datetime, datetime]:
    """The period ``now`` is in: its start (a whole multiple of ``period_s`` since the epoch, UTC) and end."""
    stamp = now.astimezone(UTC).timestamp()
    start = datetime.fromtimestamp(stamp - stamp % period_s, UTC)
    return start, start + timedelta(seconds=period_s)


def spent_seconds(s: Session, since: datetime, *, user_id: int | None = None, token_id: int | None = None) -> float:
    """Evaluation seconds used on devices since ``since``: by the account ``user_id``, or by what token ``token_id``
    sent. Each run counts the runner's own time for it; a job that stores no runs for its time counts the job's own
    start to end: a compare, and a job cancelled or killed while it ran (its author's cancel, a deleted submission:
    charged up to the moment it was stopped, whatever it would have stored). An input hack counts the seconds of its
    runs (``hacks.gpu_seconds``): a finished one in the period it finished in, one still under way at once."""

    def scoped(query):  # type: ignore[no-untyped-def]
        if token_id is not None:
            return query.join(SubmissionOrigin, SubmissionOrigin.submission_id == Submission.id).where(
                SubmissionOrigin.token_id == token_id
            )
        return query.where(Submission.user_id == user_id)

    stopped = Job.status == JobStatus.CANCELLED.value
    runs = s.execute(
        scoped(
            select(Run.started_at, Run.finished_at)
            .join(Submission, Submission.id == Run.submission_id)
            .join(Job, Job.id == Run.job_id)
            .where(Run.finished_at >= since, ~stopped)
        )
    ).all()
    whole_jobs = s.execute(
        scoped(
            select(Job.started_at, Job.finished_at)
            .join(Submission, Submission.id == Job.submission_id)
            .where(or_(Submission.mode == SubmissionMode.COMPARE.value, stopped), Job.finished_at >= since)
        )
    ).all()
    hacks = select(func.coalesce(func.sum(Hack.gpu_seconds), 0.0)).where(
        Hack.gpu_seconds > 0, or_(Hack.finished_at.is_(None), Hack.finished_at >= since)
    )
    hacks = hacks.where(Hack.token_id == token_id) if token_id is not None else hacks.where(Hack.user_id == user_id)
    hack_s = float(s.scalar(hacks) or 0.0)
    return hack_s + sum(max(0.0, (end - start).total_seconds()) for start, end in (*runs, *whole_jobs) if start and end)


def _check_amount(seconds: float, period_s: int) -> None:
    if not (0 <= seconds <= MAX_BUDGET_S):
        raise InvalidChange(
            f"A budget is 0 to {MAX_BUDGET_S:.0f} GPU seconds per period, not {seconds!r}.", field="seconds"
        )
    if not (MIN_PERIOD_S <= period_s <= MAX_PERIOD_S):
        raise InvalidChange(
            f"A budget's period is {MIN_PERIOD_S} s to {MAX_PERIOD_S} s (a year), not {period_s!r}; a day is "
            f"{DEFAULT_PERIOD_S}.",
            field="period_s",
        )


class BudgetsMixin(ServiceBase):
    """Setting, reading and checking GPU-second budgets (``LeaderboardService``)."""

    def _budget_view(self, s: Session, row: GpuBudget, now: datetime) -> BudgetView:
        start, end = period_bounds(now, row.period_s)
        if row.token_id is not None:
            token = s.get(ApiToken, row.token_id)
            owner = token.user.identity if token is not None else ""
            spent = spent_seconds(s, start, token_id=row.token_id)
        else:
            user = s.get(User, row.user_id)
            owner = user.identity if user is not None else ""
            spent = spent_seconds(s, start, user_id=row.user_id)
        return BudgetView(
            subject="token" if row.token_id is not None else "account",
            user=owner,
            token_id=row.token_id,
            seconds=row.seconds,
            period_s=row.period_s,
            spent_s=round(spent, 3),
            left_s=round(max(0.0, row.seconds - spent), 3),
            period_start=start,
            refills_at=end,
            set_by=row.set_by,
            updated_at=row.updated_at,
        )

    def _budget_row(self, s: Session, *, user: UserRef | None, token_id: int | None) -> tuple[GpuBudget | None, dict]:  # type: ignore[type-arg]
        if token_id is not None:
            if s.get(ApiToken, token_id) is None:
                raise NotFound(f"There is no API token #{token_id}.")
            return s.scalar(select(GpuBudget).where(GpuBudget.token_id == token_id)), {"token_id": token_id}
        assert user is not None
        u = self._user(s, user, create=False)
        return s.scalar(select(GpuBudget).where(GpuBudget.user_id == u.id)), {"user_id": u.id}

    def set_budget(
        self,
        *,
        user: UserRef | None = None,
        token_id: int | None = None,
        seconds: float | None,
        period_s: int = DEFAULT_PERIOD_S,
        actor: str,
    ) -> BudgetView | None:
        """Set (or with ``seconds=None`` remove) the GPU-second budget of an account (``user``) or of one API token
        (``token_id``); audited. Answers the budget as it now stands (None once removed)."""
        if (user is None) == (token_id is None):
            raise InvalidChange("Name either an account or a token, not both and not neither.", field="user")
        if seconds is not None:
            _check_amount(seconds, period_s)
        now = self.clock()
        with self.db.transaction() as s:
            row, key = self._budget_row(s, user=user, token_id=token_id)
            target = f"token #{token_id}" if token_id is not None else user.identity  # type: ignore[union-attr]
            if seconds is None:
                if row is not None:
                    s.delete(row)
                    self._audit(s, actor, "remove_gpu_budget", target)
                return None
            if row is None:
                row = GpuBudget(**key, seconds=seconds, period_s=period_s, set_by=actor[:200], updated_at=now)
                s.add(row)
            else:
                row.seconds, row.period_s, row.set_by, row.updated_at = seconds, period_s, actor[:200], now
            s.flush()
            self._audit(s, actor, "set_gpu_budget", target, seconds=seconds, period_s=period_s)
            return self._budget_view(s, row, now)

    def budgets(self) -> tuple[BudgetView, ...]:
        """Every budget with what is spent of it now: accounts first, then tokens."""
        now = self.clock()
        with self.db.transaction() as s:
            rows = s.scalars(select(GpuBudget).order_by(GpuBudget.token_id.is_not(None), GpuBudget.id)).all()
            return tuple(self._budget_view(s, r, now) for r in rows)

    def budgets_of(self, user: UserRef, token_id: int | None = None) -> tuple[BudgetView, ...]:
        """The budgets that bind a request: the account's and the token's (each where one is set)."""
        now = self.clock()
        with self.db.transaction() as s:
            u = self._user(s, user)
            return tuple(self._budget_view(s, r, now) for r in self._binding(s, u.id, token_id))

    @staticmethod
    def _binding(s: Session, user_id: int, token_id: int | None) -> list[GpuBudget]:
        cond = GpuBudget.user_id == user_id
        if token_id is not None:
            cond = cond | (GpuBudget.token_id == token_id)
        return list(s.scalars(select(GpuBudget).where(cond).order_by(GpuBudget.token_id.is_not(None))))

    def _check_budget(self, s: Session, user_id: int, token_id: int | None, now: datetime) -> None:
        """Refuse (``BudgetExhausted``) while the account's or the token's budget is used up in this period."""
        for row in self._binding(s, user_id, token_id):
            view = self._budget_view(s, row, now)
            if view.left_s > 0:
                continue
            whose = f"This token's (#{row.token_id})" if row.token_id is not None else "Your account's"
            raise BudgetExhausted(
                f"{whose} GPU budget is used up: {view.spent_s:.1f} of {view.seconds:g} GPU seconds spent this "
                f"period, 0 s left; it refills at {view.refills_at:%Y-%m-%d %H:%M:%S} UTC. An admin can raise it "
                "(kernelcup admin budget set).",
                view.refills_at,
            )
