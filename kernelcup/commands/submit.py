"""`kernelcup submit`: send a file through the service and the queue, follow its progress, print the report.

With a server configured (``kernelcup login``, ``--server``, ``KERNELCUP_SERVER``) the file goes through the HTTP API
instead and progress comes from its event stream; the report is rendered by the same code.

When no live worker serves a device of the submission (no recent heartbeat in the ``workers`` table), the command
runs a worker in-process, limited to this submission's jobs, until they are done — so one command works on a
laptop. Progress comes from ``job_events`` (``leaderboards.events.follow``), never from the runner directly.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer

from kernelcup.choices import ModeChoice
from kernelcup.commands.common import print_json, read_submission, user_errors
from kernelcup.commands.output import output_to
from kernelcup.commands.text import safe
from kernelcup.remote import Login, client_for, resolve, server_option

if TYPE_CHECKING:
    from rich.console import Console

    from kernelcup.inprocess import InProcessWorker
    from leaderboards.events import ProgressUpdate
    from leaderboards.queue import JobQueue
    from leaderboards.results import SubmissionDetails, SubmissionReceipt
    from runners.contract import Mode
    from web.schemas import ProgressOut, SubmissionOut, SubmissionReceiptOut

DEFAULT_TIMEOUT_S = 3 * 3600.0


def ensure_served(queue: JobQueue, devices: Sequence[str], start: Callable[[], None]) -> bool:
    """Start an in-process worker (``start()``) when some device of the submission has no live worker."""
    from leaderboards.queue import WORKER_ALIVE_S

    if any(not queue.alive_workers(device=d, within_s=WORKER_ALIVE_S) for d in devices):
        start()
        return True
    return False


def describe(update: ProgressUpdate | ProgressOut, many_devices: bool) -> str:
    where = f"[{update.device}] " if many_devices else ""
    detail = f": {update.detail}" if update.detail else ""
    return f"{where}{update.phase}{detail}"


def render_details(console: Console, details: SubmissionDetails | SubmissionOut) -> None:
    """The report: per device the job's outcome, score and rank, then the public run's tests and benchmarks."""
    from kernelcup.commands.run import render, render_comparison
    from leaderboards.formatting import outcome_text, printable, score_text
    from runners.contract import Mode

    status = details.status
    comparison = status.comparison
    files = safe(status.file_name) + (f" vs {safe(comparison.file_b)}" if comparison is not None else "")
    console.print(f"[bold]submission #{status.submission_id}[/] · {safe(status.leaderboard)} · {files} · {status.mode}")
    results = {r.device: r.result for r in details.results}
    reports = {r.device: getattr(r, "ncu_report_url", None) for r in details.results}  # the API's; local: in result
    for job in status.jobs:
        colour = "green" if job.accepted else ("red" if job.status.finished else "yellow")
        line = f"[bold]{safe(job.device)}[/]: [{colour}]{outcome_text(job.status, job.verdict)}[/]"
        if job.score_ns is not None:
            note = getattr(job, "ranked_note", None)  # the author's own view (a remote JobOut has none)
            line += f", score {safe(score_text(job.score_ns, job.ranked_score_ns, note))}"
        if status.mode == Mode.RANKED and job.secret_passed is not None:
            line += f", secret-seed run {'passed' if job.secret_passed else 'failed'}"
        if job.rank is not None:
            line += f", [bold]rank {job.rank}[/]"
        console.print(line)
        if job.error:
            console.print(f"  {printable(job.error)}", markup=False)
        if job.device in results:
            render(results[job.device], status.leaderboard, status.file_name, job.device)
        if comparison is not None and comparison.result is not None:
            render_comparison(console, comparison.result)
        url = reports.get(job.device)
        if url:
            console.print(f"Nsight Compute report: {safe(url)} (GET it with your token as a bearer)")


def already_sent(receipt: SubmissionReceipt | SubmissionReceiptOut) -> str:
    """A duplicate's line: the earlier submission of this same file that answers instead, and how to run it again."""
    queued = [j for j in receipt.jobs if j.queue_position is not None]
    if queued:
        where = ", ".join(f"{safe(j.device)} (position {j.queue_position})" for j in queued)
        return f"already queued as #{receipt.submission_id} (same file, a moment ago): {where}; --force runs it again"
    return f"already ran as #{receipt.submission_id} (same file, a moment ago); --force runs it again"


def print_receipt(
    console: Console, receipt: SubmissionReceipt | SubmissionReceiptOut, json_out: bool, *, waiting: bool = False
) -> None:
    """What a submit says once the service answered: a duplicate says which submission answers instead (on stderr
    under --json); without waiting, the receipt (queue positions, or the JSON)."""
    if receipt.duplicate:
        console.print(already_sent(receipt))
    if waiting:
        return
    if json_out:
        print_json(receipt)
    elif not receipt.duplicate:
        console.print(
            f"queued submission #{receipt.submission_id}: "
            + ", ".join(f"{safe(j.device)} (position {j.queue_position})" for j in receipt.jobs)
        )


def show_progress(console: Console, updates: Iterable[ProgressUpdate | ProgressOut], many: bool, quiet: bool) -> None:
    """Progress lines (and a spinner) while a submission runs, local or remote."""
    with console.status("waiting for a worker…", spinner="dots") as spinner:
        for update in updates:
            text = describe(update, many)
            spinner.update(safe(text))
            if not quiet:
                console.print(f"[dim]·[/] {safe(text)}", markup=True, highlight=False)


def stopped_waiting(console: Console, submission_id: int, where: str) -> NoReturn:
    console.print(
        f"stopped waiting; submission #{submission_id} {where} "
        f"(`kernelcup submissions show {submission_id} --follow` picks it up)"
    )
    raise typer.Exit(130)


def submit_remote(
    login: Login,
    file: Path,
    leaderboard: str | None,
    devices: list[str],
    mode: Mode | None,
    *,
    json_out: bool,
    no_wait: bool,
    timeout: float,
    against: Path | None = None,
    rounds: int | None = None,
    force: bool = False,
    licence: str | None = None,
    profile: bool = False,
) -> None:
    """``kernelcup submit`` through the API: upload, follow the event stream (reconnecting), print the report.
    With ``against``: a compare of ``file`` with it, at most ``rounds`` rounds (None: the service's default) on one
    device. ``force`` runs a file sent a moment ago again."""
    from rich.console import Console

    from leaderboards.events import FollowTimeout

    console = Console(stderr=json_out)
    with user_errors(), client_for(login) as client:
        if against is not None:
            sub = client.compare(file, against, leaderboard, devices[0] if devices else None, rounds, profile=profile)
        else:
            sub = client.submit(file, leaderboard, devices or None, mode, force=force, licence=licence)
        assert sub.receipt is not None
        print_receipt(console, sub.receipt, json_out, waiting=not no_wait)
        if no_wait:
            return
        try:
            show_progress(console, sub.events(timeout), len(sub.receipt.jobs) > 1, json_out)
        except KeyboardInterrupt:
            stopped_waiting(console, sub.id, "goes on on the server")
        except TimeoutError:
            raise FollowTimeout(
                f"Submission #{sub.id} has not finished after {timeout:.0f} s; it goes on on the "
                f"server: `kernelcup submissions show {sub.id} --follow`."
            ) from None
        details = sub.result()
    if json_out:
        print_json(details)
    else:
        render_details(console, details)
    raise typer.Exit(0 if details.accepted else 1)


def check_compare(
    file: Path,
    against: Path | None,
    compare: bool,
    mode: ModeChoice | None,
    devices: Sequence[str],
    rounds: int | None,
    profile: bool = False,
) -> None:
    """The command line's own checks of a submit or a compare (the service checks the rest, for every surface)."""
    if profile and not compare:
        raise typer.BadParameter(
            "--profile adds Nsight Compute's kernel metrics to a compare: `kernelcup submit A.py B.py --compare "
            "--profile`; to profile one file, use --mode profile"
        )
    if compare and against is None:
        raise typer.BadParameter("--compare takes two files: `kernelcup submit A.py B.py --compare`")
    if against is not None and not compare:
        raise typer.BadParameter("a second file is compared with the first: add --compare", param_hint="AGAINST")
    if compare and mode is not None and mode is not ModeChoice.BENCHMARK:
        raise typer.BadParameter(f"--compare runs benchmark mode; drop --mode {mode.value}")
    if compare and len(devices) > 1:
        raise typer.BadParameter("--compare runs both files on one device: give one --device")
    if compare and rounds is not None and rounds % 2:
        raise typer.BadParameter(
            f"--rounds must be even (each file runs first as often as second), not {rounds}; try {rounds + 1}"
        )
    for path, hint in ((file, "FILE"), (against, "AGAINST")):
        if path is not None and not path.is_file():
            raise typer.BadParameter(f"{path} is not a file", param_hint=hint)


def register(app: typer.Typer) -> None:
    @app.command("submit")
    def submit_cmd(
        file: Path = typer.Argument(..., help="The submission file (.py, or .cu for CUDA problems)."),
        against: Path | None = typer.Argument(
            None, help="With --compare: the second file (B), compared with FILE (A).", show_default=False
        ),
        leaderboard: str | None = typer.Option(
            None, "--leaderboard", "-l", help="The leaderboard (default: the file's '#!kernelcup leaderboard' line)."
        ),
        device: list[str] = typer.Option(
            [],
            "--device",
            "--gpu",
            "-d",
            help="Device to run on (repeatable, or 'all'); default: the file's, else the leaderboard's only device.",
        ),
        mode: ModeChoice | None = typer.Option(
            None,
            "--mode",
            "-m",
            help="test, benchmark, ranked (also called leaderboard) or profile (default: the file's, else ranked).",
        ),
        user: str = typer.Option("", "--user", "-u", help="Local database only: submit as this local user."),
        json_out: bool = typer.Option(False, "--json", help="Print machine-readable JSON (no progress display)."),
        no_wait: bool = typer.Option(False, "--no-wait", help="Queue it and return at once with its id."),
        timeout: float = typer.Option(DEFAULT_TIMEOUT_S, "--timeout", min=1, help="Longest wait for the result (s)."),
        force: bool = typer.Option(
            False, "--force", help="Run it even if you sent this same file moments ago (else you get that result)."
        ),
        licence: str | None = typer.Option(
            None,
            "--license",
            help="The open archive's licence: none (never published), CC0-1.0, CC-BY-4.0, MIT or Apache-2.0. "
            "Default: the file's '#!kernelcup license:' line, else your account's default (none).",
        ),
        compare: bool = typer.Option(
            False,
            "--compare",
            help="Compare FILE with a second file on one device: interleaved benchmark runs, the A/B time ratio with "
            "its 95% interval, per case and overall. Never ranked; counts as 2 runs per round against your limits.",
        ),
        rounds: int | None = typer.Option(
            None,
            "--rounds",
            min=2,
            max=20,
            help="With --compare: the most rounds (even; each runs both files once; default 14 on a GPU, 6 on the "
            "CPU). It stops earlier, after 6 or more, once the A/B ratio is known within ±0.4%; it counts as 2 runs "
            "per round asked for.",
        ),
        profile: bool = typer.Option(
            False,
            "--profile",
            help="With --compare, on a GPU device: after the rounds, profile each case of both files under Nsight "
            "Compute and show their dominant kernels side by side (DRAM %, SM %, occupancy, registers, top stall).",
        ),
        output: Path | None = typer.Option(
            None, "--output", "-o", help="Write the result to this file (JSON with --json, else the report as text)."
        ),
        server: str | None = server_option(),
    ) -> None:
        """Submit a kernel: queue it, run it, and print the report. Through the API when a server is configured
        (`kernelcup login`); else on the local database (run here, if no worker is running). `kernelcup submit A.py
        B.py --compare` compares two files on one device instead."""
        with output_to(output):
            from rich.console import Console

            from kernelcup.inprocess import InProcessWorker
            from kernelcup.settings import load
            from kernelcup.wiring import build_worker, open_platform
            from leaderboards.queue import JobQueue, with_db_retry
            from leaderboards.results import UserRef
            from leaderboards.worker import WorkerSettings
            from runners.contract import Mode

            run_mode = Mode(mode.mode) if mode is not None else None
            check_compare(file, against, compare, mode, device, rounds, profile)
            login = resolve(server)
            if login is not None:
                if user:
                    raise typer.BadParameter("a server knows you by your token; --user is for the local database")
                submit_remote(
                    login,
                    file,
                    leaderboard,
                    device,
                    run_mode,
                    json_out=json_out,
                    no_wait=no_wait,
                    timeout=timeout,
                    against=against,
                    rounds=rounds,
                    force=force,
                    licence=licence,
                    profile=profile,
                )
                return
            console = Console(stderr=json_out)
            with user_errors():
                who = UserRef(user or getpass.getuser())
                worker_settings = load(WorkerSettings)
                with open_platform() as platform:
                    service = platform.service
                    content = read_submission(file, platform.core.max_submission_bytes)
                    if against is not None:
                        content_b = read_submission(against, platform.core.max_submission_bytes)
                        one = device[0] if device else None
                        receipt = with_db_retry(
                            lambda: service.compare(
                                who,
                                file.name,
                                content,
                                against.name,
                                content_b,
                                leaderboard,
                                one,
                                rounds,
                                profile=profile,
                            ),
                            budget_s=worker_settings.db_retry_s,
                            what="submitting",
                        )
                    else:
                        receipt = with_db_retry(
                            lambda: service.submit(
                                who,
                                file.name,
                                content,
                                leaderboard,
                                device or None,
                                run_mode,
                                force=force,
                                licence=licence,
                            ),
                            budget_s=worker_settings.db_retry_s,
                            what="submitting",
                        )
                    print_receipt(console, receipt, json_out, waiting=not no_wait)
                    if no_wait:
                        return
                    devices = [j.device for j in receipt.jobs]
                    queue = JobQueue(platform.db)
                    local: list[InProcessWorker] = []

                    def start_local() -> None:
                        if local and local[0].alive:
                            return
                        w = InProcessWorker(
                            build_worker(platform, settings=worker_settings, submission_id=receipt.submission_id)
                        )
                        w.start()
                        local[:] = [w]
                        if not json_out:
                            console.print("[dim]no worker is running for this device: running the job here[/]")

                    polls = 0

                    def on_poll() -> None:
                        nonlocal polls
                        if polls % 25 == 0:  # every ~5 s: a worker may have died meanwhile
                            ensure_served(queue, devices, start_local)
                        polls += 1

                    try:
                        updates = service.follow(receipt.submission_id, timeout_s=timeout, on_poll=on_poll)
                        show_progress(console, updates, len(devices) > 1, json_out)
                    except KeyboardInterrupt:
                        stopped_waiting(
                            console,
                            receipt.submission_id,
                            "stays queued (a job this command was running goes back to the queue)",
                        )
                    finally:
                        for w in local:
                            w.stop(worker_settings.stop_grace_s + 5)
                    details = with_db_retry(
                        lambda: service.submission_details(receipt.submission_id, who),
                        budget_s=worker_settings.db_retry_s,
                        what="reading the result",
                    )
            if json_out:
                print_json(details)
            else:
                render_details(console, details)
            raise typer.Exit(0 if details.accepted else 1)
