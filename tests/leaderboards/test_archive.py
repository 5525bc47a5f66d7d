"""The open archive's consent and contents, through the service (issue 34): nothing is published by default; a CC-BY
kernel appears after its board's deadline (at once on a practice board) and leaves when withdrawn; its licence cannot
change once published; the account default and the header line choose a licence; an entry holds the public run's
timings and speedups, never the secret run's, a case's seed, a hidden board's or a banned user's code. The Parquet
export holds the published entries only, the same bytes on a second run, with a manifest that matches its files."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from helpers import write_problem
from test_archive_similarity import RENAMED, TORCH, TRITON
from test_system_tests import Clock, serve

from leaderboards.archive import ArchiveFilter
from leaderboards.archive_export import CASES_SCHEMA, ENTRIES_SCHEMA, export_archive
from leaderboards.db import Database
from leaderboards.directives import parse_directives
from leaderboards.errors import InvalidChange, InvalidSubmission, SubmissionNotFound
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import BaselineResult, Mode, RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

ANN, BOB = UserRef("ann"), UserRef("bob")
PUBLIC_NS, SECRET_NS = 1234.5, 987654.25  # the secret run's timing is a number nothing else in the world has
FAST = b"def custom_kernel(data):\n    return data  # fast\n"
OTHER = b"def custom_kernel(data):\n    return list(data)\n"


def respond(request: RunRequest) -> RunResult:
    """Public runs at PUBLIC_NS, 2x faster than the reference; the secret run at SECRET_NS."""
    result = accepted_result(request, SECRET_NS if request.seed is not None else PUBLIC_NS)
    n = len(result.benchmarks)
    reference = BaselineResult(label="reference", function="ref_kernel", speedups=[2.0] * n, speedup=2.0)
    return result.model_copy(update={"baselines": [reference] if n else []})


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
    return service


def published(svc: LeaderboardService, **filters: object) -> list[int]:
    return [e.submission_id for e in svc.archive(ArchiveFilter(**filters), limit=100).entries]  # type: ignore[arg-type]


def test_nothing_is_published_without_a_licence_and_cc_by_appears_after_the_deadline_until_withdrawn(
    svc: LeaderboardService, clock: Clock
) -> None:
    plain = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.RANKED).submission_id
    cc = svc.submit(BOB, "k.py", OTHER, "add", ["cpu"], Mode.RANKED, licence="cc-by-4.0").submission_id
    serve(svc, FakeLauncher(respond))
    assert published(svc) == []  # before the deadline: nothing, the licensed one neither
    view = svc.submission_licence(cc, BOB)
    assert (view.licence, view.published, view.publishes_at) == ("CC-BY-4.0", False, clock.now + timedelta(days=1))
    clock.now += timedelta(days=2)
    assert published(svc) == [cc] and plain != cc  # ann's (licence none) is never published
    with pytest.raises(InvalidChange, match="Withdraw it"):
        svc.set_submission_licence(cc, BOB, "MIT")
    with pytest.raises(SubmissionNotFound):
        svc.withdraw_from_archive(cc, ANN)  # only its author withdraws it
    assert svc.withdraw_from_archive(cc, BOB).withdrawn
    assert published(svc) == []
    with pytest.raises(SubmissionNotFound):
        svc.archive_entry(cc, "cpu")
    assert svc.set_submission_licence(cc, BOB, "MIT").published  # consent again, under a licence of their choice
    assert [e.licence for e in svc.archive(ArchiveFilter()).entries] == ["MIT"]


def test_a_practice_board_publishes_at_once_and_a_licence_changes_until_then(svc: LeaderboardService) -> None:
    sid = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.BENCHMARK, licence="MIT").submission_id
    serve(svc, FakeLauncher(respond))
    assert svc.set_submission_licence(sid, ANN, "cc0").licence == "CC0-1.0"  # unpublished: changeable
    svc.set_archive_policy("add", at_once=True, actor="admin")
    assert published(svc) == [sid]
    assert svc.submission_licence(sid, ANN).published
    svc.set_archive_policy("add", at_once=False, actor="admin")
    assert published(svc) == []


def test_the_account_default_and_the_header_line_choose_the_licence(svc: LeaderboardService) -> None:
    svc.set_archive_policy("add", at_once=True, actor="admin")
    svc.set_archive_account(ANN, default_licence="Apache-2.0", author_name="A. N. Author")
    by_default = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.BENCHMARK).submission_id
    header = b"#!kernelcup license: CC0-1.0\n" + OTHER
    by_header = svc.submit(ANN, "k.py", header, "add", ["cpu"], Mode.BENCHMARK).submission_id
    explicit = svc.submit(ANN, "k.py", header + b"\n", "add", ["cpu"], Mode.BENCHMARK, licence="none").submission_id
    serve(svc, FakeLauncher(respond))
    entries = {e.submission_id: e for e in svc.archive(ArchiveFilter()).entries}
    assert {i: e.licence for i, e in entries.items()} == {by_default: "Apache-2.0", by_header: "CC0-1.0"}
    assert explicit not in entries  # the flag wins over the file and the default
    assert {e.author for e in entries.values()} == {"A. N. Author"}
    svc.set_archive_account(ANN, author_name="")
    assert {e.author for e in svc.archive(ArchiveFilter()).entries} == {""}  # anonymous
    with pytest.raises(InvalidSubmission, match=r"choose one of: none, CC0-1\.0"):
        svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.TEST, licence="GPL-3.0")
    assert parse_directives("#!POPCORN license MIT\n").licence == "MIT"


def test_an_entry_holds_the_public_run_only(svc: LeaderboardService, clock: Clock) -> None:
    svc.set_archive_policy("add", at_once=True, actor="admin")
    sid = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.RANKED, licence="MIT").submission_id
    serve(svc, FakeLauncher(respond))
    entry = svc.archive_entry(sid, "cpu")
    assert entry.code == FAST.decode() and entry.problem == "add" and entry.fingerprint
    assert entry.passed and entry.speedup == 2.0 and entry.score_ns == pytest.approx(PUBLIC_NS)
    assert [c.case for c in entry.cases] == [{"size": 100}, {"size": 1000}]  # the cases' seeds are left out
    assert [c.median_ns for c in entry.cases] == [pytest.approx(PUBLIC_NS)] * 2
    assert "hostname" not in entry.system
    text = json.dumps(asdict(entry), default=str)
    assert str(SECRET_NS)[:6] not in text and "seed" not in text
    assert published(svc, min_speedup=1.5) == [sid] and published(svc, min_speedup=2.5) == []
    assert published(svc, device="H100") == [] and published(svc, problem="add", accepted=True) == [sid]
    assert published(svc, after=clock.now) == [] and published(svc, after=clock.now - timedelta(hours=1)) == [sid]


def test_deleted_banned_and_hidden_boards_leave_the_archive(svc: LeaderboardService) -> None:
    svc.set_archive_policy("add", at_once=True, actor="admin")
    sid = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.BENCHMARK, licence="MIT").submission_id
    serve(svc, FakeLauncher(respond))
    assert published(svc) == [sid]
    svc.ban_user(ANN, reason="test", actor="admin")
    assert published(svc) == []
    svc.unban_user(ANN, actor="admin")
    assert published(svc) == [sid]
    svc.cancel_or_delete(sid, ANN)
    assert published(svc) == []


def test_the_export_holds_the_published_entries_and_is_byte_identical(svc: LeaderboardService, tmp_path: Path) -> None:
    none = export_archive(svc.archive_all(), tmp_path / "empty")
    assert (none.entries, none.manifest["files"]["entries.parquet"]["rows"]) == (0, 0)  # nothing by default
    svc.set_archive_policy("add", at_once=True, actor="admin")
    ann = svc.submit(ANN, "k.py", FAST, "add", ["cpu"], Mode.RANKED, licence="MIT").submission_id
    bob = svc.submit(BOB, "k.py", OTHER, "add", ["cpu"], Mode.BENCHMARK, licence="CC0").submission_id
    svc.submit(BOB, "k.py", OTHER + b"\n", "add", ["cpu"], Mode.BENCHMARK)  # licence none: never exported
    serve(svc, FakeLauncher(respond))
    first = export_archive(svc.archive_all(), tmp_path / "one")
    second = export_archive(svc.archive_all(), tmp_path / "two")
    for name in ("entries.parquet", "cases.parquet", "manifest.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    assert manifest == first.manifest == second.manifest
    assert (manifest["entries"], manifest["cases"], manifest["licences"]) == (2, 4, {"CC0-1.0": 1, "MIT": 1})
    for name, listed in manifest["files"].items():
        data = (tmp_path / "one" / name).read_bytes()
        assert listed["sha256"] == hashlib.sha256(data).hexdigest() and listed["bytes"] == len(data)
    entries = pq.read_table(tmp_path / "one" / "entries.parquet")
    assert entries.schema.equals(ENTRIES_SCHEMA)
    assert entries.column("submission_id").to_pylist() == [ann, bob]
    assert entries.column("code").to_pylist() == [FAST.decode(), OTHER.decode()]
    assert entries.column("near_copy_of").to_pylist() == [None, None]  # two different files
    cases = pq.read_table(tmp_path / "one" / "cases.parquet")
    assert cases.schema.equals(CASES_SCHEMA)
    assert cases.column("case").to_pylist() == ['{"size":100}', '{"size":1000}'] * 2  # no seed
    assert set(cases.column("median_ns").to_pylist()) == {PUBLIC_NS}  # the public run's, never the secret run's
    svc.withdraw_from_archive(ann, ANN)
    later = export_archive(svc.archive_all(), tmp_path / "one")
    assert (later.entries, later.manifest["licences"]) == (1, {"CC0-1.0": 1})
    assert pq.read_table(tmp_path / "one" / "entries.parquet").column("submission_id").to_pylist() == [bob]


def test_a_published_near_copy_of_someone_elses_earlier_kernel_is_flagged(
    svc: LeaderboardService, clock: Clock
) -> None:
    svc.set_archive_policy("add", at_once=True, actor="admin")
    original = svc.submit(ANN, "k.py", TRITON.encode(), "add", ["cpu"], Mode.TEST, licence="MIT").submission_id
    clock.now += timedelta(hours=2)
    copy = svc.submit(BOB, "k.py", RENAMED.encode(), "add", ["cpu"], Mode.TEST, licence="MIT").submission_id
    honest = svc.submit(BOB, "t.py", TORCH.encode(), "add", ["cpu"], Mode.TEST, licence="MIT").submission_id
    clock.now += timedelta(hours=1)  # ann sends her own kernel again, after bob's copy of it
    own = svc.submit(ANN, "k.py", TRITON.encode() + b"\n", "add", ["cpu"], Mode.TEST, licence="MIT").submission_id
    serve(svc, FakeLauncher(respond))
    flags = {e.submission_id: (e.near_copy_of, e.similarity) for e in svc.archive(ArchiveFilter()).entries}
    assert flags[copy][0] == original and flags[copy][1] is not None and flags[copy][1] >= 0.8
    assert flags[original] == flags[honest] == flags[own] == (None, None)  # the first, an honest one, one's own
    assert svc.archive_entry(copy, "cpu").near_copy_of == original
    exported = {e.submission_id: e.near_copy_of for e in svc.archive_all()}  # what the export writes
    assert exported[copy] == original and exported[own] is None
    svc.withdraw_from_archive(original, ANN)  # only published kernels are compared
    assert svc.archive_entry(copy, "cpu").near_copy_of is None
