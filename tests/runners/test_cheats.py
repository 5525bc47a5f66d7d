"""Every cheat under tests/runners/cheats/ is rejected or scored no better than honest work.

Each cheat declares in its docstring what it must get (``expect:``), the mode it attacks (``mode:``), words the
message must contain (``words:``) and ``device: cuda`` when it only makes sense on a GPU (``device: cpu cuda``: it
runs on both). What the expectations mean:

- ``rejected`` / ``wrong_answer`` / ``runtime_error`` / ``out_of_memory`` / ``timeout``: that verdict, and the
  words in the message; ``A|B``: verdict A with the words (the defence that names the cheat), or verdict B, a
  failure the cheat's own answer earned when a race went the other way (e.g. under load the evaluator sent "go"
  before the cheat's premature "done" arrived, and the answer it had made on no inputs was judged wrong);
- ``no_gain``: whatever the cheat changed in its own process made no difference where it counts: the run is not
  blamed on the platform, and if it is accepted, no benchmark median is below a third of an honest solution's
  fastest sample (its fastest: load on a shared CI machine only ever makes samples slower), in two of three
  back-to-back pairs of runs (a forgery gains most of the time; load moves one run of a pair);
- ``slow_or_wrong``: caches whose miss path sleeps 20 ms. Either a stale answer was caught (wrong answer) or
  every benchmark median is at least 20 ms, i.e. no timed call was served from the cache (``floor_ms:`` sets
  another floor: the real work every call of the cheat does);
- ``secret_hidden``: the run is accepted and the cheat never found the secret seed (it prints FOUND if so);
- ``inputs_hidden``: the cheat never read a timed call's inputs before its window opened (it prints FOUND if so), and
  it gained nothing (as ``no_gain``).

A cheat that gets through today declares ``xfail: <reason>``: it runs as a strict expected failure until the
harness is fixed, then the line goes.

On the CPU the timed runs (the cheats' and the honest ones they are compared with) time no baselines (a runner
with ``KERNELCUP_TIME_BASELINES=false``, ``RunnerSettings.time_baselines``): the evaluator times the baselines
before the submission's file loads, in processes of their own that are stopped by then, so no cheat runs beside
them, and they cost a CPU run two more ``import torch`` (5.7 of its 13 CPU-seconds, measured 2026-11-28). What
their times bound (a benchmark case's limit, the floor a result is blamed at) is tested in ``test_baselines.py``
and ``test_entry_limits.py``; on a GPU, where the clock's calibration and the reference share the device with
what a cheat leaves behind, the cheats run with them, as every run does.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from harness_helpers import CHEATS, SUBMISSIONS, build_request

from runners.contract import Mode, RunResult, Verdict
from runners.entry import run_request
from runners.settings import RunnerSettings

VERDICTS = {"rejected", "wrong_answer", "runtime_error", "out_of_memory", "timeout"}
KNOWN = {*VERDICTS, "slow_or_wrong", "secret_hidden", "inputs_hidden", "no_gain", "broken_or_correct"}
"""``broken_or_correct``: a runtime error, or (a test-mode run only) accepted with every test run and passed by the
evaluator's own check: for a cheat whose outcome is a race that neither side controls (reset_context.py)."""
_honest: dict[tuple[Mode, str], RunResult] = {}
SECRET_SEED = 7390912244615081773
"""The secret a ``secret_hidden`` cheat's ranked run gets: 19 digits, so that no string or number of the process
contains it by chance. (The default 20261122 did: ``types_pyyaml-6.0.12.20261122.dist-info``, a directory of the
site folder, sat in a list of the submission process, and read_secret_seed.py reported "FOUND the secret in ['gc
list']" where no secret was; project issue 37.)"""


def _header(path: Path) -> dict[str, str]:
    doc = path.read_text().split('"""')[1]
    return dict(re.findall(r"^(\w+): (.+)$", doc, flags=re.M))


def _cases() -> list[object]:
    cases = []
    for path in sorted(CHEATS.glob("*.py")):
        header = _header(path)
        devices = header.get("device", "cpu").split()
        for device in devices:
            marks = [pytest.mark.gpu] if device == "cuda" else []
            if "xfail" in header:  # an attack that gets through today (docs/redteam-2026-11-23.md); remove when fixed
                marks.append(pytest.mark.xfail(strict=True, reason=header["xfail"]))
            name = path.stem if len(devices) == 1 else f"{path.stem}-{device}"
            cases.append(pytest.param(path, device, id=name, marks=marks))
    return cases


def _settings(device: str, job_root: Path) -> RunnerSettings:
    """The runner a cheat (and the honest solution) runs on: on the CPU one that times no baselines (see the
    module's docstring)."""
    return RunnerSettings(job_root=job_root, allow_unsandboxed=True, time_baselines=device != "cpu")


def honest(mode: Mode, device: str, tmp_path: Path) -> RunResult:
    """An honest solution's result for the same problem, mode and device (once per session)."""
    if (mode, device) not in _honest:
        request = build_request(SUBMISSIONS / "correct_torch.py", mode, device=device)
        result = run_request(request, settings=_settings(device, tmp_path))
        assert result.verdict is Verdict.ACCEPTED, result.message
        _honest[(mode, device)] = result
    return _honest[(mode, device)]


def _gain(result: RunResult, baseline: RunResult) -> str:
    """What a run gained over honest work: a benchmark median below a third of the honest fastest sample."""
    for got, ref in zip(result.benchmarks, baseline.benchmarks, strict=True):
        assert got.stats and ref.stats
        if got.stats.median_ns < ref.stats.min_ns / 3:
            return f"benchmark {got.index}: {got.stats.median_ns:.0f} ns against an honest {ref.stats.min_ns:.0f} ns"
    return ""


@pytest.mark.parametrize(("cheat", "device"), _cases())
def test_cheat_is_rejected_or_scored_no_better_than_honest_work(cheat: Path, device: str, tmp_path: Path) -> None:
    header = _header(cheat)
    expect, mode = header["expect"], Mode(header["mode"])
    seed = SECRET_SEED if expect == "secret_hidden" and mode is Mode.RANKED else None

    def evaluate(**options: Any) -> RunResult:
        request = build_request(cheat, mode, device=device, name="submission.py", **options)
        return run_request(request, settings=_settings(device, tmp_path / "jobs"))

    result = evaluate(seed=seed)
    shown = f"{result.verdict}: {result.message}\n{result.stdout[-500:]}\n{result.stderr[-1500:]}"
    assert result.verdict is not Verdict.INFRASTRUCTURE_ERROR, shown  # never the platform's fault
    if set(expect.split("|")) <= VERDICTS:
        first, *others = expect.split("|")
        assert result.verdict in {Verdict(first), *(Verdict(v) for v in others)}, shown
        if result.verdict is Verdict(first):
            assert header.get("words", "") in result.message, shown
    elif expect == "broken_or_correct":
        assert mode is Mode.TEST and result.verdict in (Verdict.RUNTIME_ERROR, Verdict.ACCEPTED), shown
        if result.verdict is Verdict.ACCEPTED:
            request = build_request(cheat, mode, device=device)
            assert len(result.tests) == len(request.tests) > 0, shown
            assert all(t.verdict is Verdict.ACCEPTED for t in result.tests), shown
    elif expect == "slow_or_wrong":
        assert result.verdict in (Verdict.WRONG_ANSWER, Verdict.ACCEPTED), shown
        if result.verdict is Verdict.ACCEPTED:
            medians = [b.stats.median_ns for b in result.benchmarks if b.stats]
            assert len(medians) == 2 and min(medians) >= float(header.get("floor_ms", 20)) * 1e6, shown
    elif expect == "secret_hidden":
        assert result.verdict is Verdict.ACCEPTED, shown
        assert "FOUND" not in result.stdout, shown
    elif expect in ("no_gain", "inputs_hidden"):
        if expect == "inputs_hidden":
            assert "FOUND" not in result.stdout, shown
        if result.verdict is Verdict.ACCEPTED and mode in (Mode.BENCHMARK, Mode.RANKED):
            gains = [_gain(result, honest(mode, device, tmp_path))]
            # Load on a shared machine moves one run's samples and not the other's (seen on 2 busy cores: an honest
            # run at 14 ms a call against 0.1 ms a minute later). On a first gain both are measured twice more, back
            # to back, and the cheat fails if it gained in two of the three pairs: a forgery that works most of the
            # time is caught, one unlucky moment of load is not.
            if gains[0]:
                for _ in range(2):
                    again = evaluate()
                    _honest.pop((mode, device), None)
                    base = honest(mode, device, tmp_path)
                    gains.append(_gain(again, base) if again.verdict is Verdict.ACCEPTED else "")
            assert sum(bool(g) for g in gains) < 2, f"{gains}\n{shown}"
    else:  # pragma: no cover - a cheat with a typo in its header
        pytest.fail(f"{cheat.name}: unknown expectation {expect!r}")


def test_every_cheat_declares_an_expectation() -> None:
    for path in CHEATS.glob("*.py"):
        header = _header(path)
        expect = header.get("expect", "")
        assert expect in KNOWN or set(expect.split("|")) <= VERDICTS, path.name
        Mode(header["mode"])
