"""The light client, ``pip install kernelcup-client`` (``kernelcup/client/pyproject.toml``, issue 33): its wheel holds
``kernelcup.client`` alone at the main distribution's version, installs alone in a fresh virtual environment (httpx
and pydantic, no server dependency), imports nothing of ``web``, ``leaderboards`` or ``runners`` even where they are
importable (a subprocess that poisons them), and talks to a served kernelcup: the client, the environment and the
remote CLI ``kernelcup-client``.

The wheel and the environment are made once per session (about 10 s: pip fetches httpx and pydantic from the index
pip is configured with); every test that runs code of the light client runs it in a subprocess from a folder outside
the checkout (``-I``: neither the working folder nor PYTHONPATH on ``sys.path``), so the checkout's ``kernelcup``
never stands in for it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import textwrap
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from served import Served, served_kernelcup

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("client_dist")]

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "kernelcup" / "client"
SERVER_PACKAGES = ("web", "leaderboards", "runners", "fastapi", "starlette", "sqlalchemy", "alembic", "uvicorn",
                   "torch", "triton", "numpy", "typer", "platformdirs", "discord", "mcp")  # fmt: skip
"""What the light client must never import: the server's layers and its dependencies (not ``rich``: httpx itself
tries it for its own command line, and goes on without it)."""


def _run(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("client_wheel")
    done = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                 str(PROJECT)], cwd=out)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = out.glob("kernelcup_client-*.whl")
    return path


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the light client installed (and what it depends on, nothing else): its
    python."""
    root = tmp_path_factory.mktemp("client_venv")
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], cwd=root)
    assert made.returncode == 0, made.stderr
    python = root / "venv" / "bin" / "python"
    # This pip installs into it (`--python`): the environment needs no pip of its own, and nothing beside the wheel.
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)],
                     cwd=root, timeout=300)  # fmt: skip
    assert installed.returncode == 0, f"pip could not install the light client's wheel:\n{installed.stderr}"
    return python


def _light(python: Path, code: str, tmp: Path, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` (which prints one JSON line last) in the light environment, outside the checkout."""
    done = _run([str(python), "-I", "-c", textwrap.dedent(code)], cwd=tmp, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _backend() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "kernelcup_client_build", PROJECT / "build_backend" / "kernelcup_client_build.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the wheel -------------------------------------------------------------------------------------------------------


def test_the_wheel_holds_the_client_alone_at_the_main_version(wheel: Path) -> None:
    main_version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert wheel.name == f"kernelcup_client-{main_version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        info = f"kernelcup_client-{main_version}.dist-info"
        metadata = z.read(f"{info}/METADATA").decode()
        entry_points = z.read(f"{info}/entry_points.txt").decode()
        record = z.read(f"{info}/RECORD").decode()
    package = [n for n in names if not n.startswith(info)]
    assert all(n.startswith("kernelcup/client/") for n in package), package
    assert "kernelcup/__init__.py" not in names  # a namespace package: it holds `client` alone
    for module in ("__init__", "env", "cli", "config", "wire"):
        assert f"kernelcup/client/{module}.py" in names
    assert "kernelcup/client/_wire/web/schemas.py" in names
    assert "kernelcup/client/_wire/runners/contract.py" in names
    assert not [n for n in names if "build_backend" in n or n.endswith("pyproject.toml")]
    assert f"Version: {main_version}\n" in metadata
    assert sorted(line for line in metadata.splitlines() if line.startswith("Requires-Dist:")) == [
        "Requires-Dist: httpx>=0.27",
        "Requires-Dist: pydantic>=2.11,<3",
    ]
    assert "kernelcup-client = kernelcup.client.cli:main" in entry_points
    assert len(record.splitlines()) == len(names)
    copy = zipfile.ZipFile(wheel).read("kernelcup/client/_wire/web/schemas.py").decode()
    assert "from kernelcup.client._wire.runners.contract import" in copy
    assert "\nfrom runners." not in copy and "\nfrom leaderboards." not in copy


def test_the_copies_are_the_servers_modules_with_their_imports_pointed_at_the_copies(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        copy = z.read("kernelcup/client/_wire/runners/contract.py").decode()
    original = (REPO / "runners" / "contract.py").read_text(encoding="utf-8")
    assert copy == original.replace("from runners.", "from kernelcup.client._wire.runners.")


def test_the_sdist_builds_the_same_wheel(wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``build_sdist`` then ``build_wheel`` from the unpacked sdist (no checkout around it): the same files."""
    backend = _backend()
    monkeypatch.chdir(PROJECT)  # PEP 517 hooks run in the project's folder
    sdist = tmp_path / backend.build_sdist(str(tmp_path))
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (top,) = (tmp_path / "unpacked").iterdir()
    monkeypatch.chdir(top)
    rebuilt = top / backend.build_wheel(str(top))
    with zipfile.ZipFile(wheel) as a, zipfile.ZipFile(rebuilt) as b:
        assert {n: a.read(n) for n in a.namelist()} == {n: b.read(n) for n in b.namelist()}


def test_a_model_module_that_needs_the_server_stops_the_build(tmp_path: Path) -> None:
    """The copies may import the standard library and pydantic only: anything else names the module and the fix."""
    backend = _backend()
    (tmp_path / "web").mkdir()
    (tmp_path / "runners").mkdir()
    (tmp_path / "kernelcup").mkdir()
    (tmp_path / "web" / "schemas.py").write_text("from runners.contract import RunResult\n")
    (tmp_path / "runners" / "contract.py").write_text("def f():\n    import torch\n")
    (tmp_path / "kernelcup" / "outcomes.py").write_text("import math\n")
    with pytest.raises(backend.BuildError, match=r"runners/contract.py imports torch: the light client copies"):
        backend.wire_modules(tmp_path)
    (tmp_path / "runners" / "contract.py").write_text("import runners.other\n")
    with pytest.raises(backend.BuildError, match=r"`import runners.other`: write `from runners.other import"):
        backend.wire_modules(tmp_path)
    (tmp_path / "runners" / "contract.py").write_text("from pydantic import BaseModel\nRunResult = BaseModel\n")
    files = backend.wire_modules(tmp_path)
    assert files["kernelcup/client/_wire/web/schemas.py"] == (
        "from kernelcup.client._wire.runners.contract import RunResult\n"
    )


# -- installed alone ---------------------------------------------------------------------------------------------------


def test_it_installs_alone_without_the_servers_dependencies(venv: Path, tmp_path: Path) -> None:
    found = _light(venv, """
        import importlib.metadata, json
        import kernelcup, kernelcup.client, kernelcup.client.env, kernelcup.client.cli
        from kernelcup.client import KernelEnv, SubmissionOut
        from kernelcup.client.wire import LIGHT
        names = sorted(d.metadata["Name"].lower() for d in importlib.metadata.distributions())
        print(json.dumps({"dists": names, "light": LIGHT, "namespace": kernelcup.__file__ is None,
                          "model": SubmissionOut.__module__}))
    """, tmp_path)  # fmt: skip
    assert found["light"] and found["namespace"]
    assert found["model"] == "kernelcup.client._wire.web.schemas"
    unwanted = {"kernelcup", "torch", "fastapi", "sqlalchemy", "starlette", "uvicorn", "typer", "rich", "numpy"}
    assert not unwanted & set(found["dists"]), found["dists"]
    assert {"kernelcup-client", "httpx", "pydantic"} <= set(found["dists"])


POISON = """
import importlib.abc, json, sys

TRIED = []
BLOCKED = {blocked!r}


class Poison(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            TRIED.append(name)
            raise ImportError(f"poisoned: {{name}}")
        return None


sys.meta_path.insert(0, Poison())
"""


def test_it_imports_nothing_of_the_server_where_the_server_is_importable(wheel: Path, tmp_path: Path) -> None:
    """The wheel unpacked in front of this (the server's) environment, where ``web``, ``leaderboards`` and ``runners``
    import fine: with them poisoned, the client, the environment and the CLI import and parse the API's answers."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    here = _run([sys.executable, "-I", "-c", "import web.schemas, runners.contract, leaderboards.results"], cwd=REPO)
    assert here.returncode == 0, here.stderr  # they are there to be (not) imported
    code = POISON.format(blocked=SERVER_PACKAGES) + textwrap.dedent(f"""
        sys.path.insert(0, {str(site)!r})
        import kernelcup
        import kernelcup.client, kernelcup.client.env, kernelcup.client.cli, kernelcup.client.config
        from kernelcup.client import BatchOut, KernelEnv
        from kernelcup.client.wire import LIGHT, Mode, TemplateOut, refused
        template = TemplateOut.model_validate_json(
            '{{"leaderboard": "add", "language": "pytorch", "file_name": "a.py", "content": "x"}}'
        )
        record = refused("empty file")
        kernelcup.client.cli.parser().parse_args(["submit", "a.py", "-l", "add"])
        print(json.dumps({{"tried": TRIED, "light": LIGHT, "where": kernelcup.__path__[0],
                           "model": BatchOut.__module__, "verdict": record.verdict, "file": template.file_name,
                           "mode": Mode("benchmark").value}}))
    """)
    found = _light(Path(sys.executable), code, tmp_path)
    assert found["tried"] == [], f"the light client tried to import {found['tried']}"
    assert found["light"] and found["where"] == str(site / "kernelcup")
    assert found["model"] == "kernelcup.client._wire.web.schemas"
    assert (found["verdict"], found["file"], found["mode"]) == ("refused", "a.py", "benchmark")


# -- talking to a served kernelcup ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_kernelcup(tmp_path_factory.mktemp("served")) as s:
        yield s


def test_the_client_and_the_environment_talk_to_a_served_kernelcup(venv: Path, served: Served, tmp_path: Path) -> None:
    code = POISON.format(blocked=SERVER_PACKAGES) + textwrap.dedent(f"""
        from kernelcup.client import Client, KernelEnv
        with Client({served.url!r}, {served.token!r}) as kc:
            boards = [b.name for b in kc.leaderboards()]
            env = KernelEnv(kc, "add", device="cpu")
            obs = env.reset()
            good = env.step("def custom_kernel(data):\\n    return data\\n# median 500\\n")
            bad = env.step("# wrong 2\\n")
            sub = kc.submit(("k.py", b"# median 1000\\n"), "add", ["cpu"], "test")
            result = sub.wait(60)
            batch = kc.submit_batch([("a.py", b"# median 400\\n"), ("b.py", b"# compile error\\n")], "add", "cpu",
                                    "benchmark").wait(60)
        print(json.dumps({{
            "tried": TRIED, "boards": boards, "template": obs.template, "device": obs.device,
            "good": [good.verdict, good.correct_fraction, good.speedup, good.reward, good.versioned["version"]],
            "bad": [bad.verdict, bad.correct_fraction, bad.reward],
            "test": [result.status.accepted, result.status.jobs[0].device, str(result.status.mode)],
            "batch": [[i.file_name, i.verdict, i.reward.accepted if i.reward else None] for i in batch.items],
        }}))
    """)
    found = _light(venv, code, tmp_path)
    assert found["tried"] == []
    assert found["boards"] == ["add"]
    assert "custom_kernel" in found["template"] and found["device"] == "cpu"
    assert found["good"] == ["accepted", 1.0, 4.0, 4.0, 2]
    assert found["bad"] == ["wrong_answer", 0.5, 0.0]
    assert found["test"] == [True, "cpu", "test"]
    assert found["batch"] == [["a.py", "accepted", True], ["b.py", "compile_error", False]]


def test_the_remote_cli_logs_in_submits_and_reads_results(venv: Path, served: Served, tmp_path: Path) -> None:
    cli = venv.parent / "kernelcup-client"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "KERNELCUP_CONFIG_DIR": str(tmp_path / "cfg")}

    def kc(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(cli), *args], cwd=tmp_path, env=env, input=stdin, capture_output=True, text=True,
                              timeout=120, check=False)  # fmt: skip

    nowhere = kc("problems")
    assert nowhere.returncode == 2 and "no kernelcup server named" in nowhere.stderr
    login = kc("login", "--server", served.url, stdin=served.token + "\n")  # the token piped, never in argv
    assert login.returncode == 0, login.stderr
    assert "logged in to" in login.stdout and "as agent" in login.stdout
    stored = tmp_path / "cfg" / "client.json"
    assert oct(stored.stat().st_mode & 0o777) == "0o600"
    assert json.loads(stored.read_text()) == {"server": served.url, "token": served.token}

    problems = kc("problems")
    assert problems.returncode == 0 and problems.stdout.startswith("add\tcpu,H100\topen"), problems.stdout
    template = kc("template", "add", "-o", "kernel.py")
    assert template.returncode == 0 and "custom_kernel" in (tmp_path / "kernel.py").read_text()

    (tmp_path / "kernel.py").write_text("def custom_kernel(data):\n    return data\n# median 800\n")
    submitted = kc("submit", "kernel.py", "-l", "add", "-d", "cpu", "-m", "benchmark", "--json")
    assert submitted.returncode == 0, submitted.stderr
    summary = json.loads(submitted.stdout)
    assert summary["accepted"] and summary["devices"][0]["speedups"] == {"reference": 2.5}
    sid = summary["submission_id"]
    results = kc("results", str(sid))
    assert results.returncode == 0 and f"submission {sid} on add (benchmark): accepted" in results.stdout
    assert "speedup reference x2.50" in results.stdout
    status = kc("status", str(sid))
    assert status.returncode == 0 and "cpu: succeeded, accepted" in status.stdout
    reward = kc("reward", str(sid))
    assert json.loads(reward.stdout)["rewards"][0]["reward"]["speedups"] == {"reference": 2.5}

    (tmp_path / "wrong.py").write_text("# wrong 1\n")
    wrong = kc("submit", "wrong.py", "-l", "add", "-d", "cpu", "-m", "test")
    assert wrong.returncode == 3, wrong.stdout + wrong.stderr
    assert "cpu: " in wrong.stdout and "tests 3/4" in wrong.stdout
    unknown = kc("submit", "kernel.py", "-l", "nope", "-d", "cpu")
    assert unknown.returncode == 1 and "nope" in unknown.stderr
    assert kc("logout").returncode == 0 and not stored.exists()


# -- one login for both CLIs -----------------------------------------------------------------------------------------


def test_both_clis_keep_one_login(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``kernelcup-client login`` writes where ``kernelcup login`` reads (platformdirs' folder), and the other way."""
    from kernelcup import remote
    from kernelcup.client import config

    monkeypatch.delenv("KERNELCUP_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config.config_dir() == remote.config_dir()
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert config.config_dir() == remote.config_dir()
    config.store_login(config.Login("https://kc.example.org", "kc_secret"))
    assert remote.stored_login() == remote.Login("https://kc.example.org", "kc_secret")
    remote.store_login(remote.Login("http://127.0.0.1:8000", None))
    assert config.stored_login() == config.Login("http://127.0.0.1:8000", None)
    for server in ("kc.example.org", "localhost:8000", "127.0.0.1", "[::1]:9", "https://x.org/"):
        assert config.normalise(server) == remote.normalise(server)
    monkeypatch.setenv("KERNELCUP_TOKEN", "kc_env")
    assert config.resolve("elsewhere.org") == config.Login("https://elsewhere.org", "kc_env")
    monkeypatch.delenv("KERNELCUP_TOKEN")
    assert config.resolve("elsewhere.org") == config.Login("https://elsewhere.org", None)  # never sent elsewhere
    assert config.resolve(None) == config.Login("http://127.0.0.1:8000", None)
