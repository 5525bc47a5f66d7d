"""The account a token speaks for, and its own tokens."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from leaderboards.accounts import token_lifetime
from leaderboards.results import Principal, Scope
from leaderboards.service import LeaderboardService
from web.auth import service_of, submitter
from web.routes.common import TokenId
from web.routes.submissions import ERRORS
from web.schemas import API_PREFIX, MeOut, NewTokenIn, NewTokenOut, TokenOut

router = APIRouter(prefix=API_PREFIX, tags=["account"])


@router.get("/me", response_model=MeOut, responses=ERRORS, summary="Who this token speaks for")
def me(who: Principal = Depends(submitter)) -> MeOut:
    return MeOut(
        user_name=who.user.name,
        identity=who.user.identity,
        is_program=who.is_program,
        token_id=who.token_id,
        scopes=tuple(sorted(who.scopes)),
        token_expires_at=who.expires_at,
    )


@router.get("/me/tokens", response_model=list[TokenOut], responses=ERRORS, summary="My tokens")
def my_tokens(who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)) -> list[TokenOut]:
    return [TokenOut.model_validate(t) for t in service.list_tokens(who.user)]


@router.post("/me/tokens", response_model=NewTokenOut, status_code=201, responses=ERRORS, summary="A new token")
def new_token(
    body: NewTokenIn, who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> NewTokenOut:
    """A new submit-scope token for this account (admin tokens are made on the server: `kernelcup tokens`). It lasts
    at most as long as the token that makes it, and at most the server's default lifetime (longer is shortened). A
    token with its own GPU budget makes none (403 `budgeted_token`: a new token would escape the budget); make tokens
    signed in on the web page, or ask an admin. The new token may revoke only itself and the tokens made with it."""
    lifetime, never = token_lifetime(body.expires)
    new = service.create_token(
        who.user,
        name=body.name,
        scopes=(Scope.SUBMIT,),
        expires_in=lifetime,
        never_expires=never,
        made_with=who,
        actor=who.actor,
    )
    return NewTokenOut(token=new.token, info=TokenOut.model_validate(new.info))


@router.delete("/me/tokens/{token_id}", response_model=TokenOut, responses=ERRORS, summary="Revoke one of my tokens")
def revoke_my_token(
    token_id: TokenId, who: Principal = Depends(submitter), service: LeaderboardService = Depends(service_of)
) -> TokenOut:
    """A token made by the person (Discord, `kernelcup login`, the web page) revokes any of the account's tokens; a
    token made with another token, or with its own GPU budget, only itself and the tokens made with it (403
    `token_not_revocable`)."""
    return TokenOut.model_validate(service.revoke_token(token_id, user=who.user, by=who, actor=who.actor))
