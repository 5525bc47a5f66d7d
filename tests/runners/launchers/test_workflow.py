"""The dispatch workflow, parsed (actionlint cannot be installed here), and the request codec it shares.

The rules checked are the ones that keep the job that runs user code harmless: no token permissions, no
persisted credentials, no secrets, no expression interpolated into a shell script, pinned actions; and the
ones that tie it to the launcher: the inputs it sends, the run name it looks for, the artifact it downloads.
"""

from __future__ import annotations

import base64
import json
import re
import tomllib
import zlib
from pathlib import Path

import pytest
import yaml

from runners import payload
from runners.launchers import github as gh
from runners.launchers.github import GithubLauncher
from runners.launchers.github_artifact import RESULT_FILE
from runners.launchers.settings import GithubSettings

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / ".github" / "workflows" / "kernelcup-run.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as a boolean
    return data


def steps(workflow: dict) -> list[dict]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def test_only_workflow_dispatch_triggers_it(workflow: dict) -> None:
    assert list(workflow["on"]) == ["workflow_dispatch"], "no push/pull_request trigger may run user code"


def test_no_token_permissions_anywhere(workflow: dict) -> None:
    assert workflow["permissions"] == {}
    for name, job in workflow["jobs"].items():
        assert job.get("permissions") == {}, f"job {name} must drop every GITHUB_TOKEN permission"


def test_checkout_does_not_persist_credentials(workflow: dict) -> None:
    checkouts = [s for s in steps(workflow) if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert checkouts, "the runner code is checked out"
    for step in checkouts:
        assert step["with"]["persist-credentials"] is False


def test_no_secrets_and_no_token_reach_the_job() -> None:
    code = [line for line in WORKFLOW.read_text(encoding="utf-8").splitlines() if not line.strip().startswith("#")]
    for line in code:
        assert "secrets" not in line and "github.token" not in line and "GITHUB_TOKEN" not in line, line


def test_no_expression_is_interpolated_into_a_shell_script(workflow: dict) -> None:
    for step in steps(workflow):
        if "run" in step:
            assert "${{" not in step["run"], f"step {step['name']!r}: pass values through env or files instead"


def test_third_party_actions_are_pinned_to_a_commit(workflow: dict) -> None:
    for step in steps(workflow):
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_the_job_runs_the_same_entry_point_as_every_launcher(workflow: dict) -> None:
    scripts = "\n".join(s.get("run", "") for s in steps(workflow))
    assert re.search(
        r'-m runners\.entry --require-sandbox "\$KC_DIR/request\.json" "\$KC_DIR/result\.json"', scripts
    )
    assert "--require-sandbox" in scripts, "a self-hosted runner always needs the sandbox"
    assert "ALLOW_UNSANDBOXED" not in scripts, "no opt-out of the sandbox on a self-hosted runner"
    assert "-m runners.payload from-event" in scripts, "the request is read from the event file, not the log"
    for variable in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "ACTIONS_RUNTIME_TOKEN"):
        assert f"-u {variable}" in scripts


def test_the_job_is_bounded_and_runs_on_the_requested_labels(workflow: dict) -> None:
    (job,) = workflow["jobs"].values()
    assert job["runs-on"] == "${{ fromJSON(inputs.runner_labels) }}"
    assert job["timeout-minutes"] == "${{ fromJSON(inputs.timeout_minutes) }}"


def test_inputs_are_exactly_what_the_launcher_sends(workflow: dict, make_request) -> None:
    declared = workflow["on"]["workflow_dispatch"]["inputs"]
    sent = GithubLauncher(GithubSettings(_env_file=None), labels="gpu-nvidia").dispatch_inputs(make_request(), "abc")
    assert set(declared) == set(sent)
    assert all(spec["required"] and spec["type"] == "string" for spec in declared.values())
    assert len(declared) <= 10, "GitHub's limit on dispatch inputs"


def test_run_name_and_artifact_carry_the_launchers_nonce(workflow: dict) -> None:
    assert workflow["run-name"] == gh.RUN_NAME_PREFIX + "${{ inputs.run_id }}"
    upload = next(s for s in steps(workflow) if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"
    assert upload["with"]["name"] == gh.ARTIFACT_PREFIX + "${{ inputs.run_id }}"
    assert upload["with"]["path"].endswith("/" + RESULT_FILE)
    assert upload["with"]["if-no-files-found"] == "error"


def test_remote_requirements_stay_within_the_package_bounds() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    bounds = {re.split(r"[<>=!~ \[]", d, maxsplit=1)[0].lower(): d.replace(" ", "") for d in deps}
    lines = (ROOT / "runners" / "remote-requirements.txt").read_text().splitlines()
    for line in (ln.strip() for ln in lines):
        if not line or line.startswith("#"):
            continue
        name = re.split(r"[<>=!~ \[]", line, maxsplit=1)[0].lower()
        assert name in bounds, f"{name} is not a kernelcup dependency"
        assert line.replace(" ", "") == bounds[name], f"{line!r} differs from pyproject's {bounds[name]!r}"


def test_remote_runners_install_hash_pinned_requirements(workflow: dict) -> None:
    """Issue 10: a self-hosted runner (and the Modal image) installs the runner's packages by hash, so a hijacked
    release on PyPI cannot run on the box; the lock pins every name of remote-requirements.txt within its bounds."""
    from packaging.requirements import Requirement

    lock = (ROOT / "runners" / "remote-requirements.lock").read_text()
    pins = dict(re.findall(r"^([a-z0-9][a-z0-9._-]*)==([^ \\]+) \\$", lock, flags=re.M))
    blocks = re.split(r"^(?=[a-z0-9])", lock, flags=re.M)[1:]
    assert pins and len(blocks) == len(pins)
    assert all("--hash=sha256:" in block for block in blocks), "every pin carries its hashes"
    wanted = [Requirement(line) for line in (ROOT / "runners" / "remote-requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    for req in wanted:
        name = req.name.lower().replace("_", "-")
        assert name in pins, f"{name} is not pinned in remote-requirements.lock: rerun the pip-compile in its header"
        assert req.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {req.specifier}"
    steps = " ".join(str(step.get("run", "")) for job in workflow["jobs"].values() for step in job["steps"])
    assert "--require-hashes -r runners/remote-requirements.lock" in steps
    from runners import modal_app

    assert modal_app.REQUIREMENTS.name == "remote-requirements.lock"


FAKE_ENTRY = """
import json, os, sys
json.dump({"argv": sys.argv[1:], "request": open(sys.argv[-2]).read(),
           "leaks": [k for k in ("GITHUB_ENV", "GITHUB_OUTPUT", "ACTIONS_RUNTIME_TOKEN") if k in os.environ]},
          open(sys.argv[-1], "w"))
"""


@pytest.mark.parametrize("opt_out", ["", "true"])
def test_the_job_scripts_decode_then_run_the_entry_point(workflow: dict, tmp_path: Path, opt_out: str) -> None:
    """The decode and run steps, executed by bash as the runner would (the entry point is a recorder); the machine's
    KERNELCUP_ALLOW_UNSANDBOXED changes nothing."""
    import shutil
    import subprocess
    import sys

    checkout = tmp_path / "checkout"
    (checkout / "runners").mkdir(parents=True)
    (checkout / "runners" / "__init__.py").write_text("")
    shutil.copy(ROOT / "runners" / "payload.py", checkout / "runners" / "payload.py")
    (checkout / "runners" / "entry.py").write_text(FAKE_ENTRY)
    data = b'{"problem": "vectoradd"}'
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"inputs": {"request": payload.encode(data), "request_sha256": payload.digest(data)}}))
    kc_dir = tmp_path / "kc"
    kc_dir.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_ENV": str(tmp_path / "github_env"),
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "ACTIONS_RUNTIME_TOKEN": "runtime-token",
        "KC_DIR": str(kc_dir),
        "KC_PY": sys.executable,
        "KERNELCUP_ALLOW_UNSANDBOXED": opt_out,
    }
    for name in ("Decode the request", "Run the submission"):
        (step,) = [s for s in steps(workflow) if s["name"] == name]
        done = subprocess.run(["bash", "-c", step["run"]], cwd=checkout, env=env, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr.decode()
    seen = json.loads((kc_dir / "result.json").read_text())
    assert seen["request"].encode() == data
    assert seen["leaks"] == []
    assert "--require-sandbox" in seen["argv"]  # no opt-out: it would give every competitor the runner


# -- the request codec (runners.payload) ---------------------------------------------------------------


def test_payload_round_trip_and_integrity() -> None:
    data = json.dumps({"files": {"reference.py": "x = 1\n" * 1000}}).encode()
    text = payload.encode(data)
    assert len(text) < len(data) / 5, "the request travels compressed"
    assert payload.decode(text, sha256=payload.digest(data)) == data
    with pytest.raises(payload.PayloadError, match="sha256"):
        payload.decode(text, sha256=payload.digest(b"other"))
    cut = base64.b64encode(zlib.compress(data)[:-10]).decode()
    with pytest.raises(payload.PayloadError, match="truncated"):
        payload.decode(cut)
    with pytest.raises(payload.PayloadError):
        payload.decode("not base64 at all!")


def test_payload_refuses_a_decompression_bomb() -> None:
    bomb = payload.encode(b"\0" * (2 * 1024 * 1024))
    with pytest.raises(payload.PayloadError, match="inflates beyond"):
        payload.decode(bomb, max_bytes=1024 * 1024)


def test_from_event_writes_the_request_and_scrubs_it_from_the_event_file(tmp_path: Path, monkeypatch) -> None:
    data = b'{"problem": "vectoradd"}'
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"inputs": {"request": payload.encode(data), "request_sha256": payload.digest(data)}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    out = tmp_path / "request.json"
    assert payload.main(["from-event", str(out)]) == 0
    assert out.read_bytes() == data
    assert json.loads(event.read_text())["inputs"]["request"] == "", "no copy left for the submission to find"


def test_from_event_fails_loudly_on_a_changed_request(tmp_path: Path, monkeypatch, capsys) -> None:
    event = tmp_path / "event.json"
    forged = base64.b64encode(zlib.compress(b"{}")).decode()
    event.write_text(json.dumps({"inputs": {"request": forged, "request_sha256": "0" * 64}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    assert payload.main(["from-event", str(tmp_path / "out.json")]) == 1
    assert "sha256" in capsys.readouterr().err
    assert not (tmp_path / "out.json").exists()
