"""The open archive (issue 34, ``leaderboards/archive.py``): ``GET /api/v1/archive`` and one entry, an author's
licence per submission (set, withdraw) and account default, and the admin's publication policy of a board."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, Field

from leaderboards.archive import (
    ARCHIVE_PAGE_MAX,
    MAX_AUTHOR_NAME,
    SIMILAR_QUERY_MAX_BYTES,
    SORTS,
    ArchiveFilter,
    check_similar_query_size,
)
from leaderboards.licences import CHOICES
from leaderboards.results import Principal, Scope
from leaderboards.service import LeaderboardService
from web.auth import admin, bearer, service_of, submitter
from web.ratelimit import caller_of, rate_of
from web.routes.common import OFFSET_MAX, SubmissionId
from web.schemas import API_PREFIX, ErrorOut, Model, RequestDate

router = APIRouter(prefix=API_PREFIX)

LICENCE_TEXT = f"One of: {', '.join(CHOICES)} ('none': never published)."
NAME_MAX = 200
CURSOR_MAX = 400
"""The longest cursor taken (the archive's are under 150 characters)."""
"""The longest problem, leaderboard, device or language name a filter takes."""


class ArchiveCaseOut(Model):
    index: int
    case: dict[str, Any] = Field(description="The benchmark case's parameters (its seed left out).")
    verdict: str
    median_ns: float | None
    p25_ns: float | None
    p75_ns: float | None
    min_ns: float | None
    samples: int | None
    roofline_share: float | None
    speedup: float | None = Field(description="Over the reference on this case (above 1: faster).")


class ArchiveSpeedupOut(Model):
    label: str
    speedup: float | None = Field(description="Geometric mean over the cases.")


class ArchiveEntryOut(Model):
    submission_id: int
    leaderboard: str
    problem: str
    fingerprint: str = Field(description="The leaderboard's fingerprint when the run was recorded.")
    device: str
    language: str
    file_name: str
    code: str
    licence: str
    author: str = Field(description="As the author chose to be named ('' when anonymous).")
    submitted_at: datetime
    mode: str
    verdict: str = Field(description="The public run's verdict.")
    passed: bool
    score_ns: float | None = Field(description="The public run's score (never the secret run's).")
    speedup: float | None = Field(description="Over the reference: geometric mean of the cases.")
    roofline_share: float | None
    system: dict[str, Any] = Field(description="What the public run ran on (runtime versions, GPU, driver).")
    cases: tuple[ArchiveCaseOut, ...]
    speedups: tuple[ArchiveSpeedupOut, ...]
    near_copy_of: int | None = Field(
        description="An earlier published kernel of the same problem by another author that this one nearly copies "
        "(similarity of normalised token runs at least 0.8; docs/archive.md); null when none."
    )
    similarity: float | None = Field(description="Its similarity to `near_copy_of` (0 to 1).")


class ArchivePageOut(Model):
    entries: tuple[ArchiveEntryOut, ...]
    total: int = Field(description="The entries matching, counted up to 1,000 (then `total_exact` is false).")
    offset: int
    limit: int
    total_exact: bool = Field(description="False when more than `total` entries match.")
    next_cursor: str | None = Field(
        None,
        description="Pass it as `cursor` (same filters and sort) for the next page; null on the last page.",
    )


class NearCloneOut(Model):
    """Two submissions of one problem by different accounts at 0.8 or more similar, one of them a top entry."""

    leaderboard: str
    device: str
    rank: int = Field(description="The top entry's rank on `leaderboard` and `device`.")
    top_submission_id: int = Field(description="The top entry (one of the two).")
    submission_id: int = Field(description="The later of the two.")
    user: str
    of_submission_id: int = Field(description="The earlier of the two.")
    of_user: str
    similarity: float = Field(description="Jaccard index of normalised token runs, 0 to 1 (docs/archive.md).")
    later_by_s: float = Field(description="Seconds between the two submissions.")
    text: str = Field(description="One line: '#812 (bob) is 93% similar to #640 by another user (ann), ...'")


class LicenceOut(Model):
    submission_id: int
    licence: str
    published: bool
    withdrawn: bool
    publishes_at: datetime | None = Field(description="When it is or will be published; null: never as it stands.")


class LicenceIn(BaseModel):
    license: str = Field(max_length=32, description=LICENCE_TEXT)


class ArchiveAccountOut(Model):
    default_licence: str
    author_name: str | None = Field(
        description="null: named as on the leaderboards; '': anonymous in the archive (a ranked entry's number and "
        "score are public on the rankings, under the leaderboard name: docs/archive.md)."
    )


class ArchiveAccountIn(BaseModel):
    default_license: str | None = Field(None, max_length=32, description=f"Kept when left out. {LICENCE_TEXT}")
    author_name: str | None = Field(
        None,
        max_length=MAX_AUTHOR_NAME,
        description="Kept when left out; '' anonymous in the archive (not on the rankings, where a ranked entry's "
        "number and score appear under your leaderboard name); '-' your leaderboard name.",
    )


class ArchivePolicyIn(BaseModel):
    at_once: bool = Field(
        description="true: publish licensed kernels as they run (practice); false: after the deadline"
    )


class ArchivePolicyOut(Model):
    leaderboard: str
    at_once: bool


def _name(description: str) -> Any:
    return Query(None, min_length=1, max_length=NAME_MAX, description=description)


@router.get("/archive", response_model=ArchivePageOut, tags=["archive"], summary="Published kernels")
def get_archive(
    problem: str | None = _name("Only this problem."),
    leaderboard: str | None = _name("Only this leaderboard."),
    device: str | None = _name("Only runs on this device."),
    language: str | None = _name("Only this language (e.g. pytorch, triton, cuda)."),
    accepted: bool = Query(False, description="Only entries whose public run passed."),
    min_speedup: float | None = Query(
        None,
        ge=0,
        le=1e9,
        description="Only entries at least this much faster than the reference (geometric mean of the cases).",
    ),
    min_roofline_share: float | None = Query(
        None, ge=0, le=1, description="Only entries whose public run reached at least this share of the roofline."
    ),
    after: RequestDate | None = Query(None, description="Only submissions made after this time (ISO 8601)."),
    sort: str = Query("newest", pattern="^(" + "|".join(SORTS) + ")$", description="newest, or speed (fastest first)."),
    limit: int = Query(20, ge=1, le=ARCHIVE_PAGE_MAX, description="Entries per page."),
    offset: int = Query(0, ge=0, le=OFFSET_MAX, description="Entries to skip (ignored with a cursor)."),
    cursor: str | None = Query(
        None,
        min_length=1,
        max_length=CURSOR_MAX,
        description="A page's `next_cursor`: the page after it, however deep (faster than a large offset).",
    ),
    service: LeaderboardService = Depends(service_of),
) -> ArchivePageOut:
    """Kernels whose authors chose a licence, once their leaderboard publishes them: the code, its licence and
    author, the problem and its fingerprint, the device and what it ran on, and the public run's verdict, per-case
    timings and speedups. Never a secret run, a held-out case or a case's seed."""
    f = ArchiveFilter(problem, leaderboard, device, language, accepted, min_speedup, after, sort, min_roofline_share)
    return ArchivePageOut.model_validate(service.archive(f, limit=limit, offset=offset, cursor=cursor))


class SimilarKernelOut(Model):
    submission_id: int
    leaderboard: str
    problem: str
    file_name: str
    licence: str
    author: str
    submitted_at: datetime
    similarity: float = Field(description="Jaccard index of the normalised token runs (0 to 1; docs/archive.md).")


SIMILAR_MAX = 50
"""The most kernels one similarity query answers with."""
SIMILAR_PER_MINUTE = 30
"""File queries per caller (account with a token, address without) per minute: each is tokenised and
fingerprinted, CPU work that needs no token (red team, 2026-11-29)."""


@router.get(
    "/archive/{submission_id}/similar",
    response_model=list[SimilarKernelOut],
    tags=["archive"],
    summary="Published kernels near a published one",
    responses={404: {"model": ErrorOut, "description": "Not published (or no such submission)"}},
)
def get_similar(
    submission_id: SubmissionId,
    limit: int = Query(10, ge=1, le=SIMILAR_MAX, description="The most kernels to answer with."),
    service: LeaderboardService = Depends(service_of),
) -> list[SimilarKernelOut]:
    """The published kernels of the same problem nearest to this one (itself left out), most similar first."""
    return [SimilarKernelOut.model_validate(k) for k in service.similar_to_published(submission_id, limit=limit)]


@router.post(
    "/archive/similar",
    response_model=list[SimilarKernelOut],
    tags=["archive"],
    summary="Published kernels near a file",
    responses={
        401: {"model": ErrorOut, "description": "A token sent that is unknown, expired or revoked (none is needed)"},
        413: {"model": ErrorOut, "description": f"File above {SIMILAR_QUERY_MAX_BYTES // 1024} KiB"},
        429: {"model": ErrorOut, "description": f"More than {SIMILAR_PER_MINUTE} queries a minute (Retry-After)"},
    },
)
def post_similar(
    request: Request,
    file: UploadFile = File(
        ..., description=f"The kernel to compare: a .py or .cu file of up to {SIMILAR_QUERY_MAX_BYTES // 1024} KiB."
    ),
    problem: str = Form(..., min_length=1, max_length=NAME_MAX, description="The problem whose kernels to search."),
    limit: int = Query(10, ge=1, le=SIMILAR_MAX, description="The most kernels to answer with."),
    credentials: HTTPAuthorizationCredentials | None = Depends(bearer),
    service: LeaderboardService = Depends(service_of),
) -> list[SimilarKernelOut]:
    """The published kernels of `problem` nearest to the file sent, most similar first: what a kernel-generation
    program retrieves. Nothing is stored. No token is needed; at most 30 queries a minute per account (with a token)
    or per address (without), files of up to 64 KiB."""
    who = service.authenticate(credentials.credentials, Scope.SUBMIT) if credentials else None
    rate = rate_of(request.app, "similar", SIMILAR_PER_MINUTE, 60, "POST /api/v1/archive/similar")
    rate.take(caller_of(request, who))
    name = file.filename or "kernel.py"
    check_similar_query_size(name, file.size or 0)
    content = file.file.read(SIMILAR_QUERY_MAX_BYTES + 1)
    check_similar_query_size(name, len(content))
    code = content.decode("utf-8", errors="replace")
    return [SimilarKernelOut.model_validate(k) for k in service.similar_kernels(problem, code, name, limit=limit)]


@router.get(
    "/archive/{submission_id}/{device}",
    response_model=ArchiveEntryOut,
    tags=["archive"],
    summary="One published kernel",
    responses={404: {"model": ErrorOut, "description": "Not published (or no such submission)"}},
)
def get_archive_entry(
    submission_id: SubmissionId, device: str, service: LeaderboardService = Depends(service_of)
) -> ArchiveEntryOut:
    """One published entry; anything unpublished is answered like a missing one."""
    return ArchiveEntryOut.model_validate(service.archive_entry(submission_id, device[:NAME_MAX]))


@router.get(
    "/submissions/{submission_id}/license",
    response_model=LicenceOut,
    tags=["archive"],
    summary="Your submission's archive licence",
)
def get_licence(
    submission_id: SubmissionId, who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> LicenceOut:
    """The licence of one of your submissions, and whether (or when) it is published."""
    return LicenceOut.model_validate(service.submission_licence(submission_id, who.user))


@router.put(
    "/submissions/{submission_id}/license",
    response_model=LicenceOut,
    tags=["archive"],
    summary="Choose your submission's archive licence",
)
def put_licence(
    submission_id: SubmissionId,
    body: LicenceIn,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> LicenceOut:
    """Changeable until it is published; then withdraw it first. On a withdrawn entry a licence is consent again."""
    return LicenceOut.model_validate(service.set_submission_licence(submission_id, who.user, body.license))


@router.post(
    "/submissions/{submission_id}/license/withdraw",
    response_model=LicenceOut,
    tags=["archive"],
    summary="Withdraw your submission from the archive",
)
def withdraw(
    submission_id: SubmissionId, who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> LicenceOut:
    """It leaves the archive at once and every export made from now on."""
    return LicenceOut.model_validate(service.withdraw_from_archive(submission_id, who.user))


@router.get("/me/archive", response_model=ArchiveAccountOut, tags=["archive"], summary="Your archive settings")
def get_account(
    who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> ArchiveAccountOut:
    """Your default licence (for submissions that name none) and the name the archive gives you."""
    return ArchiveAccountOut.model_validate(service.archive_account(who.user))


@router.put("/me/archive", response_model=ArchiveAccountOut, tags=["archive"], summary="Change your archive settings")
def put_account(
    body: ArchiveAccountIn, who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> ArchiveAccountOut:
    """Fields left out are kept."""
    view = service.set_archive_account(who.user, default_licence=body.default_license, author_name=body.author_name)
    return ArchiveAccountOut.model_validate(view)


@router.put(
    "/admin/leaderboards/{name}/archive-policy",
    response_model=ArchivePolicyOut,
    tags=["admin"],
    summary="When a board's licensed kernels are published",
)
def put_policy(
    name: str, body: ArchivePolicyIn, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> ArchivePolicyOut:
    """After the deadline (the default) or at once (practice boards); audited."""
    return ArchivePolicyOut(
        leaderboard=name, at_once=service.set_archive_policy(name, at_once=body.at_once, actor=who.actor)
    )


@router.get(
    "/admin/near-clones",
    response_model=list[NearCloneOut],
    tags=["admin"],
    summary="Near clones of the top entries by other accounts",
)
def near_clones(
    leaderboard: str | None = Query(None, max_length=200, description="One board; default: every open one."),
    top: int = Query(10, ge=1, le=100, description="The top entries of each device's ranking that are compared."),
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> list[NearCloneOut]:
    """Each submission by another account 0.8 or more similar to one of the top entries (published or not, of any
    board of the same problem), most similar first: '#812 is 93% similar to #640 by another user, submitted 2 h
    later'. Admin scope."""
    return [NearCloneOut.model_validate(c) for c in service.near_clones(leaderboard, top=top)]
