"""The pages' session: a signed cookie holding a session id, and CSRF tokens.

The cookie is ``payload.signature``: the payload is base64url JSON (a random session id, whether it is signed in,
when), the signature an HMAC-SHA256 of it under the server secret. It never holds an API token: a signed-in
session's id is the key of a session kept on the server (``service.open_session``), which signing out ends and
which ends with its token, so a copied cookie is dead after either. It is HttpOnly,
SameSite=Lax and Secure when the site is served over HTTPS. A form that changes something carries a CSRF token,
an HMAC of the session id, checked on submit (and the Origin header, when the browser sends one, must be this
site). The secret is ``KERNELCUP_API_SESSION_SECRET`` or, unset, 32 random bytes generated once and kept in the
data dir (``web-secret``, mode 0600); it is never logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from fastapi import Request, Response

from leaderboards.errors import PermissionDenied

COOKIE = "kc_session"
SECRET_FILE = "web-secret"


@dataclass(frozen=True)
class Session:
    sid: str
    """Random. Signed out: only what CSRF tokens are made from. Signed in: the server's session id (a secret)."""
    signed_in: bool = False
    issued: int = 0


def load_secret(configured: str | None, data_dir: Path) -> bytes:
    """The configured secret, else the one kept in ``data_dir`` (made on first use, readable by the owner only)."""
    if configured:
        return configured.encode()
    path = data_dir / SECRET_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: use theirs
            pass
        else:
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(32))
    secret = path.read_text().strip()
    if len(secret) < 32:
        raise ValueError(f"{path} holds no usable secret (too short); delete it and a new one is made")
    return secret.encode()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Sessions:
    """Signs and reads session cookies. ``secret`` is the key, or a function that gives it when first needed (so a
    server that only answers the API never creates the data dir's secret file)."""

    def __init__(self, secret: bytes | Callable[[], bytes], max_age_s: int) -> None:
        self._key = secret
        self.max_age_s = max_age_s

    @cached_property
    def _secret(self) -> bytes:
        return self._key if isinstance(self._key, bytes) else self._key()

    def __repr__(self) -> str:  # never the secret
        return f"Sessions(max_age_s={self.max_age_s})"

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._secret, payload.encode(), hashlib.sha256).digest())

    def new(self, server_sid: str | None = None) -> Session:
        """A fresh session: signed out (a random id), or signed in as the server's session ``server_sid`` (signing in
        never keeps the id of the session before)."""
        return Session(server_sid or secrets.token_urlsafe(16), server_sid is not None, int(time.time()))

    def seal(self, data: dict[str, object]) -> str:
        """``data`` as JSON in a signed cookie value (readable, not forgeable)."""
        payload = _b64(json.dumps(data, separators=(",", ":")).encode())
        return f"{payload}.{self._sign(payload)}"

    def unseal(self, value: str | None) -> dict[str, object] | None:
        """What ``seal`` wrote, or None when the value is missing, forged or malformed."""
        if not value or "." not in value:
            return None
        payload, _, signature = value.rpartition(".")
        if not hmac.compare_digest(signature, self._sign(payload)):
            return None
        try:
            data = json.loads(_unb64(payload))
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def encode(self, session: Session) -> str:
        return self.seal({"sid": session.sid, "in": session.signed_in, "iat": session.issued})

    def decode(self, cookie: str | None) -> Session | None:
        """The session of a cookie, or None when it is missing, forged, malformed or expired. (A cookie from before
        sessions were kept on the server, which held a token, is a signed-out session.)"""
        data = self.unseal(cookie)
        if data is None or not isinstance(data.get("sid"), str) or not isinstance(data.get("iat"), int):
            return None
        session = Session(str(data["sid"]), data.get("in") is True, int(str(data["iat"])))
        return session if time.time() - session.issued < self.max_age_s else None

    def of(self, request: Request) -> Session | None:
        return self.decode(request.cookies.get(COOKIE))

    def store(self, response: Response, request: Request, session: Session) -> None:
        response.set_cookie(
            COOKIE,
            self.encode(session),
            max_age=self.max_age_s,
            path="/",
            httponly=True,
            secure=is_https(request),
            samesite="lax",
        )

    def clear(self, response: Response, request: Request) -> None:
        response.delete_cookie(COOKIE, path="/", httponly=True, secure=is_https(request), samesite="lax")

    # -- CSRF --------------------------------------------------------------------------------------------------

    def csrf_token(self, session: Session) -> str:
        return self._sign(f"csrf:{session.sid}")

    def check_csrf(self, request: Request, session: Session | None, submitted: str | None) -> None:
        """A form post from this site with this session's CSRF token; else PermissionDenied (a 403 page)."""
        origin = request.headers.get("origin")
        if origin and origin.rstrip("/") != site_origin(request):
            raise PermissionDenied("This form was sent from another site; reload the page and send it again.")
        if session is None or not submitted or not hmac.compare_digest(submitted, self.csrf_token(session)):
            raise PermissionDenied("The form has expired (its security token does not match); reload and retry.")


def site_origin(request: Request) -> str:
    configured = request.app.state.settings.public_url
    if configured:
        scheme, _, rest = configured.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}"
    return f"{request.url.scheme}://{request.url.netloc}"


def is_https(request: Request) -> bool:
    configured = request.app.state.settings.public_url
    return (configured or str(request.base_url)).startswith("https://")
