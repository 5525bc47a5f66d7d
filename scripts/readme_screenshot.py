"""The README's screenshot: a leaderboard page of a real ``kernelcup serve``, taken in Chromium through Playwright.

The entries are made up (a fake runner reports each file's ``# median N``); the page, its server and its database
are the real ones. The problem's statement and "Get started" are taken out of the page before the picture, which
shows its title, the ranking and the chart. Run from the repository's root:

    .venv/bin/python scripts/readme_screenshot.py [docs/images/leaderboard.png]
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

from leaderboards.db import open_database
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from leaderboards.worker import Worker, WorkerSettings
from runners.contract import RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("KERNELCUP_TEST_CHROMIUM", "/usr/bin/chromium")
ENTRIES = [("ann", "triton", 6_150), ("bob", "cuda", 7_020), ("chen", "pytorch", 9_480), ("dara", "triton", 12_300)]


def respond(request: RunRequest) -> RunResult:
    found = re.search(r"# median (\d+)", request.submission.content.decode())
    return accepted_result(request, float(found.group(1)) if found else 20_000.0)


def seed(data: Path) -> None:
    settings = CoreSettings(_env_file=None, data_dir=data, duplicate_window_s=0, rate_limit_per_hour=None,
                            ranked_rate_limit_per_hour=None)  # fmt: skip
    service = LeaderboardService(open_database(settings), settings)
    problem = load_problem(REPO / "problems" / "vectoradd")
    service.create_leaderboard(problem, deadline=datetime.now(UTC) + timedelta(days=12), devices=["H100", "cpu"])
    for user, lang, ns in ENTRIES:
        for device, scale in (("H100", 1.0), ("cpu", 40.0)):
            code = f"def custom_kernel(data):\n    return data[0] + data[1]\n# {lang}\n# median {int(ns * scale)}\n"
            service.submit(UserRef(user), f"{user}.py", code.encode(), "vectoradd", [device], "ranked")
    fake = FakeLauncher(respond)
    asyncio.run(Worker(service, lambda _d: fake, WorkerSettings(_env_file=None, poll_s=0.01)).run(once=True))
    service.db.dispose()


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        seed(data)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "KERNELCUP_"))}
        env.update(KERNELCUP_DATA_DIR=str(data), KERNELCUP_CONFIG_DIR=str(Path(tmp) / "config"))
        server = subprocess.Popen(
            [sys.executable, "-m", "kernelcup.cli", "serve", "--port", str(port), "--no-worker"],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(300):
                try:
                    if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM)
                page = browser.new_page(viewport={"width": 1100, "height": 720})
                page.goto(f"{url}/leaderboards/vectoradd")
                # the problem's statement and "Get started" are left out: the picture is the ranking and its chart
                page.evaluate("""() => {
                    document.querySelector('section.description').remove();
                    document.querySelector('section:has(> h2)').remove();
                }""")
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=True)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs" / "images" / "leaderboard.png")
