"""Web sessions live on the server (issue 37, class 1): the cookie carries no API token, signing out ends the session
for every copy of its cookie, and a revoked token (or an ended session) ends its open event streams, the API's and
the pages', within ``KERNELCUP_API_SSE_AUTH_CHECK_S``."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from web_world import World, csrf_of

from leaderboards.errors import InvalidToken
from leaderboards.results import UserRef

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def signed_in_client(world: World, token: str) -> TestClient:
    client = TestClient(world.client.app, raise_server_exceptions=False)
    page = client.get("/signin")
    r = client.post("/signin", data={"token": token, "csrf": csrf_of(page.text)}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return client


def copy_of(world: World, client: TestClient) -> TestClient:
    """Another browser with the same cookie (a stolen one)."""
    thief = TestClient(world.client.app, raise_server_exceptions=False)
    thief.cookies.set("kc_session", client.cookies["kc_session"])
    return thief


def signed_in(client: TestClient) -> bool:
    """Whether /me shows this browser its page (else it is sent to sign in)."""
    r = client.get("/me", follow_redirects=False)
    assert r.status_code in (200, 303)
    return r.status_code == 200


def test_the_cookie_carries_no_token_and_its_session_id_is_no_api_token(world: World) -> None:
    browser = signed_in_client(world, world.ann)
    cookie = browser.cookies["kc_session"]
    payload = json.loads(base64.urlsafe_b64decode(cookie.rpartition(".")[0] + "=="))
    assert world.ann not in cookie and world.ann not in json.dumps(payload)
    assert set(payload) == {"sid", "in", "iat"} and payload["in"] is True
    r = world.client.get("/api/v1/me", headers=world.auth(payload["sid"]))
    assert r.status_code == 401  # the session id opens no API route


def test_signing_out_ends_the_session_for_every_copy_of_its_cookie(world: World) -> None:
    browser = signed_in_client(world, world.ann)
    thief = copy_of(world, browser)
    assert signed_in(thief) and signed_in(browser)
    me = browser.get("/me")
    r = browser.post("/signout", data={"csrf": csrf_of(me.text)}, follow_redirects=False)
    assert r.status_code == 303
    assert not signed_in(browser)
    assert not signed_in(thief)  # the copied cookie is dead on the server, not just deleted in one browser
    assert thief.get("/submit", follow_redirects=False).status_code == 303
    # the pasted token itself still works for the API (signing out of the pages revokes nothing else)
    assert world.client.get("/api/v1/me", headers=world.auth(world.ann)).status_code == 200


def test_revoking_the_token_ends_its_sessions(world: World) -> None:
    token = world.service.create_token(UserRef("dora"))
    browser = signed_in_client(world, token.token)
    assert signed_in(browser)
    world.service.revoke_token(token.info.token_id)
    assert not signed_in(browser)


def test_a_discord_sign_ins_token_is_revoked_at_sign_out(world: World) -> None:
    """The token made for a Discord sign-in goes with its session (the session is its only use)."""
    new = world.service.create_token(UserRef("erin", discord_id=42), name="web sign-in (Discord)")
    sid, _ = world.service.open_session(new.token, via="discord", max_age=timedelta(hours=1))
    assert world.service.session_principal(sid).token_id == new.info.token_id
    world.service.end_session(sid)
    assert world.client.get("/api/v1/me", headers=world.auth(new.token)).status_code == 401
    with pytest.raises(InvalidToken, match="ended"):
        world.service.session_principal(sid)


# -- event streams end with their credential ---------------------------------------------------------------------


def _events(text: str) -> list[tuple[str, str]]:
    return re.findall(r"^event: (\w+)\ndata: (.*)$", text, flags=re.M)


def _stream_while(world: World, open_stream: Callable[[], str], end_it: Callable[[], object]) -> tuple[str, float]:
    """Opens a stream of a submission that never finishes, ends its credential 0.3 s later from another thread, and
    gives the stream's text and how long after that it closed. Without the check the stream would run to its
    timeout (5 s here) and end with a ``timeout`` event."""
    settings = world.client.app.state.settings  # type: ignore[attr-defined]
    settings.sse_auth_check_s = 0.1
    settings.sse_keepalive_s = 0.2
    settings.sse_timeout_s = 5.0
    ended_at: list[float] = []

    def later() -> None:
        time.sleep(0.3)
        end_it()
        ended_at.append(time.monotonic())

    thread = threading.Thread(target=later)
    thread.start()
    text = open_stream()
    closed = time.monotonic()
    thread.join()
    return text, closed - ended_at[0]


def test_a_revoked_token_ends_its_open_api_event_streams(world: World) -> None:
    token = world.service.create_token(UserRef("fay"))
    sid = world.submit(token.token).json()["submission_id"]  # queued: no worker runs here

    def open_stream() -> str:
        r = world.client.get(f"/api/v1/submissions/{sid}/events", headers=world.auth(token.token))
        assert r.status_code == 200
        return r.text

    text, after = _stream_while(world, open_stream, lambda: world.service.revoke_token(token.info.token_id))
    events = _events(text)
    assert events and events[-1][0] == "error", text[-500:]
    assert json.loads(events[-1][1])["error"]["code"] == "invalid_token"
    assert after < 2.0, f"the stream outlived its token by {after:.1f} s"


def test_signing_out_ends_the_pages_event_streams_of_that_session(world: World) -> None:
    browser = signed_in_client(world, world.ann)
    thief = copy_of(world, browser)
    sid = world.submit(world.ann).json()["submission_id"]
    csrf = csrf_of(browser.get("/me").text)

    def open_stream() -> str:
        r = thief.get(f"/submissions/{sid}/events")
        assert r.status_code == 200
        return r.text

    def sign_out() -> None:
        assert browser.post("/signout", data={"csrf": csrf}, follow_redirects=False).status_code == 303

    text, after = _stream_while(world, open_stream, sign_out)
    events = _events(text)
    assert events and events[-1][0] == "error", text[-500:]
    assert json.loads(events[-1][1])["error"]["code"] == "invalid_token"
    assert after < 2.0, f"the stream outlived its session by {after:.1f} s"
