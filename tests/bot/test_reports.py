"""The pure renderers of the service's answers: status lines, tables, lists, announcements, statistics."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from helpers import profile_result

from bot.limits import fit
from bot.reports import (
    announcement_text,
    job_line,
    leaderboards_text,
    queue_text,
    ranking_table,
    report,
    status_text,
    submissions_text,
    task_reply,
    usage_text,
)
from leaderboards.results import (
    ImpossibleRun,
    JobEventView,
    JobStatus,
    JobView,
    LeaderboardSummary,
    PublicResult,
    QueueStats,
    RankChangeView,
    Ranking,
    RankingEntry,
    SubmissionDetails,
    SubmissionStatus,
    SubmissionSummary,
    TaskView,
    UsageStats,
    WorkerView,
)
from runners.contract import BenchmarkResult, Mode, RunResult, TestResult, TimingStats, Verdict

T0 = datetime(2026, 11, 1, 12, tzinfo=UTC)
STAMP = int(T0.timestamp())


def job(**kw) -> JobView:
    base = dict(
        job_id=1,
        device="H100",
        status="queued",
        verdict=None,
        attempts=0,
        max_attempts=3,
        error=None,
        queue_position=None,
        created_at=T0,
        started_at=None,
        finished_at=None,
        score_ns=None,
        ranked_score_ns=None,
        public_passed=None,
        secret_passed=None,
        rank=None,
    )
    view = {**base, **kw}
    # The service's views carry typed facts; the tests spell them as text for brevity.
    view["status"] = JobStatus(view["status"])
    view["verdict"] = Verdict(view["verdict"]) if view["verdict"] else None
    return JobView(**view)


def status(*jobs: JobView, mode: str = "ranked", deleted: bool = False) -> SubmissionStatus:
    return SubmissionStatus(7, "vectoradd", "alice", "kernel.py", Mode(mode), T0, deleted, jobs)


@pytest.mark.parametrize(
    ("view", "line"),
    [
        (job(queue_position=3), "⏳ **H100**: queued (#3 in the queue)"),
        (job(status="running", attempts=1), "⚙️ **H100**: started"),
        (
            job(status="running", attempts=1, events=(JobEventView("benchmarking", "3 of 5\nmore", T0),)),
            "⚙️ **H100**: benchmarking: 3 of 5 / more",
        ),
        (job(status="queued", attempts=2), "⏳ **H100**: queued (attempt 2/3)"),
        (
            job(status="succeeded", verdict="accepted", score_ns=12_300, rank=2, secret_passed=True),
            "✅ **H100**: accepted · score **12.3 µs** · rank **#2** (your best)",
        ),
        (
            job(status="succeeded", verdict="accepted", score_ns=12_300, secret_passed=False),
            "✅ **H100**: accepted · score **12.3 µs** · secret-seed run failed: not ranked",
        ),
        (job(status="succeeded", verdict="accepted"), "✅ **H100**: accepted"),
        (job(status="succeeded", verdict="wrong_answer"), "❌ **H100**: wrong answer"),
        (
            job(status="failed", verdict=None, error="the runner was lost 3 times; not your fault"),
            "❌ **H100**: failed: the runner was lost 3 times; not your fault",
        ),
        (job(status="cancelled"), "❌ **H100**: cancelled"),
    ],
)
def test_job_line_for_each_state(view: JobView, line: str) -> None:
    assert job_line(view) == line


def test_status_text_has_a_header_and_one_line_per_device() -> None:
    text = status_text(status(job(device="H100"), job(job_id=2, device="cpu", status="running"), deleted=True))
    assert text.splitlines() == [
        "**Submission #7** · `kernel.py` → **vectoradd** · ranked · by alice",
        "⏳ **H100**: queued",
        "⚙️ **cpu**: started",
        "(this submission was deleted by an admin)",
    ]


def test_names_cannot_break_out_of_their_markup() -> None:
    nasty = SubmissionStatus(1, "lb", "a`b\nc", "x```y.py", "test", T0, False, ())
    header = status_text(nasty)
    assert "```" not in header and "\n" not in header
    assert "`x'''y.py`" in header and "a'b c" in header


def test_a_waiting_job_says_when_no_runner_serves_its_device() -> None:
    assert job_line(job(queue_position=4, runner_online=False)) == (
        "⏳ **H100**: no runner for H100 is online; your job waits in the queue (#4)"
    )
    assert job_line(job(queue_position=4, runner_online=True)) == "⏳ **H100**: queued (#4 in the queue)"


def test_the_public_line_of_a_failure_leaves_its_message_out() -> None:
    failed = job(status="failed", verdict="runtime_error", error="Traceback: line 3 of kernel.py: secret()")
    assert job_line(failed, public=True) == "❌ **H100**: runtime error"
    assert "secret()" in job_line(failed)


def test_the_public_line_of_a_running_job_shows_its_phase_only() -> None:
    detail = "attempt 2/3 by worker gpu-17.corp:4242:6d6a (the lease of gpu-03:311:aa expired)"
    claimed = JobEventView("started", detail, T0)
    running = job(status="running", attempts=2, events=(claimed,))
    assert job_line(running, public=True) == "⚙️ **H100**: started (attempt 2/3)"
    assert "gpu-17.corp:4242" in job_line(running)  # the author's private view keeps the detail
    benchmarking = job(status="running", attempts=1, events=(JobEventView("benchmarking", "3 of 5", T0),))
    assert job_line(benchmarking, public=True) == "⚙️ **H100**: benchmarking"
    assert status_text(status(running), public=True).splitlines()[1] == "⚙️ **H100**: started (attempt 2/3)"


def test_mentions_in_user_text_are_made_inert() -> None:
    pinged = SubmissionStatus(
        1, "lb", "<@&123456789012345678>", "@everyone.py", "test", T0, False, (job(status="failed", error="@here"),)
    )
    text = status_text(pinged, public=False)
    assert "@everyone" not in text and "@here" not in text and "<@&1" not in text
    assert "@\u200beveryone.py" in text and "@\u200bhere" in text


def test_report_has_per_device_results_roofline_shares_and_files() -> None:
    stats = TimingStats(
        samples=50, median_ns=10_000, mean_ns=10_000, std_ns=100, stderr_ns=10, min_ns=9_900, max_ns=10_500
    )
    result = RunResult(
        verdict=Verdict.ACCEPTED,
        mode=Mode.RANKED,
        tests=[TestResult(index=0, case={"n": 1}, verdict=Verdict.ACCEPTED)],
        benchmarks=[
            BenchmarkResult(
                index=0,
                case={"n": 1},
                verdict=Verdict.ACCEPTED,
                stats=stats,
                bytes_moved=30_000_000,
                roofline_ns=10_000,
                roofline_share=1.0,
                roofline_limit="memory",
            )
        ],
        score_ns=10_000,
        stderr="warning: slow path",
        profile="profile text",
    )
    done = job(status="succeeded", verdict="accepted", score_ns=10_000, rank=1, secret_passed=True)
    other = job(job_id=2, device="cpu", status="running")
    details = SubmissionDetails(status(done, other), "code", "sha", (PublicResult("H100", result),))
    out = report(details)
    lines = out.content.splitlines()
    assert lines[2] == "✅ **H100**: accepted · score **10.0 µs** · rank **#1** (your best)"
    assert "✅ bench 1 (n=1): 10.0 µs (range 9.90–10.5 µs, n=50), 100% of roofline (memory)" in lines
    assert "secret-seed run: passed" in lines
    assert lines[-1] == "⚙️ **cpu**: started"
    assert [f.name for f in out.files] == ["logs-7-H100.txt", "profile-7-H100.txt"]


def board(**kw) -> LeaderboardSummary:
    base = dict(
        name="vectoradd",
        description="",
        lang="py",
        deadline=T0,
        devices=("H100", "cpu"),
        ranking_by="geom",
        is_open=True,
        paused=False,
        visible=True,
        rate_limit_per_hour=None,
        submissions=1,
        created_at=T0,
    )
    return LeaderboardSummary(**{**base, **kw})


def test_leaderboards_text_shows_each_state() -> None:
    text = leaderboards_text(
        [board(), board(name="old", is_open=False, submissions=2), board(name="p", paused=True, visible=False)]
    )
    assert text.splitlines()[1:] == [
        f"**vectoradd**: 🟢 open, closes <t:{STAMP}:R> · H100, cpu · py · 1 submission",
        f"**old**: 🔒 closed <t:{STAMP}:R> · H100, cpu · py · 2 submissions",
        "**p** (hidden): ⏸️ paused · H100, cpu · py · 1 submission",
    ]
    assert "`/admin sync`" in leaderboards_text([])


def test_ranking_table_is_aligned_and_says_how_many_more() -> None:
    entries = tuple(
        RankingEntry(i + 1, 10 + i, name, 100 + i, "k.py", score, T0)
        for i, (name, score) in enumerate([("alice", 1234.0), ("a-very-long-user-name-indeed", 2_500_000.0)])
    )
    text = ranking_table(Ranking("vectoradd", "H100", "geom", entries, total=5), highlight_user=11)
    head, table, more = text.split("```")
    assert head.startswith("**H100**: 5 ranked · score = geometric mean of the benchmark medians")
    rows = table.strip().splitlines()
    assert rows[1] == "  1  alice                  1.23 µs     100  2026-11-01 12:00"
    assert rows[2] == "  2› a-very-long-user-…     2.50 ms     101  2026-11-01 12:00"
    assert more == "\n… and 3 more"
    assert "No ranked submissions yet" in ranking_table(Ranking("v", "cpu", "last", (), 0))


def test_submissions_text_lists_newest_first_with_device_lines() -> None:
    subs = [SubmissionSummary(3, "vectoradd", "k.py", "test", T0, (job(status="succeeded", verdict="accepted"),))]
    lines = submissions_text("vectoradd", subs).splitlines()
    assert lines[1] == f"**#3** · `k.py` · test · <t:{STAMP}:R>"
    assert lines[2] == "  ✅ **H100**: accepted"
    assert submissions_text("vectoradd", []) == "You have no submissions on **vectoradd** yet."


def test_task_reply_has_an_embed_and_the_files() -> None:
    view = TaskView(
        name="vectoradd",
        description="Add two vectors.",
        lang="py",
        devices=("H100",),
        deadline=T0,
        ranking_by="last",
        files={"reference.py": "def ref_kernel(data): ...", "sub/util.py": "x = 1"},
        templates={"pytorch": "..."},
        template_files={"pytorch": "pytorch.py"},
        tests=({"n": 1},),
        benchmarks=({"n": 2}, {"n": 3}),
        dtype="fp16",
        language="CUTLASS / CuTe C++ (CUDA): .cu, .cuh files",
    )
    out = task_reply(view)
    [embed] = out.embeds
    fields = {f.name: f.value for f in embed.fields}
    assert fields["Language"] == "CUTLASS / CuTe C++ (CUDA): .cu, .cuh files"
    assert fields["Score"] == "median of the last benchmark"
    assert fields["Data type"] == "fp16 (its peak bounds the roofline)"
    assert fields["Speedup over"] == "reference"
    assert fields["Cases"] == "1 tests, 2 benchmarks"
    assert "`/leaderboard template vectoradd LANGUAGE`" in fields["Templates"]
    assert [f.name for f in out.files] == ["reference.py", "sub_util.py"]

    long = task_reply(replace(view, description="word " * 2000))
    assert len(long.embeds[0].description) <= 4096
    assert long.embeds[0].description.endswith("(the whole description is in vectoradd-description.md)")
    assert long.files[0].name == "vectoradd-description.md" and len(long.files[0].data) == 10_000


def test_announcement_text() -> None:
    change = RankChangeView(1, "vectoradd", "H100", 5, "bob", 42, 17, 3, 1, 9_000.0, 11_000.0, T0)
    assert announcement_text(change) == (
        "🏆 New #1 on **vectoradd** (H100)! <@42> moves from #3 to #1 with **9.00 µs** "
        "(their previous best: 11.0 µs) · submission #17"
    )
    local = replace(change, user_discord_id=None, new_rank=3, old_rank=None, previous_score_ns=None)
    assert announcement_text(local) == (
        "🎉 New top 3 on **vectoradd** (H100): **bob** moves to #3 with **9.00 µs** · submission #17"
    )


ROLE = "<@&123456789012345678>"


def test_queue_and_usage_text() -> None:
    stats = QueueStats({"H100": {"queued": 2, "running": 1}}, T0, (WorkerView("w1", "gpu-box", ("H100",), T0),))
    assert queue_text(stats).splitlines() == [
        "**Queue**",
        "**H100**: 2 queued, 1 running",
        f"Oldest queued job since <t:{STAMP}:R>",
        "Workers: w1 (H100)",
    ]
    assert "Workers: **none alive**" in queue_text(QueueStats({}, None, ()))
    sick = WorkerView("w2", "box", (), T0, healthy=False, health_note="cannot write job folders in /tmp (disk full)")
    assert queue_text(QueueStats({}, None, (sick,))).splitlines()[-2:] == [
        "Workers: w2 (any device)",
        "⚠️ w2 is **unhealthy** and claims no jobs: cannot write job folders in /tmp (disk full)",
    ]
    usage = UsageStats(None, 4, 2, {"vectoradd": 4}, {"test": 3, "ranked": 1}, 7200.0)
    assert usage_text(usage).splitlines() == [
        "**Usage**",
        "4 submissions from 2 users; runners busy 2.0 h",
        "By leaderboard: vectoradd 4",
        "By mode: ranked 1, test 3",
        "Speed-of-light gate: no run rejected",
    ]
    caught = (
        ImpossibleRun(7, f"{ROLE} mallory", "vectoradd", "H100", False, T0, "benchmark 1: 0.01 µs is faster"),
        ImpossibleRun(5, "mallory", "vectoradd", "H100", True, T0, ""),
    )
    lines = usage_text(UsageStats(None, 4, 2, {}, {}, 0.0, impossible_runs=2, impossible_latest=caught)).splitlines()
    assert lines[-3].startswith("**Speed-of-light gate:** 2 run(s) rejected")
    assert lines[-2].startswith("- #7 by ") and ROLE not in lines[-2] and "0.01 µs is faster" in lines[-2]
    assert lines[-1] == f"- #5 by mallory on vectoradd (H100), <t:{STAMP}:R>: secret run"


def test_a_profile_report_shows_a_short_kernel_table_and_attaches_the_ncu_report() -> None:
    done = job(status="succeeded", verdict="accepted")
    details = SubmissionDetails(status(done), "code", "sha", (PublicResult("H100", profile_result()),))
    out = report(details)
    lines = out.content.splitlines()
    start = lines.index("kernels (Nsight Compute):")
    assert lines[start + 1] == "```" and lines[start + 6] == "```"
    assert lines[start + 2].split() == ["kernel", "time", "occupancy", "DRAM", "SM", "top", "stall"]
    add = ["add_kernel", "5.18", "µs", "84.0%", "88.5%", "14.2%", "long_scoreboard", "41.7"]
    assert lines[start + 3].split() == add
    assert lines[start + 4].startswith("cutlass::device_kernel<cutl…")
    assert [f.name for f in out.files] == ["profile-7-H100.txt", "profile-7-H100.ncu-rep"]
    assert out.files[1].data == b"NVRP fake report"


def test_an_ncu_report_over_the_upload_limit_is_left_out_with_a_note() -> None:
    done = job(status="succeeded", verdict="accepted")
    big = profile_result(report=b"x" * 2048)
    out = fit(report(SubmissionDetails(status(done), "code", "sha", (PublicResult("H100", big),))), upload_limit=1024)
    assert [f.name for f in out.files] == ["profile-7-H100.txt"]
    assert "profile-7-H100.ncu-rep (2.0 KiB) is above Discord's upload limit" in out.content
