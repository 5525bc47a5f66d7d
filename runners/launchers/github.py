"""The GitHub Actions launcher: dispatches ``.github/workflows/kernelcup-run.yml`` to a self-hosted runner.

How one run goes:

1. The request is compressed (``runners.payload``) into the dispatch inputs with its sha256 and a nonce
   that this launcher makes up. A request too large for a dispatch (65,535 characters of inputs in all)
   is refused with that limit in the message (verdict ``rejected``, not retried): the job that runs user
   code holds no token, so it cannot fetch a larger request from anywhere that needs one.
2. ``nonce`` is stored on the job *before* dispatching, and the run id as soon as it is known. The dispatch
   asks GitHub for the run's id (``return_run_details``); where the API does not give it, the run is found
   by its name, ``kernelcup run <nonce>`` (the workflow's ``run-name``): never by guessing among the newest.
3. Polls the run with growing intervals: bounded while queued (``GITHUB_QUEUE_TIMEOUT_S``) and while
   running (the request's limits plus ``GITHUB_SETUP_MARGIN_S``); past a bound it cancels the run.
4. Downloads the ``kernelcup-result-<nonce>`` artifact, checks the zip and validates ``result.json`` as a
   ``RunResult``.

A restarted worker re-attaches through ``job.remote_ref`` (``github:OWNER/NAME:run:ID:NONCE``, or
``...:nonce:NONCE`` when it died between storing the nonce and learning the run id). Every PyGithub call
runs in a bounded daemon thread (``call_blocking``) and is retried a few times on 5xx, rate limits and
network errors; everything else that goes wrong is a ``LauncherError`` (the worker retries, bounded).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException, RateLimitExceededException
from github.GithubException import BadCredentialsException, UnknownObjectException

from runners import payload
from runners.contract import Phase, ProgressEvent, RunRequest, RunResult, Verdict
from runners.launchers.base import JobHandle, Launcher, LauncherError
from runners.launchers.blocking import CallTimeout, call_blocking
from runners.launchers.github_artifact import download_artifact, parse_artifact
from runners.launchers.github_errors import message_of, net_reason, rate_limit_wait
from runners.launchers.settings import GithubSettings
from runners.retry import aretrying

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_DISPATCH_INPUT_CHARS = 65_535
"""GitHub's limit on a workflow_dispatch payload: all input values together."""
RUN_NAME_PREFIX = "kernelcup run "
ARTIFACT_PREFIX = "kernelcup-result-"
PENDING_STATUSES = frozenset({"queued", "waiting", "pending", "requested"})
RUNS_PER_PAGE = 50
MAX_RUN_PAGES = 4
"""How many pages of recent dispatched runs the look-up by name reads (a busy repository, a long outage)."""
RETRY_BASE_S = 1.0
"""Back-off of a retried API call: 2, 4, 8... times this, at most 30 s."""


@dataclass(frozen=True)
class RunState:
    id: int
    status: str
    conclusion: str | None
    html_url: str


def _state(run: Any) -> RunState:
    return RunState(id=run.id, status=run.status, conclusion=run.conclusion, html_url=run.html_url)


class GithubLauncher(Launcher):
    """Runs requests through the dispatch workflow on self-hosted runners with ``labels`` (``a+b``)."""

    def __init__(self, settings: GithubSettings, labels: str) -> None:
        self.settings = settings
        self.labels = [label for label in labels.split("+") if label]
        if not self.labels:
            raise ValueError("a GitHub route needs a runner label, e.g. github:gpu-nvidia")
        self.name = f"github:{labels}"
        self._github: Github | None = None

    @property
    def wait_margin_s(self) -> float:
        """The longest this launcher waits beyond a request's compile + run limits (finding, queue, set-up)."""
        s = self.settings
        return s.find_run_timeout_s + s.queue_timeout_s + s.setup_margin_s

    # -- the Launcher protocol -------------------------------------------------------------------

    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        repo_name = self._require()
        prefix = f"github:{repo_name}:"
        run_id: int | None = None
        nonce: str | None = None
        ref = job.remote_ref
        if ref and ref.startswith(prefix):
            kind, _, rest = ref.removeprefix(prefix).partition(":")
            if kind == "run":
                raw_id, _, nonce = rest.partition(":")
                if not raw_id.isdigit() or not nonce:
                    raise LauncherError(f"the job's remote reference {ref!r} is not one this launcher wrote")
                run_id = int(raw_id)
            elif kind == "nonce":
                nonce = rest
                run_id = await self._find_run(nonce, self.settings.find_run_timeout_s)
        if run_id is not None:
            await job.progress(ProgressEvent(phase=Phase.QUEUED, detail=f"re-attached to GitHub run {run_id}"))
        else:
            nonce = nonce or secrets.token_hex(8)
            try:
                inputs = self.dispatch_inputs(request, nonce)
            except ValueError as exc:
                return RunResult(verdict=Verdict.REJECTED, mode=request.mode, message=str(exc))
            await job.set_remote_ref(f"{prefix}nonce:{nonce}")
            run_id = await self._dispatch(inputs)
            if run_id is None:
                run_id = await self._find_run(nonce, self.settings.find_run_timeout_s)
            if run_id is None:
                raise LauncherError(
                    f"dispatched the workflow but no run named {RUN_NAME_PREFIX}{nonce} appeared within "
                    f"{self.settings.find_run_timeout_s:g} s"
                )
            await job.set_remote_ref(f"{prefix}run:{run_id}:{nonce}")
            await job.progress(ProgressEvent(phase=Phase.QUEUED, detail=f"waiting for a runner ({self.name})"))
        try:
            state = await self._wait(run_id, request, job)
        except asyncio.CancelledError:
            # The job was cancelled, its lease lost, or the worker stops: the run must not go on without us.
            await asyncio.shield(self._cancel(run_id))
            raise
        result = await self._fetch_result(state, nonce)
        await job.progress(ProgressEvent(phase=Phase.DONE, detail=result.verdict.label))
        return result

    async def check(self) -> str:
        repo_name = self._require()
        once: dict[str, Any] = dict(attempts=1, limit_s=self.settings.check_timeout_s)
        repo = self._client().get_repo(repo_name)
        workflow = repo.get_workflow(self.settings.workflow)
        state = await self._api(lambda: workflow.state, f"reading workflow {self.settings.workflow}", **once)
        if state != "active":
            raise LauncherError(f"workflow {self.settings.workflow} in {repo_name} is {state}: enable it on GitHub")
        try:
            runners = await self._api(lambda: self._runners(repo_name), "listing self-hosted runners", **once)
        except LauncherError as exc:
            return f"workflow {self.settings.workflow} in {repo_name} is active (runners not listed: {exc})"
        wanted = {label.casefold() for label in self.labels}
        online = [
            r for r in runners if r["status"] == "online" and wanted <= {x["name"].casefold() for x in r["labels"]}
        ]
        if not online:
            raise LauncherError(f"no self-hosted runner with labels {'+'.join(self.labels)} is online in {repo_name}")
        return f"workflow {self.settings.workflow} in {repo_name} is active; {len(online)} runner(s) online"

    # -- inputs -----------------------------------------------------------------------------------

    def run_budget_s(self, request: RunRequest) -> float:
        return request.time_limit_s() + self.settings.setup_margin_s

    def dispatch_inputs(self, request: RunRequest, nonce: str) -> dict[str, str]:
        """The workflow's inputs; ``ValueError`` with the limit when the request cannot travel in them."""
        raw = request.model_dump_json().encode()
        inputs = {
            "run_id": nonce,
            "runner_labels": json.dumps(["self-hosted", *self.labels]),
            "timeout_minutes": str(math.ceil(self.run_budget_s(request) / 60)),
            "request_sha256": payload.digest(raw),
            "request": payload.encode(raw),
        }
        size = sum(len(value) for value in inputs.values())
        if size > MAX_DISPATCH_INPUT_CHARS:
            raise ValueError(
                f"this submission is too large for the GitHub runner: compressed, the run request takes {size:,} "
                f"characters and a workflow dispatch carries at most {MAX_DISPATCH_INPUT_CHARS:,}; "
                "make the file smaller, or ask for a device served by another runner"
            )
        return inputs

    # -- steps ------------------------------------------------------------------------------------

    def _require(self) -> str:
        if self.settings.token is None:
            raise LauncherError("GITHUB_TOKEN is not set (a token with actions:write on GITHUB_REPO)")
        if not self.settings.repo:
            raise LauncherError("GITHUB_REPO is not set (owner/name of the repository with the workflow)")
        return self.settings.repo

    def _client(self) -> Github:
        if self._github is None:
            assert self.settings.token is not None
            self._github = Github(
                auth=Auth.Token(self.settings.token.get_secret_value()),
                base_url=self.settings.api_url,
                timeout=max(1, math.ceil(self.settings.http_timeout_s)),
                retry=None,  # retried here, with bounds; PyGithub's default sleeps out rate limits unbounded
                seconds_between_requests=None,
                seconds_between_writes=None,
                per_page=RUNS_PER_PAGE,
                lazy=True,
            )
        return self._github

    def _workflow(self) -> Any:
        return self._client().get_repo(self._require()).get_workflow(self.settings.workflow)

    def _runners(self, repo_name: str) -> list[dict[str, Any]]:
        _, data = self._client().requester.requestJsonAndCheck("GET", f"/repos/{repo_name}/actions/runners")
        return list(data.get("runners", []))

    async def _dispatch(self, inputs: dict[str, str]) -> int | None:
        workflow = self._workflow()
        answer = await self._api(
            lambda: workflow.create_dispatch(self.settings.ref, inputs, throw=True, return_run_details=True),
            f"dispatching {self.settings.workflow}",
            attempts=1,  # a dispatch that may have landed is never sent twice; the nonce search finds it
        )
        run_id = getattr(answer, "id", None)
        return int(run_id) if run_id is not None else None

    async def _find_run(self, nonce: str, limit_s: float) -> int | None:
        """The id of the run named for ``nonce``, or None if none appears within ``limit_s`` seconds."""
        workflow = self._workflow()
        since = (datetime.now(UTC) - timedelta(hours=6)).strftime("%Y-%m-%dT%H:%M:%SZ")
        title = RUN_NAME_PREFIX + nonce

        def look(page: int) -> tuple[int | None, bool]:
            """(the run's id if on this page, whether another page may follow)."""
            runs = workflow.get_runs(event="workflow_dispatch", created=f">={since}").get_page(page)
            for run in runs:
                if run.display_title == title:
                    return int(run.id), False
            return None, len(runs) >= RUNS_PER_PAGE

        deadline = time.monotonic() + limit_s
        interval = min(2.0, self.settings.poll_min_s)
        while True:
            found, more, page = None, True, 0
            while found is None and more and page < MAX_RUN_PAGES:  # newest first: ours is near the top
                found, more = await self._api(functools.partial(look, page), "looking for the dispatched run")
                page += 1
            if found is not None or time.monotonic() + interval > deadline:
                return found
            await asyncio.sleep(interval)
            interval = min(interval * 1.5, self.settings.poll_max_s)

    async def _wait(self, run_id: int, request: RunRequest, job: JobHandle) -> RunState:
        repo = self._client().get_repo(self._require())
        queued_until = time.monotonic() + self.settings.queue_timeout_s
        running_until: float | None = None
        interval = self.settings.poll_min_s
        while True:
            state = await self._api(lambda: _state(repo.get_workflow_run(run_id)), f"reading run {run_id}")
            if state.status == "completed":
                return state
            now = time.monotonic()
            if state.status in PENDING_STATUSES:
                if running_until is None and now > queued_until:
                    await self._cancel(run_id)
                    log.warning("GitHub run %s was never picked up; cancelled it: %s", run_id, state.html_url)
                    raise LauncherError(
                        f"no self-hosted runner with labels {'+'.join(self.labels)} took GitHub run {run_id} "
                        f"within {self.settings.queue_timeout_s:g} s; cancelled it"
                    )
            elif running_until is None:
                running_until = now + self.run_budget_s(request)
                # The run's address stays in the log: status text is public, and the runs repository is private.
                log.info("GitHub run %s started: %s", run_id, state.html_url)
                await job.progress(ProgressEvent(phase=Phase.STARTING, detail=f"running on GitHub (run {run_id})"))
            if running_until is not None and now > running_until:
                await self._cancel(run_id)
                log.warning("GitHub run %s overran; cancelled it: %s", run_id, state.html_url)
                raise LauncherError(
                    f"GitHub run {run_id} did not finish within {self.run_budget_s(request):g} s; cancelled it"
                )
            await asyncio.sleep(interval)
            interval = min(interval * 1.5, self.settings.poll_max_s)

    async def _cancel(self, run_id: int) -> None:
        path = f"/repos/{self._require()}/actions/runs/{run_id}/cancel"
        with contextlib.suppress(LauncherError):  # best effort: the job's own timeout-minutes ends it anyway
            requester = self._client().requester
            await self._api(lambda: requester.requestJsonAndCheck("POST", path), f"cancelling run {run_id}", attempts=2)

    async def _fetch_result(self, state: RunState, nonce: str | None) -> RunResult:
        if state.conclusion == "cancelled":
            log.warning("GitHub run %s was cancelled: %s", state.id, state.html_url)
            raise LauncherError(f"GitHub run {state.id} was cancelled")
        path = f"/repos/{self._require()}/actions/runs/{state.id}/artifacts"
        wanted = ARTIFACT_PREFIX + nonce if nonce else None

        def artifacts() -> list[tuple[str, str, int, bool]]:
            _, data = self._client().requester.requestJsonAndCheck("GET", path, parameters={"per_page": 100})
            try:
                return [
                    (a["name"], a["archive_download_url"], int(a["size_in_bytes"]), bool(a["expired"]))
                    for a in data.get("artifacts") or []
                ]
            except (KeyError, TypeError, ValueError, AttributeError):
                raise LauncherError(f"GitHub listed the artifacts of run {state.id} in an unknown shape") from None

        listed = await self._api(artifacts, f"listing the artifacts of run {state.id}")
        matches = [a for a in listed if (a[0] == wanted if wanted else a[0].startswith(ARTIFACT_PREFIX))]
        if not matches:
            log.warning("GitHub run %s ended without a result artifact: %s", state.id, state.html_url)
            raise LauncherError(f"GitHub run {state.id} ended ({state.conclusion}) without a result artifact")
        name, url, size, expired = matches[0]
        if expired:
            raise LauncherError(f"the result artifact of GitHub run {state.id} has expired")
        if size > self.settings.max_result_bytes:
            raise LauncherError(f"the result artifact of GitHub run {state.id} is {size} bytes, over the cap")
        token = self.settings.token.get_secret_value() if self.settings.token is not None else ""
        cap, timeout = self.settings.max_result_bytes, self.settings.http_timeout_s
        blob = await self._api(lambda: download_artifact(url, token, cap, timeout), f"downloading {name}")
        return parse_artifact(blob, state.id, cap)

    # -- one API call, bounded and retried ---------------------------------------------------------

    async def _api(
        self, fn: Callable[[], T], what: str, *, attempts: int | None = None, limit_s: float | None = None
    ) -> T:
        """One API call in a bounded thread, retried (the platform's retry policy) on 5xx, network errors and rate
        limits that reset soon enough; every failure that is left becomes a ``LauncherError`` that says what to do."""
        tries = attempts or self.settings.api_attempts
        bound = limit_s or (2 * self.settings.http_timeout_s + 5)
        max_rate_wait = self.settings.max_rate_limit_wait_s

        def worth_retrying(exc: BaseException) -> bool:
            if isinstance(exc, RateLimitExceededException):
                return rate_limit_wait(exc) <= max_rate_wait
            if isinstance(exc, BadCredentialsException | UnknownObjectException):
                return False
            if isinstance(exc, GithubException):
                return exc.status >= 500
            return isinstance(exc, CallTimeout | requests.RequestException)

        def wait_for(exc: BaseException, delay: float) -> float:
            return rate_limit_wait(exc) if isinstance(exc, RateLimitExceededException) else delay  # type: ignore[arg-type]

        policy = aretrying(
            retry_if=worth_retrying,
            what=f"GitHub ({what})",
            first_s=2 * RETRY_BASE_S,
            max_s=30.0,
            attempts=tries,
            wait_for=wait_for,
        )
        try:
            return await policy(call_blocking, fn, limit_s=bound, what=f"GitHub ({what})")
        except BadCredentialsException:
            raise LauncherError("GitHub rejected GITHUB_TOKEN (401): is it expired or revoked?") from None
        except RateLimitExceededException as exc:
            raise LauncherError(f"GitHub rate limit while {what}; it resets in {rate_limit_wait(exc):.0f} s") from None
        except UnknownObjectException:
            raise LauncherError(
                f"GitHub answered 404 while {what}: check GITHUB_REPO={self.settings.repo}, "
                f"GITHUB_WORKFLOW={self.settings.workflow} and that GITHUB_TOKEN can see them"
            ) from None
        except GithubException as exc:
            raise LauncherError(f"GitHub answered {exc.status} while {what}: {message_of(exc)}") from None
        except (CallTimeout, requests.RequestException) as exc:
            raise LauncherError(f"could not reach GitHub while {what}: {net_reason(exc)}") from None
