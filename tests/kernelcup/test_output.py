"""What the CLI prints: outside text as it is (never as Rich markup or terminal control), one line for an empty
leaderboard, the demo's boards apart from the user's."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import profile_result, run_result, write_problem, write_problem_set
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.commands.run import render, save_ncu_report
from runners.contract import StallReason, TimingStats


def sync(root: Path, devices: list[str], description: str = "Add one.") -> None:
    write_problem(root / "problems", "add", description=description)
    write_problem_set(root / "problems", [{"directory": "add", "deadline": "2099-01-01", "devices": devices}])
    result = CliRunner().invoke(
        build_app(), ["problems", "sync", "--skip-run", str(root / "problems" / "test-set.yaml")]
    )
    assert result.exit_code == 0, result.output


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


def test_run_report_prints_names_and_output_as_they_are(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_result(message="").model_copy(update={"stdout": "hi\x1b[2J\x1b]0;owned\x07 [red]there\n"})
    render(result, "add[x]", "kernel[v2].py", "cpu")
    out = capsys.readouterr().out
    assert "kernel[v2].py" in out and "add[x]" in out
    assert "[red]there" in out and "\x1b" not in out and "owned" not in out


def test_run_report_uses_the_shared_formatter_and_warns_on_few_samples(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_result((95_316_475.0,))
    one = TimingStats(samples=1, median_ns=1234, mean_ns=1234, std_ns=0, stderr_ns=0, min_ns=1234, max_ns=1234)
    few = result.model_copy(update={"benchmarks": [result.benchmarks[0].model_copy(update={"stats": one})]})
    render(result, "add", "k.py", "cpu")
    out = capsys.readouterr().out
    assert "95.3 ms" in out and "95316" not in out and "±" not in out
    render(few, "add", "k.py", "cpu")
    out = capsys.readouterr().out
    assert "1.23 µs" in out and "too few samples" in out and "warning: some cases have fewer than 5 samples" in out


def test_a_narrow_terminal_wraps_table_cells_instead_of_cutting_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newcomer at 80 columns read `size=2…`: the one value the case column is for. Cells fold now."""
    monkeypatch.setenv("COLUMNS", "80")
    result = run_result((95_316_475.0,))
    case = {"size": 268435456, "seed": 1234567, "dtype": "bfloat16"}
    wide_case = result.model_copy(update={"benchmarks": [result.benchmarks[0].model_copy(update={"case": case})]})
    render(wide_case, "add", "k.py", "cpu")
    out = capsys.readouterr().out
    rows = [line.split("│") for line in out.splitlines() if line.count("│") >= 10]  # the benchmarks table's rows
    case_column = "".join(row[2].strip() for row in rows)  # a folded cell goes on in the rows below
    assert "size=268435456,seed=1234567,dtype=bfloat16" in case_column and "…" not in out, out


def test_leaderboard_show_escapes_markup_and_prints_one_line_when_empty(env: Path) -> None:
    sync(env, ["cpu", "H100"], description="[bold]Add[/] one [/oops] and [link=x]more")
    result = CliRunner().invoke(build_app(), ["leaderboard", "show", "add"])
    assert result.exit_code == 0, result.output
    assert "[bold]Add[/] one [/oops] and [link=x]more" in result.output
    # the hint names a device: a board of several refuses a submission without one (a newcomer's walk)
    assert "no ranked submissions yet on any device (`kernelcup submit FILE -l add -d DEVICE`)" in result.output
    assert "┏" not in result.output and "━" not in result.output  # no empty tables


def test_user_and_file_names_are_not_markup(env: Path) -> None:
    from datetime import UTC, datetime

    from rich.console import Console

    from kernelcup.commands.leaderboard import ranking_table
    from leaderboards.results import Ranking, RankingEntry

    entries = (RankingEntry(1, 10, "[bold]eve", 100, "kernel[v2].py", 1234.0, datetime.now(UTC)),)
    console = Console(width=200, record=True)
    console.print(ranking_table(Ranking("add", "cpu", "geom", entries, total=1)))
    text = console.export_text()
    assert "[bold]eve" in text and "kernel[v2].py" in text


def test_demo_boards_live_in_their_own_data_directory(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelcup import wiring
    from runners.launchers.fake import FakeLauncher

    launcher = FakeLauncher()
    monkeypatch.setattr(wiring, "launcher_for", lambda kind="routed", **_: lambda device: launcher)
    sync(env, ["cpu"])
    (env / "problems" / "add" / "solutions" / "correct").mkdir(parents=True)
    (env / "problems" / "add" / "solutions" / "correct" / "pytorch.py").write_text(
        "def custom_kernel(d):\n    return d\n"
    )
    demo = CliRunner().invoke(build_app(), ["demo", "--set", str(env / "problems" / "test-set.yaml")])
    assert demo.exit_code == 0, demo.output
    assert f"KERNELCUP_DATA_DIR={env / 'data' / 'demo'}" in " ".join(demo.output.split())
    mine = CliRunner().invoke(build_app(), ["leaderboard", "list"])
    assert "add" in mine.output and "demo-add" not in mine.output
    monkeypatch.setenv("KERNELCUP_DATA_DIR", str(env / "data" / "demo"))
    theirs = CliRunner().invoke(build_app(), ["leaderboard", "list"])
    assert "demo-add" in theirs.output


def test_run_report_shows_each_cases_roofline_share_and_the_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from runners.contract import DataType, RooflinePeaks

    result = run_result((240_000.0,))
    bench = result.benchmarks[0].model_copy(
        update={"roofline_ns": 173_600.0, "roofline_share": 0.723, "roofline_limit": "fp16 tensor"}
    )
    peaks = RooflinePeaks(device="H100", dtype=DataType.FP16, memory_bytes_per_s=3.35e12, flops_per_s=989.4e12,
                          source="NVIDIA H100 datasheet (SXM, dense)")  # fmt: skip
    scored = {"benchmarks": [bench], "score_ns": 240_000.0, "roofline_share": 0.723, "roofline": peaks}
    render(result.model_copy(update=scored), "mm", "k.py", "cuda")
    out = capsys.readouterr().out
    assert "72% fp16 tensor" in out
    assert "72% of roofline overall (H100 datasheet peaks: 3.35 TB/s, 989.4 TFLOP/s fp16)" in out
    render(result, "mm", "k.py", "cpu")  # no bound on a CPU: no share
    assert "of roofline" not in capsys.readouterr().out


def test_a_profile_report_prints_a_row_per_kernel(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "320")
    result = profile_result()
    odd = result.kernel_metrics[0].model_copy(
        update={"name": "evil[bold]\x1b[2J", "top_stalls": [StallReason(reason="[red]x", value=1.0, metric="m")]}
    )
    render(result.model_copy(update={"kernel_metrics": [*result.kernel_metrics, odd]}), "add", "k.py", "H100")
    out = capsys.readouterr().out
    assert "kernels (Nsight Compute)" in out
    rows = [line for line in out.splitlines() if "add_kernel" in line]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].split("│")[1:-1]]
    assert cells == ["add_kernel", "5.18 µs", "(4096, 1, 1)", "(128, 1, 1)", "26", "0 B", "84.0%", "88.5%", "14.2%",
                     "0.0%", "33.4%", "0.0%", "long_scoreboard 41.7, wait 3.12, short_scoreboard 0.21"]  # fmt: skip
    assert "evil[bold]" in out and "[red]x 1" in out and "\x1b" not in out  # names are text, not markup
    assert "Nsight Compute profiled 3 kernel launch(es)" in out


def test_the_report_is_saved_without_overwriting_one_already_there(tmp_path: Path) -> None:
    first = save_ncu_report(b"one", tmp_path / "k.ncu-rep")
    second = save_ncu_report(b"two", tmp_path / "k.ncu-rep")
    assert (first.name, second.name) == ("k.ncu-rep", "k-2.ncu-rep")
    assert first.read_bytes() == b"one" and second.read_bytes() == b"two"


def test_a_report_into_a_file_or_a_pipe_keeps_its_rows_wide(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Newcomer's walk, 2026-11-29: with stdout not a terminal rich drew the report 80 columns wide, and a benchmark
    row's note wrapped one word per line; now 160 there (COLUMNS still decides where it is set)."""
    from kernelcup.commands.common import REPORT_WIDTH, report_console

    monkeypatch.delenv("COLUMNS")
    assert report_console().width == REPORT_WIDTH
    monkeypatch.setenv("COLUMNS", "100")
    assert report_console().width == 100
    monkeypatch.delenv("COLUMNS")
    render(run_result(), "add", "k.py", "cpu")
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) > 80 and max(len(line) for line in lines) <= REPORT_WIDTH
