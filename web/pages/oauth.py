""" "Sign in with Discord" and "Sign in with GitHub": OAuth2's authorisation-code flow through Authlib's Starlette
client (``authlib.integrations.starlette_client``), offered for the providers the operator turned on
(``KERNELCUP_API_SIGN_IN_PROVIDERS``, else every provider whose client id and secret are set; docs/deploy.md).

``/auth/{provider}`` sends the browser to the provider's consent page; Authlib makes the random ``state`` and keeps
it, with the redirect address, in a signed cookie of Starlette's ``SessionMiddleware`` (``kc_oauth``, path
``/auth``, ten minutes). The provider sends the browser back to ``/auth/{provider}/callback``, where Authlib checks
the state and exchanges the code for an access token (client credentials in HTTP Basic), which reads the user:
Discord's ``identify`` (the account ``discord:<id>``, the one the bot knows), GitHub's public profile (the account
``github:<id>``: GitHub's numeric id, which survives a rename). Signing in makes a submit-scope API token for the
session (revoked again at sign-out). The providers' answers are parsed by pydantic models; nothing of them, and no
secret, reaches a log or a page.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
from authlib.integrations.httpx_client import oauth2_client as authlib_http
from authlib.integrations.starlette_client import OAuth, OAuthError
from authlib.integrations.starlette_client.apps import StarletteOAuth2App
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from leaderboards.errors import InvalidChange, NotFound
from leaderboards.results import Principal, UserRef
from leaderboards.service import LeaderboardService
from web.pages.base import error_page, principal_of, session_of, sessions_of, signed_in
from web.pages.forms import safe_next
from web.routes.common import base_url
from web.settings import PROVIDER_TITLES, SignInProvider, WebSettings

router = APIRouter(include_in_schema=False)
log = logging.getLogger(__name__)

STATE_COOKIE = "kc_oauth"
STATE_PATH = "/auth"
STATE_MAX_AGE_S = 600
TIMEOUT_S = 10.0
ODD_ANSWERS: tuple[type[Exception], ...] = (
    httpx.HTTPError,
    authlib_http.httpx2.HTTPError,  # type: ignore[attr-defined]  # (types-Authlib describes Authlib 1.8)
    ValueError,
    ValidationError,
)
"""A provider out of reach, or answering what is not its user: Authlib's HTTP client is httpx2 where installed (the MCP
SDK brings it), else httpx; an answer that is not JSON or not the user's shape."""
LINK_KEY = "kc_link_{}"
"""Set when a signed-in person started the sign-in to link this provider's account to theirs (/signin's button)."""
NEXT_KEY = "kc_next_{}"
"""The page to go back to after a provider's sign-in, beside Authlib's state in the ``kc_oauth`` cookie."""


class DiscordUser(BaseModel):
    id: str = Field(pattern=r"^[0-9]{1,20}$")
    username: str
    global_name: str | None = None

    def ref(self) -> UserRef:
        return UserRef(name=self.global_name or self.username, discord_id=int(self.id))


class GitHubUser(BaseModel):
    id: int = Field(gt=0)
    login: str = Field(min_length=1, max_length=100)
    name: str | None = None

    def ref(self) -> UserRef:
        return UserRef(name=(self.name or "").strip() or self.login, github_id=self.id)


@dataclass(frozen=True)
class Provider:
    """How kernelcup signs in with one provider: its endpoints under the configured base URLs, the scope it asks
    for, and where the signed-in user is read (relative to ``api_base_url``)."""

    name: SignInProvider
    authorize_url: str
    access_token_url: str
    api_base_url: str
    scope: str | None
    user_path: str
    user_model: type[DiscordUser] | type[GitHubUser]

    @property
    def title(self) -> str:
        return PROVIDER_TITLES[self.name]


def providers(settings: WebSettings) -> dict[str, Provider]:
    """The providers turned on, by name."""
    known = {
        "discord": lambda: Provider(
            "discord",
            authorize_url=f"{settings.discord_base_url.rstrip('/')}/oauth2/authorize",
            access_token_url=f"{settings.discord_base_url.rstrip('/')}/api/oauth2/token",
            api_base_url=f"{settings.discord_base_url.rstrip('/')}/api/",
            scope="identify",
            user_path="users/@me",
            user_model=DiscordUser,
        ),
        "github": lambda: Provider(
            "github",
            authorize_url=f"{settings.github_base_url.rstrip('/')}/login/oauth/authorize",
            access_token_url=f"{settings.github_base_url.rstrip('/')}/login/oauth/access_token",
            api_base_url=f"{settings.github_api_url.rstrip('/')}/",
            scope=None,  # no scope: the public profile, which is all kernelcup reads
            user_path="user",
            user_model=GitHubUser,
        ),
    }
    return {name: known[name]() for name in settings.enabled_providers()}


def build_oauth(settings: WebSettings) -> OAuth:
    """Authlib's registry of the providers turned on, each with its client id and secret."""
    oauth = OAuth()
    for provider in providers(settings).values():
        secret = getattr(settings, f"{provider.name}_client_secret")
        client_kwargs: dict[str, Any] = {"timeout": TIMEOUT_S}
        if provider.scope:
            client_kwargs["scope"] = provider.scope
        oauth.register(
            provider.name,
            client_id=getattr(settings, f"{provider.name}_client_id"),
            client_secret=secret.get_secret_value(),
            authorize_url=provider.authorize_url,
            access_token_url=provider.access_token_url,
            api_base_url=provider.api_base_url,
            client_kwargs=client_kwargs,
        )
    return oauth


def state_secret(server_secret: bytes) -> str:
    """The key of the ``kc_oauth`` cookie: derived from the server secret, so it signs nothing else's cookies."""
    return hmac.new(server_secret, b"kernelcup oauth state", hashlib.sha256).hexdigest()


class SignInFailed(Exception):
    pass


def _provider(request: Request, name: str) -> tuple[Provider, StarletteOAuth2App]:
    provider = request.app.state.sign_in_providers.get(name)
    if provider is None:
        title = PROVIDER_TITLES.get(name)  # type: ignore[call-overload]
        what = f"Sign-in with {title} is not offered" if title else f"There is no sign-in provider {name!r}"
        raise NotFound(f"{what} on this server; sign in with an API token on /signin.")
    client = request.app.state.oauth.create_client(name)
    assert isinstance(client, StarletteOAuth2App)
    return provider, client


def _redirect_uri(request: Request, provider: Provider) -> str:
    return f"{base_url(request)}/auth/{provider.name}/callback"


@router.get("/auth/{name}")
async def sign_in_start(request: Request, name: str, next: str = "/", link: bool = False) -> Response:
    """To the provider's consent page. ``link``: link the account to the one signed in here (GitHub only)."""
    provider, client = _provider(request, name)
    if link and (provider.name != "github" or not signed_in(request)):
        raise InvalidChange(
            "Only a GitHub account can be linked, and only to an account signed in here: sign in first."
        )
    response = await client.authorize_redirect(request, _redirect_uri(request, provider))
    request.session[NEXT_KEY.format(provider.name)] = safe_next(next)
    request.session[LINK_KEY.format(provider.name)] = link
    return RedirectResponse(response.headers["location"], status_code=303)


async def _user(request: Request, provider: Provider, client: StarletteOAuth2App) -> UserRef:
    """The provider's user of this callback, or ``SignInFailed`` with what to tell them."""
    title = provider.title
    try:
        token = await client.authorize_access_token(request)
        answer = await client.get(provider.user_path, token=token)
        if answer.status_code != 200:
            log.warning("%s sign-in: reading the user answered %d", title, answer.status_code)
            raise SignInFailed(f"{title} did not accept the sign-in; please try again.")
        return provider.user_model.model_validate(answer.json()).ref()
    except OAuthError as exc:
        if exc.error == "mismatching_state":
            raise SignInFailed(
                "This sign-in link has expired or was not started here; start again from the sign-in page."
            ) from None
        if exc.error == "access_denied":
            raise SignInFailed(f"{title} sign-in was cancelled.") from None
        log.warning("%s sign-in refused: %s", title, exc.error)
        raise SignInFailed(f"{title} did not accept the sign-in; please try again.") from None
    except ODD_ANSWERS as exc:
        log.warning("%s sign-in failed: %s", title, type(exc).__name__)
        raise SignInFailed(f"{title} could not be reached or answered oddly; please try again.") from None


def _open_session(
    service: LeaderboardService, ref: UserRef, provider: Provider, max_age_s: int, link_to: Principal | None
) -> str:
    """A token made for this sign-in (of the account it is linked to, or links to with ``link_to``), and a web
    session of it (its id)."""
    ref = service.provider_account(ref, link_to=link_to)
    new = service.create_token(
        ref,
        name=f"web sign-in ({provider.title})",
        expires_in=timedelta(seconds=max_age_s),
        actor=f"web: {provider.title} sign-in",
    )
    sid, _ = service.open_session(new.token, via=provider.name, max_age=timedelta(seconds=max_age_s))
    return sid


@router.get("/auth/{name}/callback")
async def sign_in_callback(request: Request, name: str) -> Response:
    provider, client = _provider(request, name)
    next_page = safe_next(str(request.session.pop(NEXT_KEY.format(provider.name), "/")))
    link = request.session.pop(LINK_KEY.format(provider.name), False) is True
    try:
        if not request.query_params.get("error") and not request.query_params.get("code"):
            raise SignInFailed(f"{provider.title} sent no authorisation code; start again from the sign-in page.")
        ref = await _user(request, provider, client)
    except SignInFailed as exc:
        return await error_page(request, 400, str(exc))
    sessions = sessions_of(request)
    before = session_of(request)
    link_to = await run_in_threadpool(principal_of, request, before) if link else None
    if link and link_to is None:
        return await error_page(request, 400, "Your sign-in here ended meanwhile: sign in, then link GitHub again.")
    service = request.app.state.service
    try:
        sid = await run_in_threadpool(_open_session, service, ref, provider, sessions.max_age_s, link_to)
    except InvalidChange as exc:
        return await error_page(request, 409, exc.message)
    if before is not None and before.signed_in:  # the sign-in it replaces ends here too (its token, a provider's)
        await run_in_threadpool(service.end_session, before.sid, actor=f"web: {provider.title} sign-in")
    redirect = RedirectResponse(next_page, status_code=303)
    sessions.store(redirect, request, sessions.new(sid))
    return redirect
