"""Service logs: JSON lines off a terminal (one event per line, nothing wrapped), Rich on one, LOG_LEVEL honoured."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.logs import setup_logging
from kernelcup.settings import SettingsError


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Iterator[None]:  # type: ignore[no-untyped-def]
    for var in ("LOG_LEVEL", "KERNELCUP_LOG_LEVEL", "KERNELCUP_LOG_FORMAT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


def test_json_lines_when_not_a_terminal_one_event_per_line() -> None:
    out = io.StringIO()
    setup_logging(stream=out)
    log = logging.getLogger("kernelcup.test")
    log.info("job %s: %s", 7, "line one\nline two " + "word" * 60)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        log.exception("failed")
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "info" and first["logger"] == "kernelcup.test"
    assert first["message"] == "job 7: line one\nline two " + "word" * 60  # whole, not wrapped
    assert second["level"] == "error" and "RuntimeError: boom" in second["exception"]


def test_rich_on_a_terminal_and_json_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    term = Terminal()
    setup_logging(stream=term)
    logging.getLogger("x").info("hello there")
    assert "hello there" in term.getvalue() and not term.getvalue().lstrip().startswith("{")
    monkeypatch.setenv("KERNELCUP_LOG_FORMAT", "json")
    term = Terminal()
    setup_logging(stream=term)
    logging.getLogger("x").info("hello there")
    assert json.loads(term.getvalue())["message"] == "hello there"


def test_log_level_is_honoured_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOG_LEVEL", "warning")
    out = io.StringIO()
    setup_logging(stream=out)
    logging.getLogger("x").info("quiet")
    logging.getLogger("x").warning("loud")
    assert [json.loads(line)["message"] for line in out.getvalue().splitlines()] == ["loud"]
    monkeypatch.setenv("LOG_LEVEL", "chatty")
    with pytest.raises(SettingsError, match="setting LOG_LEVEL is invalid: 'chatty' is not a level"):
        setup_logging(stream=io.StringIO())


def test_a_bad_log_format_stops_the_worker_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCUP_LOG_FORMAT", "xml")
    result = CliRunner().invoke(build_app(), ["worker", "--once"])
    assert result.exit_code == 1 and "KERNELCUP_LOG_FORMAT" in result.output and "Traceback" not in result.output


def test_the_default_stream_is_stderr_when_a_record_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    setup_logging()
    later = io.StringIO()
    monkeypatch.setattr(sys, "stderr", later)
    logging.getLogger("x").warning("after the swap")
    assert json.loads(later.getvalue())["message"] == "after the swap"
