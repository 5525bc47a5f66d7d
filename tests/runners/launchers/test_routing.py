"""Routing: the KERNELCUP_ROUTES setting, the router built from it, and its bounded checks."""

from __future__ import annotations

import asyncio
import time

import pytest
from pydantic import ValidationError

from runners.launchers.base import LauncherError
from runners.launchers.fake import FakeLauncher
from runners.launchers.github import GithubLauncher
from runners.launchers.modal import ModalLauncher
from runners.launchers.settings import GithubSettings, LauncherSettings, ModalSettings
from runners.routing import DEFAULT_ROUTES, Route, Router, RoutingSettings, build_router, parse_routes
from runners.settings import RunnerSettings


def stub_factory(built: list[Route] | None = None, check: object = "ready"):
    """Routes -> the shipped fake launcher, named after the route; its check says ``check``, raises it (an
    exception) or hangs (``"hang"``)."""

    def factory(route: Route) -> FakeLauncher:
        if built is not None:
            built.append(route)
        if isinstance(check, BaseException):
            return FakeLauncher(name=route.launcher_name, check_error=check)
        if check == "hang":
            return FakeLauncher(name=route.launcher_name, check_delay_s=3600)
        return FakeLauncher(name=route.launcher_name, ready=str(check))

    return factory


def no_settings() -> LauncherSettings:
    """The local runner's defaults only: the stub factories read nothing."""
    return LauncherSettings({"local": RunnerSettings(_env_file=None)})


def stub_router(text: str, **checks: object) -> Router:
    return build_router(
        RoutingSettings(_env_file=None, KERNELCUP_ROUTES=text),
        no_settings(),
        overrides={kind: stub_factory(check=checks.get(kind, "ready")) for kind in ("local", "modal", "github")},
    )


def test_the_example_setting_parses_into_the_table() -> None:
    routes = parse_routes("H100=modal:H100, A100=modal:a100 ,NVIDIA=github:gpu-nvidia,cpu=local")
    assert [str(r) for r in routes] == ["H100=modal:H100", "A100=modal:A100", "NVIDIA=github:gpu-nvidia", "cpu=local"]


def test_default_runs_everything_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KERNELCUP_ROUTES", raising=False)
    settings = RoutingSettings(_env_file=None)
    assert settings.routes == DEFAULT_ROUTES == "*=local"
    router = build_router(settings, no_settings(), overrides={"local": stub_factory()})
    assert router.launcher_for("H100").name == "local"
    assert router.launcher_for("cpu").name == "local"


def test_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCUP_ROUTES", "H100=modal,L4=github")
    assert [r.launcher_name for r in RoutingSettings(_env_file=None).table] == ["modal:H100", "github:l4"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("H100", "not DEVICE=LAUNCHER"),
        ("H100=", "not DEVICE=LAUNCHER"),
        ("H100=slurm:x", "unknown launcher 'slurm'"),
        ("cpu=local:x", "takes no target"),
        ("H100=modal:H999", "no function for GPU 'H999'; expected one of T4, L4, A100"),
        ("MI300=modal", "no function for GPU 'MI300'"),
        ("*=github", "needs a runner label"),
        ("x=github:a+", "LABEL"),
        ("H100=modal,h100=local", "routed twice"),
        (" , ", "no routes"),
    ],
)
def test_a_bad_setting_says_which_entry_and_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_routes(text)
    with pytest.raises(ValidationError, match=message):
        RoutingSettings(_env_file=None, KERNELCUP_ROUTES=text)


def test_devices_match_case_insensitively_and_star_catches_the_rest() -> None:
    router = stub_router("H100=modal:H100,*=github:gpu-nvidia")
    assert router.launcher_for("h100").name == "modal:H100"
    assert router.launcher_for("A100").name == "github:gpu-nvidia"


def test_an_unrouted_device_is_refused_naming_the_setting() -> None:
    router = stub_router("H100=modal:H100,cpu=local")
    with pytest.raises(LauncherError, match=r"'MI300X'.*routed: H100, cpu.*KERNELCUP_ROUTES"):
        router.launcher_for("MI300X")


def test_launchers_are_built_on_first_use_and_shared_between_routes_alike() -> None:
    built: list[Route] = []
    router = build_router(
        RoutingSettings(_env_file=None, KERNELCUP_ROUTES="H100=modal:H100,H100-SXM=modal:H100,B200=modal"),
        no_settings(),
        overrides={"modal": stub_factory(built)},
    )
    assert built == [], "nothing is built (or connected) until a device is asked for"
    first = router.launcher_for("H100")
    assert router.launcher_for("H100-SXM") is first
    assert router.launcher_for("B200") is not first
    assert [r.launcher_name for r in built] == ["modal:H100", "modal:B200"]


def test_default_factories_build_the_real_launchers_from_the_settings_given() -> None:
    modal_settings = ModalSettings(_env_file=None, app_name="my-app")
    github_settings = GithubSettings(_env_file=None, repo="kernelcup/runs")
    router = build_router(
        RoutingSettings(_env_file=None, KERNELCUP_ROUTES="H100=modal,AMD=github:gpu-amd+mi300"),
        LauncherSettings({"modal": modal_settings, "github": github_settings}),
    )
    modal = router.launcher_for("H100")
    github = router.launcher_for("AMD")
    assert isinstance(modal, ModalLauncher) and modal.function_name == "run_h100"
    assert modal.settings is modal_settings, "the launcher reads nothing itself: it gets the composition root's"
    assert isinstance(github, GithubLauncher) and github.labels == ["gpu-amd", "mi300"]
    assert github.settings is github_settings


def test_a_route_whose_launcher_settings_were_not_given_is_a_launcher_error_naming_them() -> None:
    router = build_router(RoutingSettings(_env_file=None, KERNELCUP_ROUTES="NVIDIA=github:gpu"), no_settings())
    with pytest.raises(LauncherError, match=r"NVIDIA=github:gpu needs the GITHUB_\* settings"):
        router.launcher_for("NVIDIA")


def test_check_reports_every_route_and_never_raises() -> None:
    router = stub_router(
        "H100=modal:H100,NVIDIA=github:gpu-nvidia,cpu=local",
        modal=LauncherError("no Modal credentials: set MODAL_TOKEN_ID"),
        github=RuntimeError("boom"),
    )
    rows = asyncio.run(router.check(limit_s=2))
    assert [(r.route.device, r.ok) for r in rows] == [("H100", False), ("NVIDIA", False), ("cpu", True)]
    assert "MODAL_TOKEN_ID" in rows[0].message
    assert rows[1].message == "boom"
    assert rows[2].message == "ready"


def test_a_hanging_check_is_cut_off_and_says_so() -> None:
    router = stub_router("H100=modal:H100,cpu=local", modal="hang")
    started = time.monotonic()
    rows = asyncio.run(router.check(limit_s=0.3))
    assert time.monotonic() - started < 5
    assert not rows[0].ok and "no answer within 0.3 s" in rows[0].message
    assert rows[1].ok, "one slow launcher does not hold up the others"
