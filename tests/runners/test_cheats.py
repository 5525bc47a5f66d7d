"""Every cheat under tests/runners/cheats/ is rejected or scored honestly.

Each cheat declares in its docstring what it must get (``expect:``), the mode it attacks (``mode:``), words
the message must contain (``words:``) and ``device: cuda`` when it only makes sense on a GPU. What the
expectations mean:

- ``rejected`` / ``wrong_answer`` / ``runtime_error``: that verdict, and the words in the message;
- ``slow_or_wrong``: caches whose miss path sleeps 20 ms. Either a stale answer was caught (wrong answer) or
  every benchmark median is at least 20 ms, i.e. no timed call was served from the cache;
- ``secret_hidden``: the run is accepted and the cheat never found the secret seed (it prints FOUND if so);
- ``honest_score``: accepted, and no benchmark median is the 1 ns the cheat tried to report;
- ``strict_timing``: work hidden on another stream was noticed and the case re-timed device-wide.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness_helpers import CHEATS, Evaluate

from runners.contract import Mode, Verdict


def _header(path: Path) -> dict[str, str]:
    doc = path.read_text().split('"""')[1]
    return dict(re.findall(r"^(\w+): (.+)$", doc, flags=re.M))


def _cases() -> list[object]:
    cases = []
    for path in sorted(CHEATS.glob("*.py")):
        marks = [pytest.mark.gpu] if _header(path).get("device") == "cuda" else []
        cases.append(pytest.param(path, id=path.stem, marks=marks))
    return cases


@pytest.mark.parametrize("cheat", _cases())
def test_cheat_is_rejected_or_scored_honestly(evaluate: Evaluate, cheat: Path) -> None:
    header = _header(cheat)
    expect, mode, device = header["expect"], Mode(header["mode"]), header.get("device", "cpu")
    result = evaluate(cheat, mode, device=device, name="submission.py")
    shown = f"{result.verdict}: {result.message}\n{result.stdout[-500:]}\n{result.stderr[-1500:]}"
    if expect in ("rejected", "wrong_answer", "runtime_error"):
        assert result.verdict is Verdict(expect), shown
        assert header.get("words", "") in result.message, shown
    elif expect == "slow_or_wrong":
        assert result.verdict in (Verdict.WRONG_ANSWER, Verdict.ACCEPTED), shown
        if result.verdict is Verdict.ACCEPTED:
            medians = [b.stats.median_ns for b in result.benchmarks if b.stats]
            assert len(medians) == 2 and min(medians) >= 20e6, shown
    elif expect == "secret_hidden":
        assert result.verdict is Verdict.ACCEPTED, shown
        assert "FOUND" not in result.stdout, shown
    elif expect == "honest_score":
        assert result.verdict is Verdict.ACCEPTED, shown
        assert all(b.stats and b.stats.median_ns > 100 for b in result.benchmarks), shown
    elif expect == "strict_timing":
        assert result.verdict is Verdict.ACCEPTED, shown
        assert all("device-wide synchronisation" in b.message for b in result.benchmarks), shown
    else:  # pragma: no cover - a cheat with a typo in its header
        pytest.fail(f"{cheat.name}: unknown expectation {expect!r}")


def test_every_cheat_declares_an_expectation() -> None:
    known = {
        "rejected",
        "wrong_answer",
        "runtime_error",
        "slow_or_wrong",
        "secret_hidden",
        "strict_timing",
        "honest_score",
    }
    for path in CHEATS.glob("*.py"):
        header = _header(path)
        assert header.get("expect") in known, path.name
        Mode(header["mode"])
