"""`kernelcup login|logout`: keep a server and a token for the CLI's remote mode (see ``kernelcup.remote``)."""

from __future__ import annotations

import os
import sys

import typer

from kernelcup.commands.common import user_errors
from kernelcup.remote import Login, config_path, forget_login, normalise, store_login, stored_login

BROWSER_TIMEOUT_S = 300.0
"""How long `kernelcup login` waits for the browser's sign-in by default."""


def no_token_text() -> str:
    """Said when `kernelcup login` has no terminal and stdin is empty (a newcomer's walk, 2026-11-29: ``kernelcup
    login --server URL </dev/null`` sent an empty token and printed the server's "This needs an API token ... (then
    log in with kernelcup login --server URL)", which sent them back to the command that had failed)."""
    from leaderboards.accounts import GET_A_TOKEN

    return (
        "no API token: stdin is not a terminal and gave none. Pass --token TOKEN (or set KERNELCUP_TOKEN, or pipe "
        f"it: echo $TOKEN | kernelcup login --server URL); get a token {GET_A_TOKEN} (ask its operator). Or "
        "sign in with the browser: --browser opens one on this machine, --no-browser prints the address to open "
        "anywhere, then asks for the code the page shows."
    )


def register(app: typer.Typer) -> None:
    @app.command("login")
    def login_cmd(
        server: str = typer.Option(..., "--server", help="The kernelcup server, e.g. https://kernelcup.example.org"),
        token: str | None = typer.Option(
            None, "--token", help="An API token to use instead of signing in with the browser (or KERNELCUP_TOKEN)."
        ),
        browser: bool | None = typer.Option(
            None,
            "--browser/--no-browser",
            help="Sign in with the browser: --browser opens it on this machine and the page hands the CLI a token; "
            "--no-browser prints the address to open anywhere (SSH, a container) and asks for the code the page then "
            "shows. Without either: --browser in a terminal, a token piped on stdin otherwise.",
        ),
        ask_token: bool = typer.Option(False, "--ask-token", help="Ask for an API token (hidden) instead."),
        timeout: float = typer.Option(
            BROWSER_TIMEOUT_S, "--timeout", min=10, help="Seconds to wait for the browser's sign-in."
        ),
    ) -> None:
        """Log in to a kernelcup server for later commands: sign in with the browser (Discord, GitHub or a token,
        whatever the server offers), or give an API token. Both are kept in your config dir (mode 0600)."""
        from kernelcup.client import Client
        from leaderboards.accounts import expiry_text

        server = normalise(server)
        token = token or os.environ.get("KERNELCUP_TOKEN") or None  # (set but empty: none)
        if token is None and (ask_token or (browser is None and not sys.stdin.isatty())):
            token = _ask_token()  # also `echo $TOKEN | kernelcup login --server URL`
            if not token:  # no terminal and nothing on stdin (</dev/null, CI): say what to do, not the server's 401
                typer.secho(f"error: {no_token_text()}", fg=typer.colors.RED, err=True)
                raise typer.Exit(1)
        if token is None:
            token = _browser_token(server, open_browser=browser is not False, timeout_s=timeout)
        login = Login(server, token.strip())
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


def _browser_token(server: str, *, open_browser: bool, timeout_s: float) -> str:
    """A token from the browser sign-in (``login_browser``); a clear message and status 1 when it fails."""
    from kernelcup.commands.login_browser import BrowserLoginFailed, browser_sign_in

    with user_errors():
        try:
            new = browser_sign_in(
                server,
                open_browser=open_browser,
                timeout_s=timeout_s,
                echo=typer.echo,
                ask_code=lambda: str(typer.prompt("Code from the page")),
            )
        except BrowserLoginFailed as exc:
            typer.secho(f"error: {exc}", fg=typer.colors.RED, err=True)
            raise typer.Exit(1) from None
    return new.token


def _ask_token() -> str:
    """The token from the terminal, hidden; from a pipe (``echo $TOKEN | kernelcup login``), its first line, without
    the hidden prompt's "cannot control echo" warning."""
    if not sys.stdin.isatty():
        return sys.stdin.readline().strip()
    return str(typer.prompt("API token", hide_input=True))
