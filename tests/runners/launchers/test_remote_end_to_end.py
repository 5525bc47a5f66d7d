"""Both remote paths end to end, offline, on the CPU: launcher -> the remote side's own code -> runners.entry
(the real harness on a real fixture problem) -> result back through the launcher.

GitHub: the dispatch is answered by running the workflow's own decode and run steps with bash, and the
result.json they write is served back as the artifact zip. Modal: the patched function handle runs the app
module's function body (``run_entry``). Only the transport is faked; every byte of the request and the result
goes through the code that a remote GPU runs.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import modal
import pytest
import responses
import yaml

from leaderboards.problems import load_problem
from runners.contract import Mode, RunRequest, TimingSettings, Verdict
from runners.launchers.github import GithubLauncher
from runners.launchers.modal import ModalLauncher, entry_timeout_s
from runners.launchers.settings import GithubSettings, ModalSettings

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "problems" / "vectoradd"
CORRECT = ROOT / "tests" / "runners" / "submissions" / "correct_torch.py"
WRONG = ROOT / "tests" / "runners" / "submissions" / "wrong_off_by_one.py"

API = "https://api.github.com:443"
REPO = "kernelcup/runs"
WF = f"{API}/repos/{REPO}/actions/workflows/kernelcup-run.yml"
RUN = f"{API}/repos/{REPO}/actions/runs/77"
ZIP_URL = f"{API}/repos/{REPO}/actions/artifacts/9/zip"

pytestmark = pytest.mark.slow


def cpu_request(submission: Path) -> RunRequest:
    request = load_problem(FIXTURE).request(submission.name, submission.read_bytes(), Mode.TEST, device="cpu")
    request.timing = TimingSettings(warmup_ms=5, warmup_min_calls=2, min_samples=5, max_samples=40, max_time_s=0.3)
    return request


@pytest.fixture
def runner_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("KERNELCUP_JOB_ROOT", str(tmp_path / "jobs"))
    (tmp_path / "jobs").mkdir()
    return {"KERNELCUP_JOB_ROOT": str(tmp_path / "jobs")}


class Job:
    def __init__(self) -> None:
        self.remote_ref: str | None = None

    async def set_remote_ref(self, ref: str) -> None:
        self.remote_ref = ref

    async def progress(self, event) -> None:
        pass


def run_workflow_job(inputs: dict[str, str], workdir: Path, env: dict[str, str]) -> bytes:
    """The decode and run steps of the workflow, as a runner executes them; returns the artifact zip."""
    data = yaml.safe_load((ROOT / ".github" / "workflows" / "kernelcup-run.yml").read_text())
    (job,) = data["jobs"].values()
    event = workdir / "event.json"
    event.write_text(json.dumps({"inputs": inputs}))
    kc_dir = workdir / "kc"
    kc_dir.mkdir()
    step_env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(workdir),
        "GITHUB_EVENT_PATH": str(event),
        "KC_DIR": str(kc_dir),
        "KC_PY": sys.executable,
        "KERNELCUP_ALLOW_UNSANDBOXED": "true",  # CI machines may lack bubblewrap; the sandbox has its own tests
        **env,
    }
    for name in ("Decode the request", "Run the submission"):
        (step,) = [s for s in job["steps"] if s["name"] == name]
        done = subprocess.run(["bash", "-c", step["run"]], cwd=ROOT, env=step_env, capture_output=True, timeout=240)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.write(kc_dir / "result.json", "result.json")
    return buffer.getvalue()


def test_github_path_end_to_end(tmp_path: Path, runner_env) -> None:
    request = cpu_request(CORRECT)
    settings = GithubSettings(_env_file=None, token="ghp_test", repo=REPO, poll_min_s=0.01, poll_max_s=0.05)
    artifact: dict[str, object] = {}

    def dispatch(req):
        inputs = json.loads(req.body)["inputs"]
        artifact["zip"] = run_workflow_job(inputs, tmp_path, runner_env)
        artifact["nonce"] = inputs["run_id"]
        return 200, {}, json.dumps({"workflow_run_id": 77, "run_url": RUN, "html_url": "https://github.com/r"})

    def run_state(req):
        return (
            200,
            {},
            json.dumps({"id": 77, "status": "completed", "conclusion": "success", "html_url": "https://github.com/r"}),
        )

    def artifacts(req):
        body = {"total_count": 1, "artifacts": [{"id": 9, "name": f"kernelcup-result-{artifact['nonce']}",
                "size_in_bytes": len(artifact["zip"]), "archive_download_url": ZIP_URL, "expired": False}]}  # fmt: skip
        return 200, {}, json.dumps(body)

    with responses.RequestsMock() as rsps:
        rsps.add_callback(responses.POST, f"{WF}/dispatches", callback=dispatch)
        rsps.add_callback(responses.GET, RUN, callback=run_state)
        rsps.add_callback(responses.GET, f"{RUN}/artifacts", callback=artifacts)
        rsps.add_callback(responses.GET, ZIP_URL, callback=lambda req: (200, {}, artifact["zip"]))
        result = asyncio.run(GithubLauncher(settings, labels="gpu-nvidia").run(request, Job()))

    assert result.verdict is Verdict.ACCEPTED, result.message
    assert result.tests and len(result.tests) == len(request.tests)


class ModalCall:
    """A spawned call that runs the app's function body in a thread, like a remote container would."""

    def __init__(self, args: tuple[object, ...]) -> None:
        self.object_id = "fc-e2e"
        self._done = threading.Event()
        self._out: object = None
        threading.Thread(target=self._run, args=args, daemon=True).start()

    def _run(self, payload: str, entry_limit: float) -> None:
        from runners import modal_app

        try:
            self._out = modal_app.run_entry(payload, entry_limit, python=sys.executable, cwd=str(ROOT))
        except Exception as exc:
            self._out = exc
        self._done.set()

    def get(self, timeout: float | None = None) -> object:
        if not self._done.wait(timeout):
            raise TimeoutError
        if isinstance(self._out, Exception):
            raise self._out
        return self._out

    def cancel(self, terminate_containers: bool = False) -> None:
        pass


class ModalFunction:
    def with_options(self, **options: object) -> ModalFunction:
        return self

    def spawn(self, *args: object) -> ModalCall:
        return ModalCall(args)


def test_modal_path_end_to_end(monkeypatch: pytest.MonkeyPatch, runner_env) -> None:
    """A wrong answer this time: the user's verdict comes back as it is (not an infrastructure error)."""
    monkeypatch.setattr(modal.Function, "from_name", staticmethod(lambda *a, **k: ModalFunction()))
    request = cpu_request(WRONG)
    job = Job()
    settings = ModalSettings(_env_file=None, poll_s=0.5)
    result = asyncio.run(ModalLauncher(settings, gpu="H100").run(request, job))
    assert result.verdict is Verdict.WRONG_ANSWER, result.message
    assert any(t.verdict is Verdict.WRONG_ANSWER and t.message for t in result.tests)
    assert job.remote_ref == "modal:fc-e2e"
    assert entry_timeout_s(request) > request.limits.compile_timeout_s + request.limits.run_timeout_s
