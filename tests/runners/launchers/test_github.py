"""The GitHub Actions launcher against GitHub's REST shapes, served by ``responses`` (no network)."""

from __future__ import annotations

import asyncio
import io
import json
import time
import zipfile

import pytest
import responses

from runners import payload
from runners.contract import Verdict
from runners.launchers import github as gh
from runners.launchers.base import Launcher, LauncherError
from runners.launchers.github import GithubLauncher
from runners.launchers.settings import GithubSettings

API = "https://api.github.com"
HOST = API + ":443"  # how PyGithub's requester spells the URLs it sends
REPO = "kernelcup/runs"
WF = f"{HOST}/repos/{REPO}/actions/workflows/kernelcup-run.yml"
RUN_ID = 4242
RUN = f"{HOST}/repos/{REPO}/actions/runs/{RUN_ID}"
ZIP_URL = f"{HOST}/repos/{REPO}/actions/artifacts/7/zip"
BLOB_URL = "https://results.blob.example/artifact-7.zip?sig=abc"


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gh, "RETRY_BASE_S", 0.01)


def settings(**overrides: object) -> GithubSettings:
    base: dict[str, object] = dict(
        token="ghp_test",
        repo=REPO,
        poll_min_s=0.01,
        poll_max_s=0.02,
        find_run_timeout_s=1.0,
        queue_timeout_s=30.0,
        setup_margin_s=30.0,
        http_timeout_s=2.0,
        check_timeout_s=2.0,
    )
    base.update(overrides)
    return GithubSettings(_env_file=None, **base)


def run_json(status: str = "completed", conclusion: str | None = "success", run_id: int = RUN_ID, nonce: str = "n"):
    url = f"{API}/repos/{REPO}/actions/runs/{run_id}"
    return {
        "id": run_id,
        "name": "kernelcup run",
        "display_title": f"kernelcup run {nonce}",
        "status": status,
        "conclusion": conclusion,
        "event": "workflow_dispatch",
        "url": url,
        "html_url": f"https://github.com/{REPO}/actions/runs/{run_id}",
        "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel",
    }


def artifact_zip(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def add_artifact(rsps: responses.RequestsMock, nonce: str, body: bytes, *, name: str | None = None) -> None:
    rsps.get(
        f"{RUN}/artifacts",
        json={
            "total_count": 1,
            "artifacts": [
                {
                    "id": 7,
                    "name": name or f"kernelcup-result-{nonce}",
                    "size_in_bytes": len(body),
                    "archive_download_url": ZIP_URL,
                    "expired": False,
                    "url": f"{API}/repos/{REPO}/actions/artifacts/7",
                }
            ],
        },
    )
    rsps.get(ZIP_URL, status=302, headers={"Location": BLOB_URL})
    rsps.get(BLOB_URL, body=body, content_type="application/zip")


def dispatched_nonce(rsps: responses.RequestsMock) -> str:
    for call in rsps.calls:
        if call.request.method == "POST" and call.request.url.endswith("/dispatches"):
            return json.loads(call.request.body)["inputs"]["run_id"]
    raise AssertionError("no dispatch was sent")


class NonceEcho:
    """Answers a run look-up with the nonce the launcher dispatched (unknown until it dispatches)."""

    def __init__(self, rsps: responses.RequestsMock, *statuses: tuple[str, str | None]) -> None:
        self.rsps = rsps
        self.statuses = list(statuses)

    def __call__(self, request):
        status, conclusion = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return 200, {}, json.dumps(run_json(status, conclusion, nonce=dispatched_nonce(self.rsps)))


def run(launcher: GithubLauncher, request, job):
    return asyncio.run(launcher.run(request, job))


def test_launcher_satisfies_the_protocol() -> None:
    launcher = GithubLauncher(settings(), labels="gpu-nvidia+h100")
    assert isinstance(launcher, Launcher)
    assert launcher.labels == ["gpu-nvidia", "h100"]


def test_dispatch_poll_download_happy_path(job, make_request, make_result) -> None:
    request = make_request()
    expected = make_result(Verdict.ACCEPTED, score_ns=1234.5)
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    with responses.RequestsMock(assert_all_requests_are_fired=True) as rsps:
        rsps.post(
            f"{WF}/dispatches",
            json={"workflow_run_id": RUN_ID, "run_url": RUN, "html_url": f"https://github.com/{REPO}/actions/runs/1"},
        )
        rsps.get(RUN, json=run_json("queued", None))
        rsps.get(RUN, json=run_json("in_progress", None))
        rsps.get(RUN, json=run_json("completed", "success"))
        artifact_holder: dict[str, bytes] = {}

        def artifacts(req):
            nonce = dispatched_nonce(rsps)
            body = artifact_zip({"result.json": expected.model_dump_json()})
            artifact_holder["body"] = body
            return (
                200,
                {},
                json.dumps(
                    {
                        "total_count": 1,
                        "artifacts": [
                            {
                                "id": 7,
                                "name": f"kernelcup-result-{nonce}",
                                "size_in_bytes": 10,
                                "archive_download_url": ZIP_URL,
                                "expired": False,
                            }
                        ],
                    }
                ),
            )

        rsps.add_callback(responses.GET, f"{RUN}/artifacts", callback=artifacts)
        rsps.get(ZIP_URL, status=302, headers={"Location": BLOB_URL})
        rsps.add_callback(responses.GET, BLOB_URL, callback=lambda req: (200, {}, artifact_holder["body"]))

        result = run(launcher, request, job)
        nonce = dispatched_nonce(rsps)
        dispatch = json.loads(next(c for c in rsps.calls if c.request.method == "POST").request.body)
        blob_request = next(c.request for c in rsps.calls if c.request.url.startswith("https://results.blob"))

    assert result == expected
    assert dispatch["ref"] == "main"
    assert dispatch["return_run_details"] is True
    inputs = dispatch["inputs"]
    assert json.loads(inputs["runner_labels"]) == ["self-hosted", "gpu-nvidia"]
    assert payload.decode(inputs["request"], sha256=inputs["request_sha256"]) == request.model_dump_json().encode()
    assert int(inputs["timeout_minutes"]) >= (300 + 300 + 30) / 60
    assert job.refs == [f"github:{REPO}:nonce:{nonce}", f"github:{REPO}:run:{RUN_ID}:{nonce}"]
    assert "Authorization" not in blob_request.headers, "the token must not follow the redirect to blob storage"
    phases = [value.split(":")[0] for kind, value in job.log if kind == "progress"]
    assert phases == ["queued", "starting", "done"]
    # status text is public: the private runs repository's addresses stay in the log
    assert not any("https://" in str(value) for _, value in job.log)


def test_run_found_by_its_name_when_dispatch_gives_no_id(job, make_request, make_result) -> None:
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        rsps.post(f"{WF}/dispatches", status=204)
        other = run_json("queued", None, run_id=999, nonce="someone-else")

        def runs(req):
            mine = run_json("queued", None, nonce=dispatched_nonce(rsps))
            return 200, {}, json.dumps({"total_count": 2, "workflow_runs": [other, mine]})

        runs_calls = rsps.add_callback(responses.GET, f"{WF}/runs", callback=runs)
        rsps.add_callback(responses.GET, RUN, callback=NonceEcho(rsps, ("completed", "success")))
        result_zip = artifact_zip({"result.json": make_result().model_dump_json()})
        rsps.add_callback(
            responses.GET,
            f"{RUN}/artifacts",
            callback=lambda req: (
                200,
                {},
                json.dumps(
                    {
                        "total_count": 1,
                        "artifacts": [
                            {
                                "id": 7,
                                "name": f"kernelcup-result-{dispatched_nonce(rsps)}",
                                "size_in_bytes": 10,
                                "archive_download_url": ZIP_URL,
                                "expired": False,
                            }
                        ],
                    }
                ),
            ),
        )
        rsps.get(ZIP_URL, body=result_zip)
        result = run(launcher, make_request(), job)
        query = runs_calls.calls[0].request.url

    assert result.passed
    assert "event=workflow_dispatch" in query and "created=" in query
    assert job.refs[-1].startswith(f"github:{REPO}:run:{RUN_ID}:"), "never the newest run of someone else"


def test_no_run_with_our_name_is_a_launcher_error(job, make_request) -> None:
    launcher = GithubLauncher(settings(find_run_timeout_s=0.2), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        rsps.post(f"{WF}/dispatches", status=204)
        rsps.get(f"{WF}/runs", json={"total_count": 1, "workflow_runs": [run_json(nonce="not-ours")]})
        with pytest.raises(LauncherError, match="no run named kernelcup run"):
            run(launcher, make_request(), job)
        assert sum(c.request.method == "POST" for c in rsps.calls) == 1, "a dispatch is never repeated"


def test_reattach_by_run_id_does_not_dispatch(make_job, make_request, make_result) -> None:
    job = make_job(remote_ref=f"github:{REPO}:run:{RUN_ID}:abc")
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        rsps.get(RUN, json=run_json("in_progress", None, nonce="abc"))
        rsps.get(RUN, json=run_json("completed", "success", nonce="abc"))
        add_artifact(rsps, "abc", artifact_zip({"result.json": make_result(Verdict.TIMEOUT).model_dump_json()}))
        result = run(launcher, make_request(), job)
        assert not any(c.request.method == "POST" for c in rsps.calls)
    assert result.verdict is Verdict.TIMEOUT
    assert job.refs == []


def test_reattach_by_nonce_finds_the_run_a_dead_worker_dispatched(make_job, make_request, make_result) -> None:
    job = make_job(remote_ref=f"github:{REPO}:nonce:feed")
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        rsps.get(f"{WF}/runs", json={"total_count": 1, "workflow_runs": [run_json("queued", None, nonce="feed")]})
        rsps.get(RUN, json=run_json("completed", "success", nonce="feed"))
        add_artifact(rsps, "feed", artifact_zip({"result.json": make_result().model_dump_json()}))
        result = run(launcher, make_request(), job)
        assert not any(c.request.method == "POST" for c in rsps.calls)
    assert result.passed


def test_reattach_by_nonce_dispatches_once_when_the_run_never_started(make_job, make_request) -> None:
    job = make_job(remote_ref=f"github:{REPO}:nonce:lost")
    launcher = GithubLauncher(settings(find_run_timeout_s=0.1), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        rsps.get(f"{WF}/runs", json={"total_count": 0, "workflow_runs": []})
        rsps.post(f"{WF}/dispatches", json={"workflow_run_id": RUN_ID, "run_url": RUN, "html_url": "h"})
        rsps.get(RUN, json=run_json("completed", "cancelled", nonce="lost"))
        with pytest.raises(LauncherError, match="cancelled"):
            run(launcher, make_request(), job)
        assert dispatched_nonce(rsps) == "lost", "the stored nonce names the new run too"


@pytest.mark.parametrize("conclusion", ["failure", "timed_out"])
def test_failed_run_without_artifact_is_a_launcher_error(job, make_request, conclusion) -> None:
    launcher = GithubLauncher(settings(), labels="gpu-amd")
    with responses.RequestsMock() as rsps:
        rsps.post(f"{WF}/dispatches", json={"workflow_run_id": RUN_ID, "run_url": RUN, "html_url": "h"})
        rsps.get(RUN, json=run_json("completed", conclusion))
        rsps.get(f"{RUN}/artifacts", json={"total_count": 0, "artifacts": []})
        with pytest.raises(LauncherError, match=f"ended \\({conclusion}\\) without a result artifact"):
            run(launcher, make_request(), job)


def test_cancelled_run_is_a_launcher_error(job, make_request) -> None:
    launcher = GithubLauncher(settings(), labels="gpu-amd")
    with responses.RequestsMock() as rsps:
        rsps.post(f"{WF}/dispatches", json={"workflow_run_id": RUN_ID, "run_url": RUN, "html_url": "h"})
        rsps.get(RUN, json=run_json("completed", "cancelled"))
        with pytest.raises(LauncherError, match="was cancelled"):
            run(launcher, make_request(), job)


def test_queued_too_long_is_cancelled(job, make_request) -> None:
    launcher = GithubLauncher(settings(queue_timeout_s=0.2), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        rsps.post(f"{WF}/dispatches", json={"workflow_run_id": RUN_ID, "run_url": RUN, "html_url": "h"})
        rsps.get(RUN, json=run_json("queued", None))
        cancel = rsps.post(f"{RUN}/cancel", status=202)
        started = time.monotonic()
        with pytest.raises(LauncherError, match="no self-hosted runner with labels gpu-nvidia took"):
            run(launcher, make_request(), job)
    assert time.monotonic() - started < 10
    assert cancel.call_count == 1


def test_running_too_long_is_cancelled(job, make_request, monkeypatch) -> None:
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    monkeypatch.setattr(launcher, "run_budget_s", lambda request: 0.2)
    with responses.RequestsMock() as rsps:
        rsps.post(f"{WF}/dispatches", json={"workflow_run_id": RUN_ID, "run_url": RUN, "html_url": "h"})
        rsps.get(RUN, json=run_json("in_progress", None))
        cancel = rsps.post(f"{RUN}/cancel", status=202)
        with pytest.raises(LauncherError, match="did not finish within"):
            run(launcher, make_request(), job)
    assert cancel.call_count == 1


@pytest.mark.parametrize(
    ("body", "name", "message"),
    [
        (b"this is not a zip", None, "corrupt"),
        (artifact_zip({"other.txt": "x"}), None, "holds no result.json"),
        (artifact_zip({"result.json": "{not json"}), None, "malformed result"),
        (artifact_zip({"result.json": '{"verdict": "accepted"}'}), None, "malformed result"),
        (artifact_zip({"result.json": "{}"}), "some-other-artifact", "without a result artifact"),
    ],
)
def test_missing_or_corrupt_artifact_is_a_launcher_error(make_job, make_request, body, name, message) -> None:
    job = make_job(remote_ref=f"github:{REPO}:run:{RUN_ID}:n1")
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.get(RUN, json=run_json("completed", "success", nonce="n1"))
        add_artifact(rsps, "n1", body, name=name)
        with pytest.raises(LauncherError, match=message):
            run(launcher, make_request(), job)


def test_oversized_artifact_is_refused(make_job, make_request) -> None:
    job = make_job(remote_ref=f"github:{REPO}:run:{RUN_ID}:n1")
    launcher = GithubLauncher(settings(max_result_bytes=100), labels="gpu-nvidia")
    bomb = artifact_zip({"result.json": " " * 10_000})
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.get(RUN, json=run_json("completed", "success", nonce="n1"))
        add_artifact(rsps, "n1", bomb)
        with pytest.raises(LauncherError, match=r"cap|over"):
            run(launcher, make_request(), job)


def test_server_errors_are_retried(make_job, make_request, make_result) -> None:
    job = make_job(remote_ref=f"github:{REPO}:run:{RUN_ID}:n1")
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        rsps.get(RUN, status=502, json={"message": "Bad Gateway"})
        rsps.get(RUN, status=503, json={"message": "Unavailable"})
        rsps.get(RUN, json=run_json("completed", "success", nonce="n1"))
        add_artifact(rsps, "n1", artifact_zip({"result.json": make_result().model_dump_json()}))
        assert run(launcher, make_request(), job).passed


def test_a_lasting_outage_is_a_launcher_error(make_job, make_request) -> None:
    job = make_job(remote_ref=f"github:{REPO}:run:{RUN_ID}:n1")
    launcher = GithubLauncher(settings(api_attempts=3), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        failing = rsps.get(RUN, status=500, json={"message": "Server Error"})
        with pytest.raises(LauncherError, match="GitHub answered 500"):
            run(launcher, make_request(), job)
    assert failing.call_count == 3


def test_rate_limit_waits_for_a_short_reset_then_goes_on(make_job, make_request, make_result) -> None:
    job = make_job(remote_ref=f"github:{REPO}:run:{RUN_ID}:n1")
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    limited = {"message": "API rate limit exceeded for user ID 1."}
    with responses.RequestsMock() as rsps:
        rsps.get(RUN, status=403, json=limited, headers={"x-ratelimit-remaining": "0", "retry-after": "0"})
        rsps.get(RUN, json=run_json("completed", "success", nonce="n1"))
        add_artifact(rsps, "n1", artifact_zip({"result.json": make_result().model_dump_json()}))
        assert run(launcher, make_request(), job).passed


def test_rate_limit_with_a_distant_reset_is_a_launcher_error(make_job, make_request) -> None:
    job = make_job(remote_ref=f"github:{REPO}:run:{RUN_ID}:n1")
    launcher = GithubLauncher(settings(max_rate_limit_wait_s=5), labels="gpu-nvidia")
    reset = str(int(time.time()) + 3600)
    with responses.RequestsMock() as rsps:
        rsps.get(
            RUN,
            status=403,
            json={"message": "API rate limit exceeded"},
            headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
        )
        started = time.monotonic()
        with pytest.raises(LauncherError, match="rate limit"):
            run(launcher, make_request(), job)
    assert time.monotonic() - started < 5


def test_bad_token_and_missing_repo_name_the_setting(job, make_request) -> None:
    with responses.RequestsMock() as rsps:
        rsps.post(f"{WF}/dispatches", status=401, json={"message": "Bad credentials"})
        with pytest.raises(LauncherError, match="GITHUB_TOKEN"):
            run(GithubLauncher(settings(), labels="x"), make_request(), job)
        rsps.post(f"{HOST}/repos/kernelcup/nope/actions/workflows/kernelcup-run.yml/dispatches", status=404,
                  json={"message": "Not Found"})  # fmt: skip
        with pytest.raises(LauncherError, match="GITHUB_REPO=kernelcup/nope"):
            run(GithubLauncher(settings(repo="kernelcup/nope"), labels="x"), make_request(), job)
    with pytest.raises(LauncherError, match="GITHUB_TOKEN is not set"):
        run(GithubLauncher(settings(token=None), labels="x"), make_request(), job)
    with pytest.raises(LauncherError, match="GITHUB_REPO is not set"):
        run(GithubLauncher(settings(repo=None), labels="x"), make_request(), job)


def test_a_request_too_large_for_a_dispatch_is_refused_with_the_limit(job, make_request) -> None:
    import os

    from runners.contract import SubmissionFile

    noise = os.urandom(60_000)  # incompressible
    request = make_request(submission=SubmissionFile(name="submission.py", content=noise))
    with responses.RequestsMock() as rsps:
        result = run(GithubLauncher(settings(), labels="x"), request, job)
        assert not rsps.calls, "nothing is dispatched"
    assert result.verdict is Verdict.REJECTED
    assert "65,535" in result.message
    assert job.refs == []


def test_no_network_is_a_bounded_launcher_error(job, make_request) -> None:
    """The real transport with sockets blocked by the suite: retried, then a readable error, quickly."""
    launcher = GithubLauncher(settings(api_attempts=2), labels="x")
    started = time.monotonic()
    with pytest.raises(LauncherError, match="GitHub"):
        run(launcher, make_request(), job)
    assert time.monotonic() - started < 10


def test_check_reports_the_workflow_and_online_runners() -> None:
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    with responses.RequestsMock() as rsps:
        rsps.get(WF, json={"id": 1, "name": "kernelcup run", "path": ".github/workflows/kernelcup-run.yml",
                           "state": "active"})  # fmt: skip
        rsps.get(
            f"{HOST}/repos/{REPO}/actions/runners",
            json={"total_count": 2, "runners": [
                {"id": 1, "name": "box1", "status": "online",
                 "labels": [{"name": "self-hosted"}, {"name": "gpu-nvidia"}]},
                {"id": 2, "name": "box2", "status": "offline", "labels": [{"name": "gpu-nvidia"}]},
            ]},
        )  # fmt: skip
        message = asyncio.run(launcher.check())
    assert "active" in message and "1 runner(s) online" in message


def test_check_fails_when_no_runner_with_the_label_is_online() -> None:
    launcher = GithubLauncher(settings(), labels="gpu-amd")
    with responses.RequestsMock() as rsps:
        rsps.get(WF, json={"id": 1, "state": "active"})
        rsps.get(f"{HOST}/repos/{REPO}/actions/runners", json={"total_count": 0, "runners": []})
        with pytest.raises(LauncherError, match="no self-hosted runner with labels gpu-amd is online"):
            asyncio.run(launcher.check())


def test_check_without_admin_rights_still_checks_the_workflow() -> None:
    launcher = GithubLauncher(settings(), labels="gpu-amd")
    with responses.RequestsMock() as rsps:
        rsps.get(WF, json={"id": 1, "state": "active"})
        rsps.get(f"{HOST}/repos/{REPO}/actions/runners", status=403, json={"message": "Resource not accessible"})
        message = asyncio.run(launcher.check())
    assert "active" in message and "runners not listed" in message


def test_check_reports_a_disabled_workflow() -> None:
    with responses.RequestsMock() as rsps:
        rsps.get(WF, json={"id": 1, "state": "disabled_manually"})
        with pytest.raises(LauncherError, match="disabled_manually"):
            asyncio.run(GithubLauncher(settings(), labels="x").check())


def test_reattach_by_nonce_reads_further_pages_of_a_busy_repository(make_job, make_request, make_result) -> None:
    job = make_job(remote_ref=f"github:{REPO}:nonce:deep")
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")
    others = [run_json("completed", "success", run_id=1000 + i, nonce=f"other{i}") for i in range(gh.RUNS_PER_PAGE)]

    def runs(req):
        page = int(dict(x.split("=") for x in req.url.split("?", 1)[1].split("&")).get("page", "1"))
        found = others if page == 1 else [run_json("queued", None, nonce="deep")]
        return 200, {}, json.dumps({"total_count": len(others) + 1, "workflow_runs": found})

    with responses.RequestsMock() as rsps:
        listing = rsps.add_callback(responses.GET, f"{WF}/runs", callback=runs)
        rsps.get(RUN, json=run_json("completed", "success", nonce="deep"))
        add_artifact(rsps, "deep", artifact_zip({"result.json": make_result().model_dump_json()}))
        assert run(launcher, make_request(), job).passed
        assert not any(c.request.method == "POST" for c in rsps.calls)
    assert len(listing.calls) == 2


def test_a_mangled_reference_is_a_launcher_error_not_a_crash(make_job, make_request) -> None:
    job = make_job(remote_ref=f"github:{REPO}:run:not-a-number:n1")
    with responses.RequestsMock(), pytest.raises(LauncherError, match="not one this launcher wrote"):
        run(GithubLauncher(settings(), labels="x"), make_request(), job)


def test_cancelling_the_launcher_cancels_the_workflow_run(job, make_request) -> None:
    """Issue 11: a job cancelled, its lease lost or its worker stopped must not leave its GitHub run going."""
    launcher = GithubLauncher(settings(), labels="gpu-nvidia")

    async def main() -> None:
        task = asyncio.create_task(launcher.run(make_request(), job))
        for _ in range(500):  # until the launcher polls the run
            if any(call.request.url.endswith(f"/runs/{RUN_ID}") for call in rsps.calls):
                break
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with responses.RequestsMock() as rsps:
        rsps.post(f"{WF}/dispatches", json={"workflow_run_id": RUN_ID, "run_url": RUN, "html_url": "h"})
        rsps.get(RUN, json=run_json("in_progress", None))
        cancel = rsps.post(f"{RUN}/cancel", status=202)
        asyncio.run(main())
    assert cancel.call_count == 1
