"""The licences a submission's author may choose for the open archive (issue 34), written once for every surface.

``none`` is the default and means the code is never published. Any other licence is the author's consent to publish
the code under it once the leaderboard allows (``leaderboards/archive.py``). The list is short on purpose: four
well-known licences whose SPDX identifiers a dataset's users understand without reading further.
"""

from __future__ import annotations

from leaderboards.errors import InvalidSubmission

NONE = "none"
"""Never published: the default of every submission and account."""

LICENCES: tuple[str, ...] = ("CC0-1.0", "CC-BY-4.0", "MIT", "Apache-2.0")
"""The licences an author may publish under, as SPDX identifiers."""

CHOICES: tuple[str, ...] = (NONE, *LICENCES)

_BY_KEY = {name.lower(): name for name in CHOICES} | {"cc0": "CC0-1.0", "cc-by": "CC-BY-4.0", "apache": "Apache-2.0"}


def parse_licence(text: str, *, field: str = "license") -> str:
    """The canonical name of the licence ``text`` names (case does not matter; ``cc0``, ``cc-by`` and ``apache`` are
    accepted as short forms); ``InvalidSubmission`` (code ``unknown_license``) lists the choices otherwise."""
    found = _BY_KEY.get(text.strip().lower())
    if found is None:
        raise InvalidSubmission(
            f"Unknown license {text.strip()!r}; choose one of: {', '.join(CHOICES)} ('none' never publishes the code).",
            code="unknown_license",
            field=field,
        )
    return found
