"""The agent guide ``kernelcup agent init PROBLEM`` writes (AGENTS.md): what to implement, the rules, how to evaluate,
what a result says — from the problem's own data: a leaderboard on a server (its API detail and template) or a
problem folder on this machine (its task.yml and templates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leaderboards.problems import Problem
from runners.contract import LANGUAGES, Language
from web.schemas import LeaderboardDetailOut

DESCRIPTION_MAX = 6000
"""The most characters of a problem's description the guide quotes (it points to the rest)."""


@dataclass(frozen=True)
class GuideSpec:
    name: str
    description: str
    lang: str
    devices: tuple[str, ...]
    tests: tuple[dict[str, Any], ...]
    benchmarks: tuple[dict[str, Any], ...]
    ranking_by: str
    dtype: str
    baselines: tuple[str, ...]
    language: str
    """The template's language label the starter was written from."""
    starter: str
    """The starter's file name in this folder."""
    folder: str | None = None
    """The problem folder, when the guide is for a local one (``kernelcup run``); None for a server's leaderboard."""
    server: str | None = None


def from_leaderboard(
    board: LeaderboardDetailOut, language: str, starter: str, server: str, device: str | None
) -> GuideSpec:
    devices = (device,) if device else board.devices
    return GuideSpec(
        name=board.name,
        description=board.description,
        lang=board.lang,
        devices=tuple(devices),
        tests=board.tests,
        benchmarks=board.benchmarks,
        ranking_by=board.ranking_by,
        dtype=board.dtype,
        baselines=board.baselines,
        language=language,
        starter=starter,
        server=server,
    )


def from_folder(problem: Problem, language: str, starter: str) -> GuideSpec:
    task = problem.task
    return GuideSpec(
        name=problem.name,
        description=task.description,
        lang=task.lang.value,
        devices=("cuda", "cpu"),
        tests=tuple(task.tests),
        benchmarks=tuple(task.benchmarks),
        ranking_by=task.ranking_by.value,
        dtype=task.dtype.value,
        baselines=tuple(b.label for b in task.baselines),
        language=language,
        starter=starter,
        folder=str(problem.path),
    )


def _language(lang: str) -> str:
    try:
        return LANGUAGES[Language(lang)].display
    except ValueError:
        return lang


def _cases(cases: tuple[dict[str, Any], ...], limit: int = 8) -> str:
    lines = [f"  - `{', '.join(f'{k}={v}' for k, v in c.items())}`" for c in cases[:limit]]
    if len(cases) > limit:
        lines.append(f"  - … and {len(cases) - limit} more")
    return "\n".join(lines)


def _block(rows: list[tuple[str, str]]) -> str:
    """Commands with their comments in one column."""
    width = max(len(command) for command, _ in rows) + 2
    return "\n".join(f"{command:<{width}}# {comment}" for command, comment in rows)


def _commands(spec: GuideSpec) -> str:
    f = spec.starter
    if spec.folder is not None:
        run = f"kernelcup run {spec.folder}"
        rows = [
            (f"{run} {f}", "test: every test case checked against the reference"),
            (f"{run} {f} -m benchmark", "also timed: median per benchmark case, speedup over the reference"),
            (f"{run} {f} -m ranked", "as a ranked run: fresh inputs from a secret seed at every timed call"),
            (f"{run} {f} -m profile", "a profile of your kernel (Nsight Compute on a GPU)"),
            (f"{run} new.py old.py --compare", "which of two files is faster, with a 95% interval"),
            (f"{run} {f} --json", "the full result as JSON"),
        ]
        return f"""This guide is for the problem folder `{spec.folder}`; everything runs on this machine
(`-d cpu` without a GPU):

```sh
{_block(rows)}
```"""
    submit = f"kernelcup submit {f} -l {spec.name} -d {spec.devices[0]}"
    rows = [
        (f"{submit} -m test", "every test case checked against the reference"),
        (f"{submit} -m benchmark", "also timed: medians, speedup over the reference"),
        (f"{submit} -m profile", "a profile of your kernel (Nsight Compute on a GPU)"),
        (f"{submit} -m ranked", "enter the ranking (a secret-seed run must pass too)"),
        (f"kernelcup submit new.py old.py --compare -l {spec.name} -d {spec.devices[0]}", "which of two is faster"),
        ("kernelcup submissions show ID --follow --json", "a submission's result, later"),
        (f"kernelcup leaderboard show {spec.name}", "the ranking"),
    ]
    server = f" (the server: {spec.server})" if spec.server else ""
    return f"""Through the kernelcup server{server}, with the login `kernelcup login` stored (or `KERNELCUP_SERVER`
and `KERNELCUP_TOKEN`):

```sh
{_block(rows)}
```

Add `--json` for the result as JSON. `kernelcup mcp` serves the same as tools to an agent over MCP (stdio)."""


def render(spec: GuideSpec) -> str:
    """AGENTS.md for one problem."""
    description = spec.description.strip()
    if len(description) > DESCRIPTION_MAX:
        description = description[:DESCRIPTION_MAX] + "\n\n… (cut: the problem's full description is on its page)"
    baselines = ", ".join(["reference", *spec.baselines])
    devices = ", ".join(spec.devices)
    rule = {"geom": "the geometric mean", "mean": "the mean", "sum": "the sum", "last": "the last"}.get(
        spec.ranking_by, spec.ranking_by
    )
    return f"""# Agent guide: {spec.name}

Written by `kernelcup agent init` from the problem's own data. The starter is `{spec.starter}` (the problem's
`{spec.language}` template); the file you submit is {_language(spec.lang)}.

## What to implement

{description}

A Python file defines `custom_kernel(data)`: it receives what the problem's `generate_input` made for one case (as
described above) and returns the output. It must compute the real answer for every call, for any inputs of the
described shapes and distribution.

- Devices: {devices}. Data type of the work: {spec.dtype}.
- Test cases (correctness):
{_cases(spec.tests)}
- Benchmark cases (timed; each timed call gets fresh inputs):
{_cases(spec.benchmarks)}

## Rules

Timing and checking are done by the trusted side, in another process than your code: your kernel runs in a sandbox,
and nothing it prints or measures counts. These are cheating and are refused, or measured honestly so they gain
nothing:

- caching or reusing an output across calls (each timed call has new inputs; ranked runs draw them from a secret
  seed), or special-casing the test or benchmark shapes and seeds;
- reading the expected output, the reference's check or the seed; changing the inputs so a later check agrees;
- hiding work from the timer: other CUDA streams, threads or processes that run past the call's return;
- touching the timer, the harness, the result channel, the network, or files outside the job's folder;
- calling the reference or a library that does the whole operation where the problem forbids it.

A time faster than the device's speed of light (its peak bandwidth and flops for this work) is never ranked.

## How to evaluate

{_commands(spec)}

## What a result says

- **verdict**: `accepted` (every test passed; timed modes: every benchmark too), `wrong_answer` (the message names
  the first differing element, the value expected and the error allowed), `compile_error`, `runtime_error` (with
  the traceback), `timeout`, `out_of_memory`, `rejected` (the run broke a rule), `needs_cuda`, or
  `infrastructure_error` (the platform's fault, not yours; it is retried).
- **tests**: passed of total, and each failed case with its message.
- **benchmarks**: per case the median time and its spread; the **score** is {rule} of the cases' medians in
  nanoseconds (lower is better), and the **roofline share** how close it is to the device's speed of light.
- **speedups** over {baselines}, timed in the same run on the same inputs (above 1: yours is faster).
- ranked runs: whether the **secret-seed run** passed, and the **rank** on the device.
"""
