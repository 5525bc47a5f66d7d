"""``kernelcup.client``: a Python client of the kernelcup HTTP API, for programs (e.g. kernel generators) and the
``kernelcup`` CLI's remote mode. Built on ``httpx``; ``Client`` is synchronous, ``AsyncClient`` asynchronous; the
answers are the API's own pydantic models (``web.schemas``; ``kernelcup.client.wire`` says where they come from in the
light ``kernelcup-client`` distribution, which installs this package, its remote CLI ``kernelcup-client`` and the
environment without the server's dependencies: docs/agents.md).

    from kernelcup.client import Client

    with Client("https://kernelcup.example.org", token="kc_…") as kc:
        sub = kc.submit("kernel.py", leaderboard="vectoradd", devices=["H100"], mode="benchmark")
        result = sub.wait(timeout=600)          # follows the live event stream, then fetches the result
        print(result.status.jobs[0].score_ns)

``compare(a, b, leaderboard, device, rounds)`` compares two files on one device (``.wait().status.comparison``).
``submit_batch`` sends up to 64 candidates for one problem, device and mode in one request (``Batch``: its
``events()`` yield each candidate as it finishes, ``wait()`` the whole batch with a reward record per candidate);
``reward(id)`` is a submission's reward record; ``idempotency_key=`` on every submitting call makes a retry of the same
request answer with the first answer instead of running again (docs/programs.md).
``submit_many`` submits a batch and returns when all are done (a 429 — rate limit or pending-job quota — is
waited out, not fatal). Every error of the API is raised as ``ApiError`` with its ``code``, ``message`` and
``field``. See docs/api.md.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from kernelcup.client.env import KernelEnv as KernelEnv  # also kernelcup.client.KernelEnv (RL loops)
from kernelcup.client.wire import (
    API_PREFIX,
    BatchItemOut,
    BatchOut,
    BudgetOut,
    CodeOut,
    ComparisonOut,
    HistoryOut,
    InviteOut,
    JoinedOut,
    LateEntryOut,
    LatePageOut,
    LeaderboardDetailOut,
    LeaderboardOut,
    LeaderboardUpdateOut,
    MemberOut,
    MeOut,
    Mode,
    NewInviteOut,
    ProblemFolderOut,
    ProgressOut,
    RankingOut,
    ReplayReportOut,
    StandingsOut,
    StatsOut,
    SubmissionOut,
    SubmissionReceiptOut,
    SubmissionRewardsOut,
    SubmissionStatusOut,
    SubmissionSummaryOut,
    TemplateOut,
    UserOut,
)

if TYPE_CHECKING:
    from datetime import datetime

__all__ = [
    "ApiError",
    "AsyncClient",
    "AsyncSubmission",
    "Batch",
    "Candidate",
    "Client",
    "ComparisonOut",
    "ProgressOut",
    "Submission",
    "SubmissionOut",
]

M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=60.0)
"""Reads wait up to a minute: an event stream sends a keep-alive every 15 s."""
RECONNECT_S = (0.5, 1.0, 2.0, 5.0)
"""Waits before the 1st, 2nd, 3rd, … reconnection of an event stream (the last one repeats)."""
MAX_RECONNECTS = 30
"""Failed reconnections in a row (about two and a half minutes) before an event stream gives up."""
QUOTA_WAIT_MAX_S = 60.0


class ApiError(Exception):
    """An error answer of the API (or a server that could not be reached: ``code`` ``unreachable``)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None, retry_after: float = 0.0):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        try:
            err = response.json()["error"]
            code, message, field = str(err["code"]), str(err["message"]), err.get("field")
        except (ValueError, KeyError, TypeError):
            code, message, field = "http_error", f"HTTP {response.status_code}: {response.text[:200]}", None
        retry = response.headers.get("Retry-After", "")
        return cls(response.status_code, code, message, field, float(retry) if retry.isdigit() else 0.0)


@dataclass(frozen=True)
class Candidate:
    """One file of a batch: its name and content."""

    file_name: str
    content: bytes

    @classmethod
    def of(cls, item: Candidate | str | Path | bytes | tuple[str, bytes]) -> Candidate:
        if isinstance(item, Candidate):
            return item
        if isinstance(item, bytes):
            return cls("submission.py", item)
        if isinstance(item, tuple):
            return cls(item[0], item[1])
        path = Path(item)
        return cls(path.name, path.read_bytes())


def _check(response: httpx.Response) -> httpx.Response:
    if response.is_error:
        raise ApiError.from_response(response)
    return response


PLAIN_HTTP_ANSWERS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "packet length too long", "http request")
"""What OpenSSL says when an https:// request gets a plain-HTTP answer (a local `kernelcup serve` gives one)."""


def _unreachable(server: str, exc: Exception) -> ApiError:
    message = f"Cannot reach the kernelcup server at {server}: {exc}"
    if server.startswith("https://") and any(s in str(exc) for s in PLAIN_HTTP_ANSWERS):
        message += f". It answered without TLS: if it serves plain HTTP, use http://{server.removeprefix('https://')}"
    return ApiError(0, "unreachable", message)


def _form(
    leaderboard: str | None, devices: Sequence[str] | str | None, mode: Mode | str | None, force: bool = False
) -> dict[str, Any]:
    data: dict[str, Any] = {"force": "true"} if force else {}
    if leaderboard:
        data["leaderboard"] = leaderboard
    if devices:
        data["devices"] = [devices] if isinstance(devices, str) else list(devices)
    if mode:
        data["mode"] = str(mode)
    return data


def _upload(
    file: Candidate | str | Path | bytes | tuple[str, bytes],
    leaderboard: str | None,
    devices: Sequence[str] | str | None,
    mode: Mode | str | None,
    force: bool,
) -> dict[str, Any]:
    """The request of a submission: the file and the form fields given."""
    c = Candidate.of(file)
    return {"files": {"file": (c.file_name, c.content)}, "data": _form(leaderboard, devices, mode, force)}


def _compare_upload(
    file_a: Candidate | str | Path | bytes | tuple[str, bytes],
    file_b: Candidate | str | Path | bytes | tuple[str, bytes],
    leaderboard: str | None,
    device: str | None,
    rounds: int | None,
    profile: bool = False,
) -> dict[str, Any]:
    """The request of a compare: both files (A as ``file``, B as ``against``), mode compare, the rounds (None: the
    service's default), and ``profile`` (kernel metrics after the rounds) where asked."""
    a, b = Candidate.of(file_a), Candidate.of(file_b)
    data = _form(leaderboard, [device] if device else None, "compare")
    if rounds is not None:
        data["rounds"] = str(rounds)
    if profile:
        data["profile"] = "true"
    return {"files": {"file": (a.file_name, a.content), "against": (b.file_name, b.content)}, "data": data}


class _SSE:
    """Server-Sent Events, parsed line by line (``event``, ``data``, ``id``; comments skipped)."""

    def __init__(self) -> None:
        self.event = "message"
        self.data: list[str] = []
        self.id: str | None = None

    def feed(self, line: str) -> tuple[str, str, str | None] | None:
        if not line:
            if not self.data:
                self.event = "message"
                return None
            out = (self.event, "\n".join(self.data), self.id)
            self.event, self.data = "message", []
            return out
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self.event = value
        elif name == "data":
            self.data.append(value)
        elif name == "id":
            self.id = value
        return None


class _Stream:
    """What one event stream has come to: ``done`` (the final status), or the last event id to resume after."""

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.done: SubmissionStatusOut | None = None

    def handle(self, event: str, data: str, event_id: str | None) -> ProgressOut | None:
        if event_id is not None:
            self.last_id = event_id
        if event == "progress":
            return ProgressOut.model_validate_json(data)
        if event == "done":
            self.done = SubmissionStatusOut.model_validate_json(data)
        elif event in ("error", "timeout"):
            err = json.loads(data).get("error", {})
            if err.get("code") != "database_unavailable":  # the server's database blinked: reconnect and resume
                raise ApiError(0, str(err.get("code", event)), str(err.get("message", event)))
        return None

    def headers(self) -> dict[str, str]:
        return {"Last-Event-ID": self.last_id} if self.last_id else {}


# -- synchronous ---------------------------------------------------------------------------------------------------


def _sse_events(
    client: Client, url: str, headers: Callable[[], dict[str, str]], timeout: float | None, what: str
) -> Iterator[tuple[str, str, str | None]]:
    """The events (name, data, id) of an event stream, opened again whenever it ends or its connection drops (with
    ``headers()`` each time: where to resume), until the caller stops reading; ``TimeoutError`` after ``timeout``
    seconds, ``ApiError`` ``unreachable`` after ``MAX_RECONNECTS`` failed reconnections in a row."""
    deadline = None if timeout is None else time.monotonic() + timeout
    failures = 0
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            raise TimeoutError(f"{what} is not done after {timeout:.0f} s")
        try:
            with client.http.stream("GET", url, headers=headers()) as response:
                if response.is_error:
                    response.read()
                    _check(response)
                parser = _SSE()
                for line in response.iter_lines():
                    parsed = parser.feed(line)
                    if parsed is not None:
                        failures = 0
                        yield parsed
                    if deadline is not None and time.monotonic() >= deadline:
                        break
        except httpx.TransportError as exc:
            if failures >= MAX_RECONNECTS:
                raise _unreachable(client.server, exc) from None
        time.sleep(RECONNECT_S[min(failures, len(RECONNECT_S) - 1)])
        failures += 1


class Submission:
    """A submission on the server: follow it, wait for it, read its result and code, cancel it."""

    def __init__(self, client: Client, submission_id: int, receipt: SubmissionReceiptOut | None = None) -> None:
        self.client = client
        self.id = submission_id
        self.receipt = receipt

    def __repr__(self) -> str:
        return f"Submission({self.id})"

    def result(self) -> SubmissionOut:
        """Its status and public results now."""
        return self.client._get(f"/submissions/{self.id}", SubmissionOut)

    def events(self, timeout: float | None = None) -> Iterator[ProgressOut]:
        """Its live progress until it is done (reconnecting, and resuming where it was, when the connection
        drops); ``TimeoutError`` after ``timeout`` seconds."""
        stream = _Stream()
        url = f"{API_PREFIX}/submissions/{self.id}/events"
        for parsed in _sse_events(self.client, url, stream.headers, timeout, f"submission {self.id}"):
            update = stream.handle(*parsed)
            if update is not None:
                yield update
            if stream.done is not None:
                return

    def wait(self, timeout: float | None = None) -> SubmissionOut:
        """Follow it until it is done, then return its result."""
        for _ in self.events(timeout):
            pass
        return self.result()

    def code(self, file: str = "a") -> CodeOut:
        """Its code; ``file="b"``: a compare's second file."""
        return self.client._get(f"/submissions/{self.id}/code", CodeOut, file=file)

    def cancel(self) -> None:
        """Cancel it while it is queued or running; a finished one is left as it is (``ApiError`` 409,
        ``already_finished``: ``delete()`` takes it off the rankings)."""
        self.client._request("POST", f"/submissions/{self.id}/cancel")

    def delete(self) -> str:
        """Take it off the rankings if it has finished, else cancel it. Says which: "deleted" or "cancelled"."""
        response = self.client._request("DELETE", f"/submissions/{self.id}")
        return str(response.json()["action"])


class Batch:
    """A batch on the server (``Client.submit_batch``): follow its candidates as they finish, wait for all of them."""

    def __init__(self, client: Client, batch_id: int, answer: BatchOut | None = None) -> None:
        self.client = client
        self.id = batch_id
        self.answer = answer

    def __repr__(self) -> str:
        return f"Batch({self.id})"

    def status(self) -> BatchOut:
        """Every candidate's state now (a reward record for each finished one)."""
        return self.client._get(f"/batches/{self.id}", BatchOut)

    def events(self, timeout: float | None = None) -> Iterator[BatchItemOut]:
        """Each candidate once, as it finishes (refused ones first), until all have; reconnects when the connection
        drops (skipping what it gave already). ``TimeoutError`` after ``timeout`` seconds."""
        seen: set[int] = set()
        url = f"{API_PREFIX}/batches/{self.id}/events"
        for event, data, _ in _sse_events(self.client, url, dict, timeout, f"batch {self.id}"):
            if event == "candidate":
                item = BatchItemOut.model_validate_json(data)
                if item.position not in seen:  # a reconnect sends the finished ones again
                    seen.add(item.position)
                    yield item
            elif event == "done":
                return
            elif event == "error":  # a timeout event ends the stream: it is opened again
                err = json.loads(data).get("error", {})
                if err.get("code") != "database_unavailable":
                    raise ApiError(0, str(err.get("code", event)), str(err.get("message", event)))

    def wait(self, timeout: float | None = None) -> BatchOut:
        """Follow it until every candidate has finished, then return it whole."""
        for _ in self.events(timeout):
            pass
        return self.status()


class Client:
    """A synchronous client. ``token`` may be None for the public reads (leaderboards, rankings, templates)."""

    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.server, headers=headers, timeout=timeout, transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return _check(self.http.request(method, f"{API_PREFIX}{path}", **kwargs))
        except httpx.TransportError as exc:
            raise _unreachable(self.server, exc) from None

    def _get(self, path: str, model: type[M], **params: Any) -> M:
        params = {k: v for k, v in params.items() if v is not None}
        return model.model_validate(self._request("GET", path, params=params).json())

    # -- public reads --------------------------------------------------------------------------------------------

    def leaderboards(self) -> list[LeaderboardOut]:
        return [LeaderboardOut.model_validate(x) for x in self._request("GET", "/leaderboards").json()]

    def leaderboard(self, name: str) -> LeaderboardDetailOut:
        return self._get(f"/leaderboards/{name}", LeaderboardDetailOut)

    def template(self, name: str, language: str) -> TemplateOut:
        return self._get(f"/leaderboards/{name}/templates/{language}", TemplateOut)

    def problem_folder(self, name: str, *, fingerprint: str | None = None) -> ProblemFolderOut | None:
        """A leaderboard's public problem folder: task.yml (without held-out cases), the reference and the files that
        travel with a run, the templates (``kernelcup problems get``). None when ``fingerprint`` is the folder's
        own: the copy you hold is current."""
        headers = {"If-None-Match": f'"{fingerprint}"'} if fingerprint else {}
        response = self._request("GET", f"/leaderboards/{quote(name, safe='')}/problem", headers=headers)
        if response.status_code == 304:
            return None
        return ProblemFolderOut.model_validate(response.json())

    def rankings(
        self, name: str, device: str | None = None, *, limit: int = 100, offset: int = 0, programs: bool | None = None
    ) -> RankingOut:
        return self._get(
            f"/leaderboards/{name}/rankings", RankingOut, device=device, limit=limit, offset=offset, programs=programs
        )

    def history(self, name: str, device: str | None = None) -> HistoryOut:
        return self._get(f"/leaderboards/{name}/history", HistoryOut, device=device)

    # -- with a token --------------------------------------------------------------------------------------------

    # -- competitions: standings, after the deadline, private boards (issue 29) -------------------------------------

    def standings(self, name: str, device: str | None = None, *, final: bool = False) -> StandingsOut:
        """Live standings (the ranking with held-out coverage) or the frozen final ones (ties, 95% intervals)."""
        return self._get(f"/leaderboards/{name}/standings", StandingsOut, device=device, final=str(final).lower())

    def late(self, name: str, *, limit: int = 50, offset: int = 0) -> LatePageOut:
        """The leaderboard's "after the deadline" list: practice submissions, newest first."""
        return self._get(f"/leaderboards/{name}/late", LatePageOut, limit=limit, offset=offset)

    def submit_hack(self, leaderboard: str, case: dict[str, Any], devices: Sequence[str] | None = None) -> Any:
        """Send an input hack against a board (``POST /leaderboards/{name}/hacks``): one queued hack per device, as the
        API's JSON (``{"hacks": [...]}``); a case out of the problem's hack_space is a 422 naming the field."""
        body = {"case": case, "devices": list(devices) if devices else None}
        return self._request("POST", f"/leaderboards/{leaderboard}/hacks", json=body).json()

    def hack(self, hack_id: int) -> Any:
        """One of your hacks: its status and, per entry it ran, the rank, user, verdict and action; never code."""
        return self._request("GET", f"/hacks/{hack_id}").json()

    def hack_credits(self, leaderboard: str) -> Any:
        """Who broke how many entries of a board with input hacks (public)."""
        return self._request("GET", f"/leaderboards/{leaderboard}/hacks").json()

    def join(self, code: str) -> JoinedOut:
        """Join a hidden leaderboard with an invite code (sent in the request's body, never in a URL)."""
        return JoinedOut.model_validate(self._request("POST", "/join", json={"code": code}).json())

    def admit(self, submission_id: int, reason: str) -> LateEntryOut:
        """Admin: let one late ranked entry in as ranked ("late, admitted by you because REASON")."""
        answer = self._request("POST", f"/admin/submissions/{submission_id}/admit", json={"reason": reason})
        return LateEntryOut.model_validate(answer.json())

    def create_invite(self, name: str, *, uses: int = 1, expires_days: float | None = 7.0) -> NewInviteOut:
        """Admin: a new invite code to a hidden leaderboard (None: it never expires)."""
        body = {"uses": uses, "expires_days": expires_days}
        answer = self._request("POST", f"/admin/leaderboards/{name}/invites", json=body)
        return NewInviteOut.model_validate(answer.json())

    def invites(self, leaderboard: str | None = None) -> list[InviteOut]:
        """Admin: the invite codes (never the codes themselves), newest first."""
        params = {"leaderboard": leaderboard} if leaderboard else {}
        return [InviteOut.model_validate(x) for x in self._request("GET", "/admin/invites", params=params).json()]

    def revoke_invite(self, invite_id: int) -> InviteOut:
        return InviteOut.model_validate(self._request("DELETE", f"/admin/invites/{invite_id}").json())

    def members(self, name: str) -> list[MemberOut]:
        """Admin: who joined a hidden leaderboard, earliest first, and by which invite (none: an admin added them)."""
        answer = self._request("GET", f"/admin/leaderboards/{_seg(name)}/members")
        return [MemberOut.model_validate(x) for x in answer.json()]

    def add_member(self, name: str, user: str, *, reason: str = "") -> MemberOut:
        """Admin: let ``user`` (``discord:ID`` or a local name) into a hidden leaderboard without a code."""
        answer = self._request(
            "POST", f"/admin/leaderboards/{_seg(name)}/members", json={"user": user, "reason": reason}
        )
        return MemberOut.model_validate(answer.json())

    def remove_member(self, name: str, user: str, *, reason: str = "") -> MemberOut:
        """Admin: take ``user`` out of a hidden leaderboard (it is hidden from them again)."""
        path = f"/admin/leaderboards/{_seg(name)}/members/{_seg(user)}"
        return MemberOut.model_validate(self._request("DELETE", path, params={"reason": reason}).json())

    # -- admin: the organiser's operations (kernelcup admin ...) ---------------------------------------------------

    def pause(self, name: str) -> LeaderboardOut:
        """Admin: the leaderboard refuses new submissions until resumed."""
        return LeaderboardOut.model_validate(self._request("POST", f"/admin/leaderboards/{_seg(name)}/pause").json())

    def resume(self, name: str) -> LeaderboardOut:
        return LeaderboardOut.model_validate(self._request("POST", f"/admin/leaderboards/{_seg(name)}/resume").json())

    def update_leaderboard(
        self, name: str, *, deadline: datetime | None = None, visible: bool | None = None, force: bool = False
    ) -> LeaderboardUpdateOut:
        """Admin: move a leaderboard's deadline or show/hide it (a live one's deadline in the past needs force)."""
        body: dict[str, Any] = {"force": force}
        if deadline is not None:
            body["deadline"] = deadline.isoformat()
        if visible is not None:
            body["visible"] = visible
        answer = self._request("PATCH", f"/admin/leaderboards/{_seg(name)}", json=body)
        return LeaderboardUpdateOut.model_validate(answer.json())

    def set_rate_limit(self, name: str, per_hour: int | None) -> LeaderboardOut:
        """Admin: submissions per user per hour on the leaderboard (None: the server's default)."""
        answer = self._request("PUT", f"/admin/leaderboards/{_seg(name)}/rate-limit", json={"per_hour": per_hour})
        return LeaderboardOut.model_validate(answer.json())

    def ban(self, user: str, reason: str = "") -> UserOut:
        """Admin: refuse a user's submissions and hide them from rankings (``discord:ID`` or a local name)."""
        answer = self._request("PUT", f"/admin/users/{_seg(user)}/ban", json={"reason": reason})
        return UserOut.model_validate(answer.json())

    def unban(self, user: str) -> UserOut:
        return UserOut.model_validate(self._request("DELETE", f"/admin/users/{_seg(user)}/ban").json())

    def stats(self, days: int | None = None) -> StatsOut:
        """Admin: the queue, the live workers and usage (of the last ``days`` days, or all time)."""
        return self._get("/admin/stats", StatsOut, days=days)

    def me(self) -> MeOut:
        return self._get("/me", MeOut)

    def revoke_token(self, token_id: int) -> None:
        """Revoke one of this account's tokens (e.g. this client's own: ``me().token_id``)."""
        self._request("DELETE", f"/me/tokens/{token_id}")

    def submit(
        self,
        file: Candidate | str | Path | bytes | tuple[str, bytes],
        leaderboard: str | None = None,
        devices: Sequence[str] | str | None = None,
        mode: Mode | str | None = None,
        *,
        force: bool = False,
        licence: str | None = None,
        idempotency_key: str | None = None,
    ) -> Submission:
        """Submit a file (a path, bytes, or ``(file_name, bytes)``). What is not given comes from the file's
        ``#!kernelcup`` header lines, else the server's defaults (ranked; the leaderboard's only device). The same
        file sent again a moment ago answers with that earlier submission (``.receipt.duplicate``); ``force`` runs
        it again. ``licence`` is the archive licence (none, CC0-1.0, CC-BY-4.0, MIT, Apache-2.0; default: the file's
        ``#!kernelcup license:`` line, else the account's default). ``idempotency_key``: a retry of this very request
        with the same key answers with the first submission and runs nothing (the same key with another file is an
        ``ApiError`` 409)."""
        upload = _upload(file, leaderboard, devices, mode, force)
        if licence:
            upload["data"]["license"] = licence
        response = self._request("POST", "/submissions", headers=_key_header(idempotency_key), **upload)
        receipt = SubmissionReceiptOut.model_validate(response.json())
        return Submission(self, receipt.submission_id, receipt)

    def compare(
        self,
        file_a: Candidate | str | Path | bytes | tuple[str, bytes],
        file_b: Candidate | str | Path | bytes | tuple[str, bytes],
        leaderboard: str | None = None,
        device: str | None = None,
        rounds: int | None = None,
        *,
        idempotency_key: str | None = None,
        profile: bool = False,
    ) -> Submission:
        """Compare two files on one device: at most ``rounds`` (even, 2 to 20; None: the service's default, 14 on a GPU
        and 6 on the CPU) interleaved benchmark runs of each on one machine, fewer once the overall ratio is known
        within ±0.4% (at least 6). ``.wait().status.comparison.result`` is the A/B time ratio with its 95% interval, per
        case (``cases``) and overall (``ratio``, ``ci_low``, ``ci_high``), and the rounds run. Never ranked; counts as
        ``2 × rounds`` runs (the most it may run) against your hourly limit and pending-job quota. The same file twice
        is fine (it measures the noise). ``profile`` (a GPU device): after the rounds, each case of both files is
        profiled under Nsight Compute, and ``result.metrics`` holds their dominant kernels' metrics side by side."""
        upload = _compare_upload(file_a, file_b, leaderboard, device, rounds, profile)
        response = self._request("POST", "/submissions", headers=_key_header(idempotency_key), **upload)
        receipt = SubmissionReceiptOut.model_validate(response.json())
        return Submission(self, receipt.submission_id, receipt)

    def submission(self, submission_id: int) -> Submission:
        return Submission(self, submission_id)

    def submissions(self, leaderboard: str | None = None, *, limit: int = 50) -> list[SubmissionSummaryOut]:
        params = {"limit": limit, **({"leaderboard": leaderboard} if leaderboard else {})}
        return [
            SubmissionSummaryOut.model_validate(x)
            for x in self._request("GET", "/me/submissions", params=params).json()
        ]

    def submit_batch(
        self,
        candidates: Iterable[Candidate | str | Path | bytes | tuple[str, bytes]],
        leaderboard: str,
        device: str | None = None,
        mode: Mode | str = "benchmark",
        *,
        force: bool = False,
        idempotency_key: str | None = None,
    ) -> Batch:
        """Send up to the server's batch limit (64 by default) of candidates for one leaderboard, device and mode in
        one request; stored at once. ``.answer`` holds each candidate's submission (or why it alone was refused);
        ``.events()`` yields each as it finishes, ``.wait()`` the batch with a reward record per candidate. A batch
        refused as a whole (leaderboard, device, mode, limits, GPU budget) raises ``ApiError``."""
        items = [Candidate.of(c) for c in candidates]
        data: dict[str, Any] = {"leaderboard": leaderboard, "mode": str(mode), **({"force": "true"} if force else {})}
        if device:
            data["device"] = device
        response = self._request(
            "POST",
            "/batches",
            headers=_key_header(idempotency_key),
            files=[("files", (c.file_name, c.content)) for c in items],
            data=data,
        )
        answer = BatchOut.model_validate(response.json())
        return Batch(self, answer.batch_id, answer)

    def batch(self, batch_id: int) -> Batch:
        return Batch(self, batch_id)

    def reward(self, submission_id: int) -> SubmissionRewardsOut:
        """A submission's reward record per device (docs/schemas/reward.schema.json); null until its job finished."""
        return self._get(f"/submissions/{submission_id}/reward", SubmissionRewardsOut)

    def replay(self, submission_id: int, *, idempotency_key: str | None = None) -> Submission:
        """Time a stored run again on its own seeds (yours for test, benchmark and profile runs; an admin's token for
        ranked ones): a new submission that never ranks. ``replay_report(new_id)`` sets it beside the original."""
        response = self._request("POST", f"/submissions/{submission_id}/replay", headers=_key_header(idempotency_key))
        receipt = SubmissionReceiptOut.model_validate(response.json())
        return Submission(self, receipt.submission_id, receipt)

    def replay_report(self, replay_id: int) -> ReplayReportOut:
        """A replay beside its original: both verdicts, and each timed case's median against the original's 95%
        interval (``holds``: all the same and all within)."""
        return self._get(f"/submissions/{replay_id}/replay", ReplayReportOut)

    def my_budgets(self) -> list[BudgetOut]:
        """The GPU budgets that bind this client: its account's and its token's, where set."""
        return [BudgetOut.model_validate(b) for b in self._request("GET", "/me/budgets").json()]

    def budgets(self) -> list[BudgetOut]:
        """Admin: every GPU budget, with what is spent of it in its current period."""
        return [BudgetOut.model_validate(b) for b in self._request("GET", "/admin/budgets").json()]

    def set_budget(
        self, seconds: float | None, *, user: str | None = None, token_id: int | None = None, period_s: int = 86_400
    ) -> BudgetOut | None:
        """Admin: set (``seconds=None``: remove) the GPU-second budget per ``period_s`` of an account (``user``:
        ``discord:ID`` or a local name) or of one token (``token_id``)."""
        if (user is None) == (token_id is None):
            raise ValueError("name either user or token_id")
        path = f"/admin/budgets/accounts/{_seg(user)}" if user is not None else f"/admin/budgets/tokens/{token_id}"
        if seconds is None:
            self._request("DELETE", path)
            return None
        answer = self._request("PUT", path, json={"seconds": seconds, "period_s": period_s})
        return BudgetOut.model_validate(answer.json())

    def submit_many(
        self,
        candidates: Iterable[Candidate | str | Path | bytes | tuple[str, bytes]],
        leaderboard: str | None = None,
        devices: Sequence[str] | str | None = None,
        mode: Mode | str | None = None,
        *,
        timeout: float | None = None,
    ) -> list[SubmissionOut | ApiError]:
        """Submit every candidate and return, in the same order, each one's result once all are done — or the
        ``ApiError`` that refused it. A 429 (rate limit, pending-job quota) is waited out: the batch waits for its
        oldest unfinished submission (or the Retry-After time) and tries again."""
        deadline = None if timeout is None else time.monotonic() + timeout
        items = [Candidate.of(c) for c in candidates]
        handles: list[Submission | ApiError] = []
        results: dict[int, SubmissionOut] = {}
        for c in items:
            while True:
                try:
                    handles.append(self.submit(c, leaderboard, devices, mode))
                    break
                except ApiError as exc:
                    if exc.status != 429:
                        handles.append(exc)
                        break
                    pending = [h for h in handles if isinstance(h, Submission) and h.id not in results]
                    if pending:
                        results[pending[0].id] = pending[0].wait(_left(deadline))
                    else:
                        time.sleep(min(exc.retry_after or 5.0, QUOTA_WAIT_MAX_S))
        out: list[SubmissionOut | ApiError] = []
        for h in handles:
            if isinstance(h, ApiError):
                out.append(h)
            else:
                out.append(results.get(h.id) or h.wait(_left(deadline)))
        return out


def _key_header(key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": key} if key else {}


def _seg(text: str) -> str:
    """One path segment of a URL: a name with a slash or a ``?`` stays one segment."""
    return quote(text, safe="")


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


# -- asynchronous --------------------------------------------------------------------------------------------------


class AsyncSubmission:
    def __init__(self, client: AsyncClient, submission_id: int, receipt: SubmissionReceiptOut | None = None) -> None:
        self.client = client
        self.id = submission_id
        self.receipt = receipt

    def __repr__(self) -> str:
        return f"AsyncSubmission({self.id})"

    async def result(self) -> SubmissionOut:
        return await self.client._get(f"/submissions/{self.id}", SubmissionOut)

    async def events(self) -> AsyncIterator[ProgressOut]:
        """Its live progress until it is done, reconnecting like ``Submission.events``. Bound the wait with
        ``asyncio.timeout(...)``."""
        stream, failures = _Stream(), 0
        url = f"{API_PREFIX}/submissions/{self.id}/events"
        while stream.done is None:
            try:
                async with self.client.http.stream("GET", url, headers=stream.headers()) as response:
                    if response.is_error:
                        await response.aread()
                        _check(response)
                    parser = _SSE()
                    async for line in response.aiter_lines():
                        parsed = parser.feed(line)
                        if parsed is not None:
                            failures = 0
                            update = stream.handle(*parsed)
                            if update is not None:
                                yield update
            except httpx.TransportError as exc:
                if failures >= MAX_RECONNECTS:
                    raise _unreachable(self.client.server, exc) from None
            if stream.done is None:
                await asyncio.sleep(RECONNECT_S[min(failures, len(RECONNECT_S) - 1)])
                failures += 1

    async def wait(self) -> SubmissionOut:
        """Follow it until it is done, then return its result (bound it with ``asyncio.timeout(...)``)."""
        async for _ in self.events():
            pass
        return await self.result()

    async def code(self, file: str = "a") -> CodeOut:
        """Its code; ``file="b"``: a compare's second file."""
        return await self.client._get(f"/submissions/{self.id}/code", CodeOut, file=file)

    async def cancel(self) -> None:
        """``Submission.cancel``, awaited."""
        await self.client._request("POST", f"/submissions/{self.id}/cancel")

    async def delete(self) -> str:
        """``Submission.delete``, awaited."""
        response = await self.client._request("DELETE", f"/submissions/{self.id}")
        return str(response.json()["action"])


class AsyncClient:
    """The asynchronous client: the same methods as ``Client``, awaited."""

    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.AsyncClient(base_url=self.server, headers=headers, timeout=timeout, transport=transport)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return _check(await self.http.request(method, f"{API_PREFIX}{path}", **kwargs))
        except httpx.TransportError as exc:
            raise _unreachable(self.server, exc) from None

    async def _get(self, path: str, model: type[M], **params: Any) -> M:
        params = {k: v for k, v in params.items() if v is not None}
        return model.model_validate((await self._request("GET", path, params=params)).json())

    async def leaderboards(self) -> list[LeaderboardOut]:
        return [LeaderboardOut.model_validate(x) for x in (await self._request("GET", "/leaderboards")).json()]

    async def leaderboard(self, name: str) -> LeaderboardDetailOut:
        return await self._get(f"/leaderboards/{name}", LeaderboardDetailOut)

    async def rankings(
        self, name: str, device: str | None = None, *, limit: int = 100, offset: int = 0, programs: bool | None = None
    ) -> RankingOut:
        return await self._get(
            f"/leaderboards/{name}/rankings", RankingOut, device=device, limit=limit, offset=offset, programs=programs
        )

    async def me(self) -> MeOut:
        return await self._get("/me", MeOut)

    async def submit(
        self,
        file: Candidate | str | Path | bytes | tuple[str, bytes],
        leaderboard: str | None = None,
        devices: Sequence[str] | str | None = None,
        mode: Mode | str | None = None,
        *,
        force: bool = False,
    ) -> AsyncSubmission:
        """``Client.submit``, awaited."""
        response = await self._request("POST", "/submissions", **_upload(file, leaderboard, devices, mode, force))
        receipt = SubmissionReceiptOut.model_validate(response.json())
        return AsyncSubmission(self, receipt.submission_id, receipt)

    async def compare(
        self,
        file_a: Candidate | str | Path | bytes | tuple[str, bytes],
        file_b: Candidate | str | Path | bytes | tuple[str, bytes],
        leaderboard: str | None = None,
        device: str | None = None,
        rounds: int | None = None,
        *,
        profile: bool = False,
    ) -> AsyncSubmission:
        """``Client.compare``, awaited."""
        upload = _compare_upload(file_a, file_b, leaderboard, device, rounds, profile)
        response = await self._request("POST", "/submissions", **upload)
        receipt = SubmissionReceiptOut.model_validate(response.json())
        return AsyncSubmission(self, receipt.submission_id, receipt)

    async def submit_many(
        self,
        candidates: Iterable[Candidate | str | Path | bytes | tuple[str, bytes]],
        leaderboard: str | None = None,
        devices: Sequence[str] | str | None = None,
        mode: Mode | str | None = None,
    ) -> list[SubmissionOut | ApiError]:
        """``Client.submit_many``, following every submission at once (bound it with ``asyncio.timeout(...)``)."""
        items = [Candidate.of(c) for c in candidates]
        handles: list[AsyncSubmission | ApiError] = []
        waiting: dict[int, asyncio.Task[SubmissionOut]] = {}
        try:
            for c in items:
                while True:
                    try:
                        sub = await self.submit(c, leaderboard, devices, mode)
                        handles.append(sub)
                        waiting[sub.id] = asyncio.ensure_future(sub.wait())
                        break
                    except ApiError as exc:
                        if exc.status != 429:
                            handles.append(exc)
                            break
                        unfinished = [t for t in waiting.values() if not t.done()]
                        if unfinished:
                            await asyncio.wait(unfinished, return_when=asyncio.FIRST_COMPLETED)
                        else:
                            await asyncio.sleep(min(exc.retry_after or 5.0, QUOTA_WAIT_MAX_S))
            out: list[SubmissionOut | ApiError] = []
            for h in handles:
                out.append(h if isinstance(h, ApiError) else await waiting[h.id])
            return out
        finally:
            for task in waiting.values():  # cancelled from outside (a timeout): leave nothing running
                task.cancel()
