"""run_request end to end on the CPU: verdicts, messages, modes, statistics, and the CLI contract."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from harness_helpers import SUBMISSIONS, Evaluate, build_request

from leaderboards.problems import load_problem
from runners import stats
from runners.contract import Mode, Phase, ProgressEvent, RunResult, Verdict
from runners.entry import REPO_ROOT, derive_seed, run_request


def test_correct_pytorch_submission_passes_every_test(evaluate: Evaluate) -> None:
    result = evaluate("submissions/correct_torch.py")
    assert result.verdict is Verdict.ACCEPTED, result.message
    assert [t.verdict for t in result.tests] == [Verdict.ACCEPTED] * 3
    assert result.message == "3 of 3 tests passed"
    assert result.system.device == "cpu" and result.system.python
    assert result.wall_time_s > 0 and result.started_at and result.finished_at


def test_triton_submission_runs_on_the_cpu_through_the_interpreter(evaluate: Evaluate) -> None:
    pytest.importorskip("triton")
    result = evaluate("submissions/correct_triton.py")
    assert result.verdict is Verdict.ACCEPTED, result.message + result.stderr


def test_wrong_answer_says_where_the_output_differs(evaluate: Evaluate) -> None:
    result = evaluate("submissions/wrong_off_by_one.py")
    assert result.verdict is Verdict.WRONG_ANSWER
    first, second, _ = result.tests
    assert first.verdict is Verdict.ACCEPTED and second.verdict is Verdict.WRONG_ANSWER
    assert "1 of 7 elements differ" in second.message and "at (5,)" in second.message
    assert "got" in second.message and "expected" in second.message
    assert result.message.startswith("2 of 3 tests failed; first: test 2:")


def test_wrong_shape_is_a_wrong_answer_naming_both_shapes(evaluate: Evaluate) -> None:
    result = evaluate("submissions/wrong_shape.py")
    assert result.verdict is Verdict.WRONG_ANSWER
    assert "output shape (0,), expected (1,)" in result.tests[0].message


def test_exception_is_a_runtime_error_with_the_submission_traceback(evaluate: Evaluate) -> None:
    result = evaluate("submissions/raises.py")
    assert result.verdict is Verdict.RUNTIME_ERROR
    assert "ValueError: boom from the submission" in result.message
    assert "submission.py" in result.message and "runners/harness" not in result.message


@pytest.mark.parametrize(
    ("file", "verdict", "words"),
    [
        ("submissions/no_entry.py", Verdict.REJECTED, "no_entry.py defines no custom_kernel(data) function"),
        ("submissions/exit_at_import.py", Verdict.RUNTIME_ERROR, "exited with code 0"),
        ("submissions/needs_cuda.py", Verdict.NEEDS_CUDA, "needs a CUDA device"),
        ("submissions/inline_cuda.py", Verdict.NEEDS_CUDA, "builds CUDA code; this machine has no CUDA GPU"),
    ],
)
def test_bad_submission_gets_its_own_category(evaluate: Evaluate, file: str, verdict: Verdict, words: str) -> None:
    result = evaluate(file)
    assert result.verdict is verdict, result.message
    assert words in result.message
    assert "CUDA_HOME" not in result.message + result.stderr  # (torch's words: a toolkit is not what is missing)


def test_syntax_error_is_a_compile_error_naming_the_line(evaluate: Evaluate) -> None:
    result = evaluate(
        "submissions/correct_torch.py", content=b"import torch\n\ndef custom_kernel(data)\n    return 1\n"
    )
    assert result.verdict is Verdict.COMPILE_ERROR
    assert "syntax error in correct_torch.py, line 3" in result.message


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("submission.py", b"", "is empty"),
        ("submission.py", b"   \n\n", "is empty"),
        ("submission.py", b"\x7fELF\x02\x01\x00\x00junk", "not a text file"),
        ("submission.py", b"\xff\xfe custom_kernel", "not UTF-8 text"),
        ("submission.py", b"#" * (10 * 1024 * 1024), "the limit is 1,048,576 bytes"),
        ("submission.exe", b"def custom_kernel(d): return d", "unknown file type .exe"),
        ("kernel.cu", b"__global__ void k() {}", "takes Python (PyTorch, Triton, inline CUDA) submissions"),
    ],
)
def test_unusable_files_are_rejected_before_anything_runs(
    evaluate: Evaluate, name: str, content: bytes, words: str
) -> None:
    result = evaluate("submissions/correct_torch.py", name=name, content=content)
    assert result.verdict is Verdict.REJECTED
    assert words in result.message
    assert not result.tests and not result.stderr  # no process was started


def test_output_is_capped_and_marked_truncated(evaluate: Evaluate) -> None:
    result = evaluate("submissions/chatty.py")
    assert result.verdict is Verdict.ACCEPTED
    assert result.stdout_truncated and len(result.stdout.encode()) <= 16 * 1024
    assert "to stderr" in result.stderr and not result.stderr_truncated


def test_what_the_submission_prints_reaches_the_result_without_controls_or_bidi_overrides(evaluate: Evaluate) -> None:
    """Red team of the harness, 2026-11-29: a file printing a clear-screen, colours, a bell and U+202E before a
    forged "verdict: accepted" line had them carried raw in ``stdout`` to every surface that shows it (the API's
    JSON, the bot, the web page). Newlines and tabs stay."""
    forged = "\\x1b[2J\\x1b[H\\x1b[32mverdict: accepted, score 0.1 us\\x1b[0m\\u202e\\x07"
    content = (SUBMISSIONS / "correct_torch.py").read_bytes() + (
        f"\nprint('{forged}\\tend')\nimport sys\nprint('{forged}', file=sys.stderr)\n"
    ).encode()
    result = evaluate("submissions/correct_torch.py", content=content)
    assert result.verdict is Verdict.ACCEPTED, result.message
    for text in (result.stdout, result.stderr):
        assert "verdict: accepted" in text and "\ufffd" in text, repr(text)
        assert not any(c in text for c in "\x1b\x07\u202e\r"), repr(text)
    assert "\tend\n" in result.stdout


def test_benchmark_mode_reports_statistics_computed_from_raw_samples(evaluate: Evaluate) -> None:
    result = evaluate("submissions/correct_torch.py", Mode.BENCHMARK)
    assert result.verdict is Verdict.ACCEPTED, result.message
    assert not result.tests  # benchmark mode runs no tests
    assert [b.index for b in result.benchmarks] == [0, 1]
    for bench in result.benchmarks:
        s = bench.stats
        assert s is not None and 5 <= s.samples <= 40
        assert s.min_ns <= s.median_ns <= s.max_ns and s.std_ns >= 0
        assert math.isclose(s.stderr_ns, s.std_ns / math.sqrt(s.samples))
        assert bench.bytes_moved == 12 * bench.case["size"]
    medians = [b.stats.median_ns for b in result.benchmarks]
    assert result.score_ns == pytest.approx(math.sqrt(medians[0] * medians[1]))
    assert "score" in result.message and "geom of 2 benchmark medians" in result.message


def test_ranked_mode_runs_tests_then_times_every_benchmark(evaluate: Evaluate) -> None:
    events: list[ProgressEvent] = []
    request = build_request("submissions/correct_torch.py", Mode.RANKED, seed=1234)
    result = run_request(request, events.append)
    assert result.verdict is Verdict.ACCEPTED, result.message
    assert len(result.tests) == 3 and len(result.benchmarks) == 2 and result.score_ns
    phases = [e.phase for e in events]
    assert phases[0] is Phase.STARTING and phases[-1] is Phase.DONE
    assert {Phase.COMPILING, Phase.TESTING, Phase.BENCHMARKING} <= set(phases)


def test_public_half_of_a_ranked_submission_runs_without_a_secret_seed(evaluate: Evaluate) -> None:
    # A ranked job runs once with the public cases (no seed) and once with the secret seed; the public run must
    # get fresh per-call inputs too instead of waiting forever for a seed the parent refused to give.
    request = build_request("submissions/correct_torch.py", Mode.RANKED)
    request.seed = None  # (build_request gives a ranked request a seed when it is passed None)
    result = run_request(request)
    assert result.verdict is Verdict.ACCEPTED, result.message
    assert len(result.benchmarks) == 2 and result.score_ns


def test_ranked_mode_stops_at_a_failing_test(evaluate: Evaluate) -> None:
    result = evaluate("submissions/wrong_off_by_one.py", Mode.RANKED)
    assert result.verdict is Verdict.WRONG_ANSWER and not result.benchmarks and result.score_ns is None


def test_profile_mode_on_the_cpu_returns_a_torch_profiler_table(evaluate: Evaluate) -> None:
    result = evaluate("submissions/correct_torch.py", Mode.PROFILE)
    assert result.verdict is Verdict.ACCEPTED, result.message
    assert result.profile and "aten::add" in result.profile and "Self CPU" in result.profile


def test_derived_seeds_are_distinct_per_call_and_depend_on_the_secret() -> None:
    seeds = {derive_seed(42, case, call) for case in range(3) for call in range(200)}
    assert len(seeds) == 600
    assert derive_seed(42, 0, 0) == derive_seed(42, 0, 0) != derive_seed(43, 0, 0)


def test_statistics_and_scores() -> None:
    s = stats.timing_stats([3.0, 1.0, 2.0, 10.0])
    assert (s.samples, s.median_ns, s.mean_ns, s.min_ns, s.max_ns) == (4, 2.5, 4.0, 1.0, 10.0)
    assert s.std_ns == pytest.approx(math.sqrt((9 + 4 + 1 + 36) / 3))
    from runners.contract import RankingRule

    assert stats.score([1.0, 100.0], RankingRule.GEOMEAN) == pytest.approx(10.0)
    assert stats.score([1.0, 100.0], RankingRule.MEAN) == pytest.approx(50.5)
    assert stats.score([1.0, 100.0], RankingRule.LAST) == 100.0
    with pytest.raises(ValueError):
        stats.timing_stats([1.0, float("nan")])


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runners.entry", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )


def test_entry_cli_writes_a_result_file_and_progress_lines(tmp_path: Path) -> None:
    request = build_request("submissions/wrong_off_by_one.py")
    (tmp_path / "req.json").write_text(request.model_dump_json())
    proc = _cli(str(tmp_path / "req.json"), str(tmp_path / "res.json"))
    assert proc.returncode == 0  # a result was written, whatever the verdict
    result = RunResult.model_validate_json((tmp_path / "res.json").read_text())
    assert result.verdict is Verdict.WRONG_ANSWER
    progress = [json.loads(line)["progress"] for line in proc.stderr.splitlines() if line.startswith('{"progress"')]
    assert progress[0]["phase"] == "starting" and progress[-1]["phase"] == "done"


def test_entry_cli_reads_stdin_and_answers_a_bad_request_with_an_infrastructure_error() -> None:
    proc = _cli("-", "-", stdin='{"mode": "ranked", "problem": 3}')
    assert proc.returncode == 0
    result = RunResult.model_validate_json(proc.stdout)
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR and result.mode is Mode.RANKED
    assert "not valid" in result.message
    assert _cli("only-one-argument").returncode == 2


def test_submissions_folder_is_complete() -> None:
    assert (SUBMISSIONS / "correct_torch.py").exists()


def test_native_cuda_on_the_cpu_needs_a_cuda_device() -> None:
    native = REPO_ROOT / "problems" / "vectoradd_cu"
    problem = load_problem(native)
    path = native / "templates" / "cuda.cu"
    result = run_request(problem.request("k.cu", path.read_bytes(), Mode.TEST, device="cpu"))
    assert result.verdict is Verdict.NEEDS_CUDA
    assert "needs a CUDA device" in result.message


def test_a_worker_that_requires_the_sandbox_refuses_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    import runners.sandbox.run

    monkeypatch.setattr(runners.sandbox.run, "probe_sandbox", lambda *a: (None, False, "bwrap is not installed"))
    request = build_request("submissions/correct_torch.py")
    result = run_request(request, require_sandbox=True)
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR  # the platform's problem: a worker may retry elsewhere
    assert "bwrap is not installed" in result.message and "KERNELCUP_ALLOW_UNSANDBOXED" in result.message


@pytest.mark.parametrize(
    ("broken", "says"),
    [
        ("submission", "the submission process did not start"),
        ("both", "the evaluator"),
    ],
)
def test_a_runner_that_cannot_start_is_an_infrastructure_error_never_the_users(
    evaluate: Evaluate, monkeypatch: pytest.MonkeyPatch, broken: str, says: str
) -> None:
    """Issue 11.3: when the submission's process (or the evaluator) dies before it says hello, e.g. a broken
    interpreter, the submission never ran: the run is an infrastructure error (retried, "not your fault"), never a
    runtime error."""
    from dataclasses import replace

    from runners.entry import session as session_mod

    real_init = session_mod.Session.__init__

    def broken_init(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        real_init(self, *args, **kwargs)
        broken_python = ("/bin/sh", "-c", "echo 'python: broken interpreter' >&2; exit 127", "sh")
        self.shape = replace(self.shape, prefix=broken_python)
        if broken == "both":
            self.shape = replace(self.shape, python="/nonexistent/python3")

    monkeypatch.setattr(session_mod.Session, "__init__", broken_init)
    result = evaluate("submissions/correct_torch.py")
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR, result
    assert says in result.message
