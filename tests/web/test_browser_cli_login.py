"""`kernelcup login --server URL` with a real browser (Chromium through Playwright, as tests/web/test_browser.py):
the page the CLI opens sends a signed-out person to sign in and back, *Allow* hands the code on to the CLI's
loopback listener through the answer page's meta refresh (the site's CSP has `form-action 'self'`, which would
stop a redirect there), and the CLI ends with a token. At phone width, as a person on a phone would do it."""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from helpers import future, make_problem, migrated_sqlite_template, sqlite_database

from kernelcup.commands.login_browser import browser_sign_in
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from web.app import create_app
from web.settings import WebSettings

CHROMIUM = os.environ.get("KERNELCUP_TEST_CHROMIUM", "/usr/bin/chromium")

pytestmark = [pytest.mark.browser, pytest.mark.slow]

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the skip below says why
    sync_playwright = None  # type: ignore[assignment]
if sync_playwright is None:
    pytest.skip("Playwright is not installed: pip install playwright (in the dev extras)", allow_module_level=True)
if not Path(CHROMIUM).exists():
    pytest.skip(
        f"Chromium not found at {CHROMIUM}: apt-get install chromium (make system-deps)", allow_module_level=True
    )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, LeaderboardService, str]]:
    database = sqlite_database(migrated_sqlite_template(tmp_path), tmp_path / "kernelcup.sqlite3")
    service = LeaderboardService(database, CoreSettings(_env_file=None, database_url=None, data_dir=tmp_path / "data"))
    service.create_leaderboard(make_problem(tmp_path / "problems"), deadline=future(), devices=["cpu"])
    ann = service.create_token(UserRef("ann")).token
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(service, WebSettings(_env_file=None, problems_dir=tmp_path / "problems"))
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=http.run, daemon=True)
    thread.start()
    for _ in range(600):
        if http.started:
            break
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}", service, ann
    finally:
        http.should_exit = True
        thread.join(20)
        database.dispose()


def test_allowing_the_cli_in_chromium_hands_it_a_token(
    served: tuple[str, LeaderboardService, str], tmp_path: Path
) -> None:
    url, service, ann = served
    opened: queue.Queue[str] = queue.Queue()
    result: dict[str, object] = {}

    def cli() -> None:  # the CLI waits on its listener; Playwright's sync API stays on this thread
        try:
            result["new"] = browser_sign_in(
                url,
                open_browser=True,
                timeout_s=60,
                echo=lambda _: None,
                ask_code=str,
                opener=lambda u: opened.put(u) is None,
            )
        except Exception as exc:  # reported below
            result["error"] = exc

    waiting = threading.Thread(target=cli, daemon=True)
    waiting.start()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 390, "height": 800})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(opened.get(timeout=10))
        assert "/signin?next=" in page.url  # signed out: to the sign-in page first
        page.fill("#token", ann)
        page.click("form[action='/signin'] button[type=submit]")
        page.wait_for_url("**/cli/sign-in?**")
        assert "asks to act as ann" in page.inner_text("main")
        page.screenshot(path=str(tmp_path / "cli-sign-in.png"), full_page=True)
        page.click("button[value=allow]")
        page.wait_for_url("http://127.0.0.1:*/callback?**", timeout=10_000)
        assert "Return to your terminal" in page.inner_text("body")
        browser.close()
    waiting.join(20)
    assert "error" not in result, result
    new = result["new"]
    assert service.authenticate(new.token, None).user == UserRef("ann")  # type: ignore[attr-defined]
    assert errors == []
