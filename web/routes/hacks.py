"""Input hacks against a board (issue 35, ``leaderboards/board_hacks.py``).

- ``POST /api/v1/leaderboards/{name}/hacks``: any account submits a case of the problem's ``hack_space``; checked at
  once (a 422 naming the field and its range), then queued per device below every person's job.
- ``GET /api/v1/leaderboards/{name}/hacks``: the board's credits ("hacks: alice broke 2 entries"), public.
- ``GET /api/v1/leaderboards/{name}/hacks/mine`` and ``GET /api/v1/hacks/{hack_id}``: the hacker's (or an admin's)
  view: per entry its id, rank, user and verdict as the board showed them. No route ever shows a case.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from leaderboards.board_hacks import HackCredit, HackView, credits_line
from leaderboards.hack_space import MAX_HACK_PARAMS
from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from web.auth import maybe_user, service_of, submitter
from web.routes.admin import forget_cached_reads
from web.schemas import API_PREFIX, ErrorOut

router = APIRouter(prefix=API_PREFIX)

HackId = Annotated[int, Path(ge=1, le=2**62, description="The hack's id.")]


class HackIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case: dict[str, Any] = Field(
        max_length=MAX_HACK_PARAMS,
        description='The case: each parameter of generate_input that the problem\'s hack_space declares, e.g. {"rows": '
        '3, "cols": 33, "seed": 5}.',
    )
    devices: list[str] | None = Field(
        default=None, max_length=16, description="The devices to run it on (default: every device of the board)."
    )


class HackEntryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    submission_id: int
    rank: int = Field(description="The entry's rank on the device when the hack ran.")
    user_name: str
    verdict: str = Field(description="accepted, wrong answer, runtime error, ... or 'not judged' (the runner failed).")
    broken: bool = Field(description="A confirmed break: it failed twice where the reference passed twice.")
    action: str = Field(
        default="",
        description="What the hack did to it: quarantined (a confirmed break; credited), flagged (not confirmed, or "
        "a moderator had cleared it: a moderator looks), withdrawn (a moderator cleared it since: no credit), kept "
        "(judged already), or '' (not broken).",
    )


class HackOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    hack_id: int
    leaderboard: str
    device: str
    user_name: str
    status: str = Field(
        description="queued, running, done, refused (the reference fails on the case, or the problem cannot make "
        "it), failed (the runner's fault), closed (the board's deadline passed or its standings froze first)."
    )
    broken: int = Field(description="How many entries it broke and had quarantined (credited).")
    entries: list[HackEntryOut]
    note: str = Field(description="Why it was refused, or could not run.")
    created_at: datetime
    finished_at: datetime | None
    text: str = Field(description="One line: 'hack #12 on H100: broke 1 of 10 entries'.")


class HacksOut(BaseModel):
    hacks: list[HackOut]


class HackCreditOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    user_name: str
    broken: int = Field(description="Distinct entries of the board that this account's hacks broke.")
    text: str


class HackCreditsOut(BaseModel):
    leaderboard: str
    credits: list[HackCreditOut]
    line: str = Field(description="The board's credit line ('hacks: alice broke 2 entries'); '' where none.")


def hack_out(view: HackView) -> HackOut:
    return HackOut.model_validate(view)


def credits_out(name: str, credits: tuple[HackCredit, ...]) -> HackCreditsOut:
    listed = [HackCreditOut.model_validate(c) for c in credits]
    return HackCreditsOut(leaderboard=name, credits=listed, line=credits_line(credits))


@router.post(
    "/leaderboards/{name}/hacks",
    response_model=HacksOut,
    status_code=202,
    tags=["hacks"],
    summary="Submit an input hack against a board's top entries",
    responses={
        404: {"model": ErrorOut, "description": "No such leaderboard"},
        422: {"model": ErrorOut, "description": "Not a case of the problem's hack space (the field and its range)"},
        409: {"model": ErrorOut, "description": "The board is past its deadline or frozen: it takes no hacks"},
        429: {
            "model": ErrorOut,
            "description": "The account's hack units of the last 24 hours are spent, or a GPU budget of the account "
            "or the token is used up (`gpu_budget_exhausted`: a hack's runs spend it like a submission's)",
        },
    },
)
def submit_hack(
    request: Request,
    name: str,
    body: HackIn,
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> HacksOut:
    """Queued once per device, run when no person's job waits: the reference on the case first (a case it fails is
    refused), then the device's top entries of other accounts, correctness only. An entry that fails where the
    reference passes leaves the ranking for a moderator and the case becomes a held-out case of the board; you are
    credited. Read the outcome at ``GET /api/v1/hacks/{hack_id}``."""
    views = service.submit_hack(who.user, name, body.case, body.devices, token_id=who.token_id)
    forget_cached_reads(request)
    return HacksOut(hacks=[hack_out(v) for v in views])


@router.get(
    "/leaderboards/{name}/hacks",
    response_model=HackCreditsOut,
    tags=["hacks"],
    summary="Who broke entries of the board with input hacks",
    responses={404: {"model": ErrorOut, "description": "No such leaderboard"}},
)
def get_credits(
    name: str, who: Principal | None = Depends(maybe_user), service: LeaderboardService = Depends(service_of)
) -> HackCreditsOut:
    return credits_out(name, service.hack_credits(name, viewer=who.user if who is not None else None))


@router.get(
    "/leaderboards/{name}/hacks/mine",
    response_model=HacksOut,
    tags=["hacks"],
    summary="Your input hacks against the board",
    responses={404: {"model": ErrorOut, "description": "No such leaderboard"}},
)
def my_hacks(
    name: str,
    limit: int = Query(100, ge=1, le=500),
    who: Principal = Depends(submitter),
    service: LeaderboardService = Depends(service_of),
) -> HacksOut:
    return HacksOut(hacks=[hack_out(v) for v in service.my_hacks(who.user, name, limit=limit)])


@router.get(
    "/hacks/{hack_id}",
    response_model=HackOut,
    tags=["hacks"],
    summary="One input hack: per entry its verdict",
    responses={404: {"model": ErrorOut, "description": "No hack of yours with this id"}},
)
def get_hack(
    hack_id: HackId, who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> HackOut:
    """Its author's and admins': per entry the submission id, rank and user as the board showed them and the
    verdict (never the entry's code, nor the case)."""
    return hack_out(service.hack(hack_id, who.user, admin=who.is_admin))
