"""The CLI's remote mode: which server (if any) a command talks to, and the login kept for it.

``kernelcup login --server URL`` stores the server and a token in the user's config directory (``client.json``,
mode 0600; ``KERNELCUP_CONFIG_DIR`` moves it). A command goes through the API when ``--server`` or
``KERNELCUP_SERVER`` names a server, or a login is stored; otherwise it uses the local database. The stored
token is only ever sent to the server it was stored for; ``KERNELCUP_TOKEN`` overrides it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from kernelcup.client import Client

CONFIG_FILE = "client.json"


@dataclass(frozen=True)
class Login:
    server: str
    token: str | None


def config_dir() -> Path:
    configured = os.environ.get("KERNELCUP_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_config_path

    return user_config_path("kernelcup", appauthor=False)


def config_path() -> Path:
    return config_dir() / CONFIG_FILE


def stored_login() -> Login | None:
    try:
        data = json.loads(config_path().read_text(encoding="utf-8"))
        return Login(server=str(data["server"]), token=data.get("token") or None)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store_login(login: Login) -> Path:
    """Write the login readable by this user only (the directory 0700, the file 0600, never world-readable)."""
    directory = config_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / CONFIG_FILE
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"server": login.server, "token": login.token}, f)
    os.chmod(tmp, 0o600)
    tmp.replace(path)
    return path


def forget_login() -> bool:
    try:
        config_path().unlink()
        return True
    except FileNotFoundError:
        return False


def normalise(server: str) -> str:
    """The server's URL: without a scheme, ``https://``, but ``http://`` for this machine (``localhost``,
    ``127.0.0.1``, ``[::1]``: a local ``kernelcup serve`` speaks plain HTTP, and nothing leaves the machine)."""
    server = server.strip().rstrip("/")
    if not server.startswith(("http://", "https://")):
        server = f"{'http' if is_loopback(server) else 'https'}://{server}"
    return server


def is_loopback(server: str) -> bool:
    """Whether ``server`` (``host[:port]``, no scheme) names this machine."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(f"//{server}").hostname or ""
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, or a malformed port
        return False


LOCAL = "local"
"""``--server local`` (or ``KERNELCUP_SERVER=local``): this machine's database, whatever login is stored."""
LOCAL_DATABASE_ENV = ("DATABASE_URL", "KERNELCUP_DATABASE_URL", "KERNELCUP_DATA_DIR")


def resolve(server_option: str | None) -> Login | None:
    """The server and token a command uses, or None for the local database."""
    server = server_option or os.environ.get("KERNELCUP_SERVER") or None
    if server is not None and server.strip().lower() == LOCAL:
        return None
    stored = stored_login()
    if server is None and stored is None:
        return None
    if server is None and stored is not None:
        named = [name for name in LOCAL_DATABASE_ENV if os.environ.get(name)]
        if named:  # a newcomer's DATABASE_URL silently ignored for a login stored weeks ago (2026-11-25)
            typer.echo(f"note: answering from {stored.server}, the server `kernelcup login` stored; {named[0]} "
                       "applies to the local database only: add --server local (or `kernelcup logout`) to use it",
                       err=True)  # fmt: skip
    server = normalise(server) if server else stored.server  # type: ignore[union-attr]
    token = os.environ.get("KERNELCUP_TOKEN") or None
    if token is None and stored is not None and stored.server == server:
        token = stored.token
    return Login(server=server, token=token)


def client_for(login: Login) -> Client:
    from kernelcup.client import Client  # httpx and the API's models: only when a command talks to a server

    return Client(login.server, login.token)


SERVER_OPTION_HELP = (
    "Use this kernelcup server's API (default: KERNELCUP_SERVER, or the one `kernelcup login` stored); `local`: this "
    "machine's database."
)


def server_option() -> str | None:
    return typer.Option(None, "--server", help=SERVER_OPTION_HELP)
