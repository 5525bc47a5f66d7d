"""What anonymous callers could make the server do (red team of the service, 2026-11-29): read a large upload
before the token was checked (``POST /api/v1/batches``), fingerprint a large file as often as they liked
(``POST /api/v1/archive/similar``), and name themselves after another account in the archive (``PUT /me/archive``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi.testclient import TestClient
from web_world import GOOD, World, error_of

from leaderboards.archive import SIMILAR_QUERY_MAX_BYTES
from leaderboards.errors import FileTooLarge, RateLimited
from web import ratelimit
from web.ratelimit import RequestRate
from web.routes.archive import SIMILAR_PER_MINUTE

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


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer kc_not-a-token"}], ids=["none", "unknown"])
def test_a_submission_without_a_valid_token_is_refused_before_its_body_is_read(
    world: World, headers: dict[str, str]
) -> None:
    """The same class as the batch's: ``POST /submissions`` reads up to two files before its dependencies run."""
    status, taken = post_streamed(world, "/api/v1/submissions", headers, chunks=1)
    assert (status, taken) == (401, 0)
    status, taken = post_streamed(world, "/api/v1/submissions", world.auth(world.ann), chunks=1)
    assert taken > MIB and status == 422  # a valid token: read whole, and refused for the fields left out


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


def similar(world: World, content: bytes, headers: dict[str, str] | None = None, address: str = "testclient"):  # type: ignore[no-untyped-def]
    client = world.client
    if address != "testclient":
        client = TestClient(world.client.app, raise_server_exceptions=False, client=(address, 50000))
    return client.post(
        "/api/v1/archive/similar", headers=headers or {}, data={"problem": "add"}, files={"file": ("q.py", content)}
    )


def test_a_similarity_query_takes_files_of_up_to_64_kib(world: World) -> None:
    """Red team, 2026-11-29: a 1 MB file took 1.6 CPU-s to fingerprint, for anyone, without a token."""
    assert similar(world, GOOD + b"#" * (SIMILAR_QUERY_MAX_BYTES - len(GOOD))).status_code == 200
    answer = similar(world, GOOD + b"#" * (100 * 1024 - len(GOOD)))
    assert answer.status_code == 413, answer.text
    error = error_of(answer)
    assert error["code"] == "file_too_large" and error["field"] == "file"
    assert error["message"] == "q.py is 100 KiB; a similarity query takes files of up to 64 KiB."
    assert similar(world, GOOD + b"#" * SIMILAR_QUERY_MAX_BYTES).status_code == 413
    # the service's own check, whatever surface calls it
    with pytest.raises(FileTooLarge, match="a similarity query takes files of up to 65,536 bytes"):
        world.service.similar_kernels("add", "x" * (SIMILAR_QUERY_MAX_BYTES + 1), "q.py")


def test_similarity_queries_are_limited_per_address_without_a_token_and_per_account_with_one(world: World) -> None:
    for _ in range(SIMILAR_PER_MINUTE):
        assert similar(world, GOOD, address="198.51.100.1").status_code == 200
    answer = similar(world, GOOD, address="198.51.100.1")
    assert answer.status_code == 429 and error_of(answer)["code"] == "rate_limited", answer.text
    assert 1 <= int(answer.headers["Retry-After"]) <= 60
    assert f"at most {SIMILAR_PER_MINUTE} requests" in error_of(answer)["message"]
    assert similar(world, GOOD, address="198.51.100.2").status_code == 200  # another address: its own count
    # a signed-in program is counted by its account, wherever it asks from
    for i in range(SIMILAR_PER_MINUTE):
        assert similar(world, GOOD, world.auth(world.ann), address=f"198.51.100.{10 + i}").status_code == 200
    assert similar(world, GOOD, world.auth(world.ann), address="198.51.100.99").status_code == 429
    assert similar(world, GOOD, world.auth(world.bob), address="198.51.100.1").status_code == 200
    answer = similar(world, GOOD, {"Authorization": "Bearer kc_not-a-token"})
    assert answer.status_code == 401, answer.text  # a wrong token is said so, not counted as anonymous


def test_a_request_rate_forgets_what_left_its_window_and_bounds_its_memory() -> None:
    now = [0.0]
    rate = RequestRate(2, 60, "this", clock=lambda: now[0])
    rate.take("a")
    now[0] = 30.0
    rate.take("a")
    with pytest.raises(RateLimited, match="try again in 30 s"):
        rate.take("a")
    now[0] = 60.5  # the first left the window
    rate.take("a")
    for i in range(ratelimit.MAX_CALLERS + 5):
        rate.take(str(i))
    assert len(rate._seen) == ratelimit.MAX_CALLERS


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("bob", "another account's name"),
        ("BOB", "another account's name"),
        ("  Root ", "another account's name"),
        ("ann\u202egnp.exe", "U+202E"),
        ("ann\x07", "U+0007"),
        ("a\u200db", "U+200D"),
        ("line\u2028break", "U+2028"),
    ],
)
def test_an_author_name_may_not_impersonate_or_hide_characters(world: World, name: str, why: str) -> None:
    """Red team, 2026-11-29: ann could publish as "bob", and a U+202E stored on SQLite reversed what followed it."""
    answer = world.client.put("/api/v1/me/archive", headers=world.auth(world.ann), json={"author_name": name})
    assert answer.status_code == 422, answer.text
    error = error_of(answer)
    assert error["field"] == "author_name" and why in error["message"], error
    assert world.client.get("/api/v1/me/archive", headers=world.auth(world.ann)).json()["author_name"] is None


def test_an_author_name_is_trimmed_and_may_be_ones_own_or_unique(world: World) -> None:
    def put(token: str, name: str):  # type: ignore[no-untyped-def]
        return world.client.put("/api/v1/me/archive", headers=world.auth(token), json={"author_name": name})

    assert put(world.ann, "  A. N. Author  ").json()["author_name"] == "A. N. Author"
    assert put(world.ann, "ANN").json()["author_name"] == "ANN"  # one's own name, in any case
    assert put(world.ann, "Zoë Ann").json()["author_name"] == "Zoë Ann"
    answer = put(world.bob, "zoë ann")  # taken by ann's chosen author name
    assert answer.status_code == 422 and error_of(answer)["field"] == "author_name", answer.text
    assert put(world.bob, "").json()["author_name"] == ""  # anonymous
    assert put(world.ann, "-").json()["author_name"] is None  # back to the leaderboard name
    answer = put(world.ann, "x" * 101)
    assert answer.status_code == 422, answer.text
