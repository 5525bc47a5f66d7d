"""The rules a problem's names and values follow, and the caps on what a problem may hold.

Shared by the problem format (``problems.py``), ``problems validate|sync`` and the admin functions, so a name
or a device that one of them accepts is accepted by all.
"""

from __future__ import annotations

import keyword
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from datetime import date, datetime
from pathlib import PurePosixPath
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
MAX_TEXT_CHARS = 8192
"""Characters of free text (a description, a name): the web page renders a description as Markdown (once per
process, ``web.pages.render.markdown``), and markdown-it's time grows with the text: 0.16 s for 8 KiB of ``![*``,
the worst found (10.7 s for 240 KB of ``![``). The longest description of problems/ is 1,454."""
MAX_PROBLEM_NAME = 100
"""Characters of a problem folder's name: the problem's name, which a leaderboard stores (``problem``, at most 200
in the database) and every run and message shows; like a leaderboard name's."""

LEADERBOARD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,31}")
TEMPLATE_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
CASE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""A case's key: a keyword argument of ``generate_input`` (an ASCII Python identifier)."""

_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Marks and overrides that reorder the text around them (a right-to-left override makes ``exe.txt`` of ``txt.exe``)."""

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


PROBLEM_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9_-]{{0,{MAX_PROBLEM_NAME - 1}}}")
"""A problem's name, its folder's: what the client fetches a problem folder by (``kernelcup/problem_cache.py``), and
what every run, log and message carries."""


def problem_name_issue(name: str) -> str | None:
    """Why a problem folder's name ``name`` cannot name a problem, or None (it is shown in part, never whole)."""
    if PROBLEM_NAME.fullmatch(name):
        return None
    if len(name) > MAX_PROBLEM_NAME:
        return (
            f"the folder's name (starting {name[:20]!a}) is {len(name)} characters; a problem's name, its folder's, "
            f"is at most {MAX_PROBLEM_NAME}: rename the folder"
        )
    return (
        f"the folder's name {name[:40]!a} is not a usable problem name: ASCII letters, digits, '-' and '_', starting "
        "with a letter or digit (it names the problem in every run, message and download): rename the folder"
    )


def text_issue(text: str) -> str | None:
    """Why ``text`` (a name, a description: free text from a problem file or an admin) cannot be stored and shown, or
    None: it may hold no control character (C0, DEL or C1: terminal escapes, a carriage return) except newline and
    tab, and no bidirectional mark or override, and it is at most ``MAX_TEXT_CHARS`` long. The character is named by
    its code point, never echoed."""
    if len(text) > MAX_TEXT_CHARS:
        return (
            f"is {len(text):,} characters; text is at most {MAX_TEXT_CHARS:,} (the web page renders a description as "
            "Markdown): shorten it, and put what is long in a file of the problem"
        )
    for i, ch in enumerate(text):
        code = ord(ch)
        if (code < 0x20 and ch not in "\n\t") or 0x7F <= code <= 0x9F:
            what = "a control character"
        elif ch in _BIDI_CONTROLS:
            what = "a bidirectional control"
        else:
            continue
        return (
            f"has {what} (U+{code:04X}) at character {i + 1}; text may hold no control characters except newline "
            "and tab, and no bidirectional overrides (terminal escapes and reordered text are refused)"
        )
    return None


def problem_path_issue(rel: str) -> str | None:
    """Why ``rel`` cannot name a file of a problem folder, or None. The rule the runner applies when it writes the
    files (``runners.entry.admission.write_job``), checked before a leaderboard opens: a relative path in normal
    form (``sub/x.py``, not ``./sub/x.py``, ``sub//x.py`` or ``sub/../sub/x.py``), without control characters."""
    if not rel or text_issue(rel) or "\\" in rel:
        return f"{rel!a} is not a usable path: write a path with '/' between folders and no control characters"
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or path.as_posix() != rel or rel == ".":
        return (
            f"{rel!r} must be a relative path inside the problem folder in normal form "
            "(like 'reference.py' or 'sub/harness.cu': no '..', no leading '/' or './', no '//')"
        )
    if any(part.startswith(".") for part in path.parts):
        return (
            f"{rel!r} names a hidden file or folder (a part starting with '.'): competitors' clients refuse such "
            "paths in a problem folder they download, so rename it"
        )
    return None


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


MAX_CASE_INT = 2**63 - 1
"""Case integers fit in a signed 64-bit integer (what PyTorch takes for sizes and seeds)."""


def _case_value_issue(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and not -MAX_CASE_INT - 1 <= value <= MAX_CASE_INT:
        shown = f"{value}" if value.bit_length() <= 128 else f"an integer of {value.bit_length()} bits"
        return f"{shown} does not fit in 64 bits (integers in cases lie between -2**63 and 2**63 - 1)"
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


def check_case(case: dict[str, Any]) -> dict[str, Any]:
    """One test or benchmark case: keys are ASCII Python identifiers (they become keyword arguments of
    ``generate_input`` and appear in every message that names the case), values are numbers, true/false, text or
    lists of them. Raises ``ValueError`` naming the key."""
    for key, value in case.items():
        if not isinstance(key, str) or not CASE_KEY.fullmatch(key) or keyword.iskeyword(key):
            raise ValueError(
                f"the key {key!a} is not a parameter name: case keys are keyword arguments of generate_input "
                "(1 to 64 ASCII letters, digits and '_', not starting with a digit, not a Python keyword)"
            )
        issue = _case_value_issue(value)
        if issue:
            raise ValueError(f"{key!r}: {issue}; case values are numbers, true/false, text or lists of them")
    return case


def seed_issue(case: dict[str, Any]) -> str | None:
    """Why ``case`` cannot be a benchmark case, or None: it needs a ``seed``. A ranked run draws fresh inputs for
    every timed call from it (``derive_seed``); without one every call would get the same public input, which a
    submission could cache (the runner refuses such a ranked run as the problem's fault)."""
    if "seed" in case:
        return None
    return (
        "has no 'seed': a ranked run needs fresh inputs for every timed call, drawn from the case's seed; "
        "add one, e.g. {..., seed: 1234}, and take it in generate_input(..., seed)"
    )
