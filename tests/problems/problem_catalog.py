"""The problem library as data: every problem folder, every solution and template with the verdict it must get.

A solution declares its verdict in its first lines (DMOJ-style end-to-end suites as data)::

    # expect: accepted          (or wrong_answer, compile_error, runtime_error, ...: a runners.contract.Verdict)
    # needs: cuda               (optional: compiles CUDA, so it only runs on a GPU)
    # lang: helion              (optional: runs as a leaderboard of this language over the problem, a Python DSL)

Without an ``expect`` line, ``solutions/correct/*`` must be accepted and ``solutions/wrong/*`` must get
``wrong_answer``. Templates must be accepted; a ``cuda-inline`` or ``cuda`` template needs CUDA, and a template
labelled with a language's key (helion, tilelang, cute-dsl) runs in that language (needing CUDA where it does).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from runners.contract import LANGUAGES, Language, Verdict

REPO = Path(__file__).resolve().parents[2]
PROBLEMS = REPO / "problems"
STARTER = PROBLEMS / "starter.yaml"
HEADER = re.compile(r"^(?://|#)\s*(expect|needs|lang):\s*(\S+)\s*$")
CUDA_TEMPLATES = {"cuda-inline", "cuda"}


@dataclass(frozen=True)
class Solution:
    problem: str
    path: Path
    expect: Verdict
    needs_cuda: bool
    lang: Language | None = None
    """The language it runs in when not the problem's own."""

    @property
    def id(self) -> str:
        return f"{self.problem}/{self.path.relative_to(PROBLEMS / self.problem)}"


def problem_dirs() -> list[Path]:
    """Every folder of problems/ that holds a task.yml."""
    return sorted(p.parent for p in PROBLEMS.glob("*/task.yml"))


def python_problem_names() -> list[str]:
    """The problems whose submissions are Python files (every one but the native CUDA problem)."""
    import yaml

    return [
        p.name for p in problem_dirs() if (yaml.safe_load((p / "task.yml").read_text()) or {}).get("lang", "py") == "py"
    ]


def single_rank_problem_names() -> list[str]:
    """The Python problems that run as one process (every one but the problems on several GPUs, whose reference
    takes rank and world_size: docs/multigpu.md)."""
    import yaml

    def ranks(p: Path) -> bool:
        task = yaml.safe_load((p / "task.yml").read_text()) or {}
        cases = [*task.get("tests", []), *task.get("benchmarks", [])]
        return task.get("world_size", 1) > 1 or any("world_size" in c for c in cases)

    return [name for name in python_problem_names() if not ranks(PROBLEMS / name)]


def parse_header(path: Path) -> tuple[Verdict | None, bool, Language | None]:
    """The verdict a solution declares, whether it needs CUDA and its language, from its leading comment lines."""
    expect, needs_cuda, lang = None, False, None
    for line in path.read_text(encoding="utf-8").splitlines()[:10]:
        match = HEADER.match(line.strip())
        if not match:
            continue
        key, value = match.groups()
        if key == "expect":
            expect = Verdict(value)
        elif key == "needs":
            needs_cuda = value == "cuda"
        elif key == "lang":
            lang = Language(value)
    return expect, needs_cuda or (lang is not None and LANGUAGES[lang].needs_cuda), lang


def solutions(problem: Path) -> list[Solution]:
    """The problem's solutions/correct/*, solutions/wrong/* and templates, each with its expected verdict."""
    from leaderboards.problems import load_problem

    found = []
    for path in sorted((problem / "solutions").glob("*/*")):
        if path.suffix not in (".py", ".cu"):
            continue
        expect, needs_cuda, lang = parse_header(path)
        if expect is None:  # no header: the folder says it
            expect = Verdict.ACCEPTED if path.parent.name == "correct" else Verdict.WRONG_ANSWER
        found.append(Solution(problem.name, path, expect, needs_cuda or path.suffix == ".cu", lang))
    for label, rel in load_problem(problem).task.templates.items():
        path = problem / rel
        lang = Language(label) if label in set(Language) else None
        needs_cuda = (
            label in CUDA_TEMPLATES or path.suffix == ".cu" or (lang is not None and LANGUAGES[lang].needs_cuda)
        )
        found.append(Solution(problem.name, path, Verdict.ACCEPTED, needs_cuda, lang))
    return found


def all_solutions() -> list[Solution]:
    return [s for p in problem_dirs() for s in solutions(p)]


def import_lib() -> ModuleType:
    """The problems' shared ``_lib``, importable in this process as it is in the evaluator (where the loader
    bundles it beside reference.py)."""
    from leaderboards.problem_lib import PROBLEM_LIB

    if str(PROBLEM_LIB.parent) not in sys.path:
        sys.path.append(str(PROBLEM_LIB.parent))
    return importlib.import_module("_lib")


def import_reference(problem: str) -> ModuleType:
    """The problem's reference.py as a module (in-process, for property tests of its check)."""
    name = f"kernelcup_reference_{problem}"
    if name in sys.modules:
        return sys.modules[name]
    import_lib()
    spec = importlib.util.spec_from_file_location(name, PROBLEMS / problem / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


CHECK_CASES = "checks.py"
"""A problem's own property cases of its check (docs/authoring.md, section 6), beside its reference."""
CHECK_CASE_NAMES = ("CASE", "CORRECT", "WRONG")


@dataclass(frozen=True)
class CheckCases:
    """What a problem's checks.py declares: one case of ``generate_input``'s arguments, the outputs a correct kernel
    may give (``data -> output``: must pass) and its own mistakes (``(data, good) -> output``: must fail)."""

    case: dict[str, Any]
    correct: dict[str, Callable[[tuple], Any]]
    wrong: dict[str, Callable[[tuple, Any], Any]]


def check_case_problems() -> list[str]:
    """The problems whose folder holds a checks.py."""
    return [p.name for p in problem_dirs() if (p / CHECK_CASES).is_file()]


def import_check_cases(problem: str) -> CheckCases:
    """The problem's checks.py, imported as a module of its own and read (``read_check_cases``)."""
    return read_check_cases(PROBLEMS / problem / CHECK_CASES, f"kernelcup_check_cases_{problem}")


def read_check_cases(path: Path, name: str) -> CheckCases:
    """A checks.py imported as the module ``name`` (once) and read; a malformed one raises ``ValueError`` naming
    the file and what it lacks."""
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
    unknown = sorted(n for n in vars(module) if n.isupper() and n not in CHECK_CASE_NAMES)
    if unknown:
        raise ValueError(f"{where}: {', '.join(unknown)} is not one of {', '.join(CHECK_CASE_NAMES)} (a misspelling?)")
    case = getattr(module, "CASE", None)
    if not isinstance(case, dict) or not isinstance(case.get("seed"), int):
        raise ValueError(f"{where}: CASE must be a dict of generate_input's arguments with an integer seed")
    tables = {}
    for table in ("CORRECT", "WRONG"):
        entries = getattr(module, table, {})
        if not isinstance(entries, dict) or not all(isinstance(k, str) and callable(v) for k, v in entries.items()):
            raise ValueError(f"{where}: {table} must map a name (str) to a function")
        tables[table] = dict(entries)
    return CheckCases(case=dict(case), correct=tables["CORRECT"], wrong=tables["WRONG"])
