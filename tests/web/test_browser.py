"""The web pages in a real browser: Debian's Chromium driven by Playwright, against a real ``kernelcup serve`` on a
loopback port (embedded SQLite in a temporary folder, its in-process worker with the local runner on the CPU).

One server and one browser for the module. Every page is checked for console errors and failed requests, for no
horizontal scroll at 360 px, and leaves a screenshot under the test's temporary folder (its path is printed when
a test fails). Skipped, with the reason, where Chromium or Playwright is missing (``make system-deps`` installs
Chromium from Debian's packages; ``pip install -e '.[dev]'`` brings Playwright).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from helpers import write_problem_set

from leaderboards.db import open_database
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.sync import sync_problem_set
from leaderboards.worker import Worker, WorkerSettings
from runners.launchers.fake import FakeLauncher, accepted_result

CHROMIUM = os.environ.get("KERNELCUP_TEST_CHROMIUM", "/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "problems" / "vectoradd" / "solutions" / "correct" / "pytorch.py"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - the skip below says why
    sync_playwright = None  # type: ignore[assignment]
if sync_playwright is None:
    pytest.skip("Playwright is not installed: pip install playwright (in the dev extras)", allow_module_level=True)
if not Path(CHROMIUM).exists():
    pytest.skip(
        f"Chromium not found at {CHROMIUM}: apt-get install chromium (make system-deps)", allow_module_level=True
    )


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Site:
    url: str
    ann: str
    bob_submission: int
    shots: Path
    browser: Browser
    pages: list[Any] = field(default_factory=list)


def _small_vectoradd(root: Path) -> None:
    """vectoradd with CPU-sized benchmarks (its real ones are sized for GPUs)."""
    target = root / "vectoradd"
    shutil.copytree(REPO / "problems" / "vectoradd", target)
    task = yaml.safe_load((target / "task.yml").read_text())
    task["benchmarks"] = [{"size": 64, "seed": 11}, {"size": 128, "seed": 12}]
    (target / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("browser")
    _small_vectoradd(root / "problems")
    shutil.copytree(REPO / "problems" / "vectorsum", root / "problems" / "vectorsum")  # nobody submits to it
    write_problem_set(
        root / "problems",
        [
            {"directory": "vectoradd", "deadline": "2099-01-01", "devices": ["cpu"]},
            {"directory": "vectorsum", "deadline": "2099-01-01", "devices": ["cpu", "H100"]},
        ],
    )
    settings = CoreSettings(_env_file=None, data_dir=root / "data", duplicate_window_s=0, rate_limit_per_hour=None)
    service = LeaderboardService(open_database(settings), settings)
    sync_problem_set(service, root / "problems" / "test-set.yaml")
    ann = service.create_token(UserRef("ann")).token
    bob = service.create_token(UserRef("bob")).token
    # bob's entry is there before the server starts: run by a worker here with the fake launcher (the browser's
    # own submission below is the real one, through the server's worker and the local runner)
    receipt = service.submit(UserRef("bob"), "bob.py", SOLUTION.read_bytes(), "vectoradd", ["cpu"], "ranked")
    fake = FakeLauncher(lambda req: accepted_result(req, 50_000.0))
    worker_settings = WorkerSettings(_env_file=None, poll_s=0.01, heartbeat_s=1.0, lease_s=30.0)
    asyncio.run(Worker(service, lambda _d: fake, worker_settings).run(once=True))
    assert service.submission_status_of(receipt.submission_id, UserRef("bob")).accepted
    service.db.dispose()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "KERNELCUP_"))}
    env.update(
        KERNELCUP_DATA_DIR=str(root / "data"),
        KERNELCUP_CONFIG_DIR=str(root / "config"),
        KERNELCUP_API_PROBLEMS_DIR=str(root / "problems"),
        KERNELCUP_API_SSE_POLL_S="0.1",
        KERNELCUP_API_RANKINGS_CACHE_S="0",
        KERNELCUP_DUPLICATE_WINDOW_S="0",
        KERNELCUP_RATE_LIMIT_PER_HOUR="none",
        KERNELCUP_RANKED_RATE_LIMIT_PER_HOUR="none",
        # As everywhere in the suite (tests/conftest.py): no set of processes pre-started after the run, importing
        # PyTorch until the server stops (tests/runners/test_prestart.py tests pre-starting)
        KERNELCUP_PRESTART="false",
        PYTHONPATH=os.pathsep.join(sys.path),
    )
    log = (root / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelcup.cli", "serve", "--port", str(port), "--launcher", "local"],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            pytest.fail(f"kernelcup serve did not start:\n{(root / 'serve.log').read_text()}")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            yield Site(url, ann, receipt.submission_id, root / "screenshots", browser)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
    out = (root / "serve.log").read_text()
    assert "Traceback" not in out and ann not in out and bob not in out, out


class Watched:
    """A browser page that records console errors and failed requests (4xx/5xx too, but those a test expects)."""

    def __init__(self, site: Site, width: int = 1280) -> None:
        self.context = site.browser.new_context(viewport={"width": width, "height": 900})
        self.page: Page = self.context.new_page()
        self.site = site
        self.problems: list[str] = []
        self.expected: set[str] = set()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"failed: {r.url} {r.failure}"))
        self.page.on(
            "response",
            lambda r: (
                self.problems.append(f"{r.status} {r.url}") if r.status >= 400 and r.url not in self.expected else None
            ),
        )

    def _console(self, message: Any) -> None:
        # Chromium logs every 4xx/5xx document as a console error; one a test expects (a 404 page, a form answered
        # 422 with its error) is not a problem
        expected = message.location.get("url") in self.expected and message.text.startswith("Failed to load resource")
        if message.type == "error" and not expected:
            self.problems.append(f"console {message.type}: {message.text}")

    def open(self, path: str, *, expect_status: int = 200) -> Page:
        url = self.site.url + path
        if expect_status >= 400:
            self.expected.add(url)
        response = self.page.goto(url)
        assert response is not None and response.status == expect_status, (path, response and response.status)
        return self.page

    def shot(self, name: str) -> None:
        self.site.shots.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(self.site.shots / f"{name}.png"), full_page=True)

    def check(self) -> None:
        assert not self.problems, f"{self.problems} (screenshots in {self.site.shots})"

    def sign_in(self, token: str) -> None:
        self.open("/signin")
        self.page.fill("#token", token)
        self.page.click("form.stack button[type=submit]")
        self.page.wait_for_url(re.compile(r".*/$"))

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def browser_page(site: Site, request: pytest.FixtureRequest) -> Iterator[Watched]:
    watched = Watched(site)
    yield watched
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:  # pragma: no cover - shown when a test fails
        watched.shot(f"failed-{request.node.name}")
    watched.close()


def rows_of(page: Page) -> list[list[str]]:
    return [
        [cell.strip() for cell in row.locator("td").all_inner_texts()]
        for row in page.locator("table.ranking tbody tr").all()
    ]


def test_home_then_a_leaderboard_matches_the_api(site: Site, browser_page: Watched) -> None:
    page = browser_page.open("/")
    assert page.locator("h1").inner_text() == "Leaderboards"
    browser_page.shot("home")
    page.click('a[href="/leaderboards/vectoradd"] >> nth=0')
    page.wait_for_url("**/leaderboards/vectoradd")
    browser_page.shot("leaderboard")
    api = httpx.get(f"{site.url}/api/v1/leaderboards/vectoradd/rankings", params={"device": "cpu"}).json()
    rows = rows_of(page)
    assert [(r[0], r[1], r[4]) for r in rows] == [
        (str(e["rank"]), e["user_name"], e["file_name"]) for e in api["entries"]
    ]
    assert rows and rows[0][1] == "bob"
    assert page.locator("svg.chart path.line").count() == 1
    templates = yaml.safe_load((REPO / "problems" / "vectoradd" / "task.yml").read_text())["templates"]
    assert page.locator('a[download][href*="/templates/"]').count() == len(templates)  # one download per template
    browser_page.check()


def test_sign_in_submit_and_watch_it_reach_accepted(site: Site, browser_page: Watched) -> None:
    browser_page.sign_in(site.ann)
    page = browser_page.open("/submit")
    browser_page.shot("submit")
    page.select_option("#leaderboard", "vectoradd")
    page.check("input[name=devices][value=cpu]")
    page.check("input[name=mode][value=ranked]")
    page.set_input_files("#file", str(SOLUTION))
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/submissions/\d+$"))
    page.wait_for_selector("#progress li >> nth=1", timeout=30_000)  # live progress from the event stream
    browser_page.shot("progress")
    shown = page.locator("#progress li").all_inner_texts()
    assert shown.count("cpu: queued") == 1, shown  # the page's own, then the stream's after it (not again)
    page.wait_for_selector("#outcome.good", timeout=180_000)
    page.wait_for_selector("#progress", state="detached", timeout=10_000)  # reloaded: the full report
    assert page.locator("#outcome").inner_text() == "accepted"
    assert page.locator("pre.code .k").count() > 0  # highlighted on the server
    browser_page.shot("submission")
    page = browser_page.open("/leaderboards/vectoradd")
    assert "ann" in [r[1] for r in rows_of(page)]
    page = browser_page.open("/me")
    assert page.locator("tbody tr").count() == 1
    browser_page.shot("me")
    browser_page.check()


def test_a_bad_file_shows_its_error(site: Site, browser_page: Watched) -> None:
    browser_page.sign_in(site.ann)
    page = browser_page.open("/submit")
    page.set_input_files("#file", files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"hello"}])
    browser_page.expected.add(site.url + "/submit")  # answered 422 with the form and its error
    page.click("form.stack button[type=submit]")
    error = page.locator("#submit-error")
    error.wait_for()
    assert ".txt" in error.inner_text() or "file" in error.inner_text().lower()
    assert "Traceback" not in page.content()
    browser_page.shot("bad-file")
    browser_page.check()


def test_someone_elses_submission_is_a_404(site: Site, browser_page: Watched) -> None:
    browser_page.sign_in(site.ann)
    page = browser_page.open(f"/submissions/{site.bob_submission}", expect_status=404)
    assert "Not found" in page.locator("h1").inner_text()
    browser_page.shot("not-found")
    browser_page.check()


@pytest.mark.parametrize("path", ["/", "/leaderboards/vectoradd", "/signin", "/submit", "/me", "/archive"])
def test_no_horizontal_scroll_at_360_px(site: Site, path: str) -> None:
    narrow = Watched(site, width=360)
    try:
        if path in ("/submit", "/me"):
            narrow.sign_in(site.ann)
        page = narrow.open(path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 360, path
        narrow.shot("narrow" + path.replace("/", "-"))
        narrow.check()
    finally:
        narrow.close()


def test_the_submit_page_edits_the_template_in_a_highlighting_editor(site: Site, browser_page: Watched) -> None:
    """Issue 31: the form starts on the board's template in CodeMirror (vendored: no request leaves the site), in
    test mode on the board's device; what is typed in the editor is what is sent."""
    browser_page.sign_in(site.ann)
    page = browser_page.open("/submit?leaderboard=vectoradd")
    page.wait_for_selector(".CodeMirror .cm-keyword")  # the template, highlighted
    assert "#!POPCORN leaderboard vectoradd" in page.locator(".CodeMirror-code").inner_text()
    assert page.locator("input[name=mode][value=test]").is_checked()
    assert page.locator("input[name=devices]").evaluate_all("boxes => boxes.map(b => b.value)") == ["cpu"]
    assert not page.locator("#choose-button").is_visible()  # the select reloads the form by itself
    page.evaluate("code => document.querySelector('.CodeMirror').CodeMirror.setValue(code)", SOLUTION.read_text())
    page.click(".CodeMirror-code")
    page.keyboard.press("Control+End")
    page.keyboard.type("# typed in the editor")
    browser_page.shot("submit-editor")
    page.click("form.stack button[type=submit]")
    page.wait_for_url(re.compile(r".*/submissions/\d+$"))
    assert "# typed in the editor" in page.locator("pre.code").inner_text()
    browser_page.check()


def test_the_home_page_at_phone_width_filters_its_problems(site: Site) -> None:
    """Issue 31: one card per problem at phone width; the filter hides the others and opens the folded section of
    the problems nobody is ranked on where one matches."""
    phone = Watched(site, width=390)
    try:
        page = phone.open("/")
        assert page.locator('a[href="/leaderboards/vectoradd"]').is_visible()
        assert not page.locator('a[href="/leaderboards/vectorsum"]').is_visible()  # folded: nobody ranked
        page.fill("#filter", "sum")
        assert page.locator("#filter-count").inner_text() == "1 of 2 problems"
        assert page.locator('a[href="/leaderboards/vectorsum"]').is_visible()
        assert not page.locator('a[href="/leaderboards/vectoradd"]').is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        phone.shot("home-phone-filtered")
        page.fill("#filter", "")
        assert page.locator('a[href="/leaderboards/vectoradd"]').is_visible()
        phone.check()
    finally:
        phone.close()


def test_the_standings_page_and_the_join_form(site: Site, browser_page: Watched) -> None:
    """The leaderboard page links its standings (issue 29): the live table matches the API's, the final section says
    they come after the deadline; the join form refuses an unknown code in place. Neither scrolls sideways at 360 px."""
    page = browser_page.open("/leaderboards/vectoradd")
    page.click('a[href="/leaderboards/vectoradd/standings"]')
    page.wait_for_url("**/leaderboards/vectoradd/standings")
    api = httpx.get(f"{site.url}/api/v1/leaderboards/vectoradd/standings", params={"device": "cpu"}).json()
    assert [(r[0], r[1]) for r in rows_of(page)] == [(str(r["rank"]), r["user_name"]) for r in api["rows"]]
    assert "Not frozen yet" in page.locator("section[aria-labelledby=final-title]").inner_text()
    browser_page.shot("standings")
    browser_page.sign_in(site.ann)
    page = browser_page.open("/join")
    page.fill("#code", "kci_not-a-code")
    browser_page.expected.add(site.url + "/join")  # answered 422 with the form and its error
    page.click("form.stack button[type=submit]")
    page.locator("#join-error").wait_for()
    assert "unknown" in page.locator("#join-error").inner_text()
    assert page.locator("#code").input_value() == ""  # the code is never written back
    browser_page.shot("join")
    for path in ("/leaderboards/vectoradd/standings", "/join"):
        page.set_viewport_size({"width": 360, "height": 900})
        browser_page.open(path)
        assert page.evaluate("document.documentElement.scrollWidth") <= 360, path
    browser_page.shot("standings-narrow")
    browser_page.check()
