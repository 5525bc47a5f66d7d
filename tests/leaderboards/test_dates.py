"""The one date format organisers type (leaderboards.dates): UTC unless a zone is given, an example in the error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from leaderboards.dates import DATE_HELP, InvalidDate, parse_when


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-31 18:00", datetime(2026, 12, 31, 18, 0, tzinfo=UTC)),
        ("  2026-12-31 18:00 ", datetime(2026, 12, 31, 18, 0, tzinfo=UTC)),
        ("2026-12-31", datetime(2026, 12, 31, tzinfo=UTC)),
        ("2026-12-31T18:00Z", datetime(2026, 12, 31, 18, 0, tzinfo=UTC)),
        ("2026-12-31T18:00+01:00", datetime(2026, 12, 31, 18, 0, tzinfo=timezone(timedelta(hours=1)))),
    ],
)
def test_a_date_reads_as_utc_unless_it_names_a_zone(text: str, expected: datetime) -> None:
    when = parse_when(text)
    assert when == expected and when.utcoffset() == expected.utcoffset()


@pytest.mark.parametrize("text", ["next friday", "31/12/2026", "2026-13-01 00:00", "", "2026-12-31 25:00"])
def test_anything_else_names_the_field_the_format_and_an_example(text: str) -> None:
    with pytest.raises(InvalidDate) as raised:
        parse_when(text, field="until")
    assert str(raised.value) == f"The until {text.strip()!r} is not a date and time: write it as {DATE_HELP}."
    assert raised.value.field == "until" and "2026-12-31 18:00" in DATE_HELP
