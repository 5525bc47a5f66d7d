"""``kernelcup-client``: the remote CLI of the light client (``pip install kernelcup-client``), over the HTTP API.

    kernelcup-client login --server https://kernelcup.example.org --token kc_...   # or the token on stdin
    kernelcup-client problems
    kernelcup-client template vectoradd -o kernel.py
    kernelcup-client submit kernel.py -l vectoradd -d H100 -m benchmark         # waits, prints the outcome
    kernelcup-client status 42          # its state now
    kernelcup-client results 42 --json  # per device: verdict, tests, medians, speedups (kernelcup.outcomes.summarize)

The standard library's argparse, so the light client needs nothing but httpx and pydantic. The full ``kernelcup``
CLI does all of this and more (and signs in with the browser); both keep one login (``kernelcup.client.config``).
Exit status: 0 done (and accepted, for a run waited for), 1 an error of the API or the server unreachable (the
message says which and what to do), 2 a usage error, 3 a run that finished without being accepted, 124 a wait that
ran out (the submission goes on: ``status ID``).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kernelcup.client import ApiError, Client
from kernelcup.client.config import Login, config_path, forget_login, normalise, resolve, store_login
from kernelcup.client.wire import SubmissionOut, summarize

PROG = "kernelcup-client"
MODES = ("test", "benchmark", "ranked", "profile")
DEFAULT_TIMEOUT_S = 1800.0
EXIT_ERROR, EXIT_USAGE, EXIT_NOT_ACCEPTED, EXIT_TIMEOUT = 1, 2, 3, 124


class UsageError(Exception):
    """A command given what it cannot use (no server, a missing file): status 2, with the fix in the message."""


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str))


def _client(args: argparse.Namespace) -> Client:
    login = resolve(args.server)
    if login is None or login.server.strip().lower() in ("local", "https://local"):
        raise UsageError(
            "no kernelcup server named: pass --server URL, set KERNELCUP_SERVER, or run "
            f"`{PROG} login --server URL` once (the light client has no local database: that is `kernelcup`'s)"
        )
    return Client(login.server, login.token)


def _outcome_lines(sub: SubmissionOut) -> list[str]:
    summary = summarize(sub)
    lines = [
        f"submission {summary['submission_id']} on {summary['leaderboard']} ({summary['mode']}): "
        + ("accepted" if summary["accepted"] else "done" if summary["done"] else "not done yet")
    ]
    for dev in summary["devices"]:
        line = f"  {dev['device']}: {dev['outcome']}"
        if dev.get("tests_total"):
            line += f", tests {dev['tests_passed']}/{dev['tests_total']}"
        if dev.get("score_ns") is not None:
            line += f", score {dev['score_ns']:.0f} ns"
        if dev.get("speedups"):
            line += ", speedup " + ", ".join(f"{k} x{v:.2f}" for k, v in dev["speedups"].items())
        if dev.get("rank") is not None:
            line += f", rank {dev['rank']}"
        lines.append(line)
        for failed in dev.get("failed_tests") or []:
            lines.append(f"    test {failed['case']}: {failed['verdict']} {failed['message']}".rstrip())
        if dev.get("error"):
            lines.append(f"    {dev['error']}")
        if dev.get("message") and not summary["accepted"]:
            lines.append(f"    {dev['message']}")
    return lines


def _show(sub: SubmissionOut, as_json: bool) -> int:
    if as_json:
        _print_json(summarize(sub))
    else:
        print("\n".join(_outcome_lines(sub)))
    if not sub.status.done:
        return 0
    return 0 if sub.status.accepted else EXIT_NOT_ACCEPTED


# -- the commands ----------------------------------------------------------------------------------------------------


def cmd_login(args: argparse.Namespace) -> int:
    server = normalise(args.server)
    token = args.token or os.environ.get("KERNELCUP_TOKEN") or None
    if token is None:
        ask = sys.stdin.isatty()  # else piped: `echo $TOKEN | kernelcup-client login --server URL`
        token = getpass.getpass(f"API token for {server} (hidden): ") if ask else sys.stdin.readline()
    token = token.strip()
    if not token:
        raise UsageError(f"no token given: pass --token, set KERNELCUP_TOKEN or pipe it on stdin (a token from "
                         f"{server}'s account page, or `kernelcup tokens create`)")  # fmt: skip
    with Client(server, token) as client:
        me = client.me()
    path = store_login(Login(server, token))
    print(f"logged in to {server} as {me.user_name} ({me.identity}; scopes {', '.join(me.scopes)}). Saved in {path}.")
    return 0


def cmd_logout(args: argparse.Namespace) -> int:
    print(f"logged out (forgot {config_path()})" if forget_login() else f"not logged in (nothing in {config_path()})")
    return 0


def cmd_whoami(args: argparse.Namespace) -> int:
    with _client(args) as client:
        me = client.me()
    if args.json:
        _print_json(me.model_dump(mode="json"))
    else:
        print(f"{me.user_name} ({me.identity}) on {client.server}; scopes {', '.join(me.scopes)}")
    return 0


def cmd_problems(args: argparse.Namespace) -> int:
    with _client(args) as client:
        boards = client.leaderboards()
    if args.json:
        _print_json([b.model_dump(mode="json") for b in boards])
        return 0
    for b in boards:
        state = "open" if b.is_open and not b.paused else "paused" if b.paused else "closed"
        print(f"{b.name}\t{','.join(b.devices)}\t{state}, deadline {b.deadline:%Y-%m-%d %H:%M} UTC")
    if not boards:
        print("no leaderboards")
    return 0


def cmd_problem(args: argparse.Namespace) -> int:
    with _client(args) as client:
        board = client.leaderboard(args.name)
    if args.json:
        _print_json(board.model_dump(mode="json"))
    else:
        print(f"{board.name} (devices {', '.join(board.devices)}; templates {', '.join(board.languages)})\n")
        print(board.description)
    return 0


def cmd_template(args: argparse.Namespace) -> int:
    with _client(args) as client:
        language = args.language
        if language is None:
            languages = client.leaderboard(args.name).languages
            if not languages:
                raise UsageError(f"{args.name} has no template")
            language = "pytorch" if "pytorch" in languages else languages[0]
        template = client.template(args.name, language)
    if args.output is None:
        sys.stdout.write(template.content)
    else:
        args.output.write_text(template.content, encoding="utf-8")
        print(f"wrote {args.output} ({template.language} template of {template.leaderboard})", file=sys.stderr)
    return 0


def cmd_submit(args: argparse.Namespace) -> int:
    if not args.file.is_file():
        raise UsageError(f"{args.file}: no such file")
    with _client(args) as client:
        sub = client.submit(args.file, args.leaderboard, args.device or None, args.mode, force=args.force)
        if args.no_wait:
            if args.json:
                _print_json({"submission_id": sub.id, "done": False})
            else:
                print(f"submission {sub.id} queued: `{PROG} status {sub.id}` follows it")
            return 0
        if not args.json:
            print(f"submission {sub.id} queued; waiting for its result", file=sys.stderr)
        try:
            result = sub.wait(args.timeout)
        except TimeoutError:
            print(f"submission {sub.id} is not done after {args.timeout:.0f} s: it goes on; "
                  f"`{PROG} status {sub.id}` shows it", file=sys.stderr)  # fmt: skip
            return EXIT_TIMEOUT
    return _show(result, args.json)


def cmd_status(args: argparse.Namespace) -> int:
    with _client(args) as client:
        result = client.submission(args.id).result()
    if args.json:
        _print_json(result.status.model_dump(mode="json"))
        return 0
    status = result.status
    print(f"submission {status.submission_id} on {status.leaderboard} ({status.mode}): "
          + ("done" if status.done else "in progress") + (", accepted" if status.accepted else ""))  # fmt: skip
    for job in status.jobs:
        print(f"  {job.device}: {job.status}" + (f", {job.verdict}" if job.verdict else ""))
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    with _client(args) as client:
        sub = client.submission(args.id)
        try:
            result = sub.wait(args.timeout) if args.wait else sub.result()
        except TimeoutError:
            print(f"submission {args.id} is not done after {args.timeout:.0f} s", file=sys.stderr)
            return EXIT_TIMEOUT
    return _show(result, args.json)


def cmd_reward(args: argparse.Namespace) -> int:
    with _client(args) as client:
        rewards = client.reward(args.id)
    _print_json(rewards.model_dump(mode="json"))
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    with _client(args) as client:
        client.submission(args.id).cancel()
    print(f"submission {args.id} cancelled")
    return 0


# -- the parser ------------------------------------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--server", help="The kernelcup server (default: KERNELCUP_SERVER, or the stored login's).")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="Print JSON for programs.")

    top = argparse.ArgumentParser(
        prog=PROG,
        description="The remote CLI of a kernelcup server: problems, templates, submissions and their results.",
        epilog="The token: `kernelcup-client login` stores it; KERNELCUP_TOKEN overrides it. Docs: docs/agents.md.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, run: Callable[[argparse.Namespace], int], help: str, *parents: argparse.ArgumentParser):
        p = sub.add_parser(name, help=help, description=help, parents=[common, *parents])
        p.set_defaults(run=run)
        return p

    p = sub.add_parser("login", help="Store a server and an API token for later commands (file mode 0600).")
    p.add_argument("--server", required=True, help="The kernelcup server, e.g. https://kernelcup.example.org")
    p.add_argument("--token", help="The API token (else KERNELCUP_TOKEN, else asked for, or read from stdin).")
    p.set_defaults(run=cmd_login)
    p = sub.add_parser("logout", help="Forget the stored server and token.")
    p.set_defaults(run=cmd_logout)
    command("whoami", cmd_whoami, "The account and scopes of the token in use.", as_json)
    command("problems", cmd_problems, "The leaderboards (problems) you can see.", as_json)
    p = command("problem", cmd_problem, "One leaderboard: its description, devices, templates and cases.", as_json)
    p.add_argument("name")
    p = command("template", cmd_template, "A leaderboard's starter file.")
    p.add_argument("name")
    p.add_argument("--language", help="The template's language (default: pytorch if offered, else the first).")
    p.add_argument("-o", "--output", type=Path, help="Write it to this file (default: stdout).")
    p = command("submit", cmd_submit, "Submit a file, wait for its result and print it.", as_json)
    p.add_argument("file", type=Path)
    p.add_argument("-l", "--leaderboard", help="The leaderboard (default: the one the file's header names).")
    p.add_argument("-d", "--device", action="append", help="A device to run on (repeat for more; default: all).")
    p.add_argument("-m", "--mode", choices=MODES, help="test, benchmark, ranked (the default) or profile.")
    p.add_argument("--force", action="store_true", help="Run it even if the same file was sent a moment ago.")
    p.add_argument("--no-wait", action="store_true", help="Print its id and return at once.")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="Longest wait in seconds (1800).")
    p = command("status", cmd_status, "A submission's state now (per device: queued, running, done).", as_json)
    p.add_argument("id", type=int)
    p = command("results", cmd_results, "A submission's results: verdicts, tests, timings, speedups.", as_json)
    p.add_argument("id", type=int)
    p.add_argument("--wait", action="store_true", help="Wait until it is done first.")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="Longest wait in seconds (1800).")
    p = command("reward", cmd_reward, "A submission's versioned reward record per device (JSON).")
    p.add_argument("id", type=int)
    p = command("cancel", cmd_cancel, "Cancel a queued or running submission.")
    p.add_argument("id", type=int)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status (see the module's docstring)."""
    args = parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ApiError as exc:
        where = f" (field {exc.field})" if exc.field else ""
        print(f"{PROG}: {exc.code}: {exc.message}{where}", file=sys.stderr)
        return EXIT_ERROR
    return status


if __name__ == "__main__":
    sys.exit(main())
