"""Outside text on the terminal: every name, description and message that a user or a submission wrote goes
through ``safe`` before it is printed as Rich markup (a light module: no database layer is imported)."""

from __future__ import annotations

from rich.markup import escape


def safe(text: object) -> str:
    """Outside text (a user's or a file's name, a description, a message) for Rich markup: control characters
    stripped and markup escaped, so that ``kernel[v2].py`` prints as it is and ``[bold]eve`` restyles nothing."""
    from leaderboards.formatting import printable  # (imported when used: --help stays light)

    return escape(printable(str(text)))
