"""A compare with kernel metrics through the API (issue 30): `POST /submissions` with `mode=compare` and
`profile=true` on a GPU device; the comparison's `metrics` (a typed field of `status.comparison.result`) holds, per
case, the dominant kernels of both files side by side with their deltas. `profile` without a compare, or on the CPU,
is refused with a code and the field."""

from __future__ import annotations

from pathlib import Path

from web_world import GOOD, World, error_of

from runners.contract import ComparisonMetrics, Mode, RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result
from runners.ncu import parse_raw_csv

FAST = b"def custom_kernel(data):  # fast\n    return data\n"
GEMM, ADD = parse_raw_csv(
    (Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "raw_page_h100_recorded.csv").read_text()
)


def respond(request: RunRequest) -> RunResult:
    fast = b"# fast" in request.submission.content
    if request.mode is Mode.PROFILE:
        return accepted_result(request).model_copy(update={"kernel_metrics": [GEMM if fast else ADD]})
    return accepted_result(request, 800.0 if fast else 1000.0)


def _post(world: World, **data: str):
    return world.client.post(
        "/api/v1/submissions",
        headers=world.auth(world.ann),
        files={"file": ("fast.py", FAST), "against": ("plain.py", GOOD)},
        data={"leaderboard": "add", "rounds": "2", **data},
    )


def test_a_compare_with_profile_answers_the_kernel_metrics_beside_the_ratio(world: World) -> None:
    r = _post(world, mode="compare", devices="H100", profile="true")
    assert r.status_code == 202, r.text
    world.serve(FakeLauncher(respond, remote_refs=False))
    body = world.client.get(f"/api/v1/submissions/{r.json()['submission_id']}", headers=world.auth(world.ann)).json()
    result = body["status"]["comparison"]["result"]
    assert result["verdict"] == "accepted" and result["ratio"] == 0.8
    metrics = ComparisonMetrics.model_validate(result["metrics"])
    assert metrics.collector == "ncu" and len(metrics.cases) == len(result["cases"])
    row = metrics.cases[0].kernels[0]
    assert row.a is not None and row.a.name == "_matmul" and row.b is not None and row.b.top_stall == "long_scoreboard"
    assert row.occupancy_pct is not None and round(row.occupancy_pct, 2) == round(12.48 - 80.21, 2)


def test_profile_is_refused_without_a_compare_or_on_the_cpu(world: World) -> None:
    data = {"leaderboard": "add", "devices": "H100", "mode": "benchmark", "profile": "true"}
    files = {"file": ("fast.py", FAST)}
    alone = world.client.post("/api/v1/submissions", headers=world.auth(world.ann), files=files, data=data)
    assert alone.status_code == 422 and error_of(alone)["code"] == "profile_without_compare"
    assert error_of(alone)["field"] == "profile" and "send mode=compare" in error_of(alone)["message"]
    cpu = _post(world, mode="compare", devices="cpu", profile="true")
    assert cpu.status_code == 422 and error_of(cpu)["code"] == "profile_needs_gpu", cpu.text


def test_the_python_client_and_the_cli_ask_for_the_metrics(world: World) -> None:
    """``Client.compare(..., profile=True)`` (what `kernelcup submit A B --compare --profile` calls) sends the field:
    the answer carries the metrics; on the CPU the service's refusal comes back by its code."""
    import httpx

    from kernelcup.client import ApiError, Client

    def forward(request: httpx.Request) -> httpx.Response:  # the client's requests, answered by the app in process
        got = world.client.request(request.method, str(request.url), headers=request.headers, content=request.read())
        return httpx.Response(got.status_code, headers=got.headers, content=got.content)

    with Client(str(world.client.base_url), world.ann, transport=httpx.MockTransport(forward)) as kc:
        sub = kc.compare(("fast.py", FAST), ("plain.py", GOOD), "add", "H100", rounds=2, profile=True)
        world.serve(FakeLauncher(respond, remote_refs=False))
        comparison = sub.result().status.comparison
        assert comparison is not None and comparison.result is not None and comparison.result.metrics is not None
        assert comparison.result.metrics.cases[0].kernels[0].b is not None
        try:
            kc.compare(("fast.py", FAST), ("plain.py", GOOD), "add", "cpu", rounds=2, profile=True)
        except ApiError as exc:
            assert exc.code == "profile_needs_gpu"
        else:
            raise AssertionError("a compare with profile on the CPU was accepted")
