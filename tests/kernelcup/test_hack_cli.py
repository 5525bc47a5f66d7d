"""`kernelcup problems hack`: the refusals a person sees before anything runs (the runs themselves:
tests/leaderboards/test_hacks.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kernelcup.cli import build_app

FIXTURE = Path(__file__).resolve().parents[1] / "leaderboards" / "hack_fixture"


def hack(*args: str) -> Any:
    return CliRunner().invoke(build_app(), ["problems", "hack", str(FIXTURE), str(FIXTURE / "honest.py"), *args])


def test_a_case_outside_the_space_names_each_field_and_exits_1() -> None:
    result = hack("--case", '{"rows": 3000, "cols": true, "extra": 1}')
    assert result.exit_code == 1
    output = result.output
    assert "not a case of hack_fixture's hack space" in output
    assert "rows: 3000 is outside 1 .. 256" in output and "cols: True is a boolean" in output
    assert "extra: is not a parameter" in output and "seed: is missing" in output


def test_a_case_that_is_not_json_is_a_usage_error() -> None:
    result = hack("--case", "{rows: 3}")
    assert result.exit_code == 2
    assert "not JSON" in result.output
