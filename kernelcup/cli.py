"""The ``kernelcup`` console script: one Typer app, one module per command family under ``commands/``.

Each command module exposes ``register(app)``; nothing runs at import time. Settings are read inside
each command (``kernelcup.settings``), so ``--help`` works with no configuration at all.

The console script loads lazily (issue 32): ``main`` builds a group that knows each top-level command by its name
and its one-line help (``TOP_LEVEL``) and imports a command's modules only when that command runs (or its own help
is asked for), so ``kernelcup --help``, ``--version`` and ``version`` import no command module at all, and
``kernelcup run`` imports only ``commands/run.py`` (``lazy_app``). ``build_app`` still registers every module at
once, in ``COMMAND_MODULES``'s order (tests use it, and it takes the reference check to inject).
``tests/kernelcup/test_cli_lazy.py`` checks that the two list the same commands with the same help, and what a
start imports; ``benchmarks/cli_startup.py`` times it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer import _click as click

    from leaderboards.sync import ReferenceCheck

COMMAND_MODULES = (
    "run",
    "problems",
    "kernelbench",  # adds `problems import-kernelbench` to the group problems made
    "hack",  # adds `problems hack` (an input hack tried here) to that group
    "db",
    "submit",
    "submissions",
    "leaderboard",
    "standings",  # adds `leaderboard standings` and `leaderboard system-test` to the group leaderboard made
    "moderation",  # `leaderboard moderate|moderated|audit|rejudge|rejudges|alerts|resolve-alert` in that group
    "competition",  # `join`, `invites`, and `leaderboard late|admit` in the group leaderboard made
    "login",
    "worker",
    "bot",
    "serve",
    "tokens",
    "admin",  # `admin pause|resume|deadline|hide|show|rate-limit|ban|unban|stats|budget`
    "batch",  # `batch submit|show|wait`, and `admin budget list|set|remove` in the group admin made
    "runners",
    "schema",
    "demo",
    "mcpserve",
    "agent",
    "archive",  # `archive export|policy|license|withdraw`: the open kernel archive (docs/archive.md)
    "board_hack",  # `hack submit|show|credits`: input hacks against a board (issue 35)
)
"""The modules of ``kernelcup.commands``, in the order they register (a module that adds to another's group comes
after it)."""


@dataclass(frozen=True)
class TopLevel:
    """A top-level command as ``kernelcup --help`` lists it before its modules are imported."""

    modules: tuple[str, ...]
    """The modules of ``kernelcup.commands`` that make it, in ``COMMAND_MODULES``'s order."""
    help: str
    """The first paragraph of its help, as its module gives it."""
    group: bool = False
    """A group of subcommands (listed after the plain commands, as Typer lists them)."""


TOP_LEVEL: dict[str, TopLevel] = {
    "run": TopLevel(
        ("run",), "Evaluate a submission for a problem folder on this machine (test, benchmark, ranked or profile)."
    ),
    "submit": TopLevel(
        ("submit",),
        "Submit a kernel: queue it, run it, and print the report. Through the API when a server is configured\n"
        "(`kernelcup login`); else on the local database (run here, if no worker is running). `kernelcup submit A.py"
        "\nB.py --compare` compares two files on one device instead.",
    ),
    "join": TopLevel(
        ("leaderboard", "competition"),
        "Join a private (hidden) leaderboard with an invite code: it then shows to you as a public one does.",
    ),
    "login": TopLevel(
        ("login",),
        "Log in to a kernelcup server for later commands: sign in with the browser (Discord, GitHub or a token,\n"
        "whatever the server offers), or give an API token. Both are kept in your config dir (mode 0600).",
    ),
    "logout": TopLevel(("login",), "Forget the stored server and token (commands use the local database again)."),
    "worker": TopLevel(("worker",), "Serve queued jobs until stopped (SIGTERM/SIGINT stop gracefully)."),
    "bot": TopLevel(("bot",), "Run the Discord bot (DISCORD_TOKEN) until stopped; SIGINT/SIGTERM stop it gracefully."),
    "serve": TopLevel(
        ("serve",), "Serve the HTTP API (docs at /api/docs) until stopped; SIGINT/SIGTERM stop it gracefully."
    ),
    "schema": TopLevel(
        ("schema",), "Print the JSON Schema of task.yml or of a run's result (RunResult), for editors and programs."
    ),
    "demo": TopLevel(
        ("demo",),
        "Run the platform end to end here: sync the problems, submit the example solutions, show the rankings.",
    ),
    "mcp": TopLevel(
        ("mcpserve",),
        "Serve kernelcup to an agent over MCP on stdin/stdout: list and read problems, evaluate a file (test,\n"
        "benchmark, profile), submit, compare, read results and rankings. Uses the login `kernelcup login` stored.",
    ),
    "problems": TopLevel(
        ("problems", "kernelbench", "hack"),
        "Problem folders and problem sets; `get`: a leaderboard's public folder, to run it here.",
        group=True,
    ),
    "db": TopLevel(("db",), "The database: migrations, status, backup and restore.", group=True),
    "submissions": TopLevel(("submissions",), "Your submissions: list, show, code, cancel, delete.", group=True),
    "leaderboard": TopLevel(
        ("leaderboard", "standings", "moderation", "competition"), "Leaderboards and rankings.", group=True
    ),
    "invites": TopLevel(
        ("leaderboard", "competition"), "Invite codes to private (hidden) leaderboards (admins).", group=True
    ),
    "tokens": TopLevel(("tokens",), "API tokens (on the server's own database).", group=True),
    "admin": TopLevel(
        ("admin", "batch"),
        "An organiser's operations (the admin API's): pause, resume, deadline, hide, show, rate-limit, ban, unban, "
        "stats, budget. On the local database, or a server's with an admin token (--server).",
        group=True,
    ),
    "batch": TopLevel(
        ("batch",),
        "Many candidates for one problem in one request (a server's API): submit, show, wait.",
        group=True,
    ),
    "runners": TopLevel(("runners",), "Remote and local runners: routing and launcher checks.", group=True),
    "agent": TopLevel(("agent",), "Set a folder up for a coding agent.", group=True),
    "archive": TopLevel(("archive",), "The open kernel archive: export it, and who publishes what.", group=True),
    "hack": TopLevel(("board_hack",), "Input hacks against a board's top entries: submit, show, credits.", group=True),
}
"""Every top-level command but ``version`` (the root's own), in the order ``kernelcup --help`` lists them. A new
command module goes in ``COMMAND_MODULES`` and each top-level command it makes here (the test names what is
missing)."""


CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}
"""``-h`` as well as ``--help``, on every command (click passes it down to subcommands)."""


def flags_show_no_type() -> None:
    """Typer's Rich help (0.29) gives a flag a type as if it took a value (``--json <bool>``), and ``--json true``
    then reads ``true`` as the next argument. A flag takes none: its row shows no type, as Typer's plain help does
    (which leaves out the type of flags and counts). Idempotent; patches ``TyperOption.display_type_rich`` where the
    installed Typer has it."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None or getattr(shown, "flags_show_no_type", False):
        return  # another Typer (the lent GPU machine's, 2026-11-28) lacks it: its help is left as it is

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:  # typer's own (vendored) click.Context
        return None if self.is_flag or self.count else shown(self, ctx)

    display_type_rich.flags_show_no_type = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def command_module(name: str) -> Any:
    """``kernelcup.commands.NAME``, imported."""
    return importlib.import_module(f"kernelcup.commands.{name}")


def register_modules(
    app: typer.Typer, names: tuple[str, ...], *, reference_check: Callable[[], ReferenceCheck] | None = None
) -> None:
    """Register the command modules ``names`` on ``app``, in that order."""
    for name in names:
        module = command_module(name)
        if name == "problems":
            module.register(app, reference_check=reference_check)
        else:
            module.register(app)


def _root(app: typer.Typer) -> None:
    """The root's own options and command: ``--version`` (``-V``) and ``version``."""

    def print_version(asked: bool) -> None:
        if asked:
            typer.echo(version_text())
            raise typer.Exit()

    @app.callback()
    def options(
        version: bool = typer.Option(
            False, "--version", "-V", is_eager=True, callback=print_version, help="Print the version and exit."
        ),
    ) -> None:
        pass

    @app.command()
    def version() -> None:
        """Print the kernelcup version and the run-contract version (as `kernelcup --version`)."""
        typer.echo(version_text())


def _typer(**extra: Any) -> typer.Typer:
    flags_show_no_type()
    return typer.Typer(
        name="kernelcup",
        help="kernelcup: GPU kernel competitions. Submit kernels, check and time them, rank them per device.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
        context_settings=CONTEXT_SETTINGS,
        pretty_exceptions_enable=False,
        **extra,
    )


def build_app(*, reference_check: Callable[[], ReferenceCheck] | None = None) -> typer.Typer:
    """The CLI with every command module registered. ``reference_check`` builds the check ``problems validate
    --run`` and ``problems sync`` run (default: ``kernelcup.wiring.reference_check``, the sandboxed runner's)."""
    app = _typer()
    register_modules(app, COMMAND_MODULES, reference_check=reference_check)
    _root(app)
    return app


class LazyGroup(TyperGroup):
    """The top-level group of ``main``: each command of ``TOP_LEVEL`` is a stand-in with its name and help until it
    is resolved to run (its own ``--help`` and shell completion resolve it too), when its modules are imported and
    registered on an app of their own and the real command takes the stand-in's place."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        own = dict(self.commands)  # `version`
        self.commands.clear()
        for name, top in TOP_LEVEL.items():
            if not top.group:
                self.commands[name] = TyperCommand(name=name, help=top.help)
        self.commands.update(own)
        for name, top in TOP_LEVEL.items():
            if top.group:
                self.commands[name] = TyperCommand(name=name, help=top.help)
        self.loaded: set[str] = set(own)

    def load(self, name: str) -> click.Command:
        """The real command ``name``: its modules imported and registered (once)."""
        if name not in self.loaded:
            app = typer.Typer()
            register_modules(app, TOP_LEVEL[name].modules)
            real = typer.main.get_group(app).commands.get(name)
            if real is None:
                raise RuntimeError(f"kernelcup.commands {TOP_LEVEL[name].modules} make no command {name!r} (TOP_LEVEL)")
            self.commands[name] = real
            self.loaded.add(name)
        return self.commands[name]

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name is not None and command is not None and name in TOP_LEVEL:
            command = self.load(name)
        return name, command, rest


def lazy_app() -> typer.Typer:
    """The console script's CLI: the root's own options and ``version``, every other command loaded when it runs
    (its group is a ``LazyGroup``)."""
    app = _typer(cls=LazyGroup)
    _root(app)
    return app


def version_text() -> str:
    """``kernelcup 0.1.0 (run contract v3)``: the package's version and the run contract's."""
    from importlib.metadata import version as dist_version

    from runners.contract_version import CONTRACT_VERSION  # not runners.contract: that imports pydantic

    return f"kernelcup {dist_version('kernelcup')} (run contract v{CONTRACT_VERSION})"


def main() -> None:
    lazy_app()()


if __name__ == "__main__":
    main()
