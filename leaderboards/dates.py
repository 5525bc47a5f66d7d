"""The one way an organiser types a date and time (a deadline): ``YYYY-MM-DD HH:MM`` in UTC, e.g. ``2026-12-31 18:00``.

The CLI, the ``/admin`` page and the bot's ``/admin`` commands all ask for it in these words and read it with
:func:`parse_when`, so a date typed on one surface means the same on the others. A date alone means its midnight
(UTC), and an ISO 8601 time with a zone (``2026-12-31T18:00+01:00``, ``...Z``) is read as that zone says.
"""

from __future__ import annotations

from datetime import UTC, datetime

from leaderboards.errors import InvalidChange

DATE_FORMAT = "YYYY-MM-DD HH:MM, in UTC"
DATE_EXAMPLE = "2026-12-31 18:00"
DATE_HELP = f"{DATE_FORMAT}, like {DATE_EXAMPLE}"
"""The words every surface asks for a date with."""


class InvalidDate(InvalidChange):
    """A date and time that does not read as :data:`DATE_FORMAT`."""

    code = "invalid_field"


def parse_when(text: str, *, field: str = "deadline") -> datetime:
    """``text`` as an aware datetime: ``2026-12-31 18:00`` (UTC), ``2026-12-31`` (its midnight, UTC), or ISO 8601
    with its own zone. Anything else raises :class:`InvalidDate` naming the field, the format and an example."""
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(cleaned.replace(" ", "T", 1))
    except ValueError:
        raise InvalidDate(
            f"The {field} {text.strip()!r} is not a date and time: write it as {DATE_HELP}.", field=field
        ) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when
