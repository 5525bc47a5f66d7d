"""The archive's kept table (``archive_entries``, issue 34): one row per licensed public run, written when a public
run is recorded and when a licence is chosen, changed or withdrawn (``refresh_archive_entries``), so that a page is an
index range; what changes without either (deletion, moderation, a ban, the board's visibility or policy) is checked
by the query itself. The rows migration 0021 fills are the ones the service writes. SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from pathlib import Path

import pytest
from helpers import write_problem
from sqlalchemy import delete, select
from test_archive import ANN, BOB, FAST, OTHER, PUBLIC_NS, SECRET_NS, published, respond
from test_system_tests import Clock, serve

from leaderboards.archive import ArchiveFilter
from leaderboards.db import Database
from leaderboards.errors import InvalidSubmission
from leaderboards.models import ArchiveEntryRow, Run
from leaderboards.problems import load_problem
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import BaselineResult, Mode, RunRequest, RunResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result, verdict_result

THIRD = b"def custom_kernel(data):\n    return [x for x in data]\n"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def svc(database: Database, settings: CoreSettings, clock: Clock) -> LeaderboardService:
    service = LeaderboardService(database, settings, clock=clock)
    service.create_leaderboard(
        load_problem(write_problem(Path(settings.data_dir) / "problems")),
        deadline=clock.now + timedelta(days=1),
        devices=["cpu"],
    )
    service.set_archive_policy("add", at_once=True, actor="admin")
    return service


def kept(svc: LeaderboardService) -> dict[int, tuple[str, bool, float | None, float | None]]:
    """submission id: (device, passed, score, speedup) of each kept row."""
    with svc.db.transaction() as s:
        rows = s.scalars(select(ArchiveEntryRow).order_by(ArchiveEntryRow.submission_id)).all()
        return {r.submission_id: (r.device, r.passed, r.score, r.speedup) for r in rows}


def test_a_recorded_public_run_of_a_licensed_submission_is_kept_and_the_secret_run_is_not(
    svc: LeaderboardService,
) -> None:
    licensed = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.RANKED, licence="MIT").submission_id
    plain = svc.submit(BOB, "k.py", OTHER, "add", ["cpu"], Mode.RANKED).submission_id
    assert kept(svc) == {}  # nothing ran yet
    serve(svc, FakeLauncher(respond))
    assert kept(svc) == {licensed: ("cpu", True, pytest.approx(PUBLIC_NS), 2.0)}  # the public run's, not SECRET_NS
    with svc.db.transaction() as s:
        row = s.scalars(select(ArchiveEntryRow)).one()
        public = s.get(Run, row.run_id)
        assert public is not None and not public.secret and row.user_id == public.job.submission.user_id
    assert plain not in kept(svc) and SECRET_NS not in {v[2] for v in kept(svc).values()}


def test_a_licence_chosen_changed_withdrawn_and_chosen_again_keeps_the_rows_in_step(svc: LeaderboardService) -> None:
    sid = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.BENCHMARK).submission_id
    serve(svc, FakeLauncher(respond))
    assert kept(svc) == {} and published(svc) == []
    svc.set_submission_licence(sid, ANN, "CC0-1.0")
    assert list(kept(svc)) == [sid] and published(svc) == [sid]
    svc.withdraw_from_archive(sid, ANN)
    assert kept(svc) == {} and published(svc) == []
    svc.set_submission_licence(sid, ANN, "MIT")  # consent again
    assert list(kept(svc)) == [sid] and [e.licence for e in svc.archive(ArchiveFilter()).entries] == ["MIT"]
    svc.withdraw_from_archive(sid, ANN)
    svc.set_submission_licence(sid, ANN, "none")
    assert kept(svc) == {} and published(svc) == []


def test_a_faster_run_landing_later_moves_up_the_fastest_first_page(svc: LeaderboardService) -> None:
    def at(ns: float):  # type: ignore[no-untyped-def]
        def run(request: RunRequest) -> RunResult:
            result = accepted_result(request, ns)
            reference = BaselineResult(label="reference", function="ref_kernel", speedups=[1.0, 1.0], speedup=1.0)
            return result.model_copy(update={"baselines": [reference], "roofline_share": 0.5})

        return run

    slow = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.BENCHMARK, licence="MIT").submission_id
    serve(svc, FakeLauncher(at(5000.0)))
    assert published(svc, sort="speed") == [slow]
    fast = svc.submit(BOB, "k.py", OTHER, "add", ["cpu"], Mode.BENCHMARK, licence="MIT").submission_id
    serve(svc, FakeLauncher(at(1000.0)))
    assert published(svc, sort="speed") == [fast, slow] and published(svc) == [fast, slow]
    assert published(svc, min_roofline_share=0.5) == [fast, slow] and published(svc, min_roofline_share=0.6) == []
    assert published(svc, min_speedup=1.0) == [fast, slow] and published(svc, min_speedup=1.1) == []
    page = svc.archive(ArchiveFilter(sort="speed"), limit=1, offset=1)
    assert [e.submission_id for e in page.entries] == [slow] and (page.total, page.total_exact) == (2, True)


def test_deletion_moderation_a_ban_and_a_hidden_board_unpublish_without_touching_the_rows(
    svc: LeaderboardService,
) -> None:
    sid = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.BENCHMARK, licence="MIT").submission_id
    other = svc.submit(BOB, "k.py", THIRD, "add", ["cpu"], Mode.BENCHMARK, licence="MIT").submission_id
    serve(svc, FakeLauncher(respond))
    assert published(svc) == [other, sid] and set(kept(svc)) == {sid, other}
    svc.moderate(sid, "quarantined", actor="admin", reason="looking")
    assert published(svc) == [other] and svc.archive(ArchiveFilter()).total == 1
    svc.moderate(sid, "cleared", actor="admin", reason="fine")
    assert published(svc) == [other, sid]
    svc.ban_user(BOB, reason="test", actor="admin")
    assert published(svc) == [sid]
    svc.unban_user(BOB, actor="admin")
    svc.update_leaderboard("add", visible=False)
    assert published(svc) == [] and svc.archive_choices() == ((), ())
    svc.update_leaderboard("add", visible=True)
    svc.set_archive_policy("add", at_once=False, actor="admin")  # before the deadline again: unpublished
    assert published(svc) == []
    svc.set_archive_policy("add", at_once=True, actor="admin")
    svc.delete_submission(sid, actor="admin")
    assert published(svc) == [other] and set(kept(svc)) == {sid, other}  # a soft delete: the query leaves it out
    with svc.db.transaction() as s:  # a hard delete (a user's erasure, a board's deletion) cascades
        s.execute(delete(Run).where(Run.submission_id == other))
    assert set(kept(svc)) == {sid} and published(svc) == []


def test_migration_0021_fills_the_rows_the_service_writes(svc: LeaderboardService) -> None:
    from alembic import command

    from leaderboards.db import alembic_config, upgrade

    svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.RANKED, licence="MIT")
    withdrawn = svc.submit(BOB, "k.py", OTHER, "add", ["cpu"], Mode.BENCHMARK, licence="CC0-1.0").submission_id
    svc.submit(BOB, "k.py", THIRD, "add", ["cpu"], Mode.BENCHMARK)
    serve(svc, FakeLauncher(respond))
    svc.withdraw_from_archive(withdrawn, BOB)
    before = kept(svc)
    assert len(before) == 1
    command.downgrade(alembic_config(svc.db.engine), "0020")
    upgrade(svc.db.engine)
    assert kept(svc) == before
    assert published(svc) == list(before)


def test_a_cursor_walks_every_page_of_both_orders_and_a_forged_one_is_refused(
    svc: LeaderboardService, clock: Clock
) -> None:
    for i, median in enumerate((3000.0, None, 1000.0, 2000.0, None, 1000.0)):
        code = FAST + f"# {i}\n".encode()
        svc.submit(ANN if i % 2 else BOB, "k.py", code, "add", ["cpu"], Mode.BENCHMARK, licence="MIT")
        fails = verdict_result(Verdict.WRONG_ANSWER)
        serve(svc, FakeLauncher(fails if median is None else (lambda r, m=median: accepted_result(r, m))))
        if i != 3:  # two submitted at the same time: the submission id decides
            clock.now += timedelta(minutes=1)
    for sort in ("newest", "speed"):
        whole = published(svc, sort=sort)
        walked, cursor, pages = [], None, 0
        while True:
            page = svc.archive(ArchiveFilter(sort=sort), limit=4 if cursor is None else 1, cursor=cursor)
            walked += [e.submission_id for e in page.entries]
            pages += 1
            assert page.total == 6 and page.total_exact
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert walked == whole and pages == 3, sort
    assert published(svc, sort="speed")[:4] == [3, 6, 4, 1]  # untimed ones (2 and 5) last, by id
    newest = svc.archive(ArchiveFilter(), limit=2)
    with pytest.raises(InvalidSubmission, match="not one this archive gave") as refused:
        svc.archive(ArchiveFilter(sort="speed"), cursor=newest.next_cursor)  # another sort's cursor
    assert refused.value.field == "cursor"
    forged = base64.urlsafe_b64encode(json.dumps([1, "speed", "1e999", 1, "cpu"]).encode()).decode()
    for bad in ("", "!!!", "bm9wZQ", forged, newest.next_cursor[:-3]):  # type: ignore[index]
        with pytest.raises(InvalidSubmission, match="not one this archive gave"):
            svc.archive(ArchiveFilter(sort="speed" if bad == forged else "newest"), cursor=bad or "x")
