"""What the code imports is what pyproject.toml declares, both ways (issue 15).

Every third-party module imported by the shipped packages maps to a declared distribution: the core's packages
(kernelcup, leaderboards, bot, web, migrations) to the main dependencies, the runner's also to an extra (the GPU
stack, Modal). And every declared dependency is imported somewhere, or is listed in ``INDIRECT`` with the reason
it is declared without an import.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
CORE = ("kernelcup", "leaderboards", "bot", "web", "migrations")
RUNNER = ("runners",)
FIRST_PARTY = {*CORE, *RUNNER, "problems", "tests"}

KNOWN = {"yaml": "pyyaml", "github": "pygithub", "discord": "discord-py", "pynvml": "nvidia-ml-py"}
"""Import names whose distribution is named otherwise, for when it is not installed here (pynvml on a CPU box)."""

INDIRECT = {
    "numpy": "PyTorch's NumPy interop (the harness, the references)",
    "psycopg2-binary": "the PostgreSQL driver SQLAlchemy loads from DATABASE_URL",
    "python-multipart": "FastAPI's form parsing for uploads",
    "uvloop": "uvicorn's event loop",
    "itsdangerous": "Starlette's SessionMiddleware signs the OAuth sign-in's state cookie with it",
    "triton": "Triton submissions import it in the sandbox",
}
"""Declared dependencies that no shipped module imports by name, and why they are declared."""

SANDBOXED = {
    "leaderboards/battery_solution.py": "the exploit battery's submission: it runs in the sandbox, which has PyTorch",
}
"""Files of a package that its own process never imports: they are sent to the sandbox as a submission."""


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


@functools.cache
def _imports(package: str) -> dict[str, str]:
    """Third-party top-level module -> a file that imports it (absolute imports only)."""
    found: dict[str, str] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        if str(path.relative_to(REPO)) in SANDBOXED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                    found.setdefault(top, str(path.relative_to(REPO)))
    return found


@functools.cache
def _installed() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def _distribution(module: str) -> str:
    installed = _installed().get(module)
    return canonicalize_name(installed[0] if installed else KNOWN.get(module, module))


def test_the_core_imports_only_main_dependencies() -> None:
    declared = _names(_pyproject()["project"]["dependencies"])
    missing = {
        f"{module} ({where})": _distribution(module)
        for package in CORE
        for module, where in _imports(package).items()
        if _distribution(module) not in declared
    }
    assert not missing, f"imported but not in [project.dependencies]: {missing}"


def test_the_runner_imports_main_or_extra_dependencies() -> None:
    project = _pyproject()["project"]
    declared = _names(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared |= _names(extra)
    missing = {
        f"{module} ({where})": _distribution(module)
        for module, where in _imports("runners").items()
        if _distribution(module) not in declared
    }
    assert not missing, f"imported but declared nowhere: {missing}"


def test_every_declared_dependency_is_imported_or_explained() -> None:
    project = _pyproject()["project"]
    shipped = _names(project["dependencies"]) | _names(project["optional-dependencies"]["gpu"])
    shipped |= _names(project["optional-dependencies"]["modal"])
    imported = {_distribution(module) for package in (*CORE, *RUNNER) for module in _imports(package)}
    unexplained = shipped - imported - {canonicalize_name(n) for n in INDIRECT}
    assert not unexplained, f"declared but never imported (drop them, or say why in INDIRECT): {unexplained}"


def test_the_packages_installed_are_the_documented_ones() -> None:
    """kernelcup installs kernelcup plus its layers as top-level packages (see the comment in pyproject.toml)."""
    include = _pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(p.rstrip("*") for p in include) == sorted(CORE + RUNNER)


def test_the_service_lock_pins_every_dependency_within_its_bounds() -> None:
    """requirements.lock (``make lock``) is current enough: every dependency of the service (the main ones and the
    modal extra) is pinned, with hashes, at a version pyproject.toml allows; the Docker image installs it."""
    lock = (REPO / "requirements.lock").read_text(encoding="utf-8")
    pins = {}
    for line in lock.splitlines():
        if line and not line.startswith((" ", "#")):
            name, _, version = line.split(" ")[0].partition("==")
            pins[canonicalize_name(name)] = version
    assert "--hash=sha256:" in lock
    project = _pyproject()["project"]
    env = {"python_version": "3.12", "sys_platform": "linux", "platform_system": "Linux"}
    for text in [*project["dependencies"], *project["optional-dependencies"]["modal"]]:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate(env):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements.lock: run `make lock`"
        assert requirement.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]}: run `make lock`"
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8")
    assert "--require-hashes -r requirements.lock" in dockerfile


def test_the_makefile_passes_torch_index_url_to_pip(tmp_path: Path) -> None:
    """`make setup TORCH_INDEX_URL=…` installs PyTorch from that index; without it, pip's own (the disk, here)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")

    def torch_line(*overrides: str) -> str:
        venv = tmp_path / "venv"
        done = subprocess.run(
            ["make", "-n", "-B", f"{venv}/.kernelcup-installed", f"VENV={venv}", *overrides],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return next(line for line in done.stdout.splitlines() if "TORCH" not in line and "torch==" in line)

    assert "--index-url https://download.pytorch.org/whl/cpu" in torch_line(
        "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu"
    )
    assert "--index-url" not in torch_line()


def test_the_readme_installs_from_the_checkout() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "pip install 'kernelcup[modal]'" not in readme and "pip install -e '.[modal]'" in readme
    assert "TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in readme
    assert readme.index("## Three quick starts") < readme.index("## The two commands")  # issue 31's order
    two = readme.split("## The two commands\n", 1)[1]
    first = two.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[:2] for line in first] == [["make", "demo"], ["make", "test"]]
    layout = next(line for line in readme.splitlines() if line.startswith("| `problems/` |"))
    for problem_set in sorted((REPO / "problems").glob("*.yaml")):  # the Layout table names every problem set
        assert f"`{problem_set.name}`" in layout, problem_set.name
    after = two.split("```sh\n", 1)[1].split("```", 1)[1].strip().splitlines()[0]
    assert ". .venv/bin/activate" in after and ".venv/bin/kernelcup" in after  # how `kernelcup` gets on PATH
