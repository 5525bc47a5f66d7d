"""A Python file its Python cannot compile is refused when it is sent (issue 33: compile errors come back without
waiting for the GPU): nothing stored, nothing queued, the line and the reason said; in a batch only that candidate is
refused; other languages' files and files that compile go on as before; the setting turns it off."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import future, make_problem
from sqlalchemy import func, select

from leaderboards.errors import InvalidSubmission
from leaderboards.models import Job, Submission
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService, python_syntax_error

BOT = UserRef("bot")
GOOD = b"def custom_kernel(d):\n    return d\n"


@pytest.fixture
def svc(service: LeaderboardService, tmp_path: Path) -> LeaderboardService:
    service.create_leaderboard(make_problem(tmp_path), name="add", deadline=future(), devices=["cpu"])
    return service


def _counts(svc: LeaderboardService) -> tuple[int, int]:
    with svc.db.transaction() as s:
        subs = int(s.scalar(select(func.count()).select_from(Submission)) or 0)
        jobs = int(s.scalar(select(func.count()).select_from(Job)) or 0)
    return subs, jobs


@pytest.mark.parametrize(
    ("source", "said"),
    [
        (b"def custom_kernel(d)\n    return d\n", "line 1"),  # a missing colon
        (b"def custom_kernel(d):\nreturn d\n", "line 2"),  # indentation
        (b"return 1\n", "'return' outside function"),  # only the compiler refuses it
        (b"x = (" * 300 + b"\n", "too many nested parentheses"),
    ],
)
def test_a_file_python_cannot_compile_is_refused_before_anything_is_stored(
    svc: LeaderboardService, source: bytes, said: str
) -> None:
    with pytest.raises(InvalidSubmission) as refused:
        svc.submit(BOT, "k.py", source, "add", ["cpu"], "benchmark")
    assert refused.value.code == "syntax_error" and refused.value.field == "file"
    assert said in str(refused.value) and "Nothing was queued" in str(refused.value)
    assert _counts(svc) == (0, 0)


def test_in_a_batch_only_the_candidate_that_cannot_compile_is_refused(svc: LeaderboardService) -> None:
    files = [("a.py", GOOD), ("b.py", b"def custom_kernel(d:\n"), ("c.py", GOOD + b"# 2\n")]
    batch = svc.submit_batch(BOT, files, "add", "cpu", "benchmark")
    assert [i.status for i in batch.items] == ["queued", "refused", "queued"]
    assert batch.items[1].error_code == "syntax_error" and "b.py is not valid Python" in (
        batch.items[1].error_message or "")  # fmt: skip
    assert _counts(svc) == (2, 2)


def test_a_file_that_compiles_is_taken_and_the_setting_turns_the_check_off(svc: LeaderboardService) -> None:
    svc.submit(BOT, "k.py", "\ufeff# a BOM, as editors write it\n".encode() + GOOD, "add", ["cpu"], "benchmark")
    off = LeaderboardService(svc.db, svc.settings.model_copy(update={"check_python_syntax": False}), clock=svc.clock)
    off.submit(BOT, "broken.py", b"def custom_kernel(d)\n", "add", ["cpu"], "benchmark")  # the runner will say so
    assert _counts(svc) == (2, 2)


def test_the_check_runs_nothing_and_bounds_what_it_compiles() -> None:
    assert python_syntax_error("k.py", "import os\nos._exit(3)\n") == ""  # compiled, never run
    assert python_syntax_error("k.py", "x = 2 ** 10 ** 8\n") == ""  # not folded: no huge integer is built
    deep = python_syntax_error("k.py", "x = " + "+".join(["1"] * 200_000))
    assert "cannot be compiled as Python (RecursionError)" in deep
    assert python_syntax_error("k.cu", "__global__ void k() {}") != ""  # (the service only asks it of .py files)
