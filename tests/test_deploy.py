"""The deployment files of docs/deploy.md, checked as a linter would (Docker and systemd do not run here): compose.yaml
and the systemd units start real `kernelcup` commands with real options, every environment variable they and
.env.example name is one the settings models read, and the image's health check asks /readyz on the port the web
service listens on."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.settings_doc import env_names, settings_models

REPO = Path(__file__).resolve().parents[1]
COMPOSE = REPO / "compose.yaml"
UNITS = sorted((REPO / "deploy" / "systemd").glob("*.service"))
POSTGRES_IMAGE_ONLY = {"POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD"}
"""Read by the postgres image and by compose.yaml's own ${...} interpolation, not by kernelcup."""


def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))


def known_settings() -> set[str]:
    return set().union(*(env_names(model) for _, _, model in settings_models()))


def kernelcup_services() -> dict[str, dict[str, Any]]:
    return {name: s for name, s in compose()["services"].items() if s.get("image", "").startswith("kernelcup")}


def help_of(args: list[str]) -> tuple[int, str]:
    """``kernelcup ARGS --help`` in-process: exit 0 only for a real command whose option names all exist."""
    result = CliRunner().invoke(build_app(), [*args, "--help"])
    return result.exit_code, result.output


def test_compose_has_the_database_the_web_server_a_worker_and_the_bot() -> None:
    services = compose()["services"]
    assert {"db", "migrate", "web", "worker", "bot"} <= set(services)
    assert services["db"]["image"].startswith("postgres:")
    commands = {name: s["command"][0] for name, s in kernelcup_services().items()}
    assert commands == {"migrate": "db", "web": "serve", "worker": "worker", "bot": "bot"}
    for name in ("web", "worker", "bot"):  # nothing starts before the schema is current
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["web"]["ports"] == ["127.0.0.1:8000:8000"]  # only the TLS proxy reaches it


@pytest.mark.parametrize("service", ["migrate", "web", "worker", "bot"])
def test_each_compose_command_is_a_real_kernelcup_command(service: str) -> None:
    command = kernelcup_services()[service]["command"]
    code, output = help_of(command)
    assert code == 0, f"compose.yaml's {service}: `kernelcup {' '.join(command)}` is refused:\n{output}"


def test_a_misspelt_command_or_option_would_be_caught() -> None:
    assert help_of(["serve", "--hots", "0.0.0.0"])[0] != 0
    assert help_of(["wroker"])[0] != 0


def test_compose_and_env_example_name_only_settings_kernelcup_reads() -> None:
    known = known_settings()
    named = set()
    for service in kernelcup_services().values():
        named |= set(service.get("environment", {}))
    example = (REPO / ".env.example").read_text(encoding="utf-8")
    named |= set(re.findall(r"^#? ?([A-Z][A-Z0-9_]*)=", example, flags=re.MULTILINE))
    unknown = named - known - POSTGRES_IMAGE_ONLY
    assert not unknown, f"not a setting of any settings model: {sorted(unknown)}"
    assert {"DATABASE_URL", "KERNELCUP_ROUTES", "DISCORD_TOKEN", "KERNELCUP_API_PUBLIC_URL"} <= named


def test_the_image_checks_readyz_on_the_port_the_web_service_listens_on() -> None:
    dockerfile = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text(encoding="utf-8"))
    [check] = [line for line in dockerfile.splitlines() if line.startswith("HEALTHCHECK")]
    web = kernelcup_services()["web"]["command"]
    port = web[web.index("--port") + 1]
    assert f"http://127.0.0.1:{port}/readyz" in check
    for name in ("worker", "bot", "migrate"):  # they serve no HTTP: the image's /readyz check is not theirs
        health = kernelcup_services()[name]["healthcheck"]
        assert health.get("disable") or health["test"] == ["CMD", "kernelcup", "version"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_each_systemd_unit_runs_real_kernelcup_commands(unit: Path) -> None:
    lines = unit.read_text(encoding="utf-8").splitlines()
    execs = [line.split("=", 1)[1] for line in lines if line.startswith(("ExecStart=", "ExecStartPre="))]
    assert execs, f"{unit.name} starts nothing"
    for line in execs:
        program, *args = shlex.split(line)
        assert program.endswith("/bin/kernelcup"), line
        code, output = help_of(args)
        assert code == 0, f"{unit.name}: `kernelcup {' '.join(args)}` is refused:\n{output}"
    assert "[Install]" in lines and any(line.startswith("Restart=") for line in lines)
    settings = [line.split("=", 1)[1].split("=", 1)[0] for line in lines if line.startswith("Environment=")]
    assert set(settings) <= known_settings()


def test_units_exist_for_the_web_server_a_worker_and_the_bot() -> None:
    assert {u.name for u in UNITS} == {"kernelcup-web.service", "kernelcup-worker.service", "kernelcup-bot.service"}


@pytest.mark.parametrize("doc", ["docs/deploy.md", "README.md"])
def test_the_documented_kernelcup_commands_exist(doc: str) -> None:
    """Every `kernelcup ...` line in the runbook's and the README's shell blocks names a real command (up to its first
    argument), with real options up to there."""
    text = (REPO / doc).read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    paths = set()
    for line in "\n".join(blocks).splitlines():
        words = line.split("#", 1)[0].split()
        if words[:1] == ["kernelcup"]:
            path = []
            for word in words[1:]:
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                path.append(word)
            paths.add(tuple(path))
    assert {("admin", "deadline"), ("tokens", "create")} <= {path[:2] for path in paths}
    for path in sorted(paths):
        code, output = help_of(list(path))
        assert code == 0, f"{doc}: `kernelcup {' '.join(path)}` is not a command:\n{output}"


def test_the_readme_opens_with_its_picture_of_a_leaderboard() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    picture = re.search(r"!\[[^\]]+\]\((docs/images/[^)]+\.png)\)", readme)
    assert picture is not None and readme.index(picture.group(0)) < readme.index("## Three quick starts")
    assert (REPO / picture.group(1)).stat().st_size > 10_000
