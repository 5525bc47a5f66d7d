"""`kernelcup hack submit|show|credits`: input hacks against a board (issue 35, ``leaderboards/board_hacks.py``),
through a server's API (``--server``, or the stored login) or on this machine's database, like other commands.

``kernelcup problems hack`` (``kernelcup/commands/hack.py``) tries a case on files here; this group sends one against
a board's top entries.
"""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Any

import typer

from kernelcup.commands.common import jsonable, open_service, print_json, user_errors
from kernelcup.commands.text import safe
from kernelcup.remote import client_for, resolve, server_option

MAX_CASE_BYTES = 64 * 1024
ACTION_WORDS = {
    "quarantined": "quarantined: out of the rankings until a moderator judges it",
    "flagged": "flagged for a moderator (it still ranks)",
    "withdrawn": "credit withdrawn: a moderator cleared it",
    "kept": "kept: a moderator had judged it already",
}
"""What a hack did to an entry (the API's per-entry ``action``, ``leaderboards.board_hacks.EntryAction``), in words.
Literal here so ``--help`` does not import the core; the CLI's test checks they match."""


def _case(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise typer.BadParameter(f"{path} is not a file", param_hint="CASE")
    if path.stat().st_size > MAX_CASE_BYTES:
        raise typer.BadParameter(f"{path} is over {MAX_CASE_BYTES // 1024} KiB; a case is a small JSON object")
    try:
        case = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise typer.BadParameter(f"{path} is not JSON ({exc})", param_hint="CASE") from None
    if not isinstance(case, dict):
        raise typer.BadParameter(f'{path} holds no JSON object (e.g. {{"rows": 3, "cols": 33, "seed": 5}})')
    return case


def _action(entry: dict[str, Any]) -> str:
    """``; <what the hack did to the entry>``, or '' where it did nothing (or an older server sends no action)."""
    action = str(entry.get("action") or "")
    return f"; {ACTION_WORDS.get(action, safe(action))}" if action else ""


def _line(hack: dict[str, Any]) -> str:
    """One hack as lines: its status, then each entry run (rank, user, submission, verdict, and what the hack did to
    it: quarantined, flagged, withdrawn or kept)."""
    head = f"hack #{hack['hack_id']} on {safe(hack['leaderboard'])} ({safe(hack['device'])}): {hack['status']}"
    if hack["status"] == "done":
        head += f", broke {hack['broken']} of {len(hack['entries'])} entries"
    if hack.get("note"):
        head += f" ({safe(hack['note'])})"
    rows = [
        f"  #{e['rank']} {safe(e['user_name'])} (submission {e['submission_id']}): {e['verdict']}"
        + (" (broken)" if e["broken"] else "")
        + _action(e)
        for e in hack["entries"]
    ]
    return "\n".join([head, *rows])


def _plain(view: Any) -> dict[str, Any]:
    """A core view (``HackView``, ``HackCredit``) as the API's JSON reads (its one-line ``text`` too)."""
    out: dict[str, Any] = jsonable(view)
    return out | {"text": view.text}


def register(app: typer.Typer) -> None:
    hack_app = typer.Typer(
        help="Input hacks against a board's top entries: submit, show, credits.", no_args_is_help=True
    )
    app.add_typer(hack_app, name="hack")

    @hack_app.command("submit")
    def submit_cmd(
        leaderboard: str = typer.Argument(..., help="The leaderboard (its problem declares a hack_space)."),
        case: Path = typer.Argument(..., help='A JSON file with the case: {"rows": 3, "cols": 33, "seed": 5}.'),
        device: list[str] = typer.Option(None, "--device", "-d", help="Only this device (repeatable; default all)."),
        user: str | None = typer.Option(None, "--user", help="Local database only: who hacks (default: you)."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """Send an input hack against a board: the case is checked at once against the problem's hack_space (a field
        out of range is refused, naming it), then a worker runs the reference on it and each device's top entries
        (correctness only). An entry that fails where the reference passes leaves the ranking and you are credited;
        a hack that breaks nobody costs one of your hack units of the day. `kernelcup hack show ID` reads it."""
        from leaderboards.results import UserRef

        body = _case(case)
        login = resolve(server)
        with user_errors():
            if login is not None:
                with client_for(login) as client:
                    answer = client.submit_hack(leaderboard, body, device or None)
                hacks = list(answer["hacks"])
            else:
                views = open_service().submit_hack(UserRef(user or getpass.getuser()), leaderboard, body, device)
                hacks = [_plain(v) for v in views]
        if json_out:
            print_json({"hacks": hacks})
            return
        for hack in hacks:
            typer.echo(f"hack #{hack['hack_id']} on {safe(hack['leaderboard'])} ({safe(hack['device'])}): queued")
        typer.echo("a worker runs it when no one's job waits; read it with `kernelcup hack show ID`")

    @hack_app.command("show")
    def show_cmd(
        hack_id: int = typer.Argument(..., min=1, help="The hack's id."),
        user: str | None = typer.Option(None, "--user", help="Local database only: whose hack (default: you)."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """One of your hacks: its status and, per entry it ran, the rank, user, submission, verdict and what the hack
        did to it (quarantined, flagged for a moderator, credit withdrawn, or kept); never the entry's code."""
        from leaderboards.results import UserRef

        login = resolve(server)
        with user_errors():
            if login is not None:
                with client_for(login) as client:
                    hack = dict(client.hack(hack_id))
            else:
                hack = _plain(open_service().hack(hack_id, UserRef(user or getpass.getuser())))
        if json_out:
            print_json(hack)
            return
        typer.echo(_line(hack))

    @hack_app.command("credits")
    def credits_cmd(
        leaderboard: str = typer.Argument(..., help="The leaderboard."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
        server: str | None = server_option(),
    ) -> None:
        """Who broke how many entries of the board with input hacks."""
        login = resolve(server)
        with user_errors():
            if login is not None:
                with client_for(login) as client:
                    answer = dict(client.hack_credits(leaderboard))
                line = str(answer["line"])
                credits = answer["credits"]
            else:
                from leaderboards.board_hacks import credits_line

                views = open_service().hack_credits(leaderboard)
                line, credits = credits_line(views), [_plain(v) for v in views]
        if json_out:
            print_json({"leaderboard": leaderboard, "credits": credits, "line": line})
            return
        typer.echo(safe(line) or f"no input hack broke an entry of {safe(leaderboard)} yet")
