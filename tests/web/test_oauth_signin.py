""" "Sign in with Discord" and "Sign in with GitHub" (web/pages/oauth.py, through Authlib) against a fake OAuth2
provider on loopback (http.server in a thread, no real provider is reachable from here): the authorisation
redirect, the state check (CSRF), the code exchange with client credentials, the user read, the session and
sign-out; a refused code, a cancelled consent, a provider out of reach; the operator's choice of providers."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlparse

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from web_world import World, csrf_of

from leaderboards.results import UserRef
from web.app import create_app
from web.settings import WebSettings

CLIENT_ID, CLIENT_SECRET = "kc-client", "kc-client-secret"
CODE, ACCESS = "the-code", "the-access-token"
TOKEN_PATHS = {"/api/oauth2/token": "discord", "/login/oauth/access_token": "github"}
USER_PATHS = {"/api/users/@me": "discord", "/api/v3/user": "github"}


class FakeProvider(BaseHTTPRequestHandler):
    """Discord's and GitHub's token and user endpoints (GitHub's API under /api/v3, as GitHub Enterprise's is).
    GitHub answers a bad code with 200 and an ``error`` field, as the real one does."""

    seen: ClassVar[list[str]] = []
    users: ClassVar[dict[str, dict[str, object]]] = {}

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
        provider = TOKEN_PATHS.get(self.path)
        refused = 200 if provider == "github" else 400
        if provider is None or self.headers.get("Authorization") != f"Basic {basic}":
            self._json(401, {"error": "invalid_client"})
        elif form.get("grant_type") != ["authorization_code"] or form.get("code") != [CODE]:
            self._json(refused, {"error": "bad_verification_code" if provider == "github" else "invalid_grant"})
        elif not form.get("redirect_uri", [""])[0].endswith(f"/auth/{provider}/callback"):
            self._json(refused, {"error": "redirect_uri_mismatch"})
        else:
            self._json(200, {"access_token": ACCESS, "token_type": "bearer", "scope": ""})

    def do_GET(self) -> None:
        self.seen.append(f"GET {self.path}")
        provider = USER_PATHS.get(self.path)
        if provider is not None and self.headers.get("Authorization") == f"Bearer {ACCESS}":
            self._json(200, self.users[provider])
        else:
            self._json(401, {"message": "Bad credentials"})


@pytest.fixture
def provider_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeProvider)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    FakeProvider.seen = []
    FakeProvider.users = {
        "discord": {"id": "4242", "username": "zed", "global_name": "Zed"},
        "github": {"id": 583231, "login": "octocat", "name": "The Octocat"},
    }
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def settings_for(world: World, provider_url: str, **chosen: object) -> WebSettings:
    return WebSettings(
        _env_file=None,
        problems_dir=world.problems,
        discord_client_id=CLIENT_ID,
        discord_client_secret=CLIENT_SECRET,
        discord_base_url=provider_url,
        github_client_id=CLIENT_ID,
        github_client_secret=CLIENT_SECRET,
        github_base_url=provider_url,
        github_api_url=f"{provider_url}/api/v3",
        **chosen,
    )


@pytest.fixture
def client(world: World, provider_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(world.service, settings_for(world, provider_url)), raise_server_exceptions=False) as c:
        yield c


def start(client: TestClient, provider: str, next_page: str = "/me") -> dict[str, str]:
    r = client.get(f"/auth/{provider}", params={"next": next_page}, follow_redirects=False)
    assert r.status_code == 303, r.text
    where = urlparse(r.headers["location"])
    assert where.path == {"discord": "/oauth2/authorize", "github": "/login/oauth/authorize"}[provider]
    query = {k: v[0] for k, v in parse_qs(where.query).items()}
    assert query["client_id"] == CLIENT_ID and query["response_type"] == "code" and len(query["state"]) >= 20
    assert query["redirect_uri"] == f"http://testserver/auth/{provider}/callback"
    assert query.get("scope") == ("identify" if provider == "discord" else None)  # GitHub: public profile only
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("kc_oauth=") and "path=/auth" in cookie and "httponly" in cookie.lower()
    return query


def finish(client: TestClient, provider: str, **params: str) -> object:
    return client.get(f"/auth/{provider}/callback", params=params, follow_redirects=False)


def test_sign_in_with_discord_makes_a_session_of_the_discord_account(world: World, client: TestClient) -> None:
    assert "Sign in with Discord" in client.get("/signin").text
    query = start(client, "discord")
    r = finish(client, "discord", code=CODE, state=query["state"])
    assert r.status_code == 303 and r.headers["location"] == "/me", r.text
    me = client.get("/me")
    assert me.status_code == 200 and "Zed" in me.text
    tokens = world.service.list_tokens(UserRef("Zed", discord_id=4242))
    assert [(t.name, t.identity) for t in tokens] == [("web sign-in (Discord)", "discord:4242")]
    assert FakeProvider.seen == ["POST /api/oauth2/token", "GET /api/users/@me"]
    # signing out revokes the token the sign-in made
    client.post("/signout", data={"csrf": csrf_of(me.text)})
    assert world.service.list_tokens(UserRef("Zed", discord_id=4242)) == ()


def test_sign_in_with_github_makes_an_account_of_the_github_id_and_finds_it_again(
    world: World, client: TestClient
) -> None:
    assert "Sign in with GitHub" in client.get("/signin").text
    query = start(client, "github", "/submit")
    r = finish(client, "github", code=CODE, state=query["state"])
    assert r.status_code == 303 and r.headers["location"] == "/submit", r.text
    assert FakeProvider.seen == ["POST /login/oauth/access_token", "GET /api/v3/user"]
    me = client.get("/me")
    assert me.status_code == 200 and "The Octocat" in me.text
    octocat = UserRef("The Octocat", github_id=583231)
    assert [(t.name, t.identity) for t in world.service.list_tokens(octocat)] == [
        ("web sign-in (GitHub)", "github:583231")
    ]
    # the signed-in page session submits as that account
    page = client.get("/submit")
    assert page.status_code == 200 and "The Octocat" in page.text
    client.post("/signout", data={"csrf": csrf_of(me.text)})
    assert world.service.list_tokens(octocat) == ()

    # renamed on GitHub (login and name): the same account, by GitHub's numeric id, under its new name
    FakeProvider.users["github"] = {"id": 583231, "login": "octo-renamed", "name": None}
    query = start(client, "github")
    assert finish(client, "github", code=CODE, state=query["state"]).status_code == 303
    assert "octo-renamed" in client.get("/me").text
    [token] = world.service.list_tokens(UserRef("octo-renamed", github_id=583231))
    assert token.user_name == "octo-renamed" and token.identity == "github:583231"


def test_a_wrong_or_missing_state_is_refused_before_any_code_is_exchanged(client: TestClient) -> None:
    for provider in ("discord", "github"):
        start(client, provider)
        r = finish(client, provider, code=CODE, state="forged-by-someone-else")
        assert r.status_code == 400 and "expired or was not started here" in r.text
        # a state of another browser (no kc_oauth cookie here) is refused as well
        query = start(client, provider)
        client.cookies.clear()
        r = finish(client, provider, code=CODE, state=query["state"])
        assert r.status_code == 400 and "expired or was not started here" in r.text
    assert FakeProvider.seen == []  # no code was exchanged
    assert client.get("/me", follow_redirects=False).status_code == 303  # nobody is signed in


def test_a_state_is_used_once(client: TestClient) -> None:
    query = start(client, "github")
    assert finish(client, "github", code=CODE, state=query["state"]).status_code == 303
    r = finish(client, "github", code=CODE, state=query["state"])
    assert r.status_code == 400 and "expired or was not started here" in r.text


def test_a_refused_code_a_cancelled_consent_or_a_bad_answer_is_a_message(client: TestClient) -> None:
    for provider, title in (("discord", "Discord"), ("github", "GitHub")):
        query = start(client, provider)
        r = finish(client, provider, code="stolen", state=query["state"])
        assert r.status_code == 400 and f"{title} did not accept" in r.text and CLIENT_SECRET not in r.text
        query = start(client, provider)
        r = finish(client, provider, error="access_denied", state=query["state"])
        assert r.status_code == 400 and f"{title} sign-in was cancelled" in r.text
        query = start(client, provider)
        r = finish(client, provider, state=query["state"])
        assert r.status_code == 400 and "sent no authorisation code" in r.text
    FakeProvider.users["github"] = {"id": "not-a-number", "login": ""}
    query = start(client, "github")
    r = finish(client, "github", code=CODE, state=query["state"])
    assert r.status_code == 400 and "answered oddly" in r.text


def test_a_provider_out_of_reach_is_a_message(world: World) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once this socket closes
    with TestClient(create_app(world.service, settings_for(world, closed)), raise_server_exceptions=False) as c:
        query = start(c, "github")
        r = finish(c, "github", code=CODE, state=query["state"])
    assert r.status_code == 400 and "GitHub could not be reached" in r.text


def test_the_operator_chooses_the_providers(world: World, provider_url: str) -> None:
    only_github = settings_for(world, provider_url, sign_in_providers="github")
    with TestClient(create_app(world.service, only_github), raise_server_exceptions=False) as c:
        page = c.get("/signin").text
        assert "Sign in with GitHub" in page and "Sign in with Discord" not in page
        r = c.get("/auth/discord")
        assert r.status_code == 404 and "Sign-in with Discord is not offered on this server" in r.text
        assert c.get("/auth/discord/callback", params={"code": CODE, "state": "x"}).status_code == 404
        assert c.get("/auth/gitlab").status_code == 404
    none = settings_for(world, provider_url, sign_in_providers="")
    with TestClient(create_app(world.service, none), raise_server_exceptions=False) as c:
        assert "Sign in with" not in c.get("/signin").text
        assert c.get("/auth/github").status_code == 404
    assert FakeProvider.seen == []


def test_a_provider_turned_on_without_its_credentials_stops_the_server_at_start(world: World) -> None:
    with pytest.raises(ValidationError, match="KERNELCUP_API_GITHUB_CLIENT_ID and KERNELCUP_API_GITHUB_CLIENT_SECRET"):
        WebSettings(
            _env_file=None, sign_in_providers="discord,github", discord_client_id="x", discord_client_secret="y"
        )
    with pytest.raises(ValidationError, match="'discord' or 'github'"):
        WebSettings(_env_file=None, sign_in_providers="gitlab")


def test_without_configuration_there_is_no_provider_sign_in(world: World) -> None:
    assert world.client.get("/auth/discord").status_code == 404
    assert world.client.get("/auth/github").status_code == 404
    assert "Sign in with" not in world.client.get("/signin").text
    assert "kc_oauth" not in world.client.get("/signin").headers.get("set-cookie", "")


def sign_in_with_token(client: TestClient, token: str) -> None:
    page = client.get("/signin")
    r = client.post("/signin", data={"csrf": csrf_of(page.text), "token": token, "next": "/"}, follow_redirects=False)
    assert r.status_code == 303


def link_github(client: TestClient) -> object:
    r = client.get("/auth/github", params={"link": "true", "next": "/me"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    state = parse_qs(urlparse(r.headers["location"]).query)["state"][0]
    return finish(client, "github", code=CODE, state=state)


def test_a_github_account_linked_to_an_existing_account_signs_in_as_it(
    world: World, client: TestClient, provider_url: str
) -> None:
    sign_in_with_token(client, world.ann)  # ann: a local account with her entries, signed in with a pasted token
    page = client.get("/signin").text
    assert "Link a GitHub account to ann" in page
    r = link_github(client)
    assert r.status_code == 303 and r.headers["location"] == "/me", r.text
    assert "ann" in client.get("/me").text
    assert "github:583231" not in {t.identity for t in world.service.list_tokens()}  # no account of its own
    assert "web sign-in (GitHub)" in [t.name for t in world.service.list_tokens(UserRef("ann"))]
    entry = world.service.audit_log(action="link_account").entries[0]
    assert entry.target == "local:ann" and entry.detail["provider"] == "github"
    # another browser, later: "Sign in with GitHub" is ann
    app = client.app
    with TestClient(app, raise_server_exceptions=False) as other:
        query = start(other, "github")
        assert finish(other, "github", code=CODE, state=query["state"]).status_code == 303
        me = other.get("/me")
        assert me.status_code == 200 and "ann" in me.text and "The Octocat" not in me.text
        # linking it again to someone else is refused: a GitHub account signs in as one account
        other.post("/signout", data={"csrf": csrf_of(me.text)})
        sign_in_with_token(other, world.bob)
        r = link_github(other)
        assert r.status_code == 409 and "is linked to another kernelcup account, &#39;ann&#39;" in r.text
        assert "bob" in other.get("/me").text  # still bob


def test_a_github_account_with_its_own_account_is_not_linked_to_another(world: World, client: TestClient) -> None:
    query = start(client, "github")
    assert finish(client, "github", code=CODE, state=query["state"]).status_code == 303  # github:583231 made
    me = client.get("/me")
    client.post("/signout", data={"csrf": csrf_of(me.text)})
    sign_in_with_token(client, world.bob)
    r = link_github(client)
    assert r.status_code == 409 and "already has another kernelcup account, &#39;The Octocat&#39;" in r.text
    assert world.service.audit_log(action="link_account").entries == ()


def test_linking_needs_a_sign_in_here(client: TestClient) -> None:
    r = client.get("/auth/github", params={"link": "true"})
    assert r.status_code == 422 and "sign in first" in r.text
    assert FakeProvider.seen == []
