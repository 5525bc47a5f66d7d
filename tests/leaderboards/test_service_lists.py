"""Lists of leaderboards read only the columns they show: the task snapshot (the problem's files, up to megabytes)
is never loaded for a list, which the bot makes on every autocomplete keystroke."""

from __future__ import annotations

from pathlib import Path

from helpers import future, make_problem
from sqlalchemy import event

from leaderboards.service import LeaderboardService


def test_listing_leaderboards_never_loads_a_task_snapshot(service: LeaderboardService, tmp_path: Path) -> None:
    for name in ("add", "scale"):
        service.create_leaderboard(make_problem(tmp_path, name), deadline=future(), devices=["cpu"])
    statements: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        statements.append(statement)

    event.listen(service.db.engine, "before_cursor_execute", record)
    try:
        boards = service.list_leaderboards(include_hidden=True)
        one = service.leaderboard("add")
    finally:
        event.remove(service.db.engine, "before_cursor_execute", record)
    assert [b.name for b in boards] == ["add", "scale"]
    assert {b.problem for b in boards} == {"add", "scale"} and one.problem == "add"
    assert statements and not [s for s in statements if "leaderboards.task" in s]
