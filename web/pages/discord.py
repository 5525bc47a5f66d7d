""" "Sign in with Discord": OAuth2's authorisation-code flow, offered when ``KERNELCUP_API_DISCORD_CLIENT_ID`` and
``…_SECRET`` are set.

``/auth/discord`` sends the browser to Discord's consent page with a random ``state`` (kept in a signed cookie for
ten minutes); Discord sends it back to ``/auth/discord/callback`` with a code, which is exchanged (httpx, client
credentials in HTTP Basic) for an access token, which reads the user (``identify`` scope). The person's account is
``discord:<id>`` — the same one the bot knows — and signing in makes a submit-scope API token for the session
(revoked again at sign-out). Discord's answers are parsed by pydantic models; nothing of them reaches a log.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from datetime import timedelta
from urllib.parse import urlencode

import httpx
from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field, ValidationError

from leaderboards.errors import NotFound
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.base import sessions_of
from web.pages.forms import safe_next
from web.pages.render import Viewer, render
from web.pages.session import is_https
from web.routes.common import base_url

router = APIRouter(include_in_schema=False)
log = logging.getLogger(__name__)

STATE_COOKIE = "kc_oauth"
STATE_MAX_AGE_S = 600
TIMEOUT_S = 10.0


class TokenAnswer(BaseModel):
    access_token: str
    token_type: str


class DiscordUser(BaseModel):
    id: str = Field(pattern=r"^[0-9]{1,20}$")
    username: str
    global_name: str | None = None


class DiscordSignInFailed(Exception):
    pass


def _configured(request: Request) -> tuple[str, str, str]:
    settings = request.app.state.settings
    if not settings.discord_client_id or settings.discord_client_secret is None:
        raise NotFound("Sign-in with Discord is not set up on this server; sign in with an API token.")
    secret = settings.discord_client_secret.get_secret_value()
    return settings.discord_client_id, secret, settings.discord_base_url.rstrip("/")


def _redirect_uri(request: Request) -> str:
    return f"{base_url(request)}/auth/discord/callback"


@router.get("/auth/discord")
def discord_start(request: Request, next: str = "/") -> Response:
    client_id, _, base = _configured(request)
    state = secrets.token_urlsafe(24)
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "scope": "identify",
            "state": state,
            "redirect_uri": _redirect_uri(request),
        }
    )
    response = RedirectResponse(f"{base}/oauth2/authorize?{query}", status_code=303)
    sealed = sessions_of(request).seal({"state": state, "next": safe_next(next), "iat": int(time.time())})
    response.set_cookie(
        STATE_COOKIE,
        sealed,
        max_age=STATE_MAX_AGE_S,
        path="/auth/discord",
        httponly=True,
        secure=is_https(request),
        samesite="lax",
    )
    return response


def _discord_user(request: Request, code: str) -> DiscordUser:
    client_id, secret, base = _configured(request)
    try:
        with httpx.Client(timeout=TIMEOUT_S) as client:
            answer = client.post(
                f"{base}/api/oauth2/token",
                data={"grant_type": "authorization_code", "code": code, "redirect_uri": _redirect_uri(request)},
                auth=(client_id, secret),
                headers={"Accept": "application/json"},
            )
            answer.raise_for_status()
            token = TokenAnswer.model_validate(answer.json())
            me = client.get(f"{base}/api/users/@me", headers={"Authorization": f"Bearer {token.access_token}"})
            me.raise_for_status()
            return DiscordUser.model_validate(me.json())
    except httpx.HTTPStatusError as exc:
        log.warning("Discord sign-in: %s answered %d", exc.request.url.path, exc.response.status_code)
        raise DiscordSignInFailed("Discord did not accept the sign-in; please try again.") from None
    except (httpx.HTTPError, ValueError, ValidationError) as exc:
        log.warning("Discord sign-in failed: %s", type(exc).__name__)
        raise DiscordSignInFailed("Discord could not be reached or answered oddly; please try again.") from None


@router.get("/auth/discord/callback")
def discord_callback(
    request: Request,
    code: str = "",
    state: str = "",
    error: str = "",
    service: LeaderboardService = Depends(service_of),
) -> Response:
    _configured(request)
    sessions = sessions_of(request)
    kept = sessions.unseal(request.cookies.get(STATE_COOKIE)) or {}
    fresh = isinstance(kept.get("iat"), int) and time.time() - int(str(kept["iat"])) < STATE_MAX_AGE_S
    expected = str(kept.get("state", ""))
    problem = None
    if error:
        problem = "Discord sign-in was cancelled." if error == "access_denied" else "Discord refused the sign-in."
    elif not (fresh and expected and state and hmac.compare_digest(state, expected)):
        problem = "This sign-in link has expired or was not started here; start again from the sign-in page."
    elif not code:
        problem = "Discord sent no authorisation code; start again from the sign-in page."
    if problem is None:
        try:
            user = _discord_user(request, code)
        except DiscordSignInFailed as exc:
            problem = str(exc)
    if problem is not None:
        response = render(request, "error.html", Viewer(None), status=400, status_code=400, message=problem)
        response.delete_cookie(STATE_COOKIE, path="/auth/discord")
        return response
    ref = UserRef(name=user.global_name or user.username, discord_id=int(user.id))
    new = service.create_token(
        ref,
        name="web sign-in (Discord)",
        expires_in=timedelta(seconds=sessions.max_age_s),
        actor="web: Discord sign-in",
    )
    redirect = RedirectResponse(safe_next(str(kept.get("next", "/"))), status_code=303)
    redirect.delete_cookie(STATE_COOKIE, path="/auth/discord")
    sid, _ = service.open_session(new.token, via="discord", max_age=timedelta(seconds=sessions.max_age_s))
    sessions.store(redirect, request, sessions.new(sid))
    return redirect
