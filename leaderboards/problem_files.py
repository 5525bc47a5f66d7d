"""Reading the files of a problem folder or set without trusting them to be well-formed.

Problem files are written by leaderboard creators: honest, but a mistake must not hang ``sync``, fill the
database or print a traceback. Everything read here is bounded: only regular files, at most a fixed number of
bytes, YAML with a bounded number of aliases, nesting depth and values (an alias "bomb" is refused before it
expands), no duplicate keys, no guessing of YAML 1.1 booleans (``NO``, ``on``), and ``1e3`` read as the number it
is in YAML 1.2 (YAML 1.1 reads it as text). Every refusal is a
``ValueError`` or ``yaml.YAMLError`` whose message says what is wrong and, for YAML, on which line.
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError

MAX_YAML_BYTES = 256 * 1024
"""Largest task.yml or problem-set file."""
MAX_FILE_BYTES = 1024 * 1024
"""Largest file that travels with a problem (reference, harness sources) or template."""
MAX_ALIASES = 100
"""YAML aliases (``*name``) in one file."""
MAX_DEPTH = 16
"""Nesting of YAML mappings and lists, aliases expanded."""
MAX_VALUES = 20_000
"""Values in one YAML file once its aliases are expanded (a 1 KB alias bomb expands to billions)."""

_BOOL_TAG = "tag:yaml.org,2002:bool"
_YAML11_BOOL_TAG = "tag:kernelcup,2025:yaml11-bool"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class FileRefused(ValueError):
    """A file that is not read: not a regular file, too large, missing, or not UTF-8."""


def read_regular(path: Path, limit: int) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; ``FileRefused`` otherwise.

    The file is opened without blocking and checked after opening (a FIFO would otherwise hang the reader; a
    check before opening could be raced). Symbolic links are followed: the caller checks where they lead.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileRefused("does not exist") from None
    except IsADirectoryError:
        raise FileRefused("is a folder, not a file") from None
    except OSError as exc:
        raise FileRefused(f"cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FileRefused("is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("is not a regular file (a FIFO, socket or device is never read)")
        if info.st_size > limit:
            raise FileRefused(f"is {_size(info.st_size)}; the limit is {_size(limit)}")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # it grew after the stat
                raise FileRefused(f"is larger than the limit of {_size(limit)}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: Path, limit: int) -> str:
    data = read_regular(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"is not UTF-8 text (byte {exc.start} is not valid)") from None


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.0f} KiB" if n >= 1024 else f"{n} bytes"


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` with limits and without the silent misreads."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise ComposerError(None, None, f"more than {MAX_ALIASES} aliases (*name) in one file", mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _value in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue  # keys from a merge (<<: *base) may be overridden: that is what merging is for
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:
                    continue  # an unhashable key: construct_mapping names it below
                if first is not key_node:
                    raise ConstructorError(
                        "while reading a mapping",
                        node.start_mark,
                        f"found the key {key!r} twice (first on line {first.start_mark.line + 1}); "
                        "YAML would silently keep the last one",
                        key_node.start_mark,
                    )
        return super().construct_mapping(node, deep=deep)

    def construct_real_timestamp(self, node: Any) -> Any:
        try:
            return self.construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            what = f"{node.value!r} is not a real date or time ({exc})"
            raise ConstructorError(None, None, what, node.start_mark) from None

    def construct_yaml11_bool(self, node: Any) -> Any:
        raise ConstructorError(
            None,
            None,
            f"{node.value!r} would be read as {node.value.lower() in ('yes', 'on')} (a YAML 1.1 boolean); "
            f"write true or false, or quote it ('{node.value}') if you mean the text",
            node.start_mark,
        )


# Booleans are only true/false (YAML 1.2); yes/no/on/off are refused with a message instead of guessed.
_BoundedLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL_TAG]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_BoundedLoader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_BoundedLoader.add_implicit_resolver(
    _YAML11_BOOL_TAG, re.compile(r"^(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$"), list("yYnNoO")
)
# 1e300 is a number (YAML 1.2); YAML 1.1 wants a dot (1.0e300) and reads it as the text '1e300' otherwise.
_BoundedLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)
_BoundedLoader.add_constructor(_YAML11_BOOL_TAG, _BoundedLoader.construct_yaml11_bool)
_BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", _BoundedLoader.construct_real_timestamp)


def load_yaml(text: str) -> Any:
    """Parse one YAML document within the limits; ``yaml.YAMLError`` or ``ValueError`` says what is wrong."""
    try:
        data = yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass
    except RecursionError:
        raise ValueError(f"nested too deeply (the limit is {MAX_DEPTH} levels)") from None
    check_shape(data)
    return data


def check_shape(data: Any) -> None:
    """Refuse a structure that refers to itself, nests deeper than ``MAX_DEPTH`` or holds more than ``MAX_VALUES``
    values once its aliases are expanded, or holds NaN or infinity."""
    count = 0
    on_path: set[int] = set()

    def walk(value: Any, depth: int, where: str) -> None:
        nonlocal count
        count += 1
        if count > MAX_VALUES:
            raise ValueError(
                f"holds more than {MAX_VALUES:,} values once its aliases (if any) are expanded: keep long data out of "
                "it (generate_input makes the inputs), and do not nest aliases inside aliases"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where or 'the document'}: {value} is not a number kernelcup can store")
        if not isinstance(value, dict | list):
            return
        if id(value) in on_path:
            raise ValueError(f"{where or 'the document'} refers to itself (a recursive alias)")
        if depth >= MAX_DEPTH:
            raise ValueError(f"{where}: nested deeper than {MAX_DEPTH} levels once aliases are expanded")
        on_path.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            walk(item, depth + 1, f"{where}.{key}" if where else str(key))
        on_path.discard(id(value))

    walk(data, 0, "")


def problem_folders(root: Path) -> list[Path]:
    """The problem folders directly in ``root`` (the folders that hold a ``task.yml``), by name."""
    try:
        return sorted(p for p in root.iterdir() if (p / "task.yml").is_file())
    except OSError:
        return []


def nearest_problem_folders(path: Path, roots: tuple[Path, ...] = ()) -> list[Path]:
    """The existing problem folders whose names are nearest to a missing or mistyped ``path``, best first: siblings
    of ``path`` first, then folders in ``roots`` (e.g. ``problems/`` for ``kernelcup run softmax ...``)."""
    from leaderboards.errors import close_matches

    seen: list[Path] = []
    for root in (path.parent, *roots):
        by_name = {p.name: p for p in problem_folders(root)}
        for name in close_matches(path.name, by_name):
            if by_name[name] not in seen and by_name[name] != path:
                seen.append(by_name[name])
    return seen
