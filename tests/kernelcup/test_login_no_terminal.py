"""`kernelcup login --server URL` with no terminal and nothing on stdin (a newcomer's walk, 2026-11-29).

``kernelcup login --server URL </dev/null`` read an empty token from stdin, sent it, and printed the server's "This
needs an API token ... (then log in with `kernelcup login --server URL`)": the command that had just failed. It now
stops before asking the server and says how to log in without a terminal: --token (and how to get one), or the
browser sign-in's --browser / --no-browser.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelcup.cli import build_app


@pytest.fixture(autouse=True)
def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("KERNELCUP_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("stdin", ["", "\n", "  \n"])
def test_an_empty_stdin_says_to_pass_a_token_and_asks_no_server(stdin: str) -> None:
    # Nothing listens on port 9 (discard): a request would fail with a connection error, not this message.
    result = CliRunner().invoke(build_app(), ["login", "--server", "http://127.0.0.1:9"], input=stdin)
    assert result.exit_code == 1
    text = " ".join(result.stderr.split())
    assert "no API token: stdin is not a terminal and gave none" in text
    assert "Pass --token TOKEN" in text and "kernelcup tokens create NAME" in text and "/token in Discord" in text
    assert "--no-browser" in text
    assert "then log in with" not in text and "connect" not in text.lower()
