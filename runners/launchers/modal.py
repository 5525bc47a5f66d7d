"""The Modal launcher: runs a request on the deployed app's function for one GPU type.

It spawns the call (never blocking the event loop), stores the call id on the job before waiting, and a
restarted worker re-attaches to that call through ``job.remote_ref`` instead of starting another. Every
wait is bounded: the function's time limit comes from the request, and the launcher waits that plus a
start-up margin, cancelling the call when the bound passes. ``modal`` is imported only when used, so this
module (and its GPU table, which routing validates against) loads without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
from typing import Any

from pydantic import ValidationError

from runners.contract import Phase, ProgressEvent, RunRequest, RunResult
from runners.launchers.base import JobHandle, Launcher, LauncherError
from runners.launchers.blocking import CallTimeout, call_blocking
from runners.launchers.settings import ModalSettings
from runners.retry import aretrying

MODAL_GPUS = ("T4", "L4", "A100", "A100-80GB", "H100", "H200", "B200", "H100x2", "H100x8", "H200x2", "H200x8", "B200x8")
"""The GPU types the app deploys a function for (``runners/modal_app.py`` GPUS, checked by a test)."""

REF_PREFIX = "modal:"
ENTRY_MARGIN_S = 120.0
"""What the entry point may take beyond the harness's own limits (materialising files, system info)."""
FUNCTION_MARGIN_S = 60.0
"""What the Modal function may take beyond the entry point's limit (writing files, returning the result)."""
TIMEOUT_STEP_S = 300
"""Function time limits are rounded up to this, so that few ``with_options`` variants exist."""
MAX_TRANSIENT_ERRORS = 3
RETRY_BASE_S = 1.0
"""Back-off after a transient Modal error: 2, 4... times this."""


def modal_gpu_for(name: str, *, entry: str = "") -> str:
    """The canonical GPU type for ``name`` (case-insensitive); ``ValueError`` naming the choices otherwise."""
    for gpu in MODAL_GPUS:
        if gpu.casefold() == name.strip().casefold():
            return gpu
    where = f"entry {entry!r}: " if entry else ""
    raise ValueError(f"{where}Modal has no function for GPU {name!r}; expected one of {', '.join(MODAL_GPUS)}")


def function_name(gpu: str) -> str:
    return "run_" + gpu.lower().replace("-", "_")


def entry_timeout_s(request: RunRequest) -> float:
    return request.time_limit_s() + ENTRY_MARGIN_S


def function_timeout_s(request: RunRequest) -> int:
    raw = entry_timeout_s(request) + FUNCTION_MARGIN_S
    return int(math.ceil(raw / TIMEOUT_STEP_S) * TIMEOUT_STEP_S)


def _import_modal() -> Any:
    try:
        import modal
    except ImportError:
        raise LauncherError("the modal package is not installed: pip install 'kernelcup[modal]'") from None
    return modal


class ModalLauncher(Launcher):
    """Runs requests on Modal's ``run_<gpu>`` function of the app ``MODAL_APP_NAME``."""

    def __init__(self, settings: ModalSettings, gpu: str) -> None:
        self.settings = settings
        self.gpu = modal_gpu_for(gpu)
        self.name = f"modal:{self.gpu}"
        self.function_name = function_name(self.gpu)

    @property
    def wait_margin_s(self) -> float:
        """The longest this launcher waits beyond a request's compile + run limits (cold start, rounding)."""
        return ENTRY_MARGIN_S + FUNCTION_MARGIN_S + TIMEOUT_STEP_S + self.settings.startup_margin_s

    # -- the Launcher protocol -------------------------------------------------------------------

    async def run(self, request: RunRequest, job: JobHandle) -> RunResult:
        modal = _import_modal()
        client = await self._client(modal)
        budget = function_timeout_s(request) + self.settings.startup_margin_s
        ref = job.remote_ref
        if ref and ref.startswith(REF_PREFIX):
            call_id = ref.removeprefix(REF_PREFIX)
            call = await self._blocking(lambda: modal.FunctionCall.from_id(call_id, client=client), "re-attaching")
            await job.progress(ProgressEvent(phase=Phase.QUEUED, detail=f"re-attached to Modal call {call_id}"))
        else:
            call = await self._spawn(modal, client, request)
            await job.set_remote_ref(REF_PREFIX + call.object_id)
            await job.progress(ProgressEvent(phase=Phase.QUEUED, detail=f"started on Modal ({self.gpu})"))
        try:
            output = await self._wait(modal, call, budget)
        except asyncio.CancelledError:
            # The job was cancelled, its lease lost, or the worker stops: the call must not run on without us.
            await asyncio.shield(self._cancel(call))
            raise
        result = self._parse(output)
        await job.progress(ProgressEvent(phase=Phase.DONE, detail=result.verdict.label))
        return result

    async def check(self) -> str:
        modal = _import_modal()
        if not self._has_credentials(modal):
            raise LauncherError(
                "no Modal credentials: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or run `modal token new`"
            )
        timeout = self.settings.check_timeout_s
        try:
            client = await self._client(modal, limit_s=timeout)
            function = modal.Function.from_name(
                self.settings.app_name, self.function_name, environment_name=self.settings.environment, client=client
            )
            await call_blocking(function.hydrate, limit_s=timeout, what="Modal")
        except LauncherError as exc:
            raise LauncherError(f"could not reach Modal: {exc}") from None
        except modal.exception.NotFoundError:
            raise LauncherError(
                f"Modal app {self.settings.app_name!r} has no function {self.function_name}: deploy it with "
                "`modal deploy runners/modal_app.py` (MODAL_APP_NAME names the app)"
            ) from None
        except modal.exception.AuthError as exc:
            raise LauncherError(f"Modal refused the credentials (MODAL_TOKEN_ID/MODAL_TOKEN_SECRET): {exc}") from None
        except Exception as exc:
            raise LauncherError(f"could not reach Modal: {type(exc).__name__}: {exc}") from None
        return f"app {self.settings.app_name} function {self.function_name} is deployed"

    # -- steps ------------------------------------------------------------------------------------

    async def _blocking(self, fn: Any, what: str, limit_s: float | None = None) -> Any:
        try:
            return await call_blocking(fn, limit_s=limit_s or self.settings.rpc_timeout_s, what=f"Modal ({what})")
        except LauncherError:
            raise
        except Exception as exc:
            raise LauncherError(f"Modal failed while {what}: {type(exc).__name__}: {exc}") from exc

    def _has_credentials(self, modal: Any) -> bool:
        if self.settings.token_id and self.settings.token_secret:
            return True
        config = modal.config.config
        return bool(config.get("token_id") and config.get("token_secret"))

    async def _client(self, modal: Any, limit_s: float | None = None) -> Any:
        """A client for the tokens in our settings (which may come from .env); None: Modal's own profile."""
        token_id, token_secret = self.settings.token_id, self.settings.token_secret
        if not (token_id and token_secret):
            return None
        return await self._blocking(
            lambda: modal.Client.from_credentials(token_id.get_secret_value(), token_secret.get_secret_value()),
            "connecting",
            limit_s,
        )

    async def _spawn(self, modal: Any, client: Any, request: RunRequest) -> Any:
        limit = function_timeout_s(request)
        payload = request.model_dump_json()

        def spawn() -> Any:
            function = modal.Function.from_name(
                self.settings.app_name, self.function_name, environment_name=self.settings.environment, client=client
            )
            return function.with_options(timeout=limit).spawn(payload, entry_timeout_s(request))

        try:
            return await self._blocking(spawn, f"starting {self.function_name}")
        except LauncherError as exc:
            if isinstance(exc.__cause__, modal.exception.NotFoundError):
                raise LauncherError(
                    f"Modal app {self.settings.app_name!r} has no function {self.function_name}: "
                    "deploy it with `modal deploy runners/modal_app.py`"
                ) from exc
            raise

    async def _wait(self, modal: Any, call: Any, budget: float) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        transient = (
            modal.exception.ConnectionError,
            modal.exception.InternalError,
            modal.exception.ServiceError,
            CallTimeout,
        )
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                await self._cancel(call)
                raise LauncherError(
                    f"the Modal call {call.object_id} ({self.gpu}) gave no result within {budget:g} s; cancelled it"
                )
            step = min(self.settings.poll_s, remaining)
            # One poll, retried on transient errors (the platform's retry policy); "not ready yet" ends the poll.
            poll = aretrying(
                retry_if=lambda exc: isinstance(exc, transient),
                what=f"Modal call {call.object_id}",
                first_s=2 * RETRY_BASE_S,
                max_s=float("inf"),
                attempts=MAX_TRANSIENT_ERRORS,
                wait_for=lambda _exc, delay: min(delay, max(0.0, deadline - loop.time())),
            )
            try:
                return await poll(
                    call_blocking,
                    functools.partial(call.get, timeout=step),
                    limit_s=step + self.settings.rpc_timeout_s,
                    what="Modal",
                )
            except transient as exc:
                raise LauncherError(f"Modal is unreachable ({MAX_TRANSIENT_ERRORS} tries): {exc}") from None
            except modal.exception.OutputExpiredError:
                raise LauncherError(f"the Modal call {call.object_id} was lost (its output expired)") from None
            except modal.exception.FunctionTimeoutError:
                raise LauncherError(f"the Modal call {call.object_id} hit its time limit") from None
            except modal.exception.Error as exc:
                raise LauncherError(f"the Modal call {call.object_id} failed: {type(exc).__name__}: {exc}") from None
            except TimeoutError:  # not ready yet (the builtin, raised by FunctionCall.get)
                continue
            except Exception as exc:  # the function raised: the entry point crashed or overran
                raise LauncherError(f"the Modal call {call.object_id} failed: {type(exc).__name__}: {exc}") from None

    async def _cancel(self, call: Any) -> None:
        with contextlib.suppress(Exception):  # best effort: the call's own time limit ends it anyway
            await call_blocking(
                lambda: call.cancel(terminate_containers=True), limit_s=self.settings.rpc_timeout_s, what="Modal"
            )

    def _parse(self, output: Any) -> RunResult:
        try:
            if isinstance(output, dict):
                return RunResult.model_validate(output)
            if isinstance(output, str | bytes):
                return RunResult.model_validate_json(output)
        except ValidationError as exc:
            raise LauncherError(f"the Modal call returned a malformed result: {exc.error_count()} errors") from None
        raise LauncherError(f"the Modal call returned {type(output).__name__}, not a result")
