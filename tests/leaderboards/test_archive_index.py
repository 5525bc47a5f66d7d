"""The near-clone index (issue 34, ``leaderboards/similarity_index.py``) against the exact search it replaces: on a
generated corpus, every kernel at ``NEAR`` or above that a full Jaccard scan finds, the index finds too, with the
same similarity; and a stored submission is indexed when it is stored."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from test_archive import ANN, BOB, clock, respond, svc  # noqa: F401  (the fixtures)
from test_archive_similarity import RENAMED, TORCH, TRITON
from test_system_tests import Clock, serve

from leaderboards import archive, similarity_index
from leaderboards.archive import ArchiveFilter
from leaderboards.db import Database
from leaderboards.models import Leaderboard, SimilarityBand, SimilaritySignature, Submission, SubmissionCode, User
from leaderboards.service import LeaderboardService
from leaderboards.similarity import NEAR, fingerprint, similarity
from runners.contract import Mode, RunRequest, RunResult
from runners.launchers.fake import FakeLauncher

STATEMENTS = [
    "{a} = tl.load({b} + {c}, mask={d})",
    "tl.store({a} + {b}, {c}, mask={d})",
    "{a} = {b} * {c} + tl.arange(0, {d})",
    "{a} = torch.empty_like({b})",
    "{a} = tl.sum({b} * {c}, axis=0)",
    "{a} = tl.program_id(axis={n})",
    "{a} = triton.cdiv({b}, {n})",
    "{a} = {b}.view(-1)[{c} : {c} + {n}]",
    "for {a} in range(0, {b}, {n}):",
    "    {a} += tl.dot({b}, {c})",
    "if {a} < {b}:",
    "    {a} = tl.maximum({b}, {n})",
    "{a} = torch.matmul({b}, {c}.t())",
    "{a}, {b} = {c}",
    "{a} = tl.where({b} > {n}, {c}, {d})",
    "return {a}",
]
NAMES = ["x", "y", "z", "acc", "out", "ptr", "mask", "offs", "pid", "n", "blk", "tmp", "lhs", "rhs", "res", "i"]


def kernel(rng: random.Random, lines: int) -> str:
    body = []
    for _ in range(lines):
        line = rng.choice(STATEMENTS).format(
            a=rng.choice(NAMES), b=rng.choice(NAMES), c=rng.choice(NAMES), d=rng.choice(NAMES), n=rng.randint(1, 512)
        )
        body.append("    " + line.strip() + ("\n        pass" if line.endswith(":") else ""))
    return "def custom_kernel(data):\n" + "\n".join(body) + "\n"


def variant(rng: random.Random, code: str, changes: int) -> str:
    """A copy of ``code`` with its names renamed and ``changes`` lines replaced."""
    lines = code.splitlines()
    for _ in range(changes):
        lines[rng.randrange(1, len(lines))] = kernel(rng, 1).splitlines()[1]
    renames = dict(zip(NAMES, rng.sample(NAMES, len(NAMES)), strict=True))
    return "\n".join(" ".join(renames.get(w, w) for w in line.split(" ")) for line in lines) + "\n"


def corpus(seed: int, size: int) -> list[str]:
    rng = random.Random(seed)
    files: list[str] = []
    for _ in range(size):
        if files and rng.random() < 0.4:
            files.append(variant(rng, rng.choice(files), rng.choice([0, 1, 2, 4, 8])))
        else:
            files.append(kernel(rng, rng.randint(12, 40)))
    return files


def load(database: Database, files: list[str]) -> list[int]:
    """Store ``files`` as submissions of the board 'add' (created by the ``svc`` fixture) and index them."""
    with database.transaction() as s:
        board = s.query(Leaderboard).one()
        user = User(identity="gen:1", name="gen")
        s.add(user)
        s.flush()
        ids = []
        for i, text in enumerate(files):
            code = SubmissionCode(sha256=f"{i:064x}", content=text.encode())
            s.add(code)
            s.flush()
            sub = Submission(user_id=user.id, leaderboard_id=board.id, code_id=code.id, file_name="k.py", mode="test")
            s.add(sub)
            s.flush()
            similarity_index.index_submission(s, sub.id, board.problem, text.encode(), "k.py")
            ids.append(sub.id)
        return ids


@pytest.mark.parametrize("seed", [1, 2])
def test_the_index_finds_every_near_kernel_the_exact_search_finds(
    svc: LeaderboardService,  # noqa: F811
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
) -> None:
    files = corpus(seed, 160)
    ids = load(database, files)
    prints = [fingerprint(f, "k.py") for f in files]
    monkeypatch.setattr(similarity_index, "EXACT_SCAN", 0)  # always through the bands, however small the corpus
    near_pairs_seen = 0
    with database.transaction() as s:
        problem = s.query(Leaderboard).one().problem
        pairs = similarity_index.near_pairs(s, ids)
        for i, target in enumerate(prints):
            exact = {ids[j]: similarity(target, p) for j, p in enumerate(prints) if similarity(target, p) >= NEAR}
            found = {m.submission_id: m.similarity for m in similarity_index.search(s, problem, target)}
            assert {k: found.get(k) for k in exact} == exact  # each one found, with its exact similarity
            others = set(exact) - {ids[i]}
            assert others <= set(pairs.get(ids[i], ())), "a near pair the near-copy check would miss"
            near_pairs_seen += len(others)
    assert near_pairs_seen > 50  # the corpus has near copies to find, not only distant kernels


def test_a_stored_submission_is_indexed_and_found_by_its_renamed_copy(
    svc: LeaderboardService,  # noqa: F811
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sid = svc.submit(ANN, "k.py", TRITON.encode(), "add", ["cpu"], Mode.TEST).submission_id
    monkeypatch.setattr(similarity_index, "EXACT_SCAN", 0)
    with database.transaction() as s:
        assert s.get(SimilaritySignature, sid) is not None
        assert s.query(SimilarityBand).filter_by(submission_id=sid).count() == similarity_index.BANDS
        problem = s.get(SimilaritySignature, sid).problem  # type: ignore[union-attr]
        found = similarity_index.search(s, problem, fingerprint(RENAMED, "r.py"))
        assert [m.submission_id for m in found] == [sid] and found[0].similarity >= NEAR
        assert similarity_index.search(s, problem, frozenset()) == []  # an empty file is near nothing


def test_the_minhash_estimates_the_jaccard_index() -> None:
    files = corpus(3, 60)
    prints = [fingerprint(f, "k.py") for f in files]
    errors = []
    for a in range(0, 60, 3):
        for b in range(1, 60, 7):
            shared = (similarity_index.minhash(prints[a]) == similarity_index.minhash(prints[b])).mean()
            errors.append(abs(shared - similarity(prints[a], prints[b])))
    assert sum(errors) / len(errors) < 0.05


def test_the_archive_total_is_counted_up_to_its_cap(
    svc: LeaderboardService,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    svc.set_archive_policy("add", at_once=True, actor="admin")
    for text in (TRITON, RENAMED):
        svc.submit(ANN, "k.py", text.encode(), "add", ["cpu"], Mode.TEST, licence="MIT")
    serve(svc, FakeLauncher(respond))
    page = svc.archive(ArchiveFilter())
    assert (page.total, page.total_exact, len(page.entries)) == (2, True, 2)
    monkeypatch.setattr(archive, "ARCHIVE_COUNT_MAX", 1)  # counting stops there: the page itself is whole
    page = svc.archive(ArchiveFilter())
    assert (page.total, page.total_exact, len(page.entries)) == (1, False, 2)


def test_admins_see_near_clones_of_the_top_entries_by_other_accounts(
    svc: LeaderboardService,  # noqa: F811
    clock: Clock,  # noqa: F811
) -> None:
    original = svc.submit(ANN, "k.py", TRITON.encode(), "add", ["cpu"], Mode.RANKED).submission_id
    clock.now += timedelta(hours=2)
    copy = svc.submit(BOB, "k.py", RENAMED.encode(), "add", ["cpu"], Mode.RANKED).submission_id
    svc.submit(BOB, "t.py", TORCH.encode(), "add", ["cpu"], Mode.RANKED)  # honest: far from both
    svc.submit(ANN, "k.py", TRITON.encode() + b"\n", "add", ["cpu"], Mode.RANKED)  # her own again: not a clone
    serve(svc, FakeLauncher(respond))
    clones = svc.near_clones("add")
    assert [(c.submission_id, c.of_submission_id) for c in clones] == [(copy, original)]
    assert clones[0].similarity >= NEAR and clones[0].later_by_s == 7200
    assert f"#{copy} (bob) is" in clones[0].text and "by another user (ann), submitted 2 h later" in clones[0].text
    assert svc.near_clones() == clones  # every open board
    assert svc.near_clones("add", top=1)[0].rank == 1


def test_the_archive_filters_by_roofline_share(svc: LeaderboardService) -> None:  # noqa: F811
    svc.set_archive_policy("add", at_once=True, actor="admin")
    low = svc.submit(ANN, "k.py", TRITON.encode(), "add", ["cpu"], Mode.TEST, licence="MIT").submission_id
    high = svc.submit(BOB, "k.py", TORCH.encode(), "add", ["cpu"], Mode.TEST, licence="MIT").submission_id
    shares = {TRITON.encode(): 0.2, TORCH.encode(): 0.7}

    def with_share(request: RunRequest) -> RunResult:
        return respond(request).model_copy(update={"roofline_share": shares[request.submission.content]})

    serve(svc, FakeLauncher(with_share))
    found = svc.archive(ArchiveFilter(min_roofline_share=0.5)).entries
    assert [(e.submission_id, e.roofline_share) for e in found] == [(high, 0.7)]
    assert {e.submission_id for e in svc.archive(ArchiveFilter(min_roofline_share=0.1)).entries} == {low, high}


def test_a_file_is_fingerprinted_before_its_transaction_and_not_again_inside(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokenising a 1 MiB file takes about a second: the service does it with the file's first checks, before any
    lock, and ``index_submission`` reuses it (a batch of 64 such files held a board's row lock for a minute)."""
    import leaderboards.similarity_index as index

    calls: list[str] = []
    real = index.fingerprint
    monkeypatch.setattr(index, "fingerprint", lambda code, name: calls.append(name) or real(code, name))
    code = b"def custom_kernel(data):\n    return data  # prepared\n"
    index.prepare(code, "k.py")
    assert index._fingerprint_of(code, "other_name.py") == real(code.decode(), "k.py") and calls == ["k.py"]
    index._fingerprint_of(code, "k.cu")  # another tokenizer: made again
    assert calls == ["k.py", "k.cu"]
