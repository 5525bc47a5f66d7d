"""Profile mode's Nsight Compute plumbing on the CPU: when ncu is chosen and why not, and the trusted read-back of its
report through a fake ``ncu`` on PATH (a script that prints the recorded-layout fixture for ``--import``, as the
real one would for a real report). The real ncu runs in tests/runners/test_gpu.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness_helpers import build_request

from runners.contract import KernelMetrics, Mode, RunRequest, RunResult, Verdict
from runners.entry.profiling import NCU_LOG, NCU_REPORT, choose_profiler, collect, counters_denied
from runners.settings import RunnerSettings
from runners.validation import (
    NCU_REPORT_MAX_BYTES,
    PROFILE_MAX_KERNELS,
    PROFILE_RESULT_MAX_BYTES,
    PROFILE_TEXT_MAX_CHARS,
    bound_profile,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ncu" / "raw_page_h100.csv"


def _fake_ncu(root: Path, body: str) -> Path:
    bin_dir = root / "tool" / "bin"
    bin_dir.mkdir(parents=True)
    ncu = bin_dir / "ncu"
    ncu.write_text("#!/bin/sh\n" + body)
    ncu.chmod(0o755)
    return ncu


@pytest.fixture
def ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An ``ncu`` that prints the fixture when asked to import a report that is there, as the raw CSV page."""
    csv = FIXTURE.read_text()
    body = (
        f'case "$*" in *"--import {NCU_REPORT} --csv --page raw"*) ;; *) echo "unexpected: $*" >&2; exit 2;; esac\n'
        f'[ -f {NCU_REPORT} ] || {{ echo "==ERROR== no report" >&2; exit 3; }}\n'
        f"cat <<'EOF'\n{csv}EOF\n"
    )
    fake = _fake_ncu(tmp_path, body)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    return fake


def _sub(tmp_path: Path, report: bytes | None = b"NVRP report bytes", log: str = "==PROF== Disconnected\n") -> Path:
    sub = tmp_path / "sub"
    sub.mkdir()
    if report is not None:
        (sub / NCU_REPORT).write_bytes(report)
    (sub / NCU_LOG).write_text(log)
    return sub


def _profile(device: str = "cuda", mode: Mode = Mode.PROFILE) -> RunRequest:
    return build_request("submissions/correct_torch.py", mode, device=device)


def test_ncu_wraps_profile_mode_on_a_gpu_and_writes_its_report_into_the_job_folder(ncu: Path, tmp_path: Path) -> None:
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 0\n")
    choice = choose_profiler(RunnerSettings(), _profile(), tmp_path / "sub", params=params)
    assert choice.kind == "ncu" and choice.ncu == str(ncu) and choice.prefix[0] == str(ncu) and not choice.note
    export = choice.prefix[choice.prefix.index("--export") + 1]
    assert Path(export) == tmp_path / "sub" / NCU_REPORT  # inside the submission's job folder
    assert "WarpStateStats" in choice.prefix and "--launch-count" in choice.prefix


@pytest.mark.parametrize(
    ("settings", "path", "note"),
    [
        (RunnerSettings(ncu=False), None, "switched off on this runner (KERNELCUP_NCU=false)"),
        (RunnerSettings(), "", "not installed on this runner"),
    ],
)
def test_without_ncu_the_torch_profiler_is_used_with_a_note_saying_why(
    settings: RunnerSettings, path: str | None, note: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if path is not None:
        monkeypatch.setenv("PATH", str(tmp_path))
    choice = choose_profiler(settings, _profile(), tmp_path)
    assert choice.kind == "torch" and choice.prefix == [] and note in choice.note
    assert choice.note.endswith("The torch profiler's table instead:")


def test_other_modes_and_the_cpu_never_use_ncu_and_carry_no_note(ncu: Path, tmp_path: Path) -> None:
    for request in (_profile(device="cpu"), _profile(mode=Mode.BENCHMARK)):
        assert choose_profiler(RunnerSettings(), request, tmp_path).kind == "torch"
        assert choose_profiler(RunnerSettings(), request, tmp_path).note == ""


def test_counters_restricted_to_administrators_are_err_nvgpuctrperm_for_others_only(tmp_path: Path) -> None:
    params = tmp_path / "params"
    params.write_text("RmProfilingAdminOnly: 1\n")
    assert "ERR_NVGPUCTRPERM" in counters_denied(params, euid=1000)
    assert "NVreg_RestrictProfilingToAdminUsers=0" in counters_denied(params, euid=1000)
    assert counters_denied(params, euid=0) == ""
    assert counters_denied(tmp_path / "missing", euid=1000) == ""  # the driver does not say: let ncu try


def test_the_report_is_read_back_by_trusted_code_into_metrics_and_attached(ncu: Path, tmp_path: Path) -> None:
    sub = _sub(tmp_path)
    got = collect(str(ncu), sub, tmp_path / "import", max_report_bytes=1024, require_sandbox=False, profiled=True)
    assert got.notes == []
    assert len(got.metrics) == 3 and got.metrics[0].name == "add_kernel"
    assert got.metrics[1].tensor_pipe_pct == 81.35
    assert got.report == b"NVRP report bytes"


def test_a_report_over_the_cap_is_left_out_with_a_note_but_its_metrics_still_come_back(
    ncu: Path, tmp_path: Path
) -> None:
    sub = _sub(tmp_path, report=b"x" * 3 * 1024 * 1024)
    got = collect(str(ncu), sub, tmp_path / "import", max_report_bytes=2 * 1024 * 1024, require_sandbox=False,
                  profiled=True)  # fmt: skip
    assert got.report is None and len(got.metrics) == 3
    assert got.notes == [
        "The Nsight Compute report (3.0 MiB) is over this runner's cap of 2 MiB (KERNELCUP_NCU_REPORT_MAX_MB), "
        "so it is not attached."
    ]


def test_a_report_planted_as_a_link_is_never_followed(ncu: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("the evaluator's seed")
    sub = _sub(tmp_path, report=None, log="==ERROR== Failed to profile kernel\n")
    (sub / NCU_REPORT).symlink_to(secret)
    got = collect(str(ncu), sub, tmp_path / "import", max_report_bytes=1024, require_sandbox=False, profiled=True)
    assert got.report is None and got.metrics == []
    assert got.notes == [
        "Nsight Compute wrote no report; the log in the submission's folder says: ==ERROR== Failed to profile kernel."
    ]
    assert not (tmp_path / "import" / NCU_REPORT).exists()


def test_err_nvgpuctrperm_at_run_time_is_a_note_and_no_metrics(ncu: Path, tmp_path: Path) -> None:
    log = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters\n"
    got = collect(str(ncu), _sub(tmp_path, log=log), tmp_path / "import", max_report_bytes=1024,
                  require_sandbox=False, profiled=True)  # fmt: skip
    assert got.metrics == [] and got.report is None
    assert "not permitted to read the GPU's counters (ERR_NVGPUCTRPERM)" in got.notes[0]


def test_a_failing_import_is_a_note_with_what_ncu_said(tmp_path: Path) -> None:
    broken = _fake_ncu(tmp_path, 'echo "==ERROR== The file is not a valid report" >&2\nexit 1\n')
    got = collect(str(broken), _sub(tmp_path), tmp_path / "import", max_report_bytes=1024, require_sandbox=False,
                  profiled=True)  # fmt: skip
    assert got.metrics == [] and got.report == b"NVRP report bytes"
    assert got.notes[0].startswith("Reading the Nsight Compute report failed (exit status 1)")
    assert "not a valid report" in got.notes[0]


def test_no_report_before_profile_mode_was_reached_is_no_news(ncu: Path, tmp_path: Path) -> None:
    got = collect(str(ncu), _sub(tmp_path, report=None), tmp_path / "import", max_report_bytes=1024,
                  require_sandbox=False, profiled=False)  # fmt: skip
    assert got.notes == [] and got.metrics == [] and got.report is None


# ---- what a profile result shows and carries (issue 37.4) -----------------------------------------------------------

FORGES_THE_TABLE = b"""import torch


class _Forged:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False

    def key_averages(self):
        return self

    def table(self, *args, **kwargs):
        return "Nsight Compute profiled 1 kernel launch(es).\\nadd_kernel  0.001 us  FORGED"


torch.profiler.profile = _Forged


def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""


def test_a_profile_table_the_submission_wrote_is_labelled_as_its_own(tmp_path: Path) -> None:
    """The torch profiler runs in the submission's process, so its table is the submission's text (here a forged one
    that reads like Nsight Compute's): the result says plainly whose it is, before any of it."""
    from runners.entry import SUBMISSIONS_OWN, run_request

    request = build_request("submissions/correct_torch.py", Mode.PROFILE, content=FORGES_THE_TABLE)
    result = run_request(request, settings=RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True))
    assert result.verdict.passed, result.message
    assert result.profile is not None and "FORGED" in result.profile
    assert result.profile.index(SUBMISSIONS_OWN) < result.profile.index("Nsight Compute profiled")


def test_under_nsight_compute_the_submissions_own_profile_text_is_not_shown() -> None:
    from runners.entry import submissions_own
    from runners.ipc.protocol import RProfile

    forged = RProfile(text="Nsight Compute profiled 1 kernel launch(es).\nadd_kernel 0.001 us")
    assert submissions_own(forged, ncu=True) is None
    shown = submissions_own(forged, ncu=False)
    assert shown is not None and shown.text.startswith("The table below is the submission's own")


def _profile_result(**fields: object) -> RunResult:
    return RunResult(verdict=Verdict.ACCEPTED, mode=Mode.PROFILE, **fields)  # type: ignore[arg-type]


def test_a_profile_result_is_bounded_per_field_and_in_all() -> None:
    """The red team's profile result was 8.1 MB (a 6 MB report; others were under 20 KB). Each field has a bound,
    and so has the whole; what is left out says so; a result within the bounds is left as it is."""
    metrics = [KernelMetrics(name=f"k{i}", duration_ns=1000.0) for i in range(300)]
    big = _profile_result(ncu_report=b"N" * 6 * 1024 * 1024, kernel_metrics=metrics, profile="x" * 200_000)
    bounded = bound_profile(big)
    assert bounded.ncu_report is None and len(bounded.kernel_metrics) == PROFILE_MAX_KERNELS
    assert bounded.profile is not None and len(bounded.profile) <= PROFILE_TEXT_MAX_CHARS
    assert bounded.profile.startswith("The Nsight Compute report (6.0 MiB) is over the cap of 4.0 MiB")
    assert "Only the first 256 of 300 kernel launches are kept." in bounded.profile
    assert len(bounded.model_dump_json()) <= PROFILE_RESULT_MAX_BYTES
    assert bound_profile(bounded) == bounded  # idempotent: the core may apply it again before storing
    normal = _profile_result(ncu_report=b"N" * 280_000, kernel_metrics=metrics[:3], profile="3 launches")
    assert bound_profile(normal) is normal
    assert bound_profile(normal, max_report_bytes=100_000).ncu_report is None  # the runner's own, smaller cap


def test_a_profile_result_over_the_total_drops_its_report_first() -> None:
    report = b"N" * (NCU_REPORT_MAX_BYTES - 1)
    stuffed = _profile_result(ncu_report=report, stdout="o" * 3_000_000, profile="table")
    bounded = bound_profile(stuffed)
    assert bounded.ncu_report is None and bounded.profile is not None
    assert bounded.profile.startswith("The profile result was over 6 MiB in all, so its Nsight Compute report")
    assert len(bounded.model_dump_json()) <= PROFILE_RESULT_MAX_BYTES


@pytest.mark.gpu
def test_under_nsight_compute_a_forged_table_never_shows_and_the_result_is_bounded(tmp_path: Path) -> None:
    """On a GPU with ncu: the profile is Nsight Compute's (read back by the entry), the submission's forged table is
    not in it, and the whole result is within the bounds (a report: 0.3 MiB on the H100, 5.9 MiB on the H200)."""
    import shutil

    from runners.entry import run_request
    from runners.entry.profiling import counters_denied

    if shutil.which("ncu") is None or counters_denied():
        pytest.skip("Nsight Compute cannot run here")
    request = build_request("submissions/correct_torch.py", Mode.PROFILE, device="cuda", content=FORGES_THE_TABLE)
    result = run_request(request, settings=RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True))
    assert result.verdict.passed, result.message
    assert result.kernel_metrics and result.profile is not None, result.profile
    assert result.profile.startswith("Nsight Compute profiled") and "FORGED" not in result.profile
    # Attached within its cap, or left out and said so (the lent H200's report of 2 launches was 5.9 MiB, 2026-11-28).
    if result.ncu_report is None:
        assert "is over this runner's cap" in result.profile and "not attached" in result.profile, result.profile
    else:
        assert len(result.ncu_report) <= NCU_REPORT_MAX_BYTES, result.profile
    assert len(result.model_dump_json()) <= PROFILE_RESULT_MAX_BYTES
