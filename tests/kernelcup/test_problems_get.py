"""`kernelcup problems get` and `kernelcup run -l`: a board's public problem folder comes from a server (an in-process
one here, on a loopback port), is cached by its fingerprint, holds nothing secret, and runs here with the same
harness."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from helpers import future
from served import Served, served_kernelcup
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.problem_cache import board_dir, fetch_folder
from kernelcup.remote import Login
from leaderboards.problems import load_problem
from leaderboards.public_problem import FolderRefused, check_folder

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
HELD_OUT = [{"size": 918273, "seed": 4242}]
"""A held-out case whose size no public file has."""


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    """A server whose board ``va`` is the repository's vectoradd (its reference imports _lib) with a held-out case;
    the CLI's config and cache in the test's folder, which is the working directory."""
    folder = shutil.copytree(REPO / "problems" / "vectoradd", tmp_path / "authored" / "vectoradd")
    task = yaml.safe_load((folder / "task.yml").read_text())
    (folder / "task.yml").write_text(yaml.safe_dump({**task, "holdout": HELD_OUT}, sort_keys=False))
    for var in ("KERNELCUP_SERVER", "KERNELCUP_TOKEN", "DATABASE_URL", "KERNELCUP_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KERNELCUP_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("KERNELCUP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "server").mkdir()
    with served_kernelcup(tmp_path / "server") as s:
        s.service.create_leaderboard(load_problem(folder), deadline=future(), devices=["cpu"], name="va")
        yield s


def cli(*args: str) -> object:
    return CliRunner().invoke(build_app(), list(args))


def test_get_writes_the_public_folder_caches_it_and_keeps_the_held_out_case_home(served: Served) -> None:
    got = cli("problems", "get", "va", "--server", served.url)
    assert got.exit_code == 0, got.output
    assert "kernelcup run va FILE" in got.output and "kernelcup run -l va FILE" in got.output
    folder = Path("va")
    task = yaml.safe_load((folder / "task.yml").read_text())
    assert "holdout" not in task and task["tests"][0] == {"size": 1, "seed": 4242}
    files = {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*") if p.is_file()}
    assert {"reference.py", "_lib/compare.py", "templates/pytorch.py"} <= set(files)
    assert not any("918273" in text for text in files.values())
    assert files["templates/pytorch.py"].startswith("#!POPCORN leaderboard va\n")
    local = load_problem(folder)  # `kernelcup run va FILE` reads it as any problem folder
    assert local.task.tests == load_problem(REPO / "problems" / "vectoradd").task.tests

    # Cached by fingerprint: the server answers "not modified" to the copy held, a second get writes nothing.
    board = board_dir(served.url, "va")
    (fingerprint,) = [p.name for p in board.iterdir() if p.is_dir()]
    assert (board / "latest").read_text() == fingerprint
    assert served.client.problem_folder("va", fingerprint=fingerprint) is None
    again = cli("problems", "get", "va", "--server", served.url)
    assert again.exit_code == 0 and "already holds va's problem folder" in again.output
    (folder / "solution.py").write_text("def custom_kernel(data):\n    return data[0]\n")
    refused = cli("problems", "get", "va", "--server", served.url)
    said = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "va is not empty; pass another --dir, or --force" in said

    unknown = cli("problems", "get", "nosuch", "--server", served.url)
    assert unknown.exit_code == 1 and "nosuch" in unknown.output and "va" in unknown.output


def test_a_server_out_of_reach_leaves_the_cached_copy_in_use(served: Served) -> None:
    login = Login(served.url, None)
    fetched, cached = fetch_folder(login, "va", warn=pytest.fail)
    assert cached is not None and (cached / "reference.py").is_file()
    served.service.update_leaderboard("va", visible=False)  # hidden: unknown to the public route
    with pytest.raises(Exception, match="va"):
        fetch_folder(login, "va", warn=pytest.fail)
    warnings: list[str] = []
    dead = Login("http://127.0.0.1:9", None)  # nothing listens on the discard port
    with pytest.raises(Exception, match="Cannot reach"):
        fetch_folder(dead, "va", warn=warnings.append)  # nothing cached for that server: the error stands
    board_dir(dead.server, "va").parent.mkdir(parents=True)
    shutil.copytree(board_dir(served.url, "va"), board_dir(dead.server, "va"))
    again, where = fetch_folder(dead, "va", warn=warnings.append)
    assert again == fetched and where is not None and "using the copy of va cached" in warnings[0]


def test_a_folder_from_a_server_stays_inside_its_folder() -> None:
    for files in ({"../x.py": "", "task.yml": ""}, {"/etc/passwd": "", "task.yml": ""}, {".bashrc": "", "task.yml": ""},
                  {"reference.py": ""}, {"task.yml": 3}):  # fmt: skip
        with pytest.raises(FolderRefused):
            check_folder(files)


def test_run_l_fetches_the_folder_and_runs_it_with_the_harness(served: Served) -> None:
    """One sandboxed run on the CPU: the fetched problem's own reference (and _lib) checks a correct solution."""
    solution = REPO / "problems" / "vectoradd" / "solutions" / "correct" / "pytorch.py"
    done = cli("run", "-l", "va", str(solution), "--server", served.url, "--gpu", "cpu", "--json", "--output", "r.json")
    assert done.exit_code == 0, done.output
    result = json.loads(Path("r.json").read_text())
    assert result["verdict"] == "accepted" and len(result["tests"]) == 5
    assert "wrote the result to r.json" in done.output


def test_run_l_from_a_server_refuses_to_run_its_files_where_the_sandbox_cannot(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team: the fetched reference and _lib are the server's code (or a man in the middle's), and `kernelcup run`
    runs your own folders unsandboxed where bubblewrap is missing: a folder from a server runs only sandboxed."""
    import runners.sandbox.view as view

    monkeypatch.setattr(view, "probe_sandbox", lambda bwrap=None: (None, False, "bubblewrap not found"))
    solution = REPO / "problems" / "vectoradd" / "solutions" / "correct" / "pytorch.py"
    done = cli("run", "-l", "va", str(solution), "--server", served.url, "--gpu", "cpu")
    assert done.exit_code != 0
    assert "come from the server" in done.output and "bubblewrap not found" in done.output
    assert "kernelcup problems get va" in done.output
