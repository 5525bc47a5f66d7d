"""``runners.entry.check_reference`` (``problems validate --run`` and ``sync``): the reference passes its own check on
every test case, and every benchmark case's inputs can be made, in the sandboxed evaluator on the CPU; what a broken
problem gets refused for."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from leaderboards.problems import load_problem
from leaderboards.sync import reference_request
from runners.contract import RunRequest, Verdict
from runners.entry import check_reference
from runners.settings import RunnerSettings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "problems" / "vectoradd"


def _request() -> RunRequest:
    return reference_request(load_problem(FIXTURE))


def test_a_sound_problem_passes(tmp_path: Path) -> None:
    result = check_reference(_request(), settings=RunnerSettings(job_root=tmp_path, allow_unsandboxed=True))
    assert result.verdict is Verdict.ACCEPTED, result.message


def test_a_benchmark_case_whose_inputs_cannot_be_made_is_the_problems_fault(tmp_path: Path) -> None:
    request = _request()
    benchmarks = [request.benchmarks[0], {"size": 2**62, "seed": 5}]  # fits in 64 bits, not in any memory
    result = check_reference(
        request.model_copy(update={"benchmarks": benchmarks}),
        settings=RunnerSettings(job_root=tmp_path, allow_unsandboxed=True),
    )
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR
    assert "the problem 'vectoradd' failed: benchmark 2: the problem's generate_input(size=4611686018427387904" in (
        result.message
    ), result.message


BROKEN = {
    # name: (what replaces or is added to reference.py, words the refusal must contain)
    "a later test case fails": (
        "_gen = generate_input\n"
        "def generate_input(size, seed):\n"
        "    if size == 1000:\n"
        "        raise ValueError('no inputs this size')\n"
        "    return _gen(size, seed)\n",
        "generate_input(size=1000, seed=3) failed",
    ),
    "inputs that do not depend on the seed alone": (
        "import random\n"
        "_gen = generate_input\n"
        "def generate_input(size, seed):\n"
        "    return _gen(size, seed + random.randrange(1 << 30))\n",
        "generate_input gives different inputs for the same case (test 1",
    ),
    "a check that passes everything": (
        "def check_implementation(data, output):\n    return True\n",
        "check_implementation accepts None as the output of test 1",
    ),
    "a check whose verdict is NaN": (
        "def check_implementation(data, output):\n    return float('nan'), 'differs'\n",
        "check_implementation returned float nan as its verdict",
    ),
    "a check that exits the process": (
        "import sys\n"
        "def check_implementation(data, output):\n    sys.exit(3)\n",
        "SystemExit",
    ),
    "a speed of light that is infinite": (
        "def speed_of_light(size, **_):\n    return {'bytes': float('inf'), 'flops': size}\n",
        "benchmark 1: the problem's speed_of_light(size=4096, seed=10) failed:\nspeed_of_light's 'bytes' is inf",
    ),
    "a speed of light beyond 64 bits": (
        "def speed_of_light(size, **_):\n    return {'bytes': 10**30, 'flops': size}\n",
        "it must be a whole number from 0 to 2**63 - 1",
    ),
    # The fourth review (2026-11-25): each passed validation and then failed or misjudged every ranked run.
    "a generator that ignores its seed": (
        "_gen = generate_input\n"
        "def generate_input(size, seed):\n"
        "    return _gen(size, 7)\n",
        "it ignores its seed, so every timed call of a ranked run would get one input",
    ),
    "a generator that cannot take the seeds timed calls get": (
        "import struct\n"
        "_gen = generate_input\n"
        "def generate_input(size, seed):\n"
        "    struct.pack('<h', seed)  # a 16-bit seed field\n"
        "    return _gen(size, seed)\n",
        "with seed 2147483647 (timed calls get seeds from 0 to 2**31 - 1, made from a secret)",
    ),
    "a check that NaN passes": (
        "def check_implementation(data, output):\n"
        "    a, b, _ = data\n"
        "    if output is None:\n"
        "        return False, 'no output'\n"
        "    return not bool(((output - (a + b)).abs() > 1e-6).any()), ''\n",
        "check_implementation accepts NaN in every element of the output of test 1",
    ),
    "inputs that cannot be passed to custom_kernel": (
        "_gen = generate_input\n"
        "def generate_input(size, seed):\n"
        "    return (*_gen(size, seed), [0.5] * 3000)\n",
        "cannot be passed to custom_kernel",
    ),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_problem_is_refused_by_its_reference_check_as_the_problems_fault(name: str, tmp_path: Path) -> None:
    """The hostile-problem review of 2026-11-24: each of these passed ``validate --run`` and then failed (or blamed)
    every submission. The reference check now runs every test case, generates each twice, tries an output of None
    on the check, passes the inputs through the arena's value walk and reads each benchmark's speed of light."""
    folder = tmp_path / "problem"
    shutil.copytree(FIXTURE, folder)
    extra, words = BROKEN[name]
    with (folder / "reference.py").open("a") as f:
        f.write("\n\n" + extra)
    result = check_reference(reference_request(load_problem(folder)),
                             settings=RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True))  # fmt: skip
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR, result.message
    assert result.message.startswith("the problem 'problem' failed: "), result.message
    assert words in result.message, result.message
    assert result.fault == "problem"


HANGS = {
    # name: (what is added to reference.py, the start of the refusal's reason)
    "generate_input on test 2": (
        "import time\n"
        "_gen = generate_input\n"
        "def generate_input(size, seed):\n"
        "    if size == 7:\n"
        "        time.sleep(3600)\n"
        "    return _gen(size, seed)\n",
        "test 2 ({size: 7, seed: 2}): generate_input (reference.py line",
    ),
    "ref_kernel on test 3": (
        "import time\n"
        "_ref = ref_kernel\n"
        "def ref_kernel(data):\n"
        "    while data[0].numel() == 1000:\n"
        "        time.sleep(1)\n"
        "    return _ref(data)\n",
        "test 3 ({size: 1000, seed: 3}): ref_kernel (reference.py line",
    ),
    "check_implementation on test 2": (
        "import time\n"
        "_check = check_implementation\n"
        "def check_implementation(data, output):\n"
        "    if data[0].numel() == 7:\n"
        "        time.sleep(3600)\n"
        "    return _check(data, output)\n",
        "test 2 ({size: 7, seed: 2}): check_implementation (reference.py line",
    ),
    "generate_input on a benchmark case": (
        "import time\n"
        "_gen = generate_input\n"
        "def generate_input(size, seed):\n"
        "    if size == 65536:\n"
        "        time.sleep(3600)\n"
        "    return _gen(size, seed)\n",
        "the baselines and the benchmark cases' inputs: generate_input (reference.py line",
    ),
}


@pytest.mark.parametrize("name", list(HANGS))
def test_a_reference_that_hangs_is_refused_in_seconds_naming_the_case_and_the_function(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37.3: a reference whose generate_input slept took 8 minutes to be refused by `problems sync` (the
    check's whole limit). Each case now has a bound derived from it (20 s + 20 ns per unit of its size; here the
    floor is made 3 s), and the refusal names the case and the function, read from the evaluator's stack."""
    from runners.entry import clock

    monkeypatch.setattr(clock, "CASE_FLOOR_S", 3.0)
    folder = tmp_path / "problem"
    shutil.copytree(FIXTURE, folder)
    extra, words = HANGS[name]
    with (folder / "reference.py").open("a") as f:
        f.write("\n\n" + extra)
    if "benchmark" in name:  # the hanging case alone: its step's bound (3 x each case's and one per baseline) is 12 s
        task = folder / "task.yml"
        task.write_text(task.read_text().replace("  - {size: 4096, seed: 10}\n", ""))
    request = reference_request(load_problem(folder))
    assert request.limits.run_timeout_s >= 120  # what it used to wait for
    result = check_reference(request, settings=RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True))
    assert result.verdict is Verdict.INFRASTRUCTURE_ERROR and result.fault == "problem", result.message
    # Told within seconds of the problem's code starting (the platform's start-up before it, up to
    # KERNELCUP_STARTUP_TIMEOUT_S on a loaded machine, is not the problem's).
    assert result.wall_time_s - result.phase_times["hello"] < 60, result.phase_times
    assert result.message.startswith(f"the problem 'problem' failed: {words}"), result.message
    assert "did not return within" in result.message


@pytest.mark.parametrize(
    ("what", "said"),
    [
        ("test 1 (size: 1000)", "and 30 s for importing reference.py before it"),
        ("test 2 (size: 1000)", "20 s plus 20 ns per unit of the case's size)"),
        ("the baselines and the benchmark cases' inputs", "three times each benchmark case's bound"),
    ],
)
def test_a_hang_message_says_how_its_steps_bound_was_made(what: str, said: str) -> None:
    """The first test's bound includes the import of reference.py: a message naming only the per-case formula
    ('within 50 s ... (20 s plus ...)') did not add up (red team of the problem format, 2026-11-29)."""
    from runners.entry.clock import Step, reference_hang_message

    message = reference_hang_message(Step("reference", 0.0, 50.0, what, 50.0), "generate_input")
    assert message.startswith(f"{what}: generate_input did not return within 50 s") and said in message, message


HELD_OUT_FAILS = """

_gen = generate_input
def generate_input(size, seed):
    if size == 13:
        raise ValueError('no inputs this size')
    return _gen(size, seed)
"""


def test_the_refusal_names_the_case_that_failed_a_held_out_one_too(tmp_path: Path) -> None:
    """An organizer's walk: a held-out case whose inputs could not be made was reported "on the test case {size: 1,
    ...}", the first test case, whatever failed."""
    import functools

    import yaml

    from leaderboards.sync import check_references

    folder = tmp_path / "problem"
    shutil.copytree(FIXTURE, folder)
    task = yaml.safe_load((folder / "task.yml").read_text())
    task["holdout"] = [{"size": 13, "seed": 7103}]
    (folder / "task.yml").write_text(yaml.safe_dump(task, sort_keys=False))
    with (folder / "reference.py").open("a") as f:
        f.write(HELD_OUT_FAILS)
    settings = RunnerSettings(job_root=tmp_path / "jobs", allow_unsandboxed=True)
    check = functools.partial(check_reference, settings=settings)
    [issue] = check_references([load_problem(folder)], check)
    assert "(on the held-out case {'size': 13, 'seed': 7103})" in issue.message, issue.message
    assert "no inputs this size" in issue.message
