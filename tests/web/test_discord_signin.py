""" "Sign in with Discord" against a fake OAuth2 server on loopback (http.server in a thread): the authorisation
redirect, the state check, the code exchange with client credentials, the user read, the session and sign-out."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlparse

import pytest
from fastapi.testclient import TestClient
from test_pages import csrf_of
from web_world import World

from leaderboards.results import UserRef
from web.app import create_app
from web.settings import WebSettings

CLIENT_ID, CLIENT_SECRET = "kc-client", "kc-client-secret"
CODE, ACCESS = "the-code", "the-access-token"


class FakeDiscord(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []
    user: ClassVar[dict[str, str]] = {"id": "4242", "username": "zed", "global_name": "Zed"}

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _json(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self.seen.append(f"POST {self.path}")
        form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if self.path != "/api/oauth2/token" or self.headers.get("Authorization") != f"Basic {basic}":
            self._json(401, {"error": "invalid_client"})
        elif form.get("grant_type") != ["authorization_code"] or form.get("code") != [CODE]:
            self._json(400, {"error": "invalid_grant"})
        elif not form.get("redirect_uri", [""])[0].endswith("/auth/discord/callback"):
            self._json(400, {"error": "invalid_request"})
        else:
            self._json(200, {"access_token": ACCESS, "token_type": "Bearer", "expires_in": 600, "scope": "identify"})

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        if self.path == "/api/users/@me" and self.headers.get("Authorization") == f"Bearer {ACCESS}":
            self._json(200, self.user)
        else:
            self._json(401, {"message": "401: Unauthorized"})


@pytest.fixture
def discord_base() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeDiscord)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeDiscord.seen = []
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def client(world: World, discord_base: str) -> Iterator[TestClient]:
    settings = WebSettings(
        _env_file=None,
        problems_dir=world.problems,
        discord_client_id=CLIENT_ID,
        discord_client_secret=CLIENT_SECRET,
        discord_base_url=discord_base,
    )
    with TestClient(create_app(world.service, settings), raise_server_exceptions=False) as c:
        yield c


def start(client: TestClient) -> dict[str, str]:
    r = client.get("/auth/discord", params={"next": "/me"}, follow_redirects=False)
    assert r.status_code == 303
    where = urlparse(r.headers["location"])
    assert where.path == "/oauth2/authorize"
    query = {k: v[0] for k, v in parse_qs(where.query).items()}
    assert query["client_id"] == CLIENT_ID and query["scope"] == "identify" and query["response_type"] == "code"
    return query


def test_sign_in_with_discord_makes_a_session_of_the_discord_account(world: World, client: TestClient) -> None:
    assert "Sign in with Discord" in client.get("/signin").text
    query = start(client)
    r = client.get("/auth/discord/callback", params={"code": CODE, "state": query["state"]}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/me", r.text
    me = client.get("/me")
    assert me.status_code == 200 and "Zed" in me.text
    tokens = world.service.list_tokens(UserRef("Zed", discord_id=4242))
    assert [t.name for t in tokens] == ["web sign-in (Discord)"]
    assert FakeDiscord.seen == ["POST /api/oauth2/token", "GET /api/users/@me"]
    # signing out revokes the token the sign-in made
    client.post("/signout", data={"csrf": csrf_of(me.text)})
    assert world.service.list_tokens(UserRef("Zed", discord_id=4242)) == ()


def test_a_wrong_or_missing_state_is_refused(client: TestClient) -> None:
    start(client)
    r = client.get("/auth/discord/callback", params={"code": CODE, "state": "forged"})
    assert r.status_code == 400 and "expired or was not started here" in r.text
    assert FakeDiscord.seen == []  # no code was exchanged
    client.cookies.clear()
    r = client.get("/auth/discord/callback", params={"code": CODE, "state": "anything"})
    assert r.status_code == 400


def test_a_refused_code_or_a_cancelled_consent_is_a_message(client: TestClient) -> None:
    query = start(client)
    r = client.get("/auth/discord/callback", params={"code": "stolen", "state": query["state"]})
    assert r.status_code == 400 and "did not accept" in r.text and CLIENT_SECRET not in r.text
    query = start(client)
    r = client.get("/auth/discord/callback", params={"error": "access_denied", "state": query["state"]})
    assert r.status_code == 400 and "cancelled" in r.text


def test_without_configuration_there_is_no_discord_sign_in(world: World) -> None:
    assert world.client.get("/auth/discord").status_code == 404
    assert "Sign in with Discord" not in world.client.get("/signin").text
