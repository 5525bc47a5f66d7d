"""The layering whiteboard (docs/architecture.md) holds against the code.

Every module's imports are read with ``ast`` (lazy and ``TYPE_CHECKING`` imports included: they hide a circle, they
do not remove it) and checked against the page's two tables: the allowed arrows between parts and the libraries a
part never imports. Then: no circle between parts, and none between the modules of a part.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHITEBOARD = ROOT / "docs" / "architecture.md"
PARTS = ("kernelcup", "bot", "web", "leaderboards", "runners", "migrations", "problems")
SOLUTION_DIRS = ("solutions",)  # problem solutions are submissions (data), not platform code


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. bot.client
    target: str  # what it imports, as written and resolved: bot.commands.admin, discord, runners.contract
    where: str  # path:line, for the failure message


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def platform_files() -> Iterator[Path]:
    for part in PARTS:
        for path in sorted((ROOT / part).rglob("*.py")):
            if not any(d in path.relative_to(ROOT).parts for d in SOLUTION_DIRS):
                yield path


def imports_of(path: Path, known: set[str]) -> Iterator[Import]:
    """Every import statement of ``path`` (anywhere in it), relative ones resolved, ``from a import b`` read as the
    module ``a.b`` where that is one."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(name, alias.name, where)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield Import(name, sub if sub in known else base, where)


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    files = list(platform_files())
    known = {module_name(p) for p in files}
    return [imp for path in files for imp in imports_of(path, known)]


def part_of(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in PARTS else None


def table(heading: str) -> dict[str, set[str]]:
    """The two-column table under ``heading`` of the whiteboard: part -> the names of its second column."""
    text = WHITEBOARD.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        rows[cells[0].strip("`")] = set(re.findall(r"`([\w.]+)`", cells[1]))
    assert rows, f"no table under '## {heading}' in {WHITEBOARD}"
    return rows


def within(target: str, names: set[str]) -> bool:
    return any(target == n or target.startswith(n + ".") for n in names)


def test_the_whiteboard_names_every_part() -> None:
    assert set(table("Allowed arrows")) == set(PARTS)
    assert set(table("Never")) <= set(PARTS)


def test_no_forbidden_arrow_between_parts(imports: list[Import]) -> None:
    allowed = table("Allowed arrows")
    broken = [
        f"{imp.where}: {imp.module} imports {imp.target}"
        for imp in imports
        if (src := part_of(imp.module)) is not None
        and (dst := part_of(imp.target)) is not None
        and dst != src
        and not within(imp.target, allowed[src])
    ]
    assert not broken, "arrows the whiteboard does not allow (docs/architecture.md):\n" + "\n".join(broken)


def test_no_part_imports_a_library_it_must_never_use(imports: list[Import]) -> None:
    never = table("Never")
    broken = [
        f"{imp.where}: {imp.module} imports {imp.target}"
        for imp in imports
        if (src := part_of(imp.module)) in never and imp.target.split(".")[0] in never[src]
    ]
    assert not broken, "never-rules of docs/architecture.md broken:\n" + "\n".join(broken)


AWAITING_THE_LEAD: set[tuple[str, str]] = set()
"""Imports the GPU box's rules forbid that are still there, each in a file being rewritten (issue 32's plan-then-run
split): each is to read the same names from ``runners.ipc.wiring``. The test fails once one is gone, so this list
only shrinks."""


def box_row(module: str, rows: dict[str, set[str]]) -> str | None:
    """The most specific row of the GPU box's table that ``module`` falls under."""
    return max((row for row in rows if within(module, {row})), key=len, default=None)


def test_the_gpu_box_sides_import_only_ipc_the_languages_and_the_contract(imports: list[Import]) -> None:
    """The trusted evaluator and the submission process never import each other, nor the parent (``runners.entry``)
    or anything else of ``runners`` their row of "Inside the GPU box" does not name: what they share (fd names,
    offsets, language keys) is in ``runners.ipc``."""
    rows = table("Inside the GPU box")
    assert {"runners.oracle", "runners.submission", "runners.ipc"} <= set(rows)
    found = set()
    broken = []
    for imp in imports:
        row = box_row(imp.module, rows)
        if row is None or not imp.target.startswith("runners.") or within(imp.target, {row, *rows[row]}):
            continue
        if (imp.module, imp.target) in AWAITING_THE_LEAD:
            found.add((imp.module, imp.target))
            continue
        broken.append(f"{imp.where}: {imp.module} imports {imp.target}")
    assert not broken, "GPU box rules of docs/architecture.md broken:\n" + "\n".join(broken)
    assert found == AWAITING_THE_LEAD, f"fixed: take {sorted(AWAITING_THE_LEAD - found)} out of AWAITING_THE_LEAD"


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_circles_are_found() -> None:
    """The checker itself: a circle through a lazy import is one."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_circle_between_parts(imports: list[Import]) -> None:
    graph: dict[str, set[str]] = {p: set() for p in PARTS}
    for imp in imports:
        src, dst = part_of(imp.module), part_of(imp.target)
        if src and dst and src != dst:
            graph[src].add(dst)
    assert circles(graph) == []


@pytest.mark.parametrize("part", PARTS)
def test_no_circle_between_the_modules_of_a_part(imports: list[Import], part: str) -> None:
    """bot/ above all: its command groups get their dependencies in their constructors, so no module of it needs
    the client back (no ``TYPE_CHECKING`` or lazy import holding a circle apart)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        if part_of(imp.module) == part and part_of(imp.target) == part and imp.module != imp.target:
            graph.setdefault(imp.module, set()).add(imp.target)
    assert circles(graph) == [], f"import circles in {part}/"


def test_settings_are_built_only_by_the_loader_and_the_runner_program(imports: list[Import]) -> None:
    """No constructor (or anything else) reads the environment by building a settings model itself: the composition
    root loads them (``kernelcup.settings.load``) and passes them down. The runner program (``runners.entry``) is
    the runner machine's own root."""
    files = list(platform_files())
    models = {
        node.name
        for path in files
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and any(getattr(b, "id", "") == "BaseSettings" for b in node.bases)
    }
    assert {"CoreSettings", "RunnerSettings", "WorkerSettings", "BotSettings", "ModalSettings"} <= models
    roots = {"kernelcup.settings", "runners.entry"}
    built = [
        f"{path.relative_to(ROOT)}:{node.lineno}: {node.func.id}(...)"
        for path in files
        if module_name(path) not in roots
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in models
    ]
    assert not built, "settings built outside the loader:\n" + "\n".join(built)
