"""`kernelcup tokens create|list|revoke`: API tokens, from the server's shell (local accounts, programs, and the
first admin). A token is printed once, when it is made; only its hash is kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from kernelcup.commands.common import format_time, open_service, print_json, user_errors
from kernelcup.commands.text import safe

if TYPE_CHECKING:
    from sqlalchemy.engine import URL


def register(app: typer.Typer) -> None:
    tokens_app = typer.Typer(help="API tokens (on the server's own database).", no_args_is_help=True)
    app.add_typer(tokens_app, name="tokens")

    @tokens_app.command("create")
    def create_cmd(
        account: str = typer.Argument(..., help="The account: a local name, or discord:ID for a Discord user."),
        admin: bool = typer.Option(False, "--admin", help="Also the admin scope (the /admin operations)."),
        expires: str = typer.Option(
            "", "--expires", help="Lifetime: 90d, 12h, 2w, or 'never' [default: KERNELCUP_TOKEN_EXPIRY_DAYS, 90 days]"
        ),
        program: bool = typer.Option(
            False, "--bot", help="Mark the account as a program: its own limits, and rankings can hide it."
        ),
        name: str = typer.Option("", "--name", help="What the token is for (shown in lists)."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """Create a token for an account (created if new) and print it: it is shown this once."""
        from leaderboards.accounts import expiry_text, token_lifetime
        from leaderboards.results import Scope, UserRef

        with user_errors():
            lifetime, never = token_lifetime(expires)
            service = open_service()
            new = service.create_token(
                UserRef.parse(account),
                name=name or "kernelcup tokens create",
                scopes=(Scope.SUBMIT, Scope.ADMIN) if admin else (Scope.SUBMIT,),
                expires_in=lifetime,
                never_expires=never,
                program=True if program else None,
                actor="shell:kernelcup tokens create",
            )
        where = f"written to the database {database_name(service.db.engine.url)}"
        if json_out:
            typer.echo(where, err=True)
            print_json(new)
            return
        info = new.info
        typer.echo(
            f"token #{info.token_id} for {info.identity}{' (a program)' if info.is_program else ''}, "
            f"scopes {', '.join(info.scopes)}, expires {expiry_text(info.expires_at)}. "
            f"{where}: the server that reads that database takes it. It is shown only now: keep it secret "
            "(`kernelcup login --server URL` takes it).",
            err=True,
        )
        typer.echo(new.token)

    @tokens_app.command("list")
    def list_cmd(
        account: str | None = typer.Option(None, "--user", "-u", help="Only this account's tokens."),
        revoked: bool = typer.Option(False, "--all", help="Include revoked tokens."),
        json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    ) -> None:
        """List tokens (their first characters only, never the tokens)."""
        from rich.console import Console
        from rich.table import Table

        from leaderboards.accounts import expiry_text
        from leaderboards.results import UserRef

        with user_errors():
            tokens = open_service().list_tokens(UserRef.parse(account) if account else None, include_revoked=revoked)
        if json_out:
            print_json(tokens)
            return
        table = Table(title="API tokens")
        for col in ("id", "account", "token", "name", "scopes", "expires", "last used", "state"):
            table.add_column(col, overflow="fold")  # wrap, never cut a value at 80 columns
        for t in tokens:
            table.add_row(
                str(t.token_id),
                safe(t.identity) + (" (program)" if t.is_program else ""),
                f"{safe(t.prefix)}…",
                safe(t.name),
                ", ".join(t.scopes),
                expiry_text(t.expires_at),
                format_time(t.last_used_at),
                "revoked" if t.revoked_at else "active",
            )
        if not tokens:
            table.caption = "none: `kernelcup tokens create NAME`"
        Console().print(table)

    @tokens_app.command("revoke")
    def revoke_cmd(token_id: int = typer.Argument(..., help="The token's id (`kernelcup tokens list`).")) -> None:
        """Revoke a token at once."""
        with user_errors():
            view = open_service().revoke_token(token_id, actor="shell:kernelcup tokens revoke")
        typer.echo(f"token #{view.token_id} of {view.identity} is revoked")


def database_name(url: URL) -> str:
    """The database a command wrote to, without credentials: ``postgresql+psycopg://db.example:5432/kernelcup``,
    ``sqlite:////home/ann/.local/share/kernelcup/kernelcup.sqlite3`` (no user, password or query parameters)."""
    bare = type(url).create(url.drivername, host=url.host, port=url.port, database=url.database)
    return bare.render_as_string(hide_password=True)
