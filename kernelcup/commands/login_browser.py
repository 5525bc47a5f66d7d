"""The browser sign-in of ``kernelcup login --server URL`` (the server's side: ``web/routes/login.py``).

The CLI makes a secret (the PKCE verifier) and a one-time ``state``, listens on ``127.0.0.1:<random port>`` and opens
``<server>/cli/sign-in`` in the browser with the verifier's SHA-256, the state and the port. The person signs in
there (Discord, GitHub or a pasted token) and allows it; the browser comes back to the listener with a one-time
code and the state, which must match. The code and the verifier buy a token (``POST /api/v1/cli/sign-in/token``),
which is stored where ``--token`` logins are (``kernelcup.remote.store_login``). With ``--no-browser`` nothing
listens: the page shows the code and the person pastes it here (a browser on another machine works too).
"""

from __future__ import annotations

import html
import secrets
import socket
import threading
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

from kernelcup.client import ApiError, Client
from leaderboards.accounts import pkce_challenge
from web.schemas import NewTokenOut

PAGE_PATH = "/cli/sign-in"
TOKEN_PATH = "/cli/sign-in/token"


class BrowserLoginFailed(Exception):
    """The sign-in did not come back: the message says what happened and what to do."""


@dataclass
class _Answer:
    code: str | None = None
    error: str | None = None


def _page(title: str, text: str) -> bytes:
    return (
        "<!doctype html><html lang=en><meta charset=utf-8><link rel=icon href='data:,'>"
        f"<title>{html.escape(title)}</title>"
        f"<body style='font-family:sans-serif;max-width:40em;margin:3em auto'><h1>{html.escape(title)}</h1>"
        f"<p>{html.escape(text)}</p></body></html>"
    ).encode()


class LoopbackListener:
    """The one request the browser brings back, on 127.0.0.1 (never another interface) at a random free port. A
    request with another state is answered 400 and ignored (it is not this login's); the first with this state ends
    the wait."""

    def __init__(self, state: str) -> None:
        self.state = state
        self.answer = _Answer()
        self.done = threading.Event()
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # nothing of the request on the terminal
                pass

            def do_GET(self) -> None:
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path != "/callback":
                    self._send(404, _page("Not found", "This is kernelcup login's sign-in listener."))
                elif listener.done.is_set() or not secrets.compare_digest(query.get("state", ""), listener.state):
                    self._send(400, _page("Not this login", "This sign-in is not the one this terminal waits for."))
                elif query.get("error"):
                    listener.answer = _Answer(error=query["error"])
                    self._send(200, _page("Cancelled", "The CLI was not signed in. You can close this tab."))
                    listener.done.set()
                elif query.get("code"):
                    listener.answer = _Answer(code=query["code"])
                    self._send(200, _page("Signed in", "Return to your terminal; you can close this tab."))
                    listener.done.set()
                else:
                    self._send(400, _page("No code", "The server sent no code; run kernelcup login again."))

            def _send(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, name="kernelcup-login", daemon=True)

    def __enter__(self) -> LoopbackListener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def wait(self, timeout_s: float) -> str:
        if not self.done.wait(timeout_s):
            raise BrowserLoginFailed(
                f"No sign-in came back from the browser within {timeout_s:.0f} s. Run `kernelcup login --server URL` "
                "again (--timeout gives more time), or use --no-browser to paste a code instead."
            )
        if self.answer.error:
            raise BrowserLoginFailed("The sign-in was cancelled in the browser; nothing was stored.")
        assert self.answer.code is not None
        return self.answer.code


def _open_browser(url: str) -> bool:
    """Whether a browser was started (``webbrowser`` says False, or fails, where none can be: SSH, a container)."""
    try:
        return bool(webbrowser.open(url, new=1))
    except webbrowser.Error:
        return False


def client_name() -> str:
    return f"kernelcup CLI on {socket.gethostname()}"[:60]


def browser_sign_in(
    server: str,
    *,
    open_browser: bool,
    timeout_s: float,
    echo: Callable[[str], None],
    ask_code: Callable[[], str],
    opener: Callable[[str], bool] | None = None,
) -> NewTokenOut:
    """A new token from a browser sign-in on ``server`` (see the module's docs). ``open_browser`` False: the
    ``--no-browser`` way, the code pasted through ``ask_code``. ``BrowserLoginFailed`` or ``ApiError`` otherwise."""
    verifier = secrets.token_urlsafe(48)
    state = secrets.token_urlsafe(24)
    query = {"challenge": pkce_challenge(verifier), "state": state, "client": client_name()}
    if not open_browser:
        echo(f"Open this address in a browser (on any machine), sign in and allow the CLI:\n\n    {server}{PAGE_PATH}"
             f"?{urlencode(query)}\n")  # fmt: skip
        code = ask_code().strip()
        if not code:
            raise BrowserLoginFailed("No code was given; nothing was stored.")
    else:
        with LoopbackListener(state) as listener:
            url = f"{server}{PAGE_PATH}?{urlencode({**query, 'port': listener.port})}"
            if (opener or _open_browser)(url):
                echo(f"Opened your browser to sign in. If it did not come up, open:\n\n    {url}\n")
            else:
                echo(
                    f"Could not open a browser here. Open this address in a browser on this machine:\n\n    {url}\n\n"
                    "(On another machine? Stop this and run `kernelcup login --server URL --no-browser`.)"
                )
            echo(f"Waiting up to {timeout_s:.0f} s for the sign-in (Ctrl-C stops)...")
            code = listener.wait(timeout_s)
    with Client(server) as anonymous:  # the code and the verifier are the credentials here, no token yet
        answer = anonymous._request(
            "POST", TOKEN_PATH, json={"code": code, "verifier": verifier, "client": client_name()}
        )
    try:
        return NewTokenOut.model_validate(answer.json())
    except ValueError:
        raise ApiError(answer.status_code, "http_error", f"{server} answered the sign-in oddly.") from None
