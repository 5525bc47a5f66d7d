"""`kernelcup login|logout`: keep a server and a token for the CLI's remote mode (see ``kernelcup.remote``)."""

from __future__ import annotations

import os
import sys

import typer

from kernelcup.commands.common import user_errors
from kernelcup.remote import Login, config_path, forget_login, normalise, store_login, stored_login


def register(app: typer.Typer) -> None:
    @app.command("login")
    def login_cmd(
        server: str = typer.Option(..., "--server", help="The kernelcup server, e.g. https://kernelcup.example.org"),
        token: str | None = typer.Option(
            None, "--token", help="The API token (default: KERNELCUP_TOKEN, else asked for, hidden)."
        ),
    ) -> None:
        """Check a token against a server and keep both for later commands (in your config dir, mode 0600)."""
        from kernelcup.client import Client
        from leaderboards.accounts import expiry_text

        token = token or os.environ.get("KERNELCUP_TOKEN") or _ask_token()
        login = Login(normalise(server), token.strip())
        with user_errors(), Client(login.server, login.token) as client:
            me = client.me()
        path = store_login(login)
        typer.echo(
            f"logged in to {login.server} as {me.user_name} ({me.identity}; scopes {', '.join(me.scopes)}; "
            f"token expires {expiry_text(me.token_expires_at)}). Saved in {path}."
        )

    @app.command("logout")
    def logout_cmd(
        revoke: bool = typer.Option(False, "--revoke", help="Also revoke the token on the server."),
    ) -> None:
        """Forget the stored server and token (commands use the local database again)."""
        login = stored_login()
        if login is None:
            typer.echo(f"not logged in (nothing in {config_path()})")
            return
        if revoke and login.token:
            from kernelcup.client import Client

            with user_errors(), Client(login.server, login.token) as client:
                client.revoke_token(client.me().token_id)
        forget_login()
        typer.echo(f"logged out of {login.server}{' (token revoked)' if revoke else ''}")


def _ask_token() -> str:
    """The token from the terminal, hidden; from a pipe (``echo $TOKEN | kernelcup login``), its first line, without
    the hidden prompt's "cannot control echo" warning."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().strip()
    return str(typer.prompt("API token", hide_input=True))
