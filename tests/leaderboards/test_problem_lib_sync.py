"""The problems' shared checking code (``problems/_lib``) counts in the fingerprint of every problem that uses it:
changing it asks ``sync`` for ``--force``, as a change of the reference does; problems that do not use it stay."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers import REFERENCE, write_problem, write_problem_set
from sqlalchemy import select

from leaderboards.db import Database
from leaderboards.models import Leaderboard
from leaderboards.problem_lib import PROBLEM_LIB
from leaderboards.results import SyncAction
from leaderboards.service import LeaderboardService
from leaderboards.sync import sync_problem_set

DEADLINE = "2031-01-01T00:00:00"


@pytest.fixture
def lib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of kernelcup's problems/_lib that the loader bundles instead of the real one."""
    copy = tmp_path / "kernelcup" / "problems" / "_lib"
    shutil.copytree(PROBLEM_LIB, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr("leaderboards.problem_lib.PROBLEM_LIB", copy)
    return copy


def _fingerprint(database: Database, name: str) -> str:
    with database.session() as s:
        return s.scalars(select(Leaderboard.fingerprint).where(Leaderboard.name == name)).one()


def test_changing_the_library_needs_force_for_the_problems_that_use_it(
    tmp_path: Path, lib: Path, database: Database, service: LeaderboardService
) -> None:
    root = tmp_path / "set"
    write_problem(root, "uses", reference="from _lib import compare\n" + REFERENCE)
    write_problem(root, "plain")
    set_file = write_problem_set(
        root, [{"directory": d, "deadline": DEADLINE, "devices": ["cpu"]} for d in ("uses", "plain")]
    )
    assert {i.action for i in sync_problem_set(service, set_file).items} == {SyncAction.CREATED}
    fingerprint = _fingerprint(database, "uses")

    (lib / "compare.py").write_text((lib / "compare.py").read_text() + "\nTOLERANCE_NOTE = 'changed'\n")
    report = sync_problem_set(service, set_file)
    items = {i.leaderboard: i for i in report.items}
    assert not report.applied
    assert items["uses"].action is SyncAction.NEEDS_FORCE
    assert items["uses"].reasons == ("reference files changed: _lib/compare.py",)
    assert items["plain"].action is SyncAction.UNCHANGED, "a problem that does not import _lib does not carry it"
    assert _fingerprint(database, "uses") == fingerprint

    forced = {i.leaderboard: i for i in sync_problem_set(service, set_file, force=True).items}
    assert forced["uses"].action is SyncAction.UPDATED and forced["uses"].ranking_reset
    assert _fingerprint(database, "uses") != fingerprint
    assert {i.action for i in sync_problem_set(service, set_file).items} == {SyncAction.UNCHANGED}
