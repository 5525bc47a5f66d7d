"""The Modal launcher against a patched Modal function handle, and the app module built offline."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import threading
import time
from pathlib import Path

import modal  # a dev dependency: these tests must run, never skip
import pytest

from runners.contract import Verdict
from runners.devices import device_gpus
from runners.launchers import modal as modal_launcher
from runners.launchers.base import Launcher, LauncherError
from runners.launchers.modal import MODAL_GPUS, ModalLauncher, entry_timeout_s, function_timeout_s
from runners.launchers.settings import ModalSettings

NOT_READY = TimeoutError  # what FunctionCall.get(timeout=...) raises while the call runs


class FakeCall:
    """Stands in for ``modal.FunctionCall``: answers ``get`` from a script of outcomes (the last repeats)."""

    def __init__(self, object_id: str, outcomes: list[object], job=None) -> None:
        self.object_id = object_id
        self.outcomes = list(outcomes)
        self.job = job
        self.gets = 0
        self.refs_at_first_get: list[str] | None = None
        self.cancelled = False

    def get(self, timeout: float | None = None) -> object:
        if self.refs_at_first_get is None and self.job is not None:
            self.refs_at_first_get = list(self.job.refs)
        self.gets += 1
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, type) and issubclass(outcome, BaseException):
            outcome = outcome()
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome == "hang":
            time.sleep(timeout or 0)
            raise TimeoutError()
        return outcome

    def cancel(self, terminate_containers: bool = False) -> None:
        self.cancelled = terminate_containers


class FakeFunction:
    def __init__(self, call: FakeCall, spawn_error: BaseException | None = None) -> None:
        self.call = call
        self.spawn_error = spawn_error
        self.options: dict[str, object] = {}
        self.spawned: list[tuple[object, ...]] = []
        self.hydrated = False

    def with_options(self, **options: object) -> FakeFunction:
        self.options.update(options)
        return self

    def spawn(self, *args: object) -> FakeCall:
        if self.spawn_error is not None:
            raise self.spawn_error
        self.spawned.append(args)
        return self.call

    def hydrate(self) -> FakeFunction:
        if self.spawn_error is not None:
            raise self.spawn_error
        self.hydrated = True
        return self


@pytest.fixture
def patched(monkeypatch: pytest.MonkeyPatch):
    """Patch Modal's handles; returns a function that installs a FakeFunction and records look-ups."""
    seen: dict[str, object] = {}

    def install(function: FakeFunction, calls: dict[str, FakeCall] | None = None) -> dict[str, object]:
        def from_name(app_name: str, name: str, *, environment_name=None, client=None):
            seen["from_name"] = (app_name, name, environment_name)
            return function

        def from_id(call_id: str, client=None):
            seen["from_id"] = call_id
            return (calls or {})[call_id]

        monkeypatch.setattr(modal.Function, "from_name", staticmethod(from_name))
        monkeypatch.setattr(modal.FunctionCall, "from_id", staticmethod(from_id))
        return seen

    return install


def settings(**overrides: object) -> ModalSettings:
    base: dict[str, object] = dict(poll_s=0.01, rpc_timeout_s=2.0, startup_margin_s=30.0, check_timeout_s=0.5)
    base.update(overrides)
    return ModalSettings(_env_file=None, **base)


def test_launcher_satisfies_the_protocol() -> None:
    launcher = ModalLauncher(settings(), gpu="h100")
    assert isinstance(launcher, Launcher)
    assert launcher.name == "modal:H100"
    assert launcher.function_name == "run_h100"


def test_unknown_gpu_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="H100"):
        ModalLauncher(settings(), gpu="H800")


def test_spawns_the_gpu_function_stores_the_call_id_then_polls_until_done(
    patched, job, make_request, make_result
) -> None:
    request = make_request()
    call = FakeCall("fc-123", [NOT_READY, NOT_READY, make_result().model_dump_json()], job=job)
    function = FakeFunction(call)
    seen = patched(function)

    result = asyncio.run(ModalLauncher(settings(), gpu="H100").run(request, job))

    assert result.verdict is Verdict.ACCEPTED
    assert seen["from_name"] == ("kernelcup-runners", "run_h100", None)
    assert function.spawned == [(request.model_dump_json(), entry_timeout_s(request))]
    assert job.refs == ["modal:fc-123"]
    assert call.refs_at_first_get == ["modal:fc-123"], "the call id must be stored before waiting on it"
    assert call.gets == 3


def test_function_time_limit_comes_from_the_request_with_the_entry_limit_inside(patched, job, make_request) -> None:
    from runners.contract import Limits

    request = make_request(limits=Limits(compile_timeout_s=100, run_timeout_s=1000))
    function = FakeFunction(FakeCall("fc-1", ['{"verdict": "accepted", "mode": "test"}']))
    patched(function)
    asyncio.run(ModalLauncher(settings(), gpu="A100").run(request, job))

    limit = function.options["timeout"]
    assert limit == function_timeout_s(request)
    assert limit % 300 == 0
    assert 1100 < entry_timeout_s(request) < limit <= 1100 + 600


def test_restarted_worker_reattaches_to_the_stored_call(patched, make_job, make_request, make_result) -> None:
    job = make_job(remote_ref="modal:fc-old")
    old = FakeCall("fc-old", [make_result(Verdict.WRONG_ANSWER).model_dump_json()])
    function = FakeFunction(FakeCall("fc-new", [NOT_READY]))
    seen = patched(function, calls={"fc-old": old})

    result = asyncio.run(ModalLauncher(settings(), gpu="H100").run(make_request(), job))

    assert result.verdict is Verdict.WRONG_ANSWER
    assert seen["from_id"] == "fc-old"
    assert function.spawned == [], "a re-attached job must not start a second call"
    assert job.refs == []


def test_a_reference_of_another_launcher_starts_a_fresh_call(patched, make_job, make_request, make_result) -> None:
    job = make_job(remote_ref="github:kernelcup/kernelcup:run:77")
    function = FakeFunction(FakeCall("fc-2", [make_result().model_dump_json()]))
    patched(function)
    asyncio.run(ModalLauncher(settings(), gpu="H100").run(make_request(), job))
    assert len(function.spawned) == 1
    assert job.refs == ["modal:fc-2"]


def test_timeout_cancels_the_call_and_raises(patched, job, make_request, monkeypatch) -> None:
    monkeypatch.setattr(modal_launcher, "function_timeout_s", lambda request: 0)
    call = FakeCall("fc-slow", [NOT_READY])
    patched(FakeFunction(call))
    started = time.monotonic()
    with pytest.raises(LauncherError, match="no result within"):
        asyncio.run(ModalLauncher(settings(startup_margin_s=0.2), gpu="T4").run(make_request(), job))
    assert time.monotonic() - started < 5
    assert call.cancelled, "the remote call must be cancelled (containers terminated) on timeout"


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        (RuntimeError("the runner entry point exited 1 without a result"), "exited 1 without a result"),
        (modal.exception.OutputExpiredError(), "lost"),
        (modal.exception.FunctionTimeoutError("deadline"), "time limit"),
        (modal.exception.RemoteError("container crashed"), "container crashed"),
        ("this is not json", "malformed result"),
        ('{"verdict": "accepted"}', "malformed result"),
        (42, "not a result"),
    ],
)
def test_remote_failures_and_malformed_results_are_launcher_errors(
    patched, job, make_request, outcome, message
) -> None:
    patched(FakeFunction(FakeCall("fc-x", [NOT_READY, outcome])))
    with pytest.raises(LauncherError, match=message):
        asyncio.run(ModalLauncher(settings(), gpu="L4").run(make_request(), job))


def test_a_passing_network_blip_is_retried(patched, job, make_request, make_result, monkeypatch) -> None:
    monkeypatch.setattr(modal_launcher, "RETRY_BASE_S", 0.01)
    blip = modal.exception.ConnectionError("reset")
    patched(FakeFunction(FakeCall("fc-b", [blip, NOT_READY, make_result().model_dump_json()])))
    result = asyncio.run(ModalLauncher(settings(), gpu="L4").run(make_request(), job))
    assert result.passed


def test_a_lasting_outage_is_a_launcher_error(patched, job, make_request, monkeypatch) -> None:
    monkeypatch.setattr(modal_launcher, "RETRY_BASE_S", 0.01)
    patched(FakeFunction(FakeCall("fc-o", [modal.exception.ConnectionError("down")])))
    with pytest.raises(LauncherError, match="unreachable"):
        asyncio.run(ModalLauncher(settings(), gpu="L4").run(make_request(), job))


def test_a_hanging_spawn_is_bounded(patched, job, make_request) -> None:
    class Hanging(FakeFunction):
        def spawn(self, *args: object) -> FakeCall:
            threading.Event().wait(30)
            raise AssertionError("unreachable")

    patched(Hanging(FakeCall("fc-h", [NOT_READY])))
    started = time.monotonic()
    with pytest.raises(LauncherError, match="did not answer"):
        asyncio.run(ModalLauncher(settings(rpc_timeout_s=0.2), gpu="L4").run(make_request(), job))
    assert time.monotonic() - started < 5
    assert job.refs == []


def test_an_undeployed_app_says_how_to_deploy(patched, job, make_request) -> None:
    patched(FakeFunction(FakeCall("x", [NOT_READY]), spawn_error=modal.exception.NotFoundError("no such app")))
    with pytest.raises(LauncherError, match=r"modal deploy runners/modal_app\.py"):
        asyncio.run(ModalLauncher(settings(), gpu="B200").run(make_request(), job))


def test_check_without_credentials_names_the_settings(monkeypatch) -> None:
    monkeypatch.setattr(modal.config.config, "get", lambda *args, **kwargs: None)
    with pytest.raises(LauncherError, match="MODAL_TOKEN_ID"):
        asyncio.run(ModalLauncher(settings(), gpu="H100").check())


def test_check_reports_a_deployed_function(patched, monkeypatch) -> None:
    monkeypatch.setattr(modal.Client, "from_credentials", staticmethod(lambda token_id, secret: object()))
    function = FakeFunction(FakeCall("x", [NOT_READY]))
    patched(function)
    message = asyncio.run(ModalLauncher(settings(token_id="ak-1", token_secret="as-1"), gpu="H100").check())
    assert "run_h100" in message and "deployed" in message
    assert function.hydrated


def test_check_reports_a_missing_deploy(patched, monkeypatch) -> None:
    monkeypatch.setattr(modal.Client, "from_credentials", staticmethod(lambda token_id, secret: object()))
    patched(FakeFunction(FakeCall("x", [NOT_READY]), spawn_error=modal.exception.NotFoundError("nope")))
    with pytest.raises(LauncherError, match="modal deploy"):
        asyncio.run(ModalLauncher(settings(token_id="ak-1", token_secret="as-1"), gpu="H100").check())


def test_check_without_network_says_so_quickly(monkeypatch) -> None:
    """The real Modal client, with sockets blocked by the test suite: a bounded, readable failure."""
    started = time.monotonic()
    with pytest.raises(LauncherError, match="could not reach Modal"):
        asyncio.run(ModalLauncher(settings(token_id="ak-1", token_secret="as-1"), gpu="H100").check())
    assert time.monotonic() - started < 5


# -- the app module ---------------------------------------------------------------------------------------


def test_app_module_builds_offline_with_one_exact_gpu_function_per_type() -> None:
    from runners import modal_app

    assert isinstance(modal_app.build_image(), modal.Image)
    assert set(modal_app.GPUS) == set(MODAL_GPUS)
    for gpu in MODAL_GPUS:
        function = getattr(modal_app, modal_launcher.function_name(gpu))
        assert isinstance(function, modal.Function)
        # Modal keeps the decorator's GPU request on the function spec; exact means no upgrade suffixes.
        assert function._spec_.gpus == modal_app.GPUS[gpu]
        # the baselines' cache is shared by the single-use containers (a Volume), named to the entry by a setting
        (path, volume), *_ = function._spec_.volumes.items()
        assert path == modal_app.BASELINE_CACHE_DIR and repr(volume) == repr(modal_app.BASELINE_CACHE)
        assert f"{modal_app.APP_NAME}-baselines" in repr(volume)
    assert modal_app.GPUS["H100"] == "H100!", "a bare H100 request may be upgraded to an H200"
    assert modal_app.GPUS["A100"] == "A100-40GB"
    assert not modal_app.GPUS["B200"].endswith("+")
    for gpu in MODAL_GPUS:  # a counted device is a container of exactly that many GPUs (Modal's "TYPE:COUNT")
        count = device_gpus(gpu)
        assert modal_app.GPUS[gpu].endswith(f":{count}") if count > 1 else ":" not in modal_app.GPUS[gpu]
    assert modal_app.GPUS["H100x8"].startswith("H100!"), "no upgrade of a counted H100 either"


def test_a_counted_device_is_routed_only_to_a_modal_function_of_as_many_gpus() -> None:
    from runners.routing import parse_routes

    (route,) = parse_routes("H100x2=modal")
    assert route.target == "H100x2"
    with pytest.raises(ValueError, match=r"H100x8 runs 8 rank.*for H100 has 1 GPU.*H100x8=modal:H100x8"):
        parse_routes("H100x8=modal:H100")
    with pytest.raises(ValueError, match="Modal has no function for GPU 'H100x4'"):
        parse_routes("H100x4=modal")


def test_image_carries_the_runner_and_the_kernel_libraries() -> None:
    from runners import modal_app

    assert modal_app.RUNNERS_DIR.joinpath("entry.py").parent.is_dir()
    assert "devel" in modal_app.CUDA_BASE_IMAGE, "nvcc comes with the CUDA devel image"
    source = Path(modal_app.__file__).read_text()
    for needle in ("NVIDIA/cutlass", "HazyResearch/ThunderKittens", "torch==", "runners.entry"):
        assert needle in source


def test_the_images_pytorch_is_the_one_ci_tests_the_dsl_pins_with() -> None:
    """The Python DSLs follow PyTorch's internals closely (Helion 1.5.1 needs a torch newer than 2.11): the image
    pins the PyTorch that `make setup` installs, with which CI runs the Helion solutions, and the DSL pins of
    pyproject.toml's 'dsl' extra."""
    import re
    import tomllib

    from runners import modal_app

    root = Path(modal_app.__file__).resolve().parents[1]
    makefile = (root / "Makefile").read_text()
    setup_torch = re.search(r"^TORCH_SPEC \?= (\S+)$", makefile, re.M)
    assert setup_torch and setup_torch.group(1) == modal_app.TORCH_SPEC
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert sorted(modal_app.DSL_SPECS) == sorted(extras["dsl"])


def _fake_runner(tmp_path: Path, body: str) -> Path:
    package = tmp_path / "runners"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "entry.py").write_text(textwrap.dedent(body))
    return tmp_path


def test_function_body_runs_python_m_runners_entry(tmp_path: Path) -> None:
    from runners import modal_app

    root = _fake_runner(
        tmp_path,
        """
        import json, sys
        assert sys.argv[1] == "--require-sandbox", sys.argv  # Modal never runs a submission unsandboxed
        request = json.load(open(sys.argv[2]))
        open(sys.argv[3], "w").write(json.dumps({"verdict": "accepted", "mode": request["mode"]}))
        """,
    )
    out = modal_app.run_entry('{"mode": "benchmark"}', 30, python=sys.executable, cwd=str(root))
    assert out == '{"verdict": "accepted", "mode": "benchmark"}'


def test_function_body_raises_when_the_entry_point_writes_nothing(tmp_path: Path) -> None:
    from runners import modal_app

    root = _fake_runner(tmp_path, "import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n")
    with pytest.raises(RuntimeError, match="exited 3 without a result: boom"):
        modal_app.run_entry("{}", 30, python=sys.executable, cwd=str(root))


def test_function_body_bounds_the_entry_point(tmp_path: Path) -> None:
    from runners import modal_app

    root = _fake_runner(tmp_path, "import time\ntime.sleep(30)\n")
    with pytest.raises(RuntimeError, match="overran"):
        modal_app.run_entry("{}", 0.5, python=sys.executable, cwd=str(root))


def test_cancelling_the_launcher_cancels_the_remote_call(patched, job, make_request) -> None:
    """Issue 11: a job cancelled, its lease lost or its worker stopped must not leave its Modal call running."""
    call = FakeCall("fc-cancel", [NOT_READY])
    patched(FakeFunction(call))

    async def main() -> None:
        task = asyncio.create_task(ModalLauncher(settings(), gpu="H100").run(make_request(), job))
        for _ in range(500):  # until the launcher waits on the call
            if call.gets:
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert call.cancelled, "the remote call must be cancelled (containers terminated) when the launcher is"
