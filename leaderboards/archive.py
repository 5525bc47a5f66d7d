"""The open kernel archive (issue 34): what authors chose to publish, and nothing else.

Consent: every submission carries a licence (``leaderboards/licences.py``). ``none``, the default, never publishes.
The licence is chosen per submission (a CLI flag, a ``#!kernelcup license:`` header line, the API's field, the web
form, a Discord option) or falls back to the author's account default (``set_archive_account``). It can be changed
until the entry is published and withdrawn at any time (``withdraw_from_archive``): a withdrawn entry leaves the
archive and every later export.

When: a leaderboard publishes its licensed kernels after its deadline, or at once where an admin said so
(``set_archive_policy``, for practice boards).

What an entry holds: the code, its licence, the author as they chose to be named, the problem and the leaderboard's
fingerprint, the device and the run's system info (without the runner's host name), and the PUBLIC run's verdict,
per-case timings and speedups. Never: the secret run (its timings, its score, its seed), held-out cases (those are
system tests, never runs), the cases' seeds, deleted, quarantined or hack-judged submissions, banned users, hidden
leaderboards, or anything of another user.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Select, delete, false, func, or_, select, tuple_
from sqlalchemy.orm import Session

from leaderboards.errors import FileTooLarge, InvalidChange, InvalidSubmission, SubmissionNotFound
from leaderboards.licences import NONE, parse_licence
from leaderboards.models import (
    ArchiveAccount,
    ArchiveEntryRow,
    ArchivePolicy,
    Job,
    Leaderboard,
    Run,
    Submission,
    SubmissionCode,
    SubmissionLicence,
    User,
)
from leaderboards.moderation_states import ranks_condition
from leaderboards.results import UserRef

if TYPE_CHECKING:
    from leaderboards.results import Ranking
from leaderboards.service_base import ServiceBase
from leaderboards.similarity import NEAR, fingerprint, similarity
from leaderboards.similarity_index import index_submission, near_pairs, search, signature_of, signatures

ARCHIVE_PAGE_MAX = 100
ARCHIVE_COUNT_MAX = 1_000
"""A page's ``total`` counts this many matches at most: counting every one of 100,000 entries would cost more than
the page itself (docs/archive.md, the benchmark)."""
"""Most entries in one page of the archive."""
MAX_AUTHOR_NAME = 100
SIMILAR_QUERY_MAX_BYTES = 64 * 1024
"""The largest file a similarity query takes (``similar_kernels``): tokenising and fingerprinting is CPU work on a
query nobody needs a token for, and took 1.6 CPU-s for a 1 MB file (red team, 2026-11-29); the problems' largest
solution is 16 KB, and 64 KB takes about 0.04 s."""
SORTS = ("newest", "speed")
SYSTEM_FIELDS = ("platform", "python", "device", "gpu_name", "gpu_count", "driver", "cuda", "torch", "triton", "nvcc",
                 "headers")  # fmt: skip
"""What an entry shows of a run's system info: the runtime, never the runner's host name or its sandbox notes."""
HIDDEN_CASE_KEYS = frozenset({"seed"})
"""Keys of a benchmark case that are never published (the inputs' seed)."""


@dataclass(frozen=True)
class ArchiveCase:
    index: int
    case: dict[str, Any]
    """The benchmark case's parameters, without its seed."""
    verdict: str
    median_ns: float | None
    p25_ns: float | None
    p75_ns: float | None
    min_ns: float | None
    samples: int | None
    roofline_share: float | None
    speedup: float | None
    """Over the reference (above 1: faster)."""


@dataclass(frozen=True)
class ArchiveSpeedup:
    label: str
    speedup: float | None
    """Geometric mean over the cases."""


@dataclass(frozen=True)
class ArchiveEntry:
    submission_id: int
    leaderboard: str
    problem: str
    fingerprint: str
    device: str
    language: str
    file_name: str
    code: str
    licence: str
    author: str
    """As the author chose to be named ('' when anonymous)."""
    submitted_at: datetime
    mode: str
    verdict: str
    passed: bool
    score_ns: float | None
    """The public run's score."""
    speedup: float | None
    """Over the reference, geometric mean of the cases."""
    roofline_share: float | None
    system: dict[str, Any]
    cases: tuple[ArchiveCase, ...]
    speedups: tuple[ArchiveSpeedup, ...]
    near_copy_of: int | None = None
    """An earlier published kernel of the same problem by someone else that this one nearly copies (``similarity``
    at least ``leaderboards.similarity.NEAR``), the most similar one; None when there is none."""
    similarity: float | None = None


@dataclass(frozen=True)
class ArchivePage:
    entries: tuple[ArchiveEntry, ...]
    total: int
    """The entries matching, counted up to ``ARCHIVE_COUNT_MAX`` (``total_exact`` False: at least that many)."""
    offset: int
    limit: int
    total_exact: bool = True
    next_cursor: str | None = None
    """Where the next page starts (``archive(..., cursor=)``); None on the last page."""


@dataclass(frozen=True)
class ArchiveFilter:
    problem: str | None = None
    leaderboard: str | None = None
    device: str | None = None
    language: str | None = None
    accepted: bool = False
    min_speedup: float | None = None
    after: datetime | None = None
    sort: str = "newest"
    min_roofline_share: float | None = None
    """Only entries whose public run reached at least this share of the device's roofline (0 to 1)."""


@dataclass(frozen=True)
class SimilarKernel:
    """A published kernel near a given one (``similar_kernels``): what a generation program retrieves."""

    submission_id: int
    leaderboard: str
    problem: str
    file_name: str
    licence: str
    author: str
    submitted_at: datetime
    similarity: float


@dataclass(frozen=True)
class NearClone:
    """Two submissions of one problem by different accounts at ``NEAR`` or more, one of them a top entry of a
    leaderboard (``near_clones``): what an admin looks at during a competition."""

    leaderboard: str
    device: str
    rank: int
    """The top entry's rank on ``leaderboard`` and ``device``."""
    top_submission_id: int
    submission_id: int
    """The later of the two."""
    user: str
    of_submission_id: int
    """The earlier of the two."""
    of_user: str
    similarity: float
    later_by_s: float
    """How long after ``of_submission_id`` ``submission_id`` was submitted."""

    @property
    def text(self) -> str:
        """'#812 is 93% similar to #640 by another user, submitted 2 h later' with the ranks it concerns."""
        later = self.later_by_s
        delay = f"{later / 86400:.0f} d" if later >= 86400 else f"{later / 3600:.0f} h" if later >= 3600 else (
            f"{later / 60:.0f} min")  # fmt: skip
        top = f"#{self.top_submission_id} ranks {self.rank} on {self.leaderboard} ({self.device})"
        return (
            f"#{self.submission_id} ({self.user}) is {self.similarity:.0%} similar to #{self.of_submission_id} by "
            f"another user ({self.of_user}), submitted {delay} later; {top}"
        )


@dataclass(frozen=True)
class LicenceView:
    submission_id: int
    licence: str
    published: bool
    withdrawn: bool
    publishes_at: datetime | None
    """When it is (or will be) published; None while its licence is ``none`` or it is withdrawn."""


@dataclass(frozen=True)
class ArchiveAccountView:
    default_licence: str
    author_name: str | None
    """None: named as on the leaderboards; '': anonymous."""


def _public_case(case: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in case.items() if k not in HIDDEN_CASE_KEYS}


def _reference_speedups(result: dict[str, Any]) -> tuple[float | None, list[float | None]]:
    for baseline in result.get("baselines") or ():
        if baseline.get("function") == "ref_kernel" or baseline.get("label") == "reference":
            return baseline.get("speedup"), list(baseline.get("speedups") or ())
    return None, []


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _cases(result: dict[str, Any]) -> tuple[ArchiveCase, ...]:
    _, per_case = _reference_speedups(result)
    cases = []
    for i, bench in enumerate(result.get("benchmarks") or ()):
        stats = bench.get("stats") or {}
        cases.append(
            ArchiveCase(
                index=int(bench.get("index", i)),
                case=_public_case(bench.get("case") or {}),
                verdict=str(bench.get("verdict", "")),
                median_ns=_finite(stats.get("median_ns")),
                p25_ns=_finite(stats.get("p25_ns")),
                p75_ns=_finite(stats.get("p75_ns")),
                min_ns=_finite(stats.get("min_ns")),
                samples=stats.get("samples"),
                roofline_share=_finite(bench.get("roofline_share")),
                speedup=_finite(per_case[i]) if i < len(per_case) else None,
            )
        )
    return tuple(cases)


def _at_least(value: float | None, minimum: float | None) -> bool:
    """No minimum, or a value that reaches it (an entry without the value never does)."""
    return minimum is None or (value is not None and value >= minimum)


AUTHOR_NAME_FIELD = "author_name"
_UNSHOWN = ("Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn")
"""Unicode categories an author name may not hold: control and format characters (the bidirectional overrides such
as U+202E, zero-width joiners), line and paragraph separators, private-use, surrogate and unassigned code points."""


def _checked_author_name(name: str) -> str:
    """``name`` trimmed, or ``InvalidChange`` (a 422 naming ``author_name``) when it holds a character that is not
    shown as itself (red team, 2026-11-29: U+202E was stored and reversed the text around it) or is too long."""
    name = name.strip()
    bad = next((c for c in name if unicodedata.category(c) in _UNSHOWN), None)
    if bad is not None:
        raise InvalidChange(
            f"The author name holds U+{ord(bad):04X} ({unicodedata.name(bad, 'a control character')}): control, "
            "bidirectional and other invisible characters are not allowed; use letters, digits, spaces and "
            "punctuation.",
            field=AUTHOR_NAME_FIELD,
        )
    if len(name) > MAX_AUTHOR_NAME:
        raise InvalidChange(
            f"The author name is {len(name)} characters; the longest allowed is {MAX_AUTHOR_NAME}.",
            field=AUTHOR_NAME_FIELD,
        )
    return name


def _refuse_another_accounts_name(s: Session, user: User, name: str) -> None:
    """``InvalidChange`` when ``name`` is, ignoring case, another account's leaderboard name, its login
    (``local:<name>``) or the author name it chose: an archive entry could otherwise be credited to "bob" by
    someone else (red team, 2026-11-29). '' (anonymous) and '-' (one's own name) are always allowed."""
    if name in ("", "-"):
        return
    lowered = name.casefold()
    taken = s.scalar(
        select(User.id)
        .outerjoin(ArchiveAccount, ArchiveAccount.user_id == User.id)
        .where(
            User.id != user.id,
            or_(
                func.lower(User.name) == lowered,
                func.lower(User.identity) == f"local:{lowered}",
                func.lower(ArchiveAccount.author_name) == lowered,
            ),
        )
        .limit(1)
    )
    if taken is not None:
        raise InvalidChange(
            f"The author name {name!r} is another account's name; choose one of your own ('-': your leaderboard "
            "name, '': anonymous).",
            field=AUTHOR_NAME_FIELD,
        )


def author_name(user: User, account: ArchiveAccount | None) -> str:
    """How the archive names ``user``: their chosen name, '' (anonymous), or their leaderboard name."""
    return _named(user.name, account)


def _named(leaderboard_name: str, account: ArchiveAccount | None) -> str:
    if account is not None and account.author_name is not None:
        return account.author_name
    return leaderboard_name


def check_similar_query_size(file_name: str, size: int) -> None:
    """Refuse a similarity query's file above ``SIMILAR_QUERY_MAX_BYTES`` (a 413 naming the limit); surfaces call it
    with the size an upload announces before reading it, ``similar_kernels`` with the text it got."""
    if size > SIMILAR_QUERY_MAX_BYTES:
        exc = FileTooLarge(file_name.rsplit("/", 1)[-1] or "the file", size, SIMILAR_QUERY_MAX_BYTES)
        exc.message = exc.message.replace("the limit is", "a similarity query takes files of up to")
        exc.args, exc.field = (exc.message,), "file"
        raise exc


CURSOR_VERSION = 1


def _cursor(sort: str, row: Any) -> str:
    """An opaque cursor after ``row`` (its sort key): URL-safe base64 of JSON."""
    key = [row.submitted_at.isoformat()] if sort == "newest" else [row.score]
    data = json.dumps([CURSOR_VERSION, sort, *key, row.submission_id, row.device], separators=(",", ":"))
    return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")


def _read_cursor(cursor: str, sort: str) -> tuple[Any, ...]:
    """The sort key a cursor holds; ``InvalidSubmission`` (field ``cursor``) for anything not made by ``_cursor`` for
    this sort: a cursor is sent back by a client and read as untrusted input."""
    bad = InvalidSubmission(
        "The cursor is not one this archive gave for this sort: pass a page's next_cursor unchanged, with the same "
        "filters and sort, or leave it out to start from the first page.",
        field="cursor",
    )
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        version, kind, key, sid, device = json.loads(raw)
    except (ValueError, TypeError, binascii.Error):
        raise bad from None
    if version != CURSOR_VERSION or kind != sort or not isinstance(sid, int) or not isinstance(device, str):
        raise bad
    if sort == "newest":
        try:
            at = datetime.fromisoformat(key) if isinstance(key, str) else None
        except ValueError:
            at = None
        if at is None or at.tzinfo is None:
            raise bad
        return at, sid, device
    if key is not None and (isinstance(key, bool) or not isinstance(key, int | float) or not math.isfinite(key)):
        raise bad
    return (None if key is None else float(key)), sid, device


def run_figures(result: dict[str, Any]) -> tuple[float | None, float | None]:
    """A stored run result's speedup over the reference (geometric mean of the cases) and roofline share: what the
    archive filters by, kept in ``archive_entries``."""
    speedup, _ = _reference_speedups(result)
    return _finite(speedup), _finite(result.get("roofline_share"))


def refresh_archive_entries(s: Session, submission_id: int) -> None:
    """Write again the kept rows (``archive_entries``) of one submission: one per public run while its licence is
    not ``none`` and not withdrawn, none otherwise. Called when a public run is recorded
    (``leaderboards/recording.py``) and when the licence is set, changed or withdrawn; idempotent."""
    s.flush()
    s.execute(delete(ArchiveEntryRow).where(ArchiveEntryRow.submission_id == submission_id))
    licence = s.get(SubmissionLicence, submission_id)
    sub = s.get(Submission, submission_id)
    if sub is None or licence is None or licence.licence == NONE or licence.withdrawn_at is not None:
        return
    runs = s.scalars(select(Run).where(Run.submission_id == submission_id, Run.secret.is_(false())).order_by(Run.id))
    for run in runs:
        speedup, roofline = run_figures(run.result or {})
        s.add(
            ArchiveEntryRow(
                run_id=run.id, submission_id=sub.id, device=run.device, leaderboard_id=sub.leaderboard_id,
                problem=sub.leaderboard.problem, user_id=sub.user_id, submitted_at=sub.created_at,
                passed=run.passed, score=run.score, speedup=speedup, roofline_share=roofline,
            )
        )  # fmt: skip
    s.flush()


class ArchiveMixin(ServiceBase):
    """The archive's part of ``LeaderboardService``."""

    if TYPE_CHECKING:  # LeaderboardService's (leaderboards/service.py), which near_clones reads

        def ranking(self, leaderboard: str, device: str | None = None, limit: int | None = 100) -> Ranking: ...

    # -- consent -----------------------------------------------------------------------------------------------

    def _licence_for_new(self, s: Session, user: User, chosen: str | None, header: str | None) -> str:
        """The licence of a new submission: the one given explicitly, else the file's header line, else the account
        default, else ``none``."""
        if chosen:
            return parse_licence(chosen)
        if header:
            return parse_licence(header)
        account = s.get(ArchiveAccount, user.id)
        return account.default_licence if account is not None else NONE

    def _store_licence(self, s: Session, submission_id: int, licence: str) -> None:
        """The archive's part of storing a new submission: its licence, and its near-clone signature
        (``leaderboards/similarity_index.py``; every submission has one, published or not, for the admins' view)."""
        if licence != NONE:
            s.add(SubmissionLicence(submission_id=submission_id, licence=licence, updated_at=self.clock()))
        sub = s.get(Submission, submission_id)
        code = s.get(SubmissionCode, sub.code_id) if sub is not None else None
        if sub is not None and code is not None:
            index_submission(s, sub.id, sub.leaderboard.problem, code.content, sub.file_name)

    def _own(self, s: Session, submission_id: int, user: UserRef) -> Submission:
        sub = s.get(Submission, submission_id)
        if sub is None or sub.deleted or sub.user.identity != user.identity:
            raise SubmissionNotFound(submission_id, mine=True)
        return sub

    def _licence_view(self, s: Session, sub: Submission, row: SubmissionLicence | None) -> LicenceView:
        licence = row.licence if row is not None else NONE
        withdrawn = row is not None and row.withdrawn_at is not None
        at: datetime | None = None
        if licence != NONE and not withdrawn:
            policy = s.get(ArchivePolicy, sub.leaderboard_id)
            at_once = policy is not None and policy.at_once
            at = sub.created_at if at_once else max(sub.created_at, sub.leaderboard.deadline)
        published = at is not None and at <= self.clock() and sub.leaderboard.visible
        return LicenceView(sub.id, licence, published, withdrawn, at)

    def submission_licence(self, submission_id: int, user: UserRef) -> LicenceView:
        """The licence of one of ``user``'s submissions and whether it is published."""
        with self.db.transaction() as s:
            sub = self._own(s, submission_id, user)
            return self._licence_view(s, sub, s.get(SubmissionLicence, sub.id))

    def set_submission_licence(self, submission_id: int, user: UserRef, licence: str) -> LicenceView:
        """Choose the licence of one of ``user``'s submissions; refused once it is published (withdraw it first). On a
        withdrawn entry a licence other than ``none`` is consent again: it is published again when the board allows."""
        chosen = parse_licence(licence)
        with self.db.transaction() as s:
            sub = self._own(s, submission_id, user)
            row = s.get(SubmissionLicence, sub.id)
            view = self._licence_view(s, sub, row)
            if view.published and chosen != view.licence:
                raise InvalidChange(
                    f"Submission #{sub.id} is published under {view.licence}; its licence can no longer change. "
                    "Withdraw it from the archive first (it then leaves the archive and later exports)."
                )
            if row is None:
                row = SubmissionLicence(submission_id=sub.id, licence=chosen, updated_at=self.clock())
                s.add(row)
            row.licence, row.withdrawn_at = chosen, None
            refresh_archive_entries(s, sub.id)
            return self._licence_view(s, sub, row)

    def withdraw_from_archive(self, submission_id: int, user: UserRef) -> LicenceView:
        """Unpublish one of ``user``'s submissions: it leaves the archive and every later export."""
        with self.db.transaction() as s:
            sub = self._own(s, submission_id, user)
            row = s.get(SubmissionLicence, sub.id)
            if row is None or row.licence == NONE:
                raise InvalidChange(f"Submission #{sub.id} has the licence 'none': it is not in the archive.")
            row.withdrawn_at = row.withdrawn_at or self.clock()
            refresh_archive_entries(s, sub.id)
            return self._licence_view(s, sub, row)

    def archive_account(self, user: UserRef) -> ArchiveAccountView:
        with self.db.transaction() as s:
            account = s.get(ArchiveAccount, self._user(s, user).id)
            if account is None:
                return ArchiveAccountView(NONE, None)
            return ArchiveAccountView(account.default_licence, account.author_name)

    def set_archive_account(
        self, user: UserRef, *, default_licence: str | None = None, author_name: str | None = None
    ) -> ArchiveAccountView:
        """Set ``user``'s default licence (for submissions that name none) and/or the name the archive gives them
        (``''``: anonymous; ``'-'``: back to their leaderboard name). Arguments left None are kept."""
        chosen = None if author_name is None else _checked_author_name(author_name)
        with self.db.transaction() as s:
            u = self._user(s, user)
            account = s.get(ArchiveAccount, u.id)
            if account is None:
                account = ArchiveAccount(user_id=u.id, default_licence=NONE, author_name=None)
                s.add(account)
            if default_licence is not None:
                account.default_licence = parse_licence(default_licence, field="default_license")
            if chosen is not None:
                _refuse_another_accounts_name(s, u, chosen)
                account.author_name = None if chosen == "-" else chosen
            s.flush()
            return ArchiveAccountView(account.default_licence, account.author_name)

    def set_archive_policy(self, leaderboard: str, *, at_once: bool, actor: str) -> bool:
        """Admins: publish the board's licensed kernels at once (practice boards) or after its deadline (audited)."""
        with self.db.transaction() as s:
            lb = self._leaderboard(s, leaderboard)
            policy = s.get(ArchivePolicy, lb.id)
            if policy is None:
                s.add(ArchivePolicy(leaderboard_id=lb.id, at_once=at_once))
            else:
                policy.at_once = at_once
            self._audit(s, actor, "archive_policy", lb.name, at_once=at_once)
            return at_once

    # -- the archive ---------------------------------------------------------------------------------------------

    def _published(self, now: datetime) -> Select[ArchiveEntryRow]:
        """Every published entry's kept row (``archive_entries``), unfiltered and unordered.

        The kept table holds the licensed public runs (``refresh_archive_entries``); what can change without a run or
        a licence change is checked here against the submission, its licence, its author and its board, one row each
        (a page walks an index of the kept table and stops at its end): the licence is read again, so a withdrawal
        or ``none`` unpublishes whatever the kept table says."""
        opens = or_(
            Leaderboard.deadline <= now,
            select(ArchivePolicy.at_once)
            .where(ArchivePolicy.leaderboard_id == Leaderboard.id)
            .scalar_subquery()
            .is_(True),
        )
        return (
            select(ArchiveEntryRow)
            .join(Submission, Submission.id == ArchiveEntryRow.submission_id)
            .join(SubmissionLicence, SubmissionLicence.submission_id == ArchiveEntryRow.submission_id)
            .join(Leaderboard, Leaderboard.id == ArchiveEntryRow.leaderboard_id)
            .join(User, User.id == ArchiveEntryRow.user_id)
            .where(
                SubmissionLicence.licence != NONE,
                SubmissionLicence.withdrawn_at.is_(None),
                Submission.deleted.is_(false()),
                ranks_condition(),
                User.is_banned.is_(false()),
                Leaderboard.visible.is_(True),
                opens,
            )
        )

    def _filtered(self, f: ArchiveFilter, now: datetime) -> Select[ArchiveEntryRow]:
        """The published entries matching ``f`` in its order (newest or fastest first; then by submission, device):
        each filter and each order is a column of the kept table with an index that serves it."""
        e = ArchiveEntryRow
        conditions: list[ColumnElement[bool]] = []
        if f.problem:
            conditions.append(e.problem == f.problem)
        if f.leaderboard:  # the board's id first (an init plan), so the board's index serves the page
            conditions.append(
                e.leaderboard_id == select(Leaderboard.id).where(Leaderboard.name == f.leaderboard).scalar_subquery()
            )
        if f.device:
            conditions.append(e.device == f.device)
        if f.language:
            conditions.append(Leaderboard.lang == f.language)
        if f.accepted:
            conditions.append(e.passed.is_(True))
        if f.after is not None:
            conditions.append(e.submitted_at > f.after)
        if f.min_speedup is not None:
            conditions.append(e.speedup >= f.min_speedup)
        if f.min_roofline_share is not None:
            conditions.append(e.roofline_share >= f.min_roofline_share)
        stmt = self._published(now).where(*conditions)
        if f.sort == "speed":
            return stmt.order_by(e.score.asc().nulls_last(), e.submission_id, e.device)
        return stmt.order_by(e.submitted_at.desc(), e.submission_id.desc(), e.device.desc())

    def _load(self, s: Session, run_ids: Sequence[int]) -> list[Any]:
        """(submission, job, public run, licence) of each of ``run_ids``, in that order, a few queries in all."""
        rows: dict[int, Any] = {}
        ids = list(run_ids)
        for i in range(0, len(ids), 500):
            stmt = (
                select(Submission, Job, Run, SubmissionLicence)
                .join(Job, Job.id == Run.job_id)
                .join(Submission, Submission.id == Run.submission_id)
                .join(SubmissionLicence, SubmissionLicence.submission_id == Run.submission_id)
                .where(Run.id.in_(ids[i : i + 500]))
            )
            rows.update((row[2].id, row) for row in s.execute(stmt))
        return [rows[r] for r in ids if r in rows]

    def _entries(self, s: Session, rows: Sequence[Any]) -> list[ArchiveEntry]:
        """The entries of rows of ``_published``: their code, accounts and boards read in one query each, not one per
        row."""
        subs = [row[0] for row in rows]
        if not subs:
            return []
        codes = {
            c.id: c for c in s.scalars(select(SubmissionCode).where(SubmissionCode.id.in_({u.code_id for u in subs})))
        }
        accounts = {
            a.user_id: a
            for a in s.scalars(select(ArchiveAccount).where(ArchiveAccount.user_id.in_({u.user_id for u in subs})))
        }
        boards = s.scalars(select(Leaderboard).where(Leaderboard.id.in_({u.leaderboard_id for u in subs}))).all()
        assert boards  # held here so that each submission's board is found in the session
        return [self._entry(row, codes.get(row[0].code_id), accounts.get(row[0].user_id)) for row in rows]

    def _entry(self, published: Any, code: SubmissionCode | None, account: ArchiveAccount | None) -> ArchiveEntry:
        """The entry of one row of ``_published``: (submission, job, public run, licence)."""
        sub, job, run, row = published
        result = run.result or {}
        speedup, _ = _reference_speedups(result)
        return ArchiveEntry(
            submission_id=sub.id,
            leaderboard=sub.leaderboard.name,
            problem=sub.leaderboard.problem,
            fingerprint=run.fingerprint,
            device=job.device,
            language=sub.leaderboard.lang,
            file_name=sub.file_name,
            code=code.content.decode("utf-8", errors="replace") if code is not None else "",
            licence=row.licence,
            author=author_name(sub.user, account),
            submitted_at=sub.created_at,
            mode=sub.mode,
            verdict=run.verdict,
            passed=run.passed,
            score_ns=_finite(run.score),
            speedup=_finite(speedup),
            roofline_share=_finite(result.get("roofline_share")),
            system={k: (run.system or {}).get(k) for k in SYSTEM_FIELDS},
            cases=_cases(result),
            speedups=tuple(
                ArchiveSpeedup(str(b.get("label", "")), _finite(b.get("speedup")))
                for b in result.get("baselines") or ()
            ),
        )

    def archive(self, f: ArchiveFilter, *, limit: int = 20, offset: int = 0, cursor: str | None = None) -> ArchivePage:
        """One page of the published kernels that match ``f``, newest first or fastest first (``f.sort``): the kept
        table's index walked to the page (``_filtered``), then the page's rows read by id (``_load``).

        ``cursor`` (a page's ``next_cursor``, for the same filter and sort) starts the page right after the last
        entry of the previous one (keyset pagination: an index range, however deep), and ``offset`` is then
        ignored; ``offset`` alone skips that many entries (each one walked)."""
        if f.sort not in SORTS:
            raise InvalidSubmission(f"Unknown sort {f.sort!r}; choose one of: {', '.join(SORTS)}.", field="sort")
        limit = max(1, min(limit, ARCHIVE_PAGE_MAX))
        after = _read_cursor(cursor, f.sort) if cursor else None
        now = self.clock()
        with self.db.transaction() as s:
            stmt = self._filtered(f, now)
            counted = stmt.with_only_columns(ArchiveEntryRow.run_id).order_by(None).limit(ARCHIVE_COUNT_MAX + 1)
            total = s.scalar(select(func.count()).select_from(counted.subquery())) or 0
            keys = stmt.with_only_columns(
                ArchiveEntryRow.run_id, ArchiveEntryRow.submitted_at, ArchiveEntryRow.score,
                ArchiveEntryRow.submission_id, ArchiveEntryRow.device,
            )  # fmt: skip
            if after is None:
                rows = list(s.execute(keys.limit(limit + 1).offset(offset)))
            else:
                offset = 0
                rows = self._after(s, keys, f.sort, after, limit + 1)
            more, rows = len(rows) > limit, rows[:limit]
            entries = self._near_copies(s, self._entries(s, self._load(s, [r.run_id for r in rows])), now)
            following = _cursor(f.sort, rows[-1]) if more and rows else None
            return ArchivePage(
                entries, min(total, ARCHIVE_COUNT_MAX), offset, limit, total <= ARCHIVE_COUNT_MAX, following
            )

    @staticmethod
    def _after(s: Session, keys: Any, sort: str, after: tuple[Any, ...], n: int) -> list[Any]:
        """At most ``n`` rows of ``keys`` after the cursor's row: one index range per query. Fastest first puts the
        untimed (null score) entries last, so a page may end the timed range and begin the untimed one."""
        e = ArchiveEntryRow
        if sort == "newest":
            at, sid, device = after
            return list(
                s.execute(keys.where(tuple_(e.submitted_at, e.submission_id, e.device) < (at, sid, device)).limit(n))
            )
        score, sid, device = after
        rows: list[Any] = []
        if score is not None:
            timed = keys.where(e.score.is_not(None), tuple_(e.score, e.submission_id, e.device) > (score, sid, device))
            rows = list(s.execute(timed.limit(n)))
            sid, device = -1, ""
        if len(rows) < n:
            untimed = keys.where(e.score.is_(None), tuple_(e.submission_id, e.device) > (sid, device))
            rows += list(s.execute(untimed.limit(n - len(rows))))
        return rows

    def archive_entry(self, submission_id: int, device: str) -> ArchiveEntry:
        """One published entry; ``SubmissionNotFound`` for anything unpublished, exactly as for a missing one."""
        with self.db.transaction() as s:
            stmt = self._published(self.clock()).where(
                ArchiveEntryRow.submission_id == submission_id, ArchiveEntryRow.device == device
            )
            run_ids = s.scalars(stmt.with_only_columns(ArchiveEntryRow.run_id).order_by(ArchiveEntryRow.run_id)).all()
            rows = self._load(s, run_ids[:1])
            if not rows:
                raise SubmissionNotFound(submission_id)
            return self._near_copies(s, self._entries(s, rows), self.clock())[0]

    def _near_copies(self, s: Session, entries: list[ArchiveEntry], now: datetime) -> tuple[ArchiveEntry, ...]:
        """``entries`` with ``near_copy_of`` set where one nearly copies an earlier published kernel of the same
        problem by another author (``leaderboards/similarity.py``): the most similar earlier kernel is someone else's
        (an author's own earlier kernel, as similar, is their own line of work). Only published kernels are compared:
        a flag never tells anything about code that is not in the archive. The candidates come from the index
        (``leaderboards/similarity_index.py``: those sharing ``NEAR_MIN_BANDS`` bands), their similarity is exact."""
        if not entries:
            return ()
        ids = {e.submission_id for e in entries}
        pairs = near_pairs(s, ids)
        others = {o for found in pairs.values() for o in found}
        rows = {}
        if others:
            published = (
                self._published(now)
                .where(ArchiveEntryRow.submission_id.in_(others | ids))
                .with_only_columns(Submission.id, Submission.user_id, Submission.created_at)
                .distinct()
                .order_by(None)
            )
            rows = {r.id: r for r in s.execute(published)}
        prints = signatures(s, (others & rows.keys()) | ids)
        flagged = []
        for entry in entries:
            mine = rows.get(entry.submission_id)
            own = prints.get(entry.submission_id)
            best: tuple[float, bool, int] | None = None  # (similarity, the author's own, submission id)
            for other in pairs.get(entry.submission_id, ()):
                o = rows.get(other)
                if mine is None or own is None or o is None or o.created_at >= mine.created_at or other not in prints:
                    continue
                score = similarity(own, prints[other])
                ours = o.user_id == mine.user_id
                if score >= NEAR and (best is None or (score, ours) > best[:2]):
                    best = (score, ours, o.id)
            if best is not None and not best[1]:  # nearest to someone else's, not to the author's own earlier one
                entry = replace(entry, near_copy_of=best[2], similarity=round(best[0], 3))
            flagged.append(entry)
        return tuple(flagged)

    def near_clones(self, leaderboard: str | None = None, *, top: int = 10) -> tuple[NearClone, ...]:
        """Admins: each submission by another account at ``NEAR`` or more of one of the ``top`` entries of each
        device's ranking (the given board, else every open visible one: a hidden one's ranking is its members'),
        published or not, of any board of the same problem. From the index (``leaderboards/similarity_index.py``),
        most similar first."""
        now = self.clock()
        with self.db.transaction() as s:
            if leaderboard is not None:
                boards = [self._leaderboard(s, leaderboard)]
            else:
                boards = list(
                    s.scalars(
                        select(Leaderboard)
                        .where(Leaderboard.deadline > now, Leaderboard.visible.is_(True))
                        .order_by(Leaderboard.name)
                    )
                )
            names = [(b.name, tuple(b.devices)) for b in boards]
        tops = [
            (name, device, e.rank, e.submission_id)
            for name, devices in names
            for device in devices
            for e in self.ranking(name, device, top).entries
        ]
        if not tops:
            return ()
        ranked: dict[int, tuple[str, str, int]] = {}  # a top entry: its board, device and best rank
        for name, device, rank, sid in tops:
            if sid not in ranked or rank < ranked[sid][2]:
                ranked[sid] = (name, device, rank)
        with self.db.transaction() as s:
            near = {o for found in near_pairs(s, ranked).values() for o in found}
            pairs = near_pairs(s, set(ranked) | near)  # and theirs: whether each one's nearest earlier is its own
            ids = set(pairs) | {o for found in pairs.values() for o in found}
            subs = {
                row.id: row
                for row in s.execute(
                    select(Submission.id, Submission.user_id, Submission.created_at, User.name)
                    .join(User, User.id == Submission.user_id)
                    .where(Submission.id.in_(ids), Submission.deleted.is_(false()))
                )
            }
            prints = signatures(s, subs)
        found = []
        for sid, others in pairs.items():
            later = subs.get(sid)
            if later is None or sid not in prints:
                continue
            best: tuple[float, bool, int] | None = None  # its nearest earlier one: (similarity, its own, id)
            for other in others:
                o = subs.get(other)
                if o is None or other not in prints or (o.created_at, o.id) >= (later.created_at, later.id):
                    continue
                score = similarity(prints[sid], prints[other])
                if score >= NEAR and (best is None or (score, o.user_id == later.user_id) > best[:2]):
                    best = (score, o.user_id == later.user_id, other)
            if best is None or best[1] or (sid not in ranked and best[2] not in ranked):
                continue  # none, the author's own line of work, or no top entry concerned
            first = subs[best[2]]
            name, device, rank = ranked[sid] if sid in ranked else ranked[best[2]]
            top_id = sid if sid in ranked else best[2]
            found.append(
                NearClone(
                    name, device, rank, top_id, sid, later.name, first.id, first.name, round(best[0], 3),
                    (later.created_at - first.created_at).total_seconds(),
                )
            )  # fmt: skip
        found.sort(key=lambda c: (-c.similarity, c.leaderboard, c.device, c.rank, c.submission_id))
        return tuple(found)

    def similar_kernels(
        self, problem: str, code: str, file_name: str, *, limit: int = 10, exclude: int | None = None
    ) -> tuple[SimilarKernel, ...]:
        """The published kernels of ``problem`` nearest to ``code`` (``leaderboards/similarity.py``), most similar
        first (then newest), at most ``limit``; those sharing nothing are left out. Found through the index
        (``leaderboards/similarity_index.py``): a large problem's candidates are the kernels sharing a MinHash band
        (every kernel at ``NEAR`` or above, most above 0.5), ranked by their exact similarity. A file above
        ``SIMILAR_QUERY_MAX_BYTES`` is refused (``FileTooLarge``)."""
        check_similar_query_size(file_name, len(code.encode("utf-8", errors="replace")))
        with self.db.transaction() as s:
            return self._similar(s, problem, fingerprint(code, file_name), limit, exclude)

    def _similar(
        self, s: Session, problem: str, target: frozenset[bytes], limit: int, exclude: int | None
    ) -> tuple[SimilarKernel, ...]:
        limit = max(1, min(limit, ARCHIVE_PAGE_MAX))
        matches = search(s, problem, target, candidates=max(40, 4 * limit))
        scores = {m.submission_id: m.similarity for m in matches if m.submission_id != exclude}
        if not scores:
            return ()
        stmt = (
            self._published(self.clock())
            .where(ArchiveEntryRow.problem == problem, ArchiveEntryRow.submission_id.in_(scores))
            .with_only_columns(
                Submission.id, Submission.user_id, Submission.created_at, Submission.file_name, Leaderboard.name,
                SubmissionLicence.licence, User.name.label("user_name"),
            )
            .distinct()
            .order_by(None)
        )  # fmt: skip
        rows = sorted(s.execute(stmt), key=lambda r: (-scores[r.id], -r.created_at.timestamp(), -r.id))[:limit]
        accounts = {
            a.user_id: a
            for a in s.scalars(select(ArchiveAccount).where(ArchiveAccount.user_id.in_({r.user_id for r in rows})))
        }
        return tuple(
            SimilarKernel(
                row.id, row.name, problem, row.file_name, row.licence,
                _named(row.user_name, accounts.get(row.user_id)), row.created_at, round(scores[row.id], 3),
            )
            for row in rows
        )  # fmt: skip

    def similar_to_published(self, submission_id: int, *, limit: int = 10) -> tuple[SimilarKernel, ...]:
        """The published kernels of the same problem nearest to a published one (itself left out); an unpublished
        submission is answered like a missing one."""
        with self.db.transaction() as s:
            published = self._published(self.clock()).where(ArchiveEntryRow.submission_id == submission_id)
            if s.scalar(published.with_only_columns(ArchiveEntryRow.run_id).limit(1)) is None:
                raise SubmissionNotFound(submission_id)
            sub = s.get(Submission, submission_id)
            assert sub is not None  # published
            target = signature_of(s, sub.id)
            if target is None:  # not indexed (it cannot happen after migration 0018's backfill): read the code
                code = s.get(SubmissionCode, sub.code_id)
                text = code.content.decode("utf-8", errors="replace") if code is not None else ""
                target = fingerprint(text, sub.file_name)
            return self._similar(s, sub.leaderboard.problem, target, limit, submission_id)

    def archive_all(self) -> tuple[ArchiveEntry, ...]:
        """Every published entry with its near-copy flag, ordered by submission id and device (the export's order)."""
        now = self.clock()
        with self.db.transaction() as s:
            stmt = self._published(now).with_only_columns(ArchiveEntryRow.run_id)
            run_ids = s.scalars(stmt.order_by(ArchiveEntryRow.submission_id, ArchiveEntryRow.device)).all()
            return self._near_copies(s, self._entries(s, self._load(s, run_ids)), now)

    def archive_choices(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The problems and the devices that have published entries (the archive page's filters)."""
        with self.db.transaction() as s:
            published = self._published(self.clock())
            problems = s.scalars(published.with_only_columns(ArchiveEntryRow.problem).distinct()).all()
            devices = s.scalars(published.with_only_columns(ArchiveEntryRow.device).distinct()).all()
            return tuple(sorted(problems)), tuple(sorted(devices))
