"""What anonymous callers could make the server do (red team of the service, 2026-11-29): read a large upload
before the token was checked (``POST /api/v1/batches``), fingerprint a large file as often as they liked
(``POST /api/v1/archive/similar``), and name themselves after another account in the archive (``PUT /me/archive``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from web_world import GOOD, World, error_of

MIB = 1024 * 1024


def post_streamed(world: World, path: str, headers: dict[str, str], chunks: int) -> tuple[int, int]:
    """POST a multipart form of one file of ``chunks`` MiB to ``path`` straight into the ASGI app, one MiB per
    ``receive``: the answer's status and how many bytes the app took. (The test client reads a whole body before
    the app sees any of it.)"""
    head = b'--kernelcup\r\nContent-Disposition: form-data; name="files"; filename="k.py"\r\n\r\n'
    body = [head, *(b"#" * MIB for _ in range(chunks)), b"\r\n--kernelcup--\r\n"]
    taken = 0
    sent: list[int] = []

    async def receive() -> dict[str, Any]:
        nonlocal taken
        if not body:
            return {"type": "http.disconnect"}
        chunk = body.pop(0)
        taken += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(body)}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent.append(message["status"])

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"multipart/form-data; boundary=kernelcup"),
            *((k.lower().encode(), v.encode()) for k, v in headers.items()),
        ],
        "client": ("203.0.113.9", 40000),
        "server": ("testserver", 80),
        "state": {},
    }
    asyncio.run(world.client.app(scope, receive, send))  # type: ignore[arg-type]
    return sent[0], taken


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer kc_not-a-token"}], ids=["none", "unknown"])
def test_a_batch_without_a_valid_token_is_refused_before_its_body_is_read(
    world: World, headers: dict[str, str]
) -> None:
    """FastAPI parses a multipart body before any dependency runs: a batch's token was checked only once up to
    64 MiB had been taken (and spooled to disk)."""
    status, taken = post_streamed(world, "/api/v1/batches", headers, chunks=4)
    assert (status, taken) == (401, 0)


def test_a_batch_with_a_valid_token_is_still_read_and_checked(world: World) -> None:
    status, taken = post_streamed(world, "/api/v1/batches", world.auth(world.ann), chunks=2)
    assert taken > 2 * MIB and status == 422  # read whole, and refused for the fields left out
    answer = world.client.post(
        "/api/v1/batches",
        headers=world.auth(world.ann),
        files=[("files", ("k.py", GOOD))],
        data={"leaderboard": "add", "device": "cpu"},
    )
    assert answer.status_code == 202, answer.text
    answer = world.client.post("/api/v1/batches", files=[("files", ("k.py", GOOD))], data={"leaderboard": "add"})
    assert answer.status_code == 401 and error_of(answer)["code"] in ("missing_token", "invalid_token"), answer.text
