"""The ``kernelcup`` console script: one Typer app, one module per command family under ``commands/``.

Each command module exposes ``register(app)``; nothing runs at import time. Settings are read inside
each command (``kernelcup.settings``), so ``--help`` works with no configuration at all. The command modules import
only Typer and the standard library at their top (their signatures use ``kernelcup.choices``); the database layer,
the runner, pydantic, the web app and the bot are imported inside the commands, so ``kernelcup --help`` starts
fast (``benchmarks/cli_startup.py``; ``tests/kernelcup/test_cli_conventions.py`` checks what it imports).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from kernelcup.commands import (
    admin,
    agent,
    archive,
    bot,
    competition,
    db,
    demo,
    kernelbench,
    leaderboard,
    login,
    mcpserve,
    moderation,
    problems,
    run,
    runners,
    schema,
    serve,
    standings,
    submissions,
    submit,
    tokens,
    worker,
)

if TYPE_CHECKING:
    from leaderboards.sync import ReferenceCheck

COMMAND_MODULES = (
    run,
    problems,
    kernelbench,  # adds `problems import-kernelbench` to the group problems made
    db,
    submit,
    submissions,
    leaderboard,
    standings,  # adds `leaderboard standings` and `leaderboard system-test` to the group leaderboard made
    moderation,  # `leaderboard moderate|moderated|audit|rejudge|rejudges|alerts|resolve-alert` in that group
    competition,  # `join`, `invites`, and `leaderboard late|admit` in the group leaderboard made
    login,
    worker,
    bot,
    serve,
    tokens,
    admin,  # `admin pause|resume|deadline|hide|show|rate-limit|ban|unban|stats`
    runners,
    schema,
    demo,
    mcpserve,
    agent,
    archive,  # `archive export|policy|license|withdraw`: the open kernel archive (docs/archive.md)
)

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}
"""``-h`` as well as ``--help``, on every command (click passes it down to subcommands)."""


def flags_show_no_type() -> None:
    """Typer's Rich help (0.29) gives a flag a type as if it took a value (``--json <bool>``), and ``--json true``
    then reads ``true`` as the next argument. A flag takes none: its row shows no type, as Typer's plain help does
    (which leaves out the type of flags and counts). Idempotent; patches ``TyperOption.display_type_rich``."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich
    if getattr(shown, "flags_show_no_type", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:  # typer's own (vendored) click.Context
        return None if self.is_flag or self.count else shown(self, ctx)

    display_type_rich.flags_show_no_type = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]


def build_app(*, reference_check: Callable[[], ReferenceCheck] | None = None) -> typer.Typer:
    """The CLI. ``reference_check`` builds the check ``problems validate --run`` and ``problems sync`` run
    (default: ``kernelcup.wiring.reference_check``, the sandboxed runner's)."""
    flags_show_no_type()
    app = typer.Typer(
        name="kernelcup",
        help="kernelcup: GPU kernel competitions. Submit kernels, check and time them, rank them per device.",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
        context_settings=CONTEXT_SETTINGS,
        pretty_exceptions_enable=False,
    )
    for module in COMMAND_MODULES:
        if module is problems:
            problems.register(app, reference_check=reference_check)
        else:
            module.register(app)

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

    return app


def version_text() -> str:
    """``kernelcup 0.1.0 (run contract v3)``: the package's version and the run contract's."""
    from importlib.metadata import version as dist_version

    from runners.contract import CONTRACT_VERSION

    return f"kernelcup {dist_version('kernelcup')} (run contract v{CONTRACT_VERSION})"


def main() -> None:
    build_app()()


if __name__ == "__main__":
    main()
