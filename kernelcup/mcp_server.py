"""``kernelcup mcp``: a Model Context Protocol server (stdio) over the kernelcup HTTP API, for coding agents.

It speaks for one account through ``kernelcup.client.Client`` — the server and token ``kernelcup login`` stored, or
``--server`` / ``KERNELCUP_SERVER`` and ``KERNELCUP_TOKEN`` — exactly as the CLI does, so an agent can do what a
competitor does and nothing more: read problems and templates, evaluate a file (test, benchmark, profile), submit it
ranked, compare two files, and read results, submissions and rankings. Every answer is plain JSON; every refusal of
the API (a rate limit, a wrong file type, a closed leaderboard) is a tool error carrying the API's own message.

Files are given as text (``code``) or as a path on this machine (``path``): the server runs beside the agent. A
path must name a file under the server's working directory (or ``--files-dir``), resolved (no symlink out of it),
with no hidden part ('.env', '.ssh/...'): an agent's call cannot send any other file of the user's.
Evaluating waits for the result (the trusted runner's verdict, timing and speedups) up to ``wait_s`` seconds, then
answers what is known with ``done: false`` and the id to ask ``get_result`` about later.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from kernelcup.client import ApiError, Client, Submission
from kernelcup.outcomes import summarize

INSTRUCTIONS = """kernelcup runs GPU-kernel competitions. A problem (leaderboard) has a reference implementation;
your file defines what its template defines (for Python: custom_kernel(data), which gets what the problem's
generate_input made and returns the output). Start with list_problems and get_problem, fetch a template with
get_template, then evaluate your file: mode "test" checks correctness on the test cases, "benchmark" also times it
beside the reference (speedups), "profile" adds a profiler summary; evaluate_batch runs many candidates at once and
answers a reward record for each. submit enters it in the ranking (ranked mode: a
secret seed run must pass too). Timing is done by the trusted runner, never by your code; a kernel that detects the
benchmark, caches answers across calls, reads the expected output or works on another stream to hide from the timer
is cheating and is refused or scored honestly. compare times two files against each other on one device."""

MAX_FILE_BYTES = 1 << 20
"""The most a file given by path may hold (the server's default upload limit)."""

T = TypeVar("T")


def _file(
    code: str | None, path: str | None, file_name: str | None, root: Path, what: str = "code"
) -> tuple[str, bytes]:
    """The (file name, content) of a file given as text or as a path under ``root`` (``_readable``)."""
    if (code is None) == (path is None):
        raise ToolError(f"give exactly one of {what} (the file's text) or {what.replace('code', 'path')} (a file)")
    if path is not None:
        file = _readable(path, root)
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                raise ToolError(f"{path} is larger than {MAX_FILE_BYTES} bytes")
            return file_name or file.name, file.read_bytes()
        except OSError as exc:
            raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None
    assert code is not None
    return file_name or "submission.py", code.encode()


def _readable(path: str, root: Path) -> Path:
    """``path`` (relative to ``root``, or absolute) resolved, when it is a regular file under ``root`` whose path
    there has no part starting with '.'; else a ``ToolError`` saying why. An agent's tool call could otherwise send
    any file this user can read (~/.ssh/id_rsa, a .env) to the server, under any name, and a default archive licence
    could publish it (red team of the service, 2026-11-29). Resolved first, so a symlink cannot lead out."""
    given = Path(path).expanduser()
    try:
        # Where it points is checked before whether it exists: otherwise a path outside answered "no such file" or
        # "outside" as it existed or not, which tells whether a file there exists (newcomer's walk, 2026-11-29).
        file = (given if given.is_absolute() else root / given).resolve(strict=False)
        if not file.is_relative_to(root):
            raise ToolError(
                f"{path} is outside {root}: this server reads only files under it (its working directory, or the "
                "directory `kernelcup mcp --files-dir DIR` names); give the file's text as code instead"
            )
        file = file.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ToolError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not file.is_relative_to(root):  # (a link created between the two resolutions)
        raise ToolError(f"{path} is outside {root}: this server reads only files under it")
    if any(part.startswith(".") for part in file.relative_to(root).parts):
        raise ToolError(f"{path} is a hidden file or in a hidden directory (a name starting with '.'): not sent")
    if not file.is_file():
        raise ToolError(f"{path} is not a regular file")
    return file


def _api(call: Callable[[], T]) -> T:
    """The API's refusals as tool errors, with its message and code."""
    try:
        return call()
    except ApiError as exc:
        field = f" (field {exc.field})" if exc.field else ""
        raise ToolError(f"{exc.message} [{exc.code}{field}]") from None


def build_server(client: Client, *, wait_s: float = 1800.0, files_dir: Path | None = None) -> MCPServer:
    """The MCP server's tools over ``client``. ``wait_s``: the longest an evaluation waits for its result;
    ``files_dir``: the only directory a ``path`` may name a file under (default: the working directory)."""
    root = (files_dir or Path.cwd()).expanduser().resolve()
    server: MCPServer = MCPServer(name="kernelcup", instructions=INSTRUCTIONS, log_level="WARNING")

    def finish(sub: Submission, wait: bool) -> dict[str, Any]:
        if wait:
            with contextlib.suppress(TimeoutError):  # answered below with done: false
                _api(lambda: sub.wait(wait_s))
        out = summarize(_api(sub.result))
        if not out["done"]:
            out["note"] = f"not done yet: call get_result with submission_id {sub.id} (wait: true) to follow it"
        return out

    def run_file(
        leaderboard: str, mode: str, file: tuple[str, bytes], device: str | None, wait: bool
    ) -> dict[str, Any]:
        """Submit ``file`` in ``mode`` and answer its summary (evaluate and submit)."""
        sub = _api(lambda: client.submit(file, leaderboard, [device] if device else None, mode))
        return finish(sub, wait)

    @server.tool()
    def list_problems() -> list[dict[str, Any]]:
        """Every open or visible leaderboard: its name, devices, language, deadline and whether it takes submissions."""
        boards = _api(client.leaderboards)
        return [
            {
                "name": b.name,
                "problem": b.problem,
                "summary": b.description.strip().splitlines()[0] if b.description.strip() else "",
                "lang": b.lang,
                "devices": list(b.devices),
                "deadline": b.deadline.isoformat(),
                "open": b.is_open and not b.paused,
            }
            for b in boards
        ]

    @server.tool()
    def get_problem(name: str) -> dict[str, Any]:
        """One leaderboard's problem: the description (inputs, output, tolerance), test and benchmark cases, devices,
        template languages, the data type and the baselines timed beside each benchmark."""
        b = _api(lambda: client.leaderboard(name))
        return {
            "name": b.name,
            "description": b.description,
            "lang": b.lang,
            "devices": list(b.devices),
            "deadline": b.deadline.isoformat(),
            "open": b.is_open and not b.paused,
            "ranking_by": b.ranking_by,
            "dtype": b.dtype,
            "languages": list(b.languages),
            "template_files": b.template_files,
            "tests": list(b.tests),
            "benchmarks": list(b.benchmarks),
            "baselines": list(b.baselines),
        }

    @server.tool()
    def get_template(name: str, language: str = "pytorch") -> dict[str, str]:
        """A leaderboard's starter file in one language (get_problem lists them): its file name and content."""
        t = _api(lambda: client.template(name, language))
        return {"file_name": t.file_name, "content": t.content}

    @server.tool()
    def evaluate(
        leaderboard: str,
        mode: Literal["test", "benchmark", "profile"] = "test",
        code: str | None = None,
        path: str | None = None,
        file_name: str | None = None,
        device: str | None = None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Run a file (its text as code, or a path) on a leaderboard's device without ranking it: "test" checks
        every test case, "benchmark" also times the benchmarks beside the reference, "profile" adds a profile.
        Answers per device the verdict, failed tests, medians and speedups (waits for them unless wait is false)."""
        return run_file(leaderboard, mode, _file(code, path, file_name, root), device, wait)

    @server.tool()
    def evaluate_batch(
        leaderboard: str,
        codes: list[str] | None = None,
        paths: list[str] | None = None,
        mode: Literal["test", "benchmark", "profile"] = "benchmark",
        device: str | None = None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Run many candidate files at once (their texts as codes, or paths; up to the server's batch limit, 64 by
        default) in one mode on one device, never ranked. Answers each candidate in order: its verdict, score and
        reward record (version, verdict, correct_fraction, speedups, roofline_share, ci_half_width, flags), or why
        it alone was refused (waits for all unless wait is false; then get_result follows each submission)."""
        if (codes is None) == (paths is None):
            raise ToolError("give exactly one of codes (the files' texts) or paths (files)")
        if codes is not None:
            files = [(f"candidate_{i}.py", code.encode()) for i, code in enumerate(codes)]
        else:
            files = [_file(None, path, None, root) for path in paths or []]
        batch = _api(lambda: client.submit_batch(files, leaderboard, device, mode))
        answer = batch.answer
        if wait:
            with contextlib.suppress(TimeoutError):  # answered below with done: false
                answer = _api(lambda: batch.wait(wait_s))
        if answer is None:
            answer = _api(batch.status)
        out: dict[str, Any] = {
            "batch_id": answer.batch_id,
            "done": answer.done,
            "finished": answer.finished,
            "candidates": [
                {
                    "position": item.position,
                    "file_name": item.file_name,
                    "submission_id": item.submission_id,
                    "status": item.status,
                    "verdict": item.verdict,
                    "score_ns": item.score_ns,
                    "error": item.error_message,
                    "reward": item.reward.model_dump(mode="json") if item.reward is not None else None,
                }
                for item in answer.items
            ],
        }
        if not answer.done:
            out["note"] = "not all done yet: call get_result with each submission_id (wait: true) to follow them"
        return out

    @server.tool()
    def submit(
        leaderboard: str,
        code: str | None = None,
        path: str | None = None,
        file_name: str | None = None,
        device: str | None = None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Submit a file for the ranking (ranked mode: the public run and a secret-seed run must pass). Answers its
        score and rank per device (waits for them unless wait is false)."""
        return run_file(leaderboard, "ranked", _file(code, path, file_name, root), device, wait)

    @server.tool()
    def compare(
        leaderboard: str,
        device: str | None = None,
        code_a: str | None = None,
        path_a: str | None = None,
        code_b: str | None = None,
        path_b: str | None = None,
        rounds: int | None = None,
        wait: bool = True,
    ) -> dict[str, Any]:
        """Time file A against file B on one device, interleaved on one machine: the ratio of A's time to B's
        (below 1: A is faster) with its 95% interval, per case and overall."""
        a = _file(code_a, path_a, None, root, "code_a")
        b = _file(code_b, path_b, None, root, "code_b")
        if a[0] == b[0]:
            b = (f"b_{b[0]}", b[1])
        sub = _api(lambda: client.compare(a, b, leaderboard, device, rounds))
        return finish(sub, wait)

    @server.tool()
    def get_result(submission_id: int, wait: bool = False) -> dict[str, Any]:
        """A submission's state and results (wait: follow it until it is done first)."""
        return finish(client.submission(submission_id), wait)

    @server.tool()
    def list_submissions(leaderboard: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Your submissions, newest first: id, leaderboard, file, mode, and per device status, verdict and score."""
        subs = _api(lambda: client.submissions(leaderboard, limit=limit))
        return [
            {
                "submission_id": s.submission_id,
                "leaderboard": s.leaderboard,
                "file_name": s.file_name,
                "mode": str(s.mode),
                "created_at": s.created_at.isoformat(),
                "jobs": [
                    {"device": j.device, "status": str(j.status), "verdict": j.verdict, "score_ns": j.score_ns}
                    for j in s.jobs
                ],
            }
            for s in subs
        ]

    @server.tool()
    def get_code(submission_id: int) -> dict[str, str]:
        """The code of one of your submissions."""
        c = _api(lambda: client.submission(submission_id).code())
        return {"file_name": c.file_name, "code": c.code}

    @server.tool()
    def get_rankings(leaderboard: str, device: str | None = None, limit: int = 20) -> dict[str, Any]:
        """A leaderboard's ranking on one device (its first if none is named): rank, user, score (ns)."""
        r = _api(lambda: client.rankings(leaderboard, device, limit=limit))
        return {
            "leaderboard": r.leaderboard,
            "device": r.device,
            "total": r.total,
            "entries": [
                {"rank": e.rank, "user": e.user_name, "score_ns": e.score_ns, "submission_id": e.submission_id}
                for e in r.entries
            ],
        }

    return server
