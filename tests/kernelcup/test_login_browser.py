"""`kernelcup login --server URL` through the browser, end to end against the app served in-process (uvicorn on a
loopback port, in a thread): the CLI's loopback listener, the approval page (signed in, CSRF), the one-time code,
the token exchange with the PKCE verifier, and the token stored where `--token` logins are. The "browser" is an
httpx client with its own cookies, doing what a person does on the pages; `webbrowser.open` is replaced by it."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import uvicorn
from helpers import future, make_problem, migrated_sqlite_template, sqlite_database
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.commands import login_browser
from leaderboards.results import Scope, UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from web.app import create_app
from web.settings import WebSettings

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
REFRESH = re.compile(r'http-equiv="refresh" content="0;url=([^"]+)"')


@dataclass
class Served:
    url: str
    service: LeaderboardService
    ann: str
    """A pasted token of ann's, which the browser signs in with."""
    admin: str
    config: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("login")
    database = sqlite_database(migrated_sqlite_template(root), root / "kernelcup.sqlite3")
    settings = CoreSettings(_env_file=None, database_url=None, data_dir=root / "data", token_expiry_days=90)
    service = LeaderboardService(database, settings)
    service.create_leaderboard(make_problem(root / "problems"), deadline=future(), devices=["cpu"])
    ann = service.create_token(UserRef("ann"), name="ann's pasted token").token
    admin = service.create_token(UserRef("root"), scopes=[Scope.ADMIN]).token
    web = WebSettings(_env_file=None, problems_dir=root / "problems", cli_sign_in_code_s=60)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    http = uvicorn.Server(uvicorn.Config(create_app(service, web), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=http.run, daemon=True)
    thread.start()
    for _ in range(600):
        if http.started:
            break
        time.sleep(0.05)
    try:
        yield Served(f"http://127.0.0.1:{port}", service, ann, admin, root / "config")
    finally:
        http.should_exit = True
        thread.join(20)
        database.dispose()


class Browser:
    """A person's browser: its own cookies; signs in on /signin with a pasted token, then approves (or cancels) the
    CLI on the page the CLI opened, and follows the page on to the CLI's loopback address."""

    def __init__(self, served: Served, *, token: str | None = None, decision: str = "allow") -> None:
        self.served, self.token, self.decision = served, token, decision
        self.http = httpx.Client(base_url=served.url, timeout=10)
        self.seen: dict[str, object] = {}

    def sign_in(self) -> None:
        page = self.http.get("/signin")
        csrf = CSRF.search(page.text).group(1)  # type: ignore[union-attr]
        r = self.http.post("/signin", data={"csrf": csrf, "token": self.token, "next": "/"})
        assert r.status_code == 303, r.text

    def approve(self, url: str) -> httpx.Response:
        """The page the CLI opened, approved or cancelled; the answer (the page that hands on to the CLI)."""
        page = self.http.get(url)
        self.seen["redirected"] = page.status_code == 303
        if page.status_code == 303:  # not signed in: to the sign-in page, which comes back here
            assert page.headers["location"].startswith("/signin?next=%2Fcli%2Fsign-in%3F")
            self.sign_in()
            page = self.http.get(url)
        assert page.status_code == 200, page.text
        self.seen["page"] = page.text
        form = {k: v for k, v in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page.text)}
        return self.http.post("/cli/sign-in", data={**form, "decision": self.decision})

    def opener(self, *, follow: bool = True) -> Callable[[str], bool]:
        """What `webbrowser.open` is replaced with: approve in a thread (the CLI waits meanwhile), then go on to the
        loopback address the page names (its meta refresh), as a browser does."""

        def open_(url: str) -> bool:
            self.seen["url"] = url

            def run() -> None:
                answer = self.approve(url)
                self.seen["answer"] = answer.text
                target = REFRESH.search(answer.text)
                if follow and target:
                    self.seen["loopback"] = httpx.get(target.group(1).replace("&amp;", "&"), timeout=10)

            threading.Thread(target=run, daemon=True).start()
            return True

        return open_


def login(served: Served, *args: str, input: str | None = None) -> object:
    env = {"KERNELCUP_CONFIG_DIR": str(served.config), "KERNELCUP_TOKEN": "", "KERNELCUP_SERVER": ""}
    return CliRunner().invoke(build_app(), ["login", "--server", served.url, *args], env=env, input=input)


def stored(served: Served) -> dict[str, str]:
    return json.loads((served.config / "client.json").read_text())


def test_browser_login_signs_the_cli_in_with_a_token_of_its_own(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = Browser(served, token=served.ann)
    monkeypatch.setattr(login_browser, "_open_browser", browser.opener())
    r = login(served, "--browser")
    assert r.exit_code == 0, r.output
    assert f"logged in to {served.url} as ann" in r.output and "scopes submit" in r.output
    # the page named who the CLI will act as, and the browser came back to the CLI's loopback listener
    assert (
        browser.seen["redirected"] and "ann" in str(browser.seen["page"]) and "local:ann" in str(browser.seen["page"])
    )
    query = {k: v[0] for k, v in parse_qs(urlsplit(str(browser.seen["url"])).query).items()}
    assert int(query["port"]) > 1024 and len(query["challenge"]) == 43 and len(query["state"]) >= 16
    loopback = browser.seen["loopback"]
    assert isinstance(loopback, httpx.Response) and loopback.status_code == 200 and "Signed in" in loopback.text
    token = stored(served)["token"]
    assert token not in (served.ann,) and token.startswith("kc_")
    me = served.service.authenticate(token, None)
    assert me.user.identity == "local:ann" and me.scopes == frozenset({Scope.SUBMIT})
    [made] = [t for t in served.service.list_tokens(UserRef("ann")) if t.token_id == me.token_id]
    assert made.name.startswith("CLI sign-in (kernelcup CLI on ")
    # audited: the approval and the exchange, and the token made
    actions = [e.action for e in served.service.audit_log(limit=20).entries if e.target == "local:ann"]
    assert {"approve_cli_sign_in", "cli_sign_in", "create_token"} <= set(actions)


def test_a_code_works_once_only_with_its_verifier_and_only_for_a_while(served: Served) -> None:
    browser = Browser(served, token=served.ann)
    browser.sign_in()
    verifier = "v" * 43 + "erifier-of-this-cli"
    challenge = login_browser.pkce_challenge(verifier)
    url = f"/cli/sign-in?challenge={challenge}&state=state-of-this-cli-123"  # --no-browser: no port, a code shown
    answer = browser.approve(url)
    code = re.search(r'id="cli-code">([^<]+)<', answer.text).group(1)  # type: ignore[union-attr]
    api = httpx.Client(base_url=f"{served.url}/api/v1", timeout=10)
    wrong = api.post("/cli/sign-in/token", json={"code": code, "verifier": "x" * 43})
    assert wrong.status_code == 401 and "not valid" in wrong.json()["error"]["message"]
    ok = api.post("/cli/sign-in/token", json={"code": code, "verifier": verifier})
    assert ok.status_code == 201 and ok.json()["info"]["scopes"] == ["submit"]
    again = api.post("/cli/sign-in/token", json={"code": code, "verifier": verifier})
    assert again.status_code == 401 and "used already" in again.json()["error"]["message"]
    # a late one: the code's expiry passed (the server's clock moved on past KERNELCUP_API_CLI_SIGN_IN_CODE_S)
    code = re.search(r'id="cli-code">([^<]+)<', browser.approve(url).text).group(1)  # type: ignore[union-attr]
    clock = served.service.clock
    served.service.clock = lambda: clock() + timedelta(seconds=61)  # type: ignore[method-assign]
    try:
        late = api.post("/cli/sign-in/token", json={"code": code, "verifier": verifier})
    finally:
        served.service.clock = clock  # type: ignore[method-assign]
    assert late.status_code == 401 and "expired" in late.json()["error"]["message"]


def test_only_a_signed_in_session_with_its_csrf_token_gets_a_code(served: Served) -> None:
    challenge = login_browser.pkce_challenge("w" * 50)
    form = {"challenge": challenge, "state": "state-of-this-cli-456", "decision": "allow"}
    nobody = httpx.Client(base_url=served.url, timeout=10)
    r = nobody.get(f"/cli/sign-in?challenge={challenge}&state=state-of-this-cli-456", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/signin?next=")
    assert nobody.post("/cli/sign-in", data=form).status_code == 403  # no session, no CSRF token
    browser = Browser(served, token=served.ann)
    browser.sign_in()
    r = browser.http.post("/cli/sign-in", data={**form, "csrf": "forged"})
    assert r.status_code == 403 and "cli-code" not in r.text
    r = browser.http.get("/cli/sign-in?challenge=short&state=x")
    assert r.status_code == 422 or (r.status_code == 400 and "incomplete or damaged" in r.text)


def test_cancelling_in_the_browser_stores_nothing(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    (served.config / "client.json").unlink(missing_ok=True)
    browser = Browser(served, token=served.ann, decision="cancel")
    monkeypatch.setattr(login_browser, "_open_browser", browser.opener())
    r = login(served, "--browser")
    assert r.exit_code == 1 and "cancelled in the browser" in r.output
    assert not (served.config / "client.json").exists()


def test_no_browser_prints_the_address_and_takes_the_code_the_page_shows(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = Browser(served, token=served.ann)
    browser.sign_in()
    codes: list[str] = []

    def echo(text: str) -> None:  # the person reads the address on the terminal and opens it elsewhere
        match = re.search(r"(http://\S+/cli/sign-in\?\S+)", text)
        if match:
            assert "port=" not in match.group(1)
            answer = browser.approve(match.group(1))
            codes.append(re.search(r'id="cli-code">([^<]+)<', answer.text).group(1))  # type: ignore[union-attr]

    new = login_browser.browser_sign_in(
        served.url, open_browser=False, timeout_s=30, echo=echo, ask_code=lambda: codes[0]
    )
    assert served.service.authenticate(new.token, None).user.identity == "local:ann"


def test_without_a_browser_the_address_is_printed_and_the_wait_ends(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(login_browser, "_open_browser", lambda url: False)
    r = login(served, "--browser", "--timeout", "10")
    assert r.exit_code == 1
    assert "Could not open a browser here" in r.output and f"{served.url}/cli/sign-in?" in r.output
    assert "--no-browser" in r.output and "No sign-in came back from the browser within 10 s" in r.output


def test_the_loopback_listener_ignores_another_state(served: Served) -> None:
    with login_browser.LoopbackListener("the-right-state-0123") as listener:
        base = f"http://127.0.0.1:{listener.port}"
        assert httpx.get(f"{base}/callback", params={"code": "c", "state": "another"}).status_code == 400
        assert httpx.get(f"{base}/elsewhere").status_code == 404
        assert not listener.done.is_set()
        assert (
            httpx.get(f"{base}/callback", params={"code": "c0de", "state": "the-right-state-0123"}).status_code == 200
        )
        assert listener.wait(1) == "c0de"


def test_a_piped_token_still_logs_in_without_a_browser(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(url: str) -> bool:
        raise AssertionError("no browser for a piped token")

    monkeypatch.setattr(login_browser, "_open_browser", refuse)
    r = login(served, input=served.ann + "\n")
    assert r.exit_code == 0 and "as ann" in r.output and stored(served)["token"] == served.ann
