"""The rules a problem's names and values follow, and the caps on what a problem may hold.

Shared by the problem format (``problems.py``), ``problems validate|sync`` and the admin functions, so a name
or a device that one of them accepts is accepted by all.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

MAX_CASES = 100
"""Test cases, and benchmark cases, of one problem."""
MAX_TIMEOUT_S = 3600.0
"""Longest test, benchmark or ranked timeout of a problem."""
MAX_PROBLEM_FILES = 32
"""Files that travel with a problem (reference, harness sources)."""
MAX_TEMPLATES = 16
MAX_SNAPSHOT_BYTES = 4 * 1024 * 1024
"""The task snapshot a leaderboard stores (task.yml as JSON, the files, the templates)."""
MAX_SET_PROBLEMS = 200
MAX_DEVICES = 32

LEADERBOARD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,31}")
TEMPLATE_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")

DeviceCheck = Callable[[str], "str | None"]
"""A device name -> why no runner can serve it (e.g. not in KERNELCUP_ROUTES), or None when one can."""


def name_key(name: str) -> str:
    """The form two leaderboard names are compared in: NFKC and case folded, so look-alikes and names that differ
    only in case collide (``Ｖectoradd``, ``VectorAdd`` and ``vectoradd`` are one name)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def leaderboard_name_issue(name: str) -> str | None:
    """Why ``name`` cannot name a new leaderboard, or None."""
    if LEADERBOARD_NAME.fullmatch(name):
        return None
    return (
        f"{name!r} is not a usable leaderboard name: 1 to 100 ASCII letters, digits, '-' and '_', "
        "starting with a letter or digit"
    )


def device_issue(device: str) -> str | None:
    """Why ``device`` cannot name a device, or None."""
    if not isinstance(device, str):
        return f"{device!r} is not a device name (write it as text, e.g. H100)"
    if device != device.strip():
        return f"{device!r} has blanks around it; write {device.strip()!r}"
    if not DEVICE_NAME.fullmatch(device):
        return f"{device!r} is not a device name: 1 to 32 ASCII letters, digits, '.', '_', '+' and '-'"
    return None


def devices_issue(devices: Sequence[str]) -> str | None:
    """Why this list of devices cannot be a leaderboard's, or None (names match case-insensitively)."""
    seen: dict[str, str] = {}
    for d in devices:
        issue = device_issue(d)
        if issue:
            return issue
        first = seen.setdefault(d.casefold(), d)
        if first is not d:
            same = "" if first == d else f" (as {first!r}: device names match case-insensitively)"
            return f"{d!r} is listed twice{same}"
    return None


def _case_value_issue(value: Any) -> str | None:
    if isinstance(value, bool | int | str):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a finite number"
    if isinstance(value, list):
        for item in value:
            issue = _case_value_issue(item)
            if issue:
                return issue
        return None
    kinds = {dict: "mapping", type(None): "null", datetime: "date and time", date: "date", bytes: "binary value"}
    kind = kinds.get(type(value), type(value).__name__)
    shown = value.isoformat() if isinstance(value, date) else repr(value)
    return f"{shown} is a {kind}"


def check_cases(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i, case in enumerate(cases):
        for key, value in case.items():
            issue = _case_value_issue(value)
            if issue:
                raise ValueError(
                    f"case {i}, {key!r}: {issue}; case values are numbers, true/false, text or lists of them"
                )
    return cases
