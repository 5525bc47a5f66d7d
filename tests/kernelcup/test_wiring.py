"""The composition root reads every setting at start: a bad launcher setting stops `kernelcup worker` (and the
bot's and the API's in-process worker) before any job is claimed, with the variable named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelcup import wiring
from kernelcup.cli import build_app
from kernelcup.settings import SettingsError, load
from leaderboards.settings import CoreSettings
from leaderboards.worker import WorkerSettings
from runners.launchers.local import LocalLauncher
from runners.launchers.modal import ModalLauncher


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("DATABASE_URL", "KERNELCUP_DATABASE_URL", "KERNELCUP_ROUTES"):
        monkeypatch.delenv(var, raising=False)
    for var in ("MODAL_POLL_S", "MODAL_APP_NAME", "GITHUB_REPO", "GITHUB_TOKEN", "GITHUB_POLL_MIN_S"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)  # the .env of each test is its own
    return tmp_path


def worker(*args: str):
    return CliRunner().invoke(build_app(), ["worker", "--once", *args])


def test_a_bad_modal_setting_stops_the_worker_at_start_naming_it(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCUP_ROUTES", "H100=modal:H100,cpu=local")
    monkeypatch.setenv("MODAL_POLL_S", "-1")
    result = worker()
    assert result.exit_code == 1, result.output
    assert "MODAL_POLL_S" in result.output and "greater than 0" in result.output
    assert "Traceback" not in result.output


def test_a_bad_setting_in_dot_env_is_read_and_named_too(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (env / ".env").write_text("KERNELCUP_ROUTES=NVIDIA=github:gpu-nvidia\nGITHUB_REPO=not a repo\n")
    result = worker()
    assert result.exit_code == 1, result.output
    assert "GITHUB_REPO" in result.output and "owner/name" in result.output


def test_launchers_no_route_uses_are_not_read(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCUP_ROUTES", "*=local")
    monkeypatch.setenv("MODAL_POLL_S", "-1")  # nothing routes to Modal: its settings do not matter
    result = worker()
    assert result.exit_code == 0, result.output


def test_the_in_process_worker_of_the_bot_and_the_api_fails_the_same_way(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELCUP_ROUTES", "H100=modal:H100")
    monkeypatch.setenv("MODAL_STARTUP_MARGIN_S", "soon")
    with wiring.open_platform(load(CoreSettings)) as platform, pytest.raises(SettingsError, match="MODAL_STARTUP"):
        wiring.serving_worker(platform, devices=(), launcher="routed", settings=WorkerSettings(_env_file=None))


def test_the_routed_launchers_get_the_settings_read_at_start(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCUP_ROUTES", "H100=modal:H100,cpu=local")
    monkeypatch.setenv("MODAL_APP_NAME", "read-at-start")
    launcher_for = wiring.launcher_for("routed")
    monkeypatch.setenv("MODAL_APP_NAME", "changed-later")  # launchers built later read nothing themselves
    modal = launcher_for("H100")
    assert isinstance(modal, ModalLauncher) and modal.settings.app_name == "read-at-start"
    assert isinstance(launcher_for("cpu"), LocalLauncher)


def test_runners_check_shows_a_bad_launcher_setting_as_a_failed_row(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCUP_ROUTES", "NVIDIA=github:gpu")
    monkeypatch.setenv("GITHUB_POLL_MIN_S", "-1")
    result = CliRunner().invoke(build_app(), ["runners", "check", "--json", "--no-job"])
    assert result.exit_code == 1, result.output
    (row,) = json.loads(result.output)
    assert not row["ok"] and "GITHUB_POLL_MIN_S" in row["message"]


def test_the_loader_names_an_aliased_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNELCUP_ROUTES", "H100")
    with pytest.raises(SettingsError, match=r"setting KERNELCUP_ROUTES is invalid: entry 'H100' is not DEVICE="):
        load(wiring.RoutingSettings, _env_file=None)
