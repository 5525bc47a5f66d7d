"""Settings a submission file carries in its own header comments: one parser for every surface.

Both spellings the community uses are read::

    #!kernelcup leaderboard vectoradd          #!POPCORN leaderboard vectoradd
    #!kernelcup devices H100 A100              #!POPCORN gpu H100
    #!kernelcup mode ranked
    #!kernelcup license: MIT                   #!POPCORN license MIT

(``//!`` instead of ``#!`` in CUDA files.) Keys: ``leaderboard``; ``devices`` (also ``device``, ``gpu``,
``gpus``; names separated by spaces or commas, ``all`` for every device); ``mode``; ``license`` (also ``licence``:
the archive licence, ``leaderboards.licences``). A colon after the key is allowed. What the user gives
explicitly (a CLI flag, a slash-command option, an API field) wins over the file's directives; the service
applies them (``LeaderboardService.submit``). An unknown ``#!kernelcup`` key is an error that names the line (a
typo must not silently submit somewhere else); unknown ``#!POPCORN`` keys are the peer platform's and ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from leaderboards.errors import InvalidSubmission

_LINE = re.compile(r"^\s*(?:#|//)!\s*(kernelcup|popcorn)\b(.*)$", re.IGNORECASE)
_KEYS = {
    "leaderboard": "leaderboard",
    "devices": "devices",
    "device": "devices",
    "gpu": "devices",
    "gpus": "devices",
    "mode": "mode",
    "license": "licence",
    "licence": "licence",
}


@dataclass(frozen=True)
class Directives:
    leaderboard: str | None = None
    devices: tuple[str, ...] = ()
    mode: str | None = None
    licence: str | None = None


def _bad(lineno: int, line: str, why: str) -> InvalidSubmission:
    return InvalidSubmission(f"Line {lineno} ({line.strip()!r}): {why}", code="bad_directive")


def parse_directives(text: str) -> Directives:
    """The directives of a submission's text; ``InvalidSubmission`` (code ``bad_directive``) names a bad line."""
    found: dict[str, str] = {}
    devices: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        match = _LINE.match(line)
        if match is None:
            continue
        ours = match.group(1).lower() == "kernelcup"
        key, _, value = match.group(2).strip().partition(" ")
        key, value = key.lower().removesuffix(":"), value.strip()
        name = _KEYS.get(key)
        if name is None:
            if ours:
                raise _bad(lineno, line, f"unknown key {key!r}; use one of: leaderboard, devices, mode, license.")
            continue
        if not value:
            raise _bad(lineno, line, f"{key} needs a value.")
        if name == "devices":
            devices.extend(d for d in re.split(r"[\s,]+", value) if d and d not in devices)
            continue
        if " " in value:
            raise _bad(lineno, line, f"{key} takes one value.")
        if name in found and found[name] != value:
            raise _bad(lineno, line, f"{key} was already given as {found[name]!r}.")
        found[name] = value
    return Directives(
        leaderboard=found.get("leaderboard"),
        devices=tuple(devices),
        mode=found.get("mode"),
        licence=found.get("licence"),
    )
