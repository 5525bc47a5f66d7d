"""Bad input, bad tokens and refusals: each its own status and code in the one error shape, nothing stored."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from web_world import GOOD, World, error_of

from leaderboards.results import UserRef


def stored(world: World) -> int:
    return len(world.service.user_submissions(UserRef("ann")))


def test_tokens_missing_invalid_expired_revoked_or_without_scope(world: World) -> None:
    c = world.client
    r = c.get("/api/v1/me")
    assert r.status_code == 401 and error_of(r)["code"] == "invalid_token" and r.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer" in error_of(r)["message"]
    assert c.get("/api/v1/me", headers={"Authorization": "Basic YTpi"}).status_code == 401
    assert c.get("/api/v1/me", headers=world.auth("kc_guessed")).status_code == 401
    old = world.service.create_token(UserRef("ann"), expires_in=timedelta(seconds=1))
    world.service.clock = lambda: old.info.created_at + timedelta(seconds=5)
    r = c.get("/api/v1/me", headers=world.auth(old.token))
    assert r.status_code == 401 and "expired on" in error_of(r)["message"]
    world.service.revoke_token(world.service.authenticate(world.bob).token_id)
    r = c.get("/api/v1/me", headers=world.auth(world.bob))
    assert r.status_code == 401 and "revoked" in error_of(r)["message"]
    r = c.get("/api/v1/admin/stats", headers=world.auth(world.ann))
    assert r.status_code == 403 and error_of(r)["code"] == "missing_scope"
    assert c.get("/api/v1/admin/stats", headers=world.auth(world.admin)).status_code == 200
    me = c.get("/api/v1/me", headers=world.auth(world.ann)).json()
    assert me["user_name"] == "ann" and me["scopes"] == ["submit"] and me["identity"] == "local:ann"


@pytest.mark.parametrize(
    ("name", "content", "fields", "status", "code"),
    [
        ("k.py", b"", {}, 422, "empty_file"),
        ("k.py", b"\x89PNG\r\n\x1a\n\x00\x00", {}, 422, "binary_file"),
        ("k.py", b"def custom_kernel(data)\n    return data\n", {}, 422, "syntax_error"),
        ("k.cu", GOOD, {}, 422, "wrong_file_type"),
        ("k.py", GOOD, {"leaderboard": "nope"}, 404, "leaderboard_not_found"),
        ("k.py", GOOD, {"devices": "TPU"}, 422, "device_not_allowed"),
        ("k.py", GOOD, {"mode": "fastest"}, 422, "unknown_mode"),
        ("k.py", GOOD, {"leaderboard": None}, 422, "no_leaderboard"),
        ("k.py", b"#!kernelcup leaderbord add\n" + GOOD, {}, 422, "bad_directive"),
        ("k.py", b"#" * (1024 * 1024 + 1), {}, 413, "file_too_large"),
        (".py", GOOD, {}, 422, "bad_file_name"),
    ],
)
def test_each_bad_submission_has_its_code(
    world: World, name: str, content: bytes, fields: dict, status: int, code: str
) -> None:
    r = world.submit(world.ann, name=name, content=content, **fields)
    assert (r.status_code, error_of(r)["code"]) == (status, code), r.text
    assert stored(world) == 0


def test_closed_paused_banned_and_rate_limited(world: World) -> None:
    world.service.pause("add")
    r = world.submit(world.ann)
    assert r.status_code == 409 and error_of(r)["code"] == "leaderboard_paused"
    world.service.resume("add")
    world.service.ban_user(UserRef("ann"), reason="cheating")
    r = world.submit(world.ann)
    assert r.status_code == 403 and error_of(r) == {
        "code": "banned",
        "message": "You are banned from submitting. Reason: cheating",
        "field": None,
    }
    world.service.unban_user(UserRef("ann"))
    world.service.set_rate_limit("add", 1)
    assert world.submit(world.ann).status_code == 202
    r = world.submit(world.ann)
    assert r.status_code == 429 and error_of(r)["code"] == "rate_limited"
    assert 3500 <= int(r.headers["retry-after"]) <= 3600
    closes = world.service.clock() + timedelta(seconds=1)
    world.service.settings.late_submissions_per_hour = 0  # no practice after the deadline: its own test has it
    world.service.update_leaderboard("add", deadline=closes)
    world.service.clock = lambda: closes + timedelta(seconds=1)
    r = world.submit(world.bob)
    assert (
        r.status_code == 409 and error_of(r)["code"] == "leaderboard_closed" and "closed on" in error_of(r)["message"]
    )


def test_malformed_requests_are_refused_in_the_one_shape(world: World) -> None:
    c, auth = world.client, world.auth(world.ann)
    r = c.post("/api/v1/submissions", headers=auth, data={"leaderboard": "add"})
    assert r.status_code == 422 and error_of(r) == {
        "code": "invalid_field",
        "message": "file is required.",
        "field": "file",
    }
    r = c.post(
        "/api/v1/submissions",
        headers={**auth, "Content-Type": "multipart/form-data; boundary=xyz"},
        content=b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.py"\r\n\r\nunterminated',
    )
    assert r.status_code in (400, 422) and error_of(r)["code"] in ("bad_request", "invalid_field")
    admin = world.auth(world.admin)
    r = c.post("/api/v1/admin/sync", headers={**admin, "Content-Type": "application/json"}, content=b"{not json")
    assert r.status_code == 422 and error_of(r)["code"] == "invalid_field"
    r = c.get("/api/v1/me", headers={**auth, "X-Long": "x" * 20_000})  # the app copes; the server caps headers
    assert r.status_code == 200
    r = c.put("/api/v1/admin/leaderboards/add/rate-limit", headers=admin, json={"per_hour": 0})
    assert r.status_code == 422 and error_of(r)["field"] == "per_hour"


def test_a_huge_upload_is_refused_at_the_limit_without_reading_it(world: World) -> None:
    app = world.client.app
    limit = world.service.settings.max_submission_bytes

    def call(headers: list[tuple[bytes, bytes]]) -> tuple[int, int]:
        read = 0
        head = b'--b\r\nContent-Disposition: form-data; name="file"; filename="k.py"\r\n\r\n'
        sent: list[dict] = []

        async def receive() -> dict:
            nonlocal read
            chunk = head if read == 0 else b"#" * 65536
            read += len(chunk)
            return {"type": "http.request", "body": chunk, "more_body": read < 100 * 1024 * 1024}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": "/api/v1/submissions",
            "raw_path": b"/api/v1/submissions",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"authorization", f"Bearer {world.ann}".encode()), *headers],
            "client": ("127.0.0.1", 1),
            "server": ("testserver", 80),
        }
        asyncio.run(app(scope, receive, send))  # type: ignore[arg-type]
        return sent[0]["status"], read

    multipart = (b"content-type", b"multipart/form-data; boundary=b")
    status, read = call([multipart, (b"content-length", str(100 * 1024 * 1024).encode())])
    assert status == 413 and read == 0  # Content-Length says it all: not a byte is read
    status, read = call([multipart])  # chunked: read up to the limit, then refused
    assert status == 413 and read <= 2 * limit + 64 * 1024 + 65536  # room for a compare's two files


def test_a_path_in_the_file_name_is_dropped(world: World) -> None:
    r = world.submit(world.ann, name="../../../etc/passwd/ünï.py")
    assert r.status_code == 202 and r.json()["file_name"] == "ünï.py"


def test_a_bug_is_a_500_with_a_reference_and_no_traceback(
    world: World, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals at /srv/kernelcup")

    monkeypatch.setattr(world.service, "list_leaderboards", broken)
    r = world.client.get("/api/v1/leaderboards")
    err = error_of(r)
    assert r.status_code == 500 and err["code"] == "internal_error" and "not your fault" in err["message"]
    ref = err["message"].rsplit("reference ", 1)[1].rstrip(".")
    assert "secret internals" not in r.text and "Traceback" not in r.text
    assert any(ref in rec.getMessage() for rec in caplog.records)  # the log line the reference points at


def test_a_broken_problem_is_named_in_the_answer(world: World) -> None:
    bad = world.problems / "bad"
    bad.mkdir()
    (bad / "task.yml").write_text("description: x\ntests: []\nbenchmarks: [{n: 1}]\nlang: fortran\n")
    (bad / "reference.py").write_text("def generate_input(): pass\n")
    r = world.client.post(
        "/api/v1/admin/leaderboards",
        headers=world.auth(world.admin),
        json={"problem": "bad", "deadline": "2099-01-01T00:00:00Z", "devices": ["cpu"]},
    )
    err = error_of(r)
    assert r.status_code == 422 and err["code"] == "problem_format"
    assert "task.yml: lang:" in err["message"] and "task.yml: tests:" in err["message"]


def test_a_body_above_the_limit_elsewhere_is_refused(world: World) -> None:
    r = world.client.post("/api/v1/admin/sync", headers=world.auth(world.admin), json={"path": "x" * (2 * 1024 * 1024)})
    assert r.status_code == 413 and error_of(r)["code"] == "body_too_large"
