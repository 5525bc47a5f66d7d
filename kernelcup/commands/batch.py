"""`kernelcup batch ...` (issue 33): many candidates for one problem in one request, through a server's API.

- `batch submit FILE... -l NAME [-d DEVICE] [-m MODE]`: sent at once (``POST /api/v1/batches``), then each candidate's
  outcome as it finishes (``--no-wait``: only the batch's id);
- `batch show ID` / `batch wait ID`: a batch now, or once every candidate has finished.

And `kernelcup admin budget list|set|remove`: GPU-second budgets per account and per token
(``leaderboards/budgets.py``), on the local database or a server's with an admin token.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kernelcup.commands.common import format_time, print_json, user_errors
from kernelcup.commands.text import safe
from kernelcup.remote import client_for, resolve, server_option

if TYPE_CHECKING:
    from leaderboards.budgets import BudgetView
    from web.routes.batches import BatchItemOut, BatchOut
    from web.routes.budgets import BudgetOut

JSON_HELP = "Machine-readable output."
NEEDS_SERVER = (
    "Batches go through a kernelcup server's API: log in first (`kernelcup login --server URL`), or give --server URL "
    "(or KERNELCUP_SERVER). To evaluate files on this machine, use `kernelcup run FOLDER a.py b.py ...`."
)


def item_line(item: BatchItemOut) -> str:
    """One candidate's outcome in words: its place, file, verdict, score and speedups, or why it was refused."""
    from leaderboards.formatting import format_ns

    head = f"[{item.position}] {safe(item.file_name)}"
    if item.status == "refused":
        return f"{head}: refused: {safe(item.error_message or item.error_code or '')}"
    sub = f" (#{item.submission_id}{', sent before' if item.duplicate else ''})"
    if not item.finished:
        return f"{head}{sub}: {item.status}"
    reward = item.reward
    words = safe(item.verdict or item.status)
    if item.score_ns is not None:
        words += f", {format_ns(item.score_ns)}"
    if reward is not None and reward.speedups:
        words += ", " + ", ".join(f"{v:.2f}x over {safe(k)}" for k, v in sorted(reward.speedups.items()))
    if reward is not None and reward.flags:
        words += f" [{', '.join(reward.flags)}]"
    if item.error_message and item.status != "succeeded":
        words += f": {safe(item.error_message)}"
    return f"{head}{sub}: {words}"


def batch_summary(batch: BatchOut) -> str:
    refused = sum(1 for i in batch.items if i.status == "refused")
    accepted = sum(1 for i in batch.items if i.reward is not None and i.reward.accepted)
    state = "done" if batch.done else f"{batch.finished} of {len(batch.items)} finished"
    return (
        f"batch #{batch.batch_id} on {safe(batch.leaderboard)} ({safe(batch.device)}, {batch.mode}): "
        f"{len(batch.items)} candidates, {refused} refused, {accepted} accepted; {state}"
    )


def budget_line(view: BudgetView | BudgetOut) -> str:
    who = f"token #{view.token_id} of {safe(view.user)}" if view.subject == "token" else f"account {safe(view.user)}"
    return (
        f"{who}: {view.spent_s:.1f} of {view.seconds:g} GPU s spent this period ({view.left_s:.1f} left, period "
        f"{view.period_s} s); refills {format_time(view.refills_at)}; set by {safe(view.set_by)}"
    )


def _client(server: str | None):  # type: ignore[no-untyped-def]
    login = resolve(server)
    if login is None:
        typer.echo(NEEDS_SERVER, err=True)
        raise typer.Exit(1)
    return client_for(login)


def register(app: typer.Typer) -> None:
    batch_app = typer.Typer(
        help="Many candidates for one problem in one request (a server's API): submit, show, wait.",
        no_args_is_help=True,
    )
    app.add_typer(batch_app, name="batch")

    def follow(batch_id: int, server: str | None, json_out: bool, timeout: float | None) -> None:
        with user_errors(), _client(server) as client:
            handle = client.batch(batch_id)
            try:
                for item in handle.events(timeout):
                    if not json_out:
                        typer.echo(item_line(item))
            except TimeoutError as exc:
                typer.echo(f"{exc}; `kernelcup batch wait {batch_id}` follows it on.", err=True)
                raise typer.Exit(1) from None
            final = handle.status()
        if json_out:
            print_json(final)
        else:
            typer.echo(batch_summary(final))

    @batch_app.command("submit")
    def submit_cmd(
        files: list[Path] = typer.Argument(..., exists=True, dir_okay=False, help="The candidate files, in order."),
        leaderboard: str = typer.Option(..., "--leaderboard", "-l", help="The leaderboard of every candidate."),
        device: str | None = typer.Option(None, "--device", "-d", help="One device (default: the board's only)."),
        mode: str = typer.Option("benchmark", "--mode", "-m", help="test, benchmark, ranked or profile."),
        force: bool = typer.Option(False, "--force", help="Run candidates sent a moment ago again."),
        key: str | None = typer.Option(
            None,
            "--idempotency-key",
            help="Name this request: running the same command again with the same key answers with the first batch "
            "instead of sending it twice.",
        ),
        wait: bool = typer.Option(True, "--wait/--no-wait", help="Follow the candidates until all have finished."),
        timeout: float | None = typer.Option(None, "--timeout", help="Stop following after this many seconds."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Send FILE... as one batch: stored at once, one job each; a candidate the server will not take is refused
        alone, with its reason. Then each candidate's outcome as it finishes, and the batch's summary."""
        with user_errors(), _client(server) as client:
            handle = client.submit_batch(files, leaderboard, device, mode, force=force, idempotency_key=key)
        answer = handle.answer
        assert answer is not None
        if not wait:
            if json_out:
                print_json(answer)
            else:
                typer.echo(batch_summary(answer))
                for item in answer.items:
                    if item.status == "refused":
                        typer.echo(item_line(item))
            return
        if not json_out:
            typer.echo(f"batch #{answer.batch_id}: {len(answer.items)} candidates sent; following them")
        follow(answer.batch_id, server, json_out, timeout)

    @batch_app.command("show")
    def show_cmd(
        batch_id: int = typer.Argument(..., min=1, help="The batch's id."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """A batch now: each candidate's state, verdict, score, speedups and flags."""
        with user_errors(), _client(server) as client:
            batch = client.batch(batch_id).status()
        if json_out:
            print_json(batch)
            return
        typer.echo(batch_summary(batch))
        for item in batch.items:
            typer.echo(item_line(item))

    @batch_app.command("wait")
    def wait_cmd(
        batch_id: int = typer.Argument(..., min=1, help="The batch's id."),
        timeout: float | None = typer.Option(None, "--timeout", help="Stop following after this many seconds."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Follow a batch until every candidate has finished (each finished one is printed once)."""
        follow(batch_id, server, json_out, timeout)

    admin = _admin_group(app)
    if admin is not None:  # the lazy CLI registers `kernelcup batch` alone; `admin` registers both modules
        register_budgets(admin)


def _admin_group(app: typer.Typer) -> typer.Typer | None:
    for group in app.registered_groups:
        if group.name == "admin" and group.typer_instance is not None:
            return group.typer_instance
    return None


def register_budgets(admin_app: typer.Typer) -> None:
    from kernelcup.commands.admin import _act

    budget_app = typer.Typer(
        help="GPU-second budgets per account and per token: list, set, remove. A submission is refused (429) while a "
        "budget it would spend is used up.",
        no_args_is_help=True,
    )
    admin_app.add_typer(budget_app, name="budget")

    def target(user: str | None, token: int | None) -> tuple[str | None, int | None]:
        if (user is None) == (token is None):
            typer.echo("Name one account (--user) or one token (--token), not both and not neither.", err=True)
            raise typer.Exit(2)
        return user, token

    @budget_app.command("list")
    def list_cmd(
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP), server: str | None = server_option()
    ) -> None:
        """Every budget, with what is spent of it in its current period and when it refills."""
        views = _act(server, "budget list", lambda client: client.budgets(), lambda service, _: service.budgets())
        if json_out:
            print_json(list(views))
            return
        for view in views:
            typer.echo(budget_line(view))
        if not views:
            typer.echo("no budgets: only the hourly limits and the pending-job quotas bind")

    @budget_app.command("set")
    def set_cmd(
        seconds: float = typer.Argument(..., min=0, help="GPU seconds of evaluation per period."),
        user: str | None = typer.Option(None, "--user", help="An account: discord:ID or a local name."),
        token: int | None = typer.Option(None, "--token", min=1, help="One API token's id (`kernelcup tokens list`)."),
        period: int = typer.Option(86_400, "--period", min=60, help="The period in seconds (a day: 86400)."),
        json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
        server: str | None = server_option(),
    ) -> None:
        """Set the budget of an account (every submission of it spends it) or of one token (what it sends)."""
        from leaderboards.results import UserRef

        who, token_id = target(user, token)
        view = _act(
            server,
            "budget set",
            lambda client: client.set_budget(seconds, user=who, token_id=token_id, period_s=period),
            lambda service, actor: service.set_budget(
                user=UserRef.parse(who) if who else None,
                token_id=token_id,
                seconds=seconds,
                period_s=period,
                actor=actor,
            ),
        )
        if json_out:
            print_json(view)
        elif view is not None:
            typer.echo(budget_line(view))

    @budget_app.command("remove")
    def remove_cmd(
        user: str | None = typer.Option(None, "--user", help="An account: discord:ID or a local name."),
        token: int | None = typer.Option(None, "--token", min=1, help="One API token's id."),
        server: str | None = server_option(),
    ) -> None:
        """Remove a budget: only the hourly limits and the pending-job quota bind it again."""
        from leaderboards.results import UserRef

        who, token_id = target(user, token)
        _act(
            server,
            "budget remove",
            lambda client: client.set_budget(None, user=who, token_id=token_id),
            lambda service, actor: service.set_budget(
                user=UserRef.parse(who) if who else None, token_id=token_id, seconds=None, actor=actor
            ),
        )
        typer.echo(f"budget of {'token #' + str(token_id) if token_id else safe(who or '')} removed")
