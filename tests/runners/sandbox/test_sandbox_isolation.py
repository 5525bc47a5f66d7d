"""What the evaluation process can see and reach: environment, network, files, other processes."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

import runners.sandbox.run as sandbox_run
from runners.sandbox import SandboxUnavailable, run_sandboxed

REPO = Path(__file__).resolve().parents[3]

SECRETS = {
    "DATABASE_URL": "postgresql://kc:hunter2@db/kc",
    "DISCORD_TOKEN": "discord-secret",
    "GITHUB_TOKEN": "ghp_secret",
    "MODAL_TOKEN_ID": "ak-secret",
    "MODAL_TOKEN_SECRET": "as-secret",
    "KERNELCUP_DATABASE_URL": "sqlite:////secret.db",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "SOME_API_KEY": "k-secret",
}


def test_environment_is_an_allowlist(run_py, jobdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    out = run_py("import json, os; print(json.dumps(dict(os.environ)))", env={"KERNELCUP_MODE": "test"})
    env = json.loads(out.stdout)
    leaked = [k for k in SECRETS if k in env] + [k for k, v in env.items() if v in SECRETS.values()]
    assert not leaked, f"secrets reached the submission: {leaked}"
    assert env["HOME"] == str(jobdir.resolve())
    assert env["TMPDIR"].startswith(str(jobdir.resolve()))
    assert Path(env["TMPDIR"]).name == "tmp" and (jobdir / "tmp").is_dir()
    assert env["KERNELCUP_MODE"] == "test"  # the caller's extra variables arrive
    assert env["LANG"] == "C.UTF-8"  # allowlisted host variables arrive


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "KERNELCUP_SECRET_SEED", "DATABASE_URL", "modal_token_id"])
def test_spec_env_refuses_secret_names(spec_for, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        run_sandboxed(spec_for("pass", env={name: "x"}))


def test_secrets_in_parent_environment_not_readable_through_proc(
    run_py, sandboxed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISCORD_TOKEN", "discord-secret-in-parent")
    out = run_py(
        """
        import os
        found, pids = [], [p for p in os.listdir('/proc') if p.isdigit()]
        for pid in pids:
            try:
                if b'discord-secret-in-parent' in open(f'/proc/{pid}/environ', 'rb').read():
                    found.append(pid)
            except OSError:
                pass
        print(len(pids), found)
        """
    )
    count, found = out.stdout.split(" ", 1)
    assert found.strip() == "[]"
    assert int(count) < 10, "the sandbox's pid namespace should hold only the submission's own processes"


@pytest.fixture
def loopback_server():
    """A TCP server on the host's loopback, like a local PostgreSQL the submission must not reach."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    accepted: list[object] = []

    def serve() -> None:
        try:
            while True:
                conn, _ = srv.accept()
                accepted.append(conn)
        except OSError:
            return

    threading.Thread(target=serve, daemon=True).start()
    yield srv.getsockname()[1], accepted
    srv.close()


def test_network_unreachable(run_py, sandboxed: None, loopback_server) -> None:
    port, accepted = loopback_server
    out = run_py(
        f"""
        import socket
        for host, port in [('127.0.0.1', {port}), ('10.255.255.1', 80), ('1.1.1.1', 53)]:
            s = socket.socket()
            s.settimeout(2)
            try:
                s.connect((host, port))
                print('REACHED', host)
            except OSError as exc:
                print('blocked', host, exc.errno)
        try:
            socket.getaddrinfo('example.com', 80)
            print('REACHED dns')
        except OSError:
            print('blocked dns')
        """
    )
    assert "REACHED" not in out.stdout, out.stdout
    assert out.stdout.count("blocked") == 4
    assert not accepted


def test_files_outside_the_job_dir_unreadable(run_py, sandboxed: None, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the expected output")
    targets = [secret, REPO / "pyproject.toml", REPO / ".git" / "HEAD", Path("/etc/shadow"), Path("/root/.bashrc")]
    out = run_py(
        f"""
        for path in {[str(t) for t in targets]!r}:
            try:
                open(path).read()
                print('READ', path)
            except OSError as exc:
                print('denied', path, type(exc).__name__)
        """
    )
    assert "READ" not in out.stdout, out.stdout
    assert out.stdout.count("denied") == len(targets)


def test_only_the_job_dir_is_writable(run_py, sandboxed: None, tmp_path: Path, jobdir: Path) -> None:
    targets = [tmp_path / "outside.txt", Path("/tmp/kernelcup-sandbox-test.txt"), REPO / "planted.py"]
    targets += [Path("/usr/planted"), Path("/etc/planted"), Path.home() / "planted", Path("/planted")]
    inside_only = [Path("/dev/planted"), Path("/sys/planted")]  # these would not show on the host; still refused
    out = run_py(
        f"""
        for path in {[str(t) for t in targets + inside_only]!r}:
            try:
                open(path, 'w').write('x')
                print('WROTE', path)
            except OSError:
                print('denied', path)
        open('inside.txt', 'w').write('ok')
        import tempfile
        with tempfile.NamedTemporaryFile(dir=None) as f:
            print('tmp', f.name)
        open('/dev/shm/torch_shared', 'wb').write(b'x' * 1024)  # PyTorch's shared memory still works
        try:
            with open('/dev/shm/huge', 'wb') as f:
                for _ in range(300):
                    f.write(b'x' * (1 << 20))
            print('SHM-UNBOUNDED')
        except OSError:
            print('shm bounded')
        """
    )
    assert "WROTE" not in out.stdout, out.stdout
    for t in targets:
        assert not t.exists()
    assert (jobdir / "inside.txt").read_text() == "ok"
    assert f"tmp {jobdir.resolve() / 'tmp'}" in out.stdout
    assert "shm bounded" in out.stdout


def test_no_capabilities_inside(run_py, sandboxed: None) -> None:
    out = run_py(
        """
        import os
        caps = {l.split(':')[0]: l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')}
        print(caps['CapEff'], caps['CapPrm'])
        try:
            os.unshare(os.CLONE_NEWUSER)
            print('userns')
        except (OSError, AttributeError):
            print('no-userns')
        """
    )
    eff, prm = out.stdout.split()[:2]
    assert int(eff, 16) == 0 and int(prm, 16) == 0


def test_unsandboxed_fallback_is_reported(run_py, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_run, "probe_sandbox", lambda: (None, False, "bubblewrap cannot run here (test)"))
    out = run_py("print('ran')")
    assert out.stdout == "ran\n"
    assert out.sandboxed is False
    assert "bubblewrap cannot run here (test)" in out.sandbox_note


def test_require_sandbox_refuses_and_names_the_setting(spec_for, jobdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_run, "probe_sandbox", lambda: (None, False, "bubblewrap is not installed"))
    marker = jobdir / "ran"
    with pytest.raises(SandboxUnavailable, match="KERNELCUP_ALLOW_UNSANDBOXED") as info:
        run_sandboxed(spec_for(f"open({str(marker)!r}, 'w')", require_sandbox=True))
    assert "bubblewrap is not installed" in str(info.value)
    assert not marker.exists()


def test_sandboxed_run_reports_it(run_py, sandboxed: None) -> None:
    out = run_py("print(1)", require_sandbox=True)
    assert out.sandboxed is True
    assert "bubblewrap" in out.sandbox_note


def test_repo_secrets_masked_in_read_only_paths(run_py, sandboxed: None, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "runners").mkdir(parents=True)
    (repo / "runners" / "harness.py").write_text("HARNESS = 1\n")
    (repo / ".env").write_text("DISCORD_TOKEN=in-dotenv\n")
    (repo / ".env.production").write_text("DATABASE_URL=in-dotenv-prod\n")
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text("token=in-git-config\n")
    (repo / "kernelcup.db").write_text("expected outputs\n")
    out = run_py(
        f"""
        import os
        root = {str(repo)!r}
        print('harness', open(os.path.join(root, 'runners', 'harness.py')).read().strip())
        for name in ['.env', '.env.production', '.git/config', 'kernelcup.db']:
            try:
                print(name, repr(open(os.path.join(root, name)).read()))
            except OSError as exc:
                print(name, 'denied', type(exc).__name__)
        """,
        ro_paths=(repo,),
    )
    assert "harness HARNESS = 1" in out.stdout  # the read-only path itself is visible
    for secret in ("in-dotenv", "in-dotenv-prod", "in-git-config", "expected outputs"):
        assert secret not in out.stdout, out.stdout


def test_read_only_files_inside_the_job_dir(run_py, sandboxed: None, jobdir: Path) -> None:
    """The runner can protect the files it put in the job dir (the reference, the harness) from the submission."""
    (jobdir / "reference.py").write_text("EXPECTED = 1\n")
    (jobdir / "problem").mkdir()
    (jobdir / "problem" / "checker.py").write_text("ok = True\n")
    out = run_py(
        """
        for path in ['reference.py', 'problem/checker.py', 'problem/new.py']:
            try:
                open(path, 'a').write('PATCHED = True\\n')
                print('WROTE', path)
            except OSError:
                print('denied', path)
        import os
        for path in ['reference.py', 'problem']:
            try:
                os.rename(path, path + '.moved')
                print('MOVED', path)
            except OSError:
                print('denied move', path)
        open('scratch.txt', 'w').write('fine')
        """,
        ro_paths=(jobdir / "reference.py", jobdir / "problem"),
    )
    assert "WROTE" not in out.stdout and "MOVED" not in out.stdout, out.stdout + out.stderr
    assert (jobdir / "reference.py").read_text() == "EXPECTED = 1\n"
    assert (jobdir / "scratch.txt").read_text() == "fine"


def test_compilers_outside_system_paths_are_visible_inside(
    run_py, sandboxed: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The lent GPU machines keep gcc in /opt/gcc: Triton's first launch compiles a helper with it, so the
    # sandbox must show a compiler's install prefix (read-only) when it lies outside /usr.
    from runners.sandbox.view import toolchain_ro_paths

    prefix = tmp_path / "toolchain"
    (prefix / "bin").mkdir(parents=True)
    gcc = prefix / "bin" / "gcc"
    gcc.write_text("#!/bin/sh\necho fake-gcc\n")
    gcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert prefix in toolchain_ro_paths()
    assert all(not p.is_relative_to("/usr") for p in toolchain_ro_paths())
    out = run_py(f"import subprocess; print(subprocess.check_output([{str(gcc)!r}]).decode())")
    assert out.stdout == "fake-gcc\n\n", out
