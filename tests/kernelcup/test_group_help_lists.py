"""A command group whose one-line help lists its commands lists them all (a newcomer's walk, 2026-11-29:
`kernelcup --help` said "Your submissions: list, show, code, cancel." and left out `delete`)."""

from __future__ import annotations

import re

import pytest
from typer.main import get_command

from kernelcup.cli import TOP_LEVEL, build_app


@pytest.mark.parametrize("group", ["submissions", "batch", "hack", "admin"])
def test_the_groups_summary_names_each_of_its_commands(group: str) -> None:
    command = get_command(build_app()).commands[group]  # type: ignore[attr-defined]
    summary = (command.help or "").split("\n")[0]
    listed = re.search(r": ([a-z-]+(?:, [a-z-]+)+)\.", summary)
    assert listed, f"{group}'s help lists no commands: {summary!r}"
    assert set(listed.group(1).split(", ")) == set(command.commands), summary
    assert TOP_LEVEL[group].help == summary  # what `kernelcup --help` shows before loading the group
