"""The screening hook (issue 29): a command or an HTTP endpoint sees a submission's code before it is queued and
answers pass, flag or refuse; a hook that fails or times out never loses a submission (flagged), unless the operator
chose to fail closed (refused, saying the check is down, not the file)."""

from __future__ import annotations

import json
import shlex
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from helpers import future, write_problem
from sqlalchemy import func, select

from leaderboards.db import Database
from leaderboards.errors import InvalidSubmission
from leaderboards.models import AuditLog, Submission
from leaderboards.problems import load_problem
from leaderboards.results import UserRef
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings
from runners.contract import Mode

HOOK = """
import json, sys, time
request = json.load(sys.stdin)
code = request["code"]
if "SLEEP" in code:
    time.sleep(5)
if "CRASH" in code:
    sys.exit(3)
if "GARBAGE" in code:
    print("not json")
elif "torch.cuda.Event" in code:
    print(json.dumps({"verdict": "refuse", "reason": "patches the timer"}))
elif "cache" in code:
    print(json.dumps({"verdict": "flag", "reason": f"a cache in {request['file_name']} for {request['leaderboard']}"}))
else:
    print(json.dumps({"verdict": "pass"}))
"""
PLAIN = b"def custom_kernel(data):\n    return data\n"


def kernel(marker: str) -> bytes:
    return f"# {marker}\ndef custom_kernel(data):\n    return data\n".encode()


def make_service(database: Database, settings: CoreSettings, tmp_path: Path, **screen: Any) -> LeaderboardService:
    service = LeaderboardService(database, settings.model_copy(update=screen))
    service.create_leaderboard(load_problem(write_problem(tmp_path / "problems")), deadline=future(), devices=["cpu"])
    return service


@pytest.fixture
def hook(tmp_path: Path) -> str:
    script = tmp_path / "hook.py"
    script.write_text(HOOK)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def submit(service: LeaderboardService, code: bytes) -> int:
    return service.submit(UserRef("alice"), "k.py", code, "add", ["cpu"], Mode.RANKED).submission_id


def moderation(database: Database, sid: int) -> tuple[str | None, str | None, str | None]:
    with database.transaction() as s:
        sub = s.get(Submission, sid)
        assert sub is not None
        return sub.moderation, sub.moderated_by, sub.moderation_reason


def stored(database: Database) -> int:
    with database.transaction() as s:
        return int(s.scalar(select(func.count()).select_from(Submission)) or 0)


def test_a_command_hook_passes_flags_and_refuses(
    database: Database, settings: CoreSettings, tmp_path: Path, hook: str
) -> None:
    service = make_service(database, settings, tmp_path, screen_command=hook, screen_timeout_s=20)
    assert moderation(database, submit(service, PLAIN)) == (None, None, None)
    flagged = submit(service, kernel("cache"))
    assert moderation(database, flagged) == ("flagged", "screening", "a cache in k.py for add")
    assert service.submission_status(flagged).jobs  # flagged: queued all the same
    with pytest.raises(InvalidSubmission, match="refused by the server's screening check: patches the timer") as err:
        submit(service, kernel("torch.cuda.Event"))
    assert err.value.code == "refused_by_screening"
    assert stored(database) == 2
    with database.transaction() as s:
        audit = s.scalar(select(AuditLog).where(AuditLog.action == "moderate"))
        assert audit is not None and audit.actor == "screening" and audit.detail["to"] == "flagged"


@pytest.mark.parametrize("marker, why", [("CRASH", "exited with status 3"), ("GARBAGE", "not JSON")])
def test_a_failing_command_never_loses_the_submission(
    database: Database, settings: CoreSettings, tmp_path: Path, hook: str, marker: str, why: str
) -> None:
    service = make_service(database, settings, tmp_path, screen_command=hook, screen_timeout_s=20)
    state, by, reason = moderation(database, submit(service, kernel(marker)))
    assert (state, by) == ("flagged", "screening")
    assert reason is not None and reason.startswith("not screened") and why in reason


def test_a_hook_past_its_time_limit_fails_open_or_closed(
    database: Database, settings: CoreSettings, tmp_path: Path, hook: str
) -> None:
    service = make_service(database, settings, tmp_path, screen_command=hook, screen_timeout_s=0.5)
    state, _, reason = moderation(database, submit(service, kernel("SLEEP")))
    assert state == "flagged" and "longer than 0.5 s" in (reason or "")
    closed = LeaderboardService(database, service.settings.model_copy(update={"screen_fail_closed": True}))
    with pytest.raises(InvalidSubmission, match="check is not answering now") as err:
        submit(closed, kernel("SLEEP"))
    assert err.value.code == "screening_unavailable"
    assert "Nothing is wrong with your file" in str(err.value)
    assert stored(database) == 1


class _Endpoint(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        if "BROKEN" in body["code"]:
            self.send_response(500)
            self.end_headers()
            return
        verdict = {"verdict": "flag", "reason": "uses inline asm"} if "asm" in body["code"] else {"verdict": "pass"}
        data = json.dumps(verdict).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Endpoint.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/screen"
    server.shutdown()
    server.server_close()


def test_an_http_hook_gets_the_code_and_its_answer_counts(
    database: Database, settings: CoreSettings, tmp_path: Path, endpoint: str
) -> None:
    service = make_service(database, settings, tmp_path, screen_url=endpoint)
    assert moderation(database, submit(service, PLAIN))[0] is None
    assert _Endpoint.seen[0] == {"leaderboard": "add", "file_name": "k.py", "mode": "ranked", "user": "alice",
                                 "code": PLAIN.decode()}  # fmt: skip
    assert moderation(database, submit(service, kernel("asm")))[:2] == ("flagged", "screening")
    state, _, reason = moderation(database, submit(service, kernel("BROKEN")))
    assert state == "flagged" and "HTTP 500" in (reason or "")


def test_an_unreachable_endpoint_fails_open(database: Database, settings: CoreSettings, tmp_path: Path) -> None:
    service = make_service(database, settings, tmp_path, screen_url="http://127.0.0.1:9/screen", screen_timeout_s=2)
    state, _, reason = moderation(database, submit(service, PLAIN))
    assert state == "flagged" and "could not be reached" in (reason or "")


def test_a_compare_screens_both_files(database: Database, settings: CoreSettings, tmp_path: Path, hook: str) -> None:
    """Both files of a compare run on the runners: each is screened (red team, 2026-11-29: neither was)."""
    service = make_service(database, settings, tmp_path, screen_command=hook, screen_timeout_s=20)
    alice = UserRef("alice")
    with pytest.raises(InvalidSubmission, match="patches the timer") as err:
        service.compare(alice, "a.py", PLAIN, "b.py", kernel("torch.cuda.Event"), "add", "cpu")
    assert err.value.code == "refused_by_screening" and err.value.field == "against" and stored(database) == 0
    flagged = service.compare(alice, "a.py", kernel("cache"), "b.py", PLAIN, "add", "cpu").submission_id
    assert moderation(database, flagged)[0] == "flagged"
