"""``kernelcup mcp``: the MCP server's tools, called through the official SDK's own client, against a kernelcup
served in-process (``served.py``: the API's app, the fake launcher) and, once, as the ``kernelcup mcp`` program
over stdio against the same app on a loopback port."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client as McpClient
from mcp import StdioServerParameters
from served import TEMPLATE, Served, served_kernelcup

from kernelcup.mcp_server import build_server

TOOLS = {"list_problems", "get_problem", "get_template", "evaluate", "evaluate_batch", "submit", "compare",
         "get_result", "list_submissions", "get_code", "get_rankings"}  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_kernelcup(tmp_path_factory.mktemp("mcp")) as s:
        yield s


def payload(result: Any) -> Any:
    """A tool's answer: its structured content (a list comes wrapped as {"result": [...]})."""
    assert not result.is_error, result.content
    content = result.structured_content
    return content["result"] if isinstance(content, dict) and set(content) == {"result"} else content


def calls(
    served: Served, *steps: tuple[str, dict[str, Any]], wait_s: float = 60.0, files_dir: Path | None = None
) -> list[Any]:
    """Each (tool, arguments) called in one session of the SDK's in-process client; raw results."""

    async def main() -> list[Any]:
        async with McpClient(build_server(served.client, wait_s=wait_s, files_dir=files_dir)) as mcp:
            listed = {t.name for t in (await mcp.list_tools()).tools}
            assert listed == TOOLS
            return [await mcp.call_tool(name, args) for name, args in steps]

    return asyncio.run(main())


def test_read_problems_and_templates(served: Served) -> None:
    problems, problem, template = calls(
        served, ("list_problems", {}), ("get_problem", {"name": "add"}), ("get_template", {"name": "add"})
    )
    assert payload(problems) == [
        {"name": "add", "problem": "add", "summary": "Add two vectors: return a + b.", "lang": "py",
         "devices": ["cpu", "H100"], "deadline": payload(problems)[0]["deadline"], "open": True}
    ]  # fmt: skip
    detail = payload(problem)
    assert detail["description"] == "Add two vectors: return a + b."
    assert [c["size"] for c in detail["tests"]] == [1, 2, 3, 4] and detail["languages"] == ["pytorch"]
    assert payload(template) == {"file_name": "add_pytorch.py", "content": f"#!POPCORN leaderboard add\n{TEMPLATE}"}


def test_evaluate_test_and_benchmark_from_text_and_path(served: Served, tmp_path: Path) -> None:
    kernel = tmp_path / "mine.py"
    kernel.write_text("# median 500\n" + TEMPLATE)
    wrong, timed, profiled = calls(
        served,
        ("evaluate", {"leaderboard": "add", "code": "# wrong 2\n" + TEMPLATE, "device": "cpu"}),
        ("evaluate", {"leaderboard": "add", "path": str(kernel), "mode": "benchmark", "device": "H100"}),
        ("evaluate", {"leaderboard": "add", "path": str(kernel), "mode": "profile", "device": "H100"}),
        files_dir=tmp_path,
    )
    out = payload(wrong)
    assert out["done"] and not out["accepted"] and out["mode"] == "test" and out["file_name"] == "submission.py"
    (job,) = out["devices"]
    assert job["device"] == "cpu" and job["verdict"] == "wrong_answer" and job["outcome"] == "wrong answer"
    assert (job["tests_passed"], job["tests_total"]) == (2, 4)
    assert [t["case"]["size"] for t in job["failed_tests"]] == [1, 2]
    assert job["failed_tests"][0]["message"] == "3 of 9 elements differ"
    out = payload(timed)
    assert out["accepted"] and out["file_name"] == "mine.py"
    (job,) = out["devices"]
    assert job["verdict"] == "accepted" and job["score_ns"] == pytest.approx(500, rel=0.02)
    assert job["speedups"] == {"reference": 4.0} and job["benchmarks"][0]["median_ns"] == pytest.approx(500)
    out = payload(profiled)
    assert out["mode"] == "profile" and out["devices"][0]["profile"] == "fake profile"


def test_evaluate_a_batch_answers_a_reward_record_per_candidate(served: Served, tmp_path: Path) -> None:
    codes = ["# median 500\n" + TEMPLATE, "# wrong 3\n" + TEMPLATE]
    kernel, good = tmp_path / "k.cu", tmp_path / "good.py"
    kernel.write_text("__global__ void k() {}\n")
    good.write_text("# median 600\n" + TEMPLATE)
    batch, by_path, none_runs, neither = calls(
        served,
        ("evaluate_batch", {"leaderboard": "add", "codes": codes, "device": "cpu"}),
        ("evaluate_batch", {"leaderboard": "add", "paths": [str(good), str(kernel)], "device": "cpu"}),
        ("evaluate_batch", {"leaderboard": "add", "paths": [str(kernel)], "device": "cpu"}),
        ("evaluate_batch", {"leaderboard": "add", "device": "cpu"}),
        files_dir=tmp_path,
    )
    out = payload(batch)
    assert out["done"] and [c["status"] for c in out["candidates"]] == ["succeeded", "succeeded"]
    fast, wrong = (c["reward"] for c in out["candidates"])
    assert fast["version"] == 2 and fast["accepted"] and fast["speedups"] == {"reference": 4.0}
    assert wrong["verdict"] == "wrong_answer" and wrong["correct_fraction"] == 0.25
    refused = payload(by_path)["candidates"][1]
    assert refused["status"] == "refused" and refused["reward"]["flags"] == ["refused"] and ".cu" in refused["error"]
    said = none_runs.content[0].text  # a batch of which nothing can run is refused whole, naming each file
    assert none_runs.is_error and "[no_candidate_can_run" in said and "k.cu" in said
    assert neither.is_error and "exactly one of codes" in neither.content[0].text


def test_submit_ranks_and_results_submissions_rankings_code(served: Served) -> None:
    (ranked,) = calls(served, ("submit", {"leaderboard": "add", "code": "# median 700\n" + TEMPLATE, "device": "cpu"}))
    out = payload(ranked)
    sid = out["submission_id"]
    assert out["mode"] == "ranked" and out["devices"][0]["rank"] == 1
    assert out["devices"][0]["secret_seed_run_passed"] is True
    result, subs, ranking, code = calls(
        served,
        ("get_result", {"submission_id": sid}),
        ("list_submissions", {"leaderboard": "add"}),
        ("get_rankings", {"leaderboard": "add", "device": "cpu"}),
        ("get_code", {"submission_id": sid}),
    )
    assert payload(result)["devices"] == out["devices"]
    assert payload(subs)[0]["submission_id"] == sid and payload(subs)[0]["jobs"][0]["verdict"] == "accepted"
    assert payload(ranking)["entries"][0] == {"rank": 1, "user": "agent", "score_ns": pytest.approx(700, rel=0.02),
                                              "submission_id": sid}  # fmt: skip
    assert payload(code) == {"file_name": "submission.py", "code": "# median 700\n" + TEMPLATE}


def test_compare_two_files(served: Served) -> None:
    (compared,) = calls(
        served,
        ("compare", {"leaderboard": "add", "device": "cpu", "code_a": "# median 500\n" + TEMPLATE,
                     "code_b": "# median 1000\n" + TEMPLATE, "rounds": 2}),
    )  # fmt: skip
    out = payload(compared)
    assert out["mode"] == "compare" and out["done"]
    assert out["comparison"]["ratio"] == pytest.approx(0.5, rel=0.05)


def test_refusals_are_tool_errors_with_the_api_message(served: Served, tmp_path: Path) -> None:
    unknown, both, missing, empty, compile_error = calls(
        served,
        ("get_problem", {"name": "nope"}),
        ("evaluate", {"leaderboard": "add", "code": TEMPLATE, "path": "x.py"}),
        ("evaluate", {"leaderboard": "add", "path": str(tmp_path / "absent.py")}),
        ("evaluate", {"leaderboard": "add", "code": ""}),
        ("evaluate", {"leaderboard": "add", "code": "# compile error\n", "device": "cpu"}),
        files_dir=tmp_path,
    )
    assert unknown.is_error and "no leaderboard named 'nope'" in unknown.content[0].text
    assert "[leaderboard_not_found" in unknown.content[0].text
    assert both.is_error and "give exactly one of code" in both.content[0].text
    assert missing.is_error and "cannot read" in missing.content[0].text
    assert empty.is_error and "[empty_file" in empty.content[0].text
    job = payload(compile_error)["devices"][0]
    assert job["verdict"] == "compile_error" and job["compile_output"] == "error: expected ';'"


def test_a_path_names_only_a_plain_file_under_the_servers_directory(served: Served, tmp_path: Path) -> None:
    """Red team of the service, 2026-11-29: a tool's path read any file of the user's (~/.ssh/id_rsa, a .env) and
    sent it to the server under any name, where a default archive licence could publish it."""
    root, outside = tmp_path / "work", tmp_path / "home"
    (root / "sub").mkdir(parents=True)
    (root / ".ssh").mkdir()
    outside.mkdir()
    (root / "sub" / "k.py").write_text("# median 500\n" + TEMPLATE)
    (root / ".env").write_text("SECRET=1\n")
    (root / ".ssh" / "id_rsa.py").write_text("SECRET=1\n")
    (outside / "secret.py").write_text("SECRET=1\n")
    (root / "link.py").symlink_to(outside / "secret.py")
    refused = [
        str(outside / "secret.py"),
        "../home/secret.py",
        "link.py",
        ".env",
        str(root / ".ssh" / "id_rsa.py"),
        "sub",
        "sub/absent.py",
        str(outside / "absent.py"),  # answered as an existing one outside is: whether it exists is not told
        "../home/absent.py",
    ]
    answers = calls(
        served,
        *(("evaluate", {"leaderboard": "add", "path": p, "device": "cpu", "wait": False}) for p in refused),
        ("evaluate", {"leaderboard": "add", "path": "sub/k.py", "device": "cpu"}),
        ("compare", {"leaderboard": "add", "device": "cpu", "path_a": "sub/k.py", "path_b": "link.py"}),
        files_dir=root,
    )
    texts = [a.content[0].text if a.is_error else "" for a in answers]
    assert all(a.is_error for a in answers[: len(refused)]), texts
    assert "is outside" in texts[0] and "--files-dir" in texts[0]
    assert "is outside" in texts[1] and "is outside" in texts[2]  # resolved: no way out through .. or a symlink
    assert "hidden" in texts[3] and "hidden" in texts[4]
    assert "not a regular file" in texts[5] and "cannot read" in texts[6]
    assert "is outside" in texts[7] and "is outside" in texts[8]
    assert payload(answers[-2])["file_name"] == "k.py"
    assert answers[-1].is_error and "is outside" in texts[-1]
    assert "SECRET" not in " ".join(texts)


def test_an_evaluation_not_waited_for_says_how_to_follow_it(served: Served) -> None:
    served.launcher.delay_s = 1.0
    try:
        (slow,) = calls(served, ("evaluate", {"leaderboard": "add", "code": "# median 900\n" + TEMPLATE,
                                             "device": "cpu", "wait": False}))  # fmt: skip
    finally:
        served.launcher.delay_s = 0.0
    out = payload(slow)
    assert not out["done"] and f"get_result with submission_id {out['submission_id']}" in out["note"]
    (later,) = calls(served, ("get_result", {"submission_id": out["submission_id"], "wait": True}))
    assert payload(later)["done"] and payload(later)["accepted"]


def test_kernelcup_mcp_over_stdio(served: Served, tmp_path: Path) -> None:
    """The program itself, started by the SDK's stdio client, against the served app on its loopback port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELCUP_")}
    env.update(KERNELCUP_SERVER=served.url, KERNELCUP_TOKEN=served.token,
               KERNELCUP_CONFIG_DIR=str(tmp_path / "config"), PYTHONPATH=os.pathsep.join(sys.path))  # fmt: skip
    params = StdioServerParameters(command=sys.executable, args=["-m", "kernelcup.cli", "mcp"], env=env)

    async def main() -> tuple[set[str], Any]:
        async with McpClient(params, read_timeout_seconds=120) as mcp:
            tools = {t.name for t in (await mcp.list_tools()).tools}
            return tools, await mcp.call_tool("evaluate", {"leaderboard": "add", "code": "# median 800\n" + TEMPLATE,
                                                           "device": "cpu", "mode": "benchmark"})  # fmt: skip

    tools, evaluated = asyncio.run(main())
    assert tools == TOOLS
    out = payload(evaluated)
    assert out["accepted"] and out["devices"][0]["speedups"] == {"reference": 2.5}


def test_without_a_server_it_says_how_to_log_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from kernelcup.cli import build_app

    for var in ("KERNELCUP_SERVER", "KERNELCUP_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KERNELCUP_CONFIG_DIR", str(tmp_path))
    r = CliRunner().invoke(build_app(), ["mcp"])
    assert r.exit_code == 2 and "kernelcup login --server URL" in r.output
