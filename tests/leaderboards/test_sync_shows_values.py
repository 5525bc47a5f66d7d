"""`kernelcup problems sync` says each value it changes, old and new (a newcomer's walk, 2026-11-29).

The problem-set file is the source of truth: a sync puts back a deadline that `kernelcup admin deadline` changed.
It did so printing only `vectoradd | updated | deadline`; now the table says `deadline 2030-06-01 12:00 ->
2031-01-01 00:00 UTC`, and the JSON report carries the same texts under `changes`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import write_problem, write_problem_set

DEADLINE = "2031-01-01T00:00:00"


@pytest.fixture
def cli(cli, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The package's `kernelcup` runner (tests/leaderboards/conftest.py), its table one line per row."""
    monkeypatch.setenv("COLUMNS", "200")
    return cli


def test_a_sync_that_puts_back_an_admins_deadline_and_devices_says_old_and_new(tmp_path: Path, cli) -> None:
    root = tmp_path / "problems"
    write_problem(root, "add")
    problem_set = write_problem_set(root, [{"directory": "add", "deadline": DEADLINE, "devices": ["cpu"]}], name="s")
    assert cli("problems", "sync", str(problem_set))[0] == 0
    code, _, err = cli("admin", "deadline", "add", "2030-06-01 12:00")
    assert code == 0, err
    write_problem_set(root, [{"directory": "add", "deadline": DEADLINE, "devices": ["cpu", "H100"]}], name="s")

    code, out, _ = cli("problems", "sync", str(problem_set))
    assert code == 0
    assert "deadline 2030-06-01 12:00 -> 2031-01-01 00:00 UTC; devices cpu -> cpu, H100" in out
    assert "applied: 0 created, 1 updated, 0 unchanged" in out
    code, out, _ = cli("leaderboard", "list", "--json")
    assert json.loads(out)[0]["deadline"] == "2031-01-01T00:00:00+00:00"  # the set's value is back

    cli("admin", "deadline", "add", "2030-06-01 12:00")
    code, out, _ = cli("problems", "sync", str(problem_set), "--json")
    report = json.loads(out)
    assert report["items"][0]["changed"] == ["deadline"]
    assert report["changes"] == {"add": ["deadline 2030-06-01 12:00 -> 2031-01-01 00:00 UTC"]}


def test_fields_without_short_values_keep_their_name(tmp_path: Path, cli) -> None:
    root = tmp_path / "problems"
    write_problem(root, "add")
    problem_set = write_problem_set(root, [{"directory": "add", "deadline": DEADLINE, "devices": ["cpu"]}], name="s")
    cli("problems", "sync", str(problem_set))
    write_problem(root, "add", description="Add two vectors, said again.")
    code, out, _ = cli("problems", "sync", str(problem_set), "--json")
    assert code == 0
    assert json.loads(out)["changes"]["add"] == ["task", "description"]
    code, out, _ = cli("problems", "sync", str(problem_set), "--json")
    assert json.loads(out)["changes"] == {}  # unchanged: nothing to say
