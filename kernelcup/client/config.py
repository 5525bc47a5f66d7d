"""The login the remote CLIs keep: which server, and the API token for it (standard library only).

The same file as ``kernelcup login`` writes (``kernelcup.remote``): ``client.json`` in the user's config directory
(``~/.config/kernelcup`` on Linux, ``~/Library/Application Support/kernelcup`` on macOS, ``%LOCALAPPDATA%\\kernelcup``
on Windows: where ``platformdirs`` puts it for the full CLI; ``KERNELCUP_CONFIG_DIR`` moves it), the folder 0700 and
the file 0600. So ``kernelcup-client login`` and ``kernelcup login`` share one login, whichever is installed.

A command's server is ``--server``, else ``KERNELCUP_SERVER``, else the stored one; its token ``KERNELCUP_TOKEN``,
else the stored token, which is only ever sent to the server it was stored for.
``tests/kernelcup/test_client_dist.py`` checks the folder and the file against ``kernelcup.remote``'s.
"""

from __future__ import annotations

import ipaddress
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

CONFIG_FILE = "client.json"


@dataclass(frozen=True)
class Login:
    server: str
    token: str | None


def config_dir() -> Path:
    """The folder of ``client.json``: ``KERNELCUP_CONFIG_DIR``, else the user's config folder for ``kernelcup``."""
    configured = os.environ.get("KERNELCUP_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA", "").strip() or str(Path.home() / "AppData" / "Local")
        return Path(base) / "kernelcup"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "kernelcup"
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    return Path(base).expanduser() / "kernelcup"


def config_path() -> Path:
    return config_dir() / CONFIG_FILE


def stored_login() -> Login | None:
    """The stored login, or None (none stored, or a file that is not one)."""
    try:
        data = json.loads(config_path().read_text(encoding="utf-8"))
        return Login(server=str(data["server"]), token=data.get("token") or None)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store_login(login: Login) -> Path:
    """Write the login readable by this user only (the folder 0700, the file 0600, never world-readable)."""
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


def is_loopback(server: str) -> bool:
    """Whether ``server`` (``host[:port]``, no scheme) names this machine."""
    try:
        host = urlsplit(f"//{server}").hostname or ""
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name, or a malformed port
        return False


def normalise(server: str) -> str:
    """The server's URL: without a scheme, ``https://``, but ``http://`` for this machine (a local ``kernelcup
    serve`` speaks plain HTTP, and nothing leaves the machine)."""
    server = server.strip().rstrip("/")
    if not server.startswith(("http://", "https://")):
        server = f"{'http' if is_loopback(server) else 'https'}://{server}"
    return server


def resolve(server_option: str | None) -> Login | None:
    """The server and token a command uses; None when no server is named or stored."""
    server = server_option or os.environ.get("KERNELCUP_SERVER") or None
    stored = stored_login()
    if server is None:
        if stored is None:
            return None
        server = stored.server
    else:
        server = normalise(server)
    token = os.environ.get("KERNELCUP_TOKEN") or None
    if token is None and stored is not None and stored.server == server:
        token = stored.token
    return Login(server=server, token=token)
