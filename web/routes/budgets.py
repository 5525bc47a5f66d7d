"""GPU-second budgets (issue 33, ``leaderboards/budgets.py``): admins see and set them per account and per token;
anyone sees the budgets that bind their own requests."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from leaderboards.budgets import DEFAULT_PERIOD_S, MAX_BUDGET_S, MAX_PERIOD_S, MIN_PERIOD_S, BudgetView
from leaderboards.results import Principal
from leaderboards.service import LeaderboardService
from web.auth import admin, service_of, submitter
from web.routes.common import TokenId, UserName, parse_user
from web.schemas import API_PREFIX, BudgetOut, ErrorOut

router = APIRouter(prefix=API_PREFIX, tags=["programs"])

ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorOut, "description": "No token, or an unknown, expired or revoked one"},
    403: {"model": ErrorOut, "description": "The token lacks the admin scope"},
    404: {"model": ErrorOut, "description": "No such account or token"},
}


class BudgetIn(BaseModel):
    period_s: int = Field(
        DEFAULT_PERIOD_S,
        ge=MIN_PERIOD_S,
        le=MAX_PERIOD_S,
        description="The period in seconds (default a day); periods start at whole multiples of it since the epoch "
        "(UTC), so a day's budget refills at 00:00 UTC.",
    )
    seconds: float = Field(ge=0, le=MAX_BUDGET_S, description="GPU seconds of evaluation per period.")


def _out(view: BudgetView | None) -> BudgetOut | None:
    return BudgetOut.model_validate(view) if view is not None else None


@router.get("/me/budgets", response_model=list[BudgetOut], responses=ERRORS, summary="The GPU budgets that bind you")
def my_budgets(
    who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> list[BudgetOut]:
    """Your account's budget and this token's, where set, with what is spent and left and when each refills."""
    return [BudgetOut.model_validate(v) for v in service.budgets_of(who.user, who.token_id)]


@router.get("/admin/budgets", response_model=list[BudgetOut], responses=ERRORS, summary="Every GPU budget")
def list_budgets(_: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)) -> list[BudgetOut]:
    return [BudgetOut.model_validate(v) for v in service.budgets()]


@router.put(
    "/admin/budgets/accounts/{user}", response_model=BudgetOut, responses=ERRORS, summary="Set an account's budget"
)
def set_account_budget(
    user: UserName,
    body: BudgetIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> BudgetOut | None:
    """Every submission of the account, whatever sent it, spends it; refused with a 429 once it is used up."""
    view = service.set_budget(user=parse_user(user), seconds=body.seconds, period_s=body.period_s, actor=who.actor)
    return _out(view)


@router.delete("/admin/budgets/accounts/{user}", responses=ERRORS, summary="Remove an account's budget")
def remove_account_budget(
    user: UserName, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> dict[str, object]:
    service.set_budget(user=parse_user(user), seconds=None, actor=who.actor)
    return {"user": user, "budget": None}


@router.put(
    "/admin/budgets/tokens/{token_id}", response_model=BudgetOut, responses=ERRORS, summary="Set a token's budget"
)
def set_token_budget(
    token_id: TokenId,
    body: BudgetIn,
    who: Principal = Depends(admin),
    service: LeaderboardService = Depends(service_of),
) -> BudgetOut | None:
    """Only what this token sends spends it (the account's budget, if any, binds too)."""
    return _out(service.set_budget(token_id=token_id, seconds=body.seconds, period_s=body.period_s, actor=who.actor))


@router.delete("/admin/budgets/tokens/{token_id}", responses=ERRORS, summary="Remove a token's budget")
def remove_token_budget(
    token_id: TokenId, who: Principal = Depends(admin), service: LeaderboardService = Depends(service_of)
) -> dict[str, object]:
    service.set_budget(token_id=token_id, seconds=None, actor=who.actor)
    return {"token_id": token_id, "budget": None}
