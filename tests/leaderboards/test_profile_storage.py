"""What the database keeps of a profile run is bounded as the runner bounds it (issue 37: one profile run stored an
8.1 MB result): a result from a runner that did not bound it (an older one, or a forged one) is cut before it is
stored, and a bounded one is stored as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import future, make_problem, run_result
from sqlalchemy import select

from leaderboards.models import Run
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from runners.contract import Mode
from runners.validation import PROFILE_RESULT_MAX_BYTES, PROFILE_TEXT_MAX_CHARS

GOOD = b"def custom_kernel(data):\n    return data\n"


@pytest.fixture
def board(service: LeaderboardService, tmp_path: Path) -> str:
    service.create_leaderboard(make_problem(tmp_path / "problems"), deadline=future(), devices=["cpu"])
    return "add"


def stored_profile(service: LeaderboardService, profile: str) -> str | None:
    receipt = service.submit(UserRef("ada"), "k.py", GOOD + profile[:8].encode().hex().encode(), "add", ["cpu"],
                             Mode.PROFILE)  # fmt: skip
    job = receipt.jobs[0].job_id
    result = run_result([100.0], mode=Mode.PROFILE)
    result.profile = profile
    service.record_run(job, result)
    with service.db.transaction() as s:
        run = s.scalars(select(Run).where(Run.job_id == job)).one()
        assert len(str(run.result)) <= 2 * PROFILE_RESULT_MAX_BYTES
        return run.result["profile"]


def test_an_unbounded_profile_text_is_cut_before_it_is_stored(service: LeaderboardService, board: str) -> None:
    kept = stored_profile(service, "x" * (8 * 2**20))
    assert kept is not None and len(kept) <= PROFILE_TEXT_MAX_CHARS
    assert "[cut: a profile text is kept up to" in kept


def test_a_bounded_profile_text_is_stored_as_it_is(service: LeaderboardService, board: str) -> None:
    assert stored_profile(service, "Nsight Compute profiled 3 kernel launch(es).") == (
        "Nsight Compute profiled 3 kernel launch(es)."
    )
