"""The CLI's browser sign-in (``kernelcup login --server URL``; docs/deploy.md, "Sign-in"): the page a person
approves it on, and the API route that turns the approved one-time code into a token.

1. The CLI makes a secret (the PKCE ``verifier``) and opens ``/cli/sign-in?challenge=<its SHA-256>&state=..&port=..``
   in the browser (``port``: its loopback listener on 127.0.0.1; without it, the page shows the code to paste).
2. Signed in (else sent to ``/signin`` and back), the person sees who the CLI will act as and approves with the
   page's CSRF-protected form. The server keeps a one-time code for that challenge (``service.approve_cli_sign_in``:
   only its hash, a short expiry, audited) and hands it to the browser, which goes on to
   ``http://127.0.0.1:<port>/callback?code=..&state=..`` (or shows it).
3. The CLI checks the state and posts the code with its verifier to ``POST /api/v1/cli/sign-in/token``: the token
   comes back once; the same code again, a late one, or one without the verifier that asked for it gets nothing.
"""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import Field

from leaderboards.errors import InvalidChange
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.base import principal_of, session_of, sessions_of
from web.pages.render import Viewer, render
from web.routes.submissions import ERRORS
from web.schemas import API_PREFIX, Model, NewTokenOut, TokenOut

router = APIRouter(tags=["account"])
PAGE = "/cli/sign-in"
TOKEN_PATH = f"{API_PREFIX}/cli/sign-in/token"
CHALLENGE = re.compile(r"^[A-Za-z0-9_-]{43}$")
"""An S256 PKCE challenge: base64url of a SHA-256, unpadded."""
STATE = re.compile(r"^[A-Za-z0-9_-]{16,128}$")
PORTS = (1024, 65535)
"""The ports a CLI's loopback listener may name (an unprivileged one)."""
CLIENT = re.compile(r"[^A-Za-z0-9 ._@()+-]")


class CliSignInIn(Model):
    code: str = Field(min_length=16, max_length=200, description="The one-time code the approving page handed over.")
    verifier: str = Field(
        min_length=43,
        max_length=128,
        description="The PKCE secret whose S256 challenge the CLI opened the page with (RFC 7636).",
    )
    client: str = Field(
        default="kernelcup CLI", max_length=100, description="What the new token is named after (the CLI's machine)."
    )


def _client_name(text: str) -> str:
    """The CLI's self-description, as the page shows it and the token is named: a short line of plain characters."""
    return CLIENT.sub("", text)[:60].strip() or "kernelcup CLI"


def _checked(challenge: str, state: str) -> None:
    if not CHALLENGE.match(challenge) or not STATE.match(state):
        raise InvalidChange(
            "This sign-in link is incomplete or damaged (its challenge or state is missing); run `kernelcup login "
            "--server URL` again and open the link it prints, whole."
        )


def _loopback(port: int, **query: str) -> str:
    return f"http://127.0.0.1:{port}/callback?{urlencode(query)}"


@router.get(PAGE, include_in_schema=False)
def cli_sign_in_page(
    request: Request,
    challenge: str = "",
    state: str = "",
    port: int | None = Query(None, ge=PORTS[0], le=PORTS[1], description="The CLI's loopback port."),
    client: str = "",
) -> Response:
    _checked(challenge, state)
    session = session_of(request)
    who = principal_of(request, session)
    if who is None or session is None:
        here = f"{request.url.path}?{request.url.query}"
        return RedirectResponse(f"/signin?{urlencode({'next': here})}", status_code=303)
    days = request.app.state.service.settings.token_expiry_days
    return render(
        request,
        "cli_sign_in.html",
        Viewer(who, sessions_of(request).csrf_token(session)),
        challenge=challenge,
        state=state,
        port=port,
        client=_client_name(client),
        lifetime=f"{days} days" if days else "no expiry",
    )


@router.post(PAGE, include_in_schema=False)
def cli_sign_in_approve(
    request: Request,
    csrf: str = Form(""),
    challenge: str = Form(""),
    state: str = Form(""),
    port: int | None = Form(None, ge=PORTS[0], le=PORTS[1]),
    client: str = Form(""),
    decision: str = Form(""),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    sessions = sessions_of(request)
    session = session_of(request)
    sessions.check_csrf(request, session, csrf)
    _checked(challenge, state)
    who = principal_of(request, session)
    if who is None or session is None:
        return RedirectResponse(f"/signin?{urlencode({'next': PAGE})}", status_code=303)
    view = Viewer(who, sessions.csrf_token(session))
    if decision != "allow":
        target = _loopback(port, error="access_denied", state=state) if port is not None else None
        return render(request, "cli_sign_in_done.html", view, approved=False, target=target)
    ttl = timedelta(seconds=request.app.state.settings.cli_sign_in_code_s)
    code = service.approve_cli_sign_in(session.sid, challenge, client=_client_name(client), ttl=ttl)
    target = _loopback(port, code=code, state=state) if port is not None else None
    minutes = max(1, round(ttl.total_seconds() / 60))
    return render(request, "cli_sign_in_done.html", view, approved=True, target=target, code=code, minutes=minutes)


@router.post(
    TOKEN_PATH,
    response_model=NewTokenOut,
    status_code=201,
    responses=ERRORS,
    summary="Exchange a CLI sign-in's one-time code for a token",
)
def cli_sign_in_token(body: CliSignInIn, service: LeaderboardService = Depends(service_of)) -> NewTokenOut:
    """The last step of `kernelcup login --server URL`: the one-time code a signed-in person approved on
    `/cli/sign-in`, with the PKCE verifier whose challenge opened that page, for a submit-scope token of theirs. Each
    code works once and for `KERNELCUP_API_CLI_SIGN_IN_CODE_S` (120 s) after its approval; an unknown, used or
    expired code, or the wrong verifier, is a 401 (`invalid_token`)."""
    new = service.redeem_cli_sign_in(body.code, body.verifier, client=_client_name(body.client))
    return NewTokenOut(token=new.token, info=TokenOut.model_validate(new.info))
