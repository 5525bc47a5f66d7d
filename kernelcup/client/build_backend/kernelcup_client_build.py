"""The build backend (PEP 517) of the light client ``kernelcup-client`` (``kernelcup/client/pyproject.toml``).

Standard library only, so ``pip wheel --no-deps kernelcup/client`` builds offline and installs nothing to build. A
wheel holds:

- ``kernelcup/client/*.py``: this folder's modules (the client, the environment, the remote CLI), as they are;
- ``kernelcup/client/_wire/``: copies of the modules the API's models live in (``web.schemas``, ``kernelcup.outcomes``
  and every first-party module they import, found by reading their imports: pure pydantic), each import of one of
  them pointed at its copy (``from runners.contract import X`` becomes ``from kernelcup.client._wire.runners.contract
  import X``). ``kernelcup.client.wire`` imports them from there when the server is not installed;
- no ``kernelcup/__init__.py``: ``kernelcup`` is a namespace package holding ``client`` alone.

The version is the main distribution's (the repository's ``pyproject.toml``). A copied module that imports anything
but the standard library and pydantic stops the build with the module and the import named: the light client must
not need the server's dependencies. From an sdist (``build_sdist``), the staged files it carries under ``src/`` are
packed instead (no repository around it then).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import io
import re
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

NAME = "kernelcup-client"
DIST = "kernelcup_client"
WIRE = "kernelcup.client._wire"
ROOTS = ("web.schemas", "kernelcup.outcomes")
"""The modules the client's models and reward records come from (``kernelcup/client/wire.py`` imports these)."""
FIRST_PARTY = ("web", "runners", "leaderboards", "kernelcup")
ALLOWED = frozenset({"pydantic", "pydantic_core", "annotated_types", "typing_extensions"})
"""Third-party modules a copied module may import: pydantic and its own dependencies."""
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
"""Every member's time stamp: the same sources give the same wheel."""


class BuildError(RuntimeError):
    """The light client cannot be built from this tree; the message says what to change."""


# -- what goes in ----------------------------------------------------------------------------------------------------


def _project() -> Path:
    return Path.cwd()  # PEP 517: the hooks run in the project's folder (kernelcup/client, or an unpacked sdist)


def _from_sdist(project: Path) -> bool:
    return (project / "PKG-INFO").is_file() and (project / "src" / "kernelcup" / "client").is_dir()


def _repo(project: Path) -> Path:
    repo = project.resolve().parents[1]
    if not (repo / "pyproject.toml").is_file() or not (repo / "web" / "schemas.py").is_file():
        raise BuildError(
            f"{project} is not kernelcup/client inside a kernelcup checkout (no {repo / 'web' / 'schemas.py'}): build "
            "the light client from the repository (pip wheel --no-deps kernelcup/client) or from its sdist"
        )
    return repo


def version(project: Path | None = None) -> str:
    """The version to build: the main distribution's, or (from an sdist) the one its PKG-INFO names."""
    project = project or _project()
    if _from_sdist(project):
        found = re.search(r"^Version: (\S+)$", (project / "PKG-INFO").read_text(encoding="utf-8"), re.M)
        if found is None:
            raise BuildError(f"{project / 'PKG-INFO'} names no Version")
        return found.group(1)
    main = tomllib.loads((_repo(project) / "pyproject.toml").read_text(encoding="utf-8"))
    return str(main["project"]["version"])


def _module_path(repo: Path, module: str) -> Path:
    base = repo.joinpath(*module.split("."))
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    raise BuildError(f"{module} is imported by a module the light client copies, but {base}.py does not exist")


def _first_party_imports(tree: ast.AST, where: str) -> tuple[list[str], list[str]]:
    """(the first-party modules imported, the third-party top-level names imported) anywhere in ``tree``."""
    ours: list[str] = []
    theirs: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top in FIRST_PARTY:
                    raise BuildError(
                        f"{where}:{node.lineno}: `import {alias.name}`: write `from {alias.name} import ...` in a "
                        "module the light client copies (its imports are pointed at the copies by that form)"
                    )
                theirs.append(top)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top not in FIRST_PARTY:
                theirs.append(top)
            elif node.module in FIRST_PARTY or node.module.startswith("kernelcup.client"):
                raise BuildError(
                    f"{where}:{node.lineno}: `from {node.module} import ...` in a module the light client copies: "
                    "import the module itself (from package.module import name)"
                )
            else:
                ours.append(node.module)
    return ours, theirs


def _rewrite(source: str, tree: ast.AST) -> str:
    """``source`` with each first-party ``from X import`` pointed at the copy of X."""
    lines = source.splitlines(keepends=True)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] not in FIRST_PARTY:
                continue
            i = node.lineno - 1
            pattern = re.compile(rf"^(\s*)from {re.escape(node.module)} import\b")
            if not pattern.match(lines[i]):
                raise BuildError(f"cannot rewrite line {node.lineno}: {lines[i].strip()!r}")
            lines[i] = pattern.sub(rf"\1from {WIRE}.{node.module} import", lines[i], count=1)
    return "".join(lines)


def wire_modules(repo: Path) -> dict[str, str]:
    """The copied modules: archive path under ``kernelcup/client/_wire/`` -> source, the roots and every first-party
    module they import (lazily too), transitively."""
    stdlib = sys.stdlib_module_names
    found: dict[str, str] = {}
    todo = list(ROOTS)
    while todo:
        module = todo.pop()
        if module in found:
            continue
        path = _module_path(repo, module)
        where = str(path.relative_to(repo))
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, where)
        ours, theirs = _first_party_imports(tree, where)
        foreign = sorted({t for t in theirs if t not in stdlib and t not in ALLOWED and t != "__future__"})
        if foreign:
            raise BuildError(
                f"{where} imports {', '.join(foreign)}: the light client copies this module (it holds or feeds the "
                f"API's models, from {' and '.join(ROOTS)}), and it may import only the standard library and "
                "pydantic. Move what needs the rest out of it."
            )
        found[module] = _rewrite(source, tree)
        todo.extend(ours)
    files: dict[str, str] = {
        "kernelcup/client/_wire/__init__.py": '"""Copies of the API\'s models for the light client, made by its build '
        '(kernelcup/client/build_backend). Do not edit."""\n'
    }
    for module, source in sorted(found.items()):
        parts = module.split(".")
        for n in range(1, len(parts)):
            package = "/".join(parts[:n])
            files.setdefault(f"kernelcup/client/_wire/{package}/__init__.py", "")
        name = "__init__.py" if _module_path(repo, module).name == "__init__.py" else f"{parts[-1]}.py"
        folder = "/".join(parts if name == "__init__.py" else parts[:-1])
        files[f"kernelcup/client/_wire/{folder}/{name}"] = source
    return files


def package_files(project: Path | None = None) -> dict[str, bytes]:
    """Every file of the ``kernelcup.client`` package the wheel installs: archive path -> content."""
    project = project or _project()
    if _from_sdist(project):
        src = project / "src"
        return {p.relative_to(src).as_posix(): p.read_bytes() for p in sorted(src.rglob("*")) if p.is_file()}
    repo = _repo(project)
    files = {f"kernelcup/client/{p.name}": p.read_bytes() for p in sorted(project.glob("*.py"))}
    files.update({path: text.encode() for path, text in wire_modules(repo).items()})
    return files


# -- metadata --------------------------------------------------------------------------------------------------------


def _pyproject(project: Path) -> dict[str, Any]:
    return tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def metadata(project: Path | None = None) -> str:
    """The core metadata (METADATA, PKG-INFO)."""
    project = project or _project()
    spec = _pyproject(project)
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {spec['name']}",
        f"Version: {version(project)}",
        f"Summary: {spec['description']}",
        f"License: {spec['license']['text']}",
        f"Requires-Python: {spec['requires-python']}",
        *(f"Requires-Dist: {req}" for req in spec["dependencies"]),
    ]
    return "\n".join(lines) + "\n"


def _entry_points(project: Path) -> str:
    scripts = _pyproject(project).get("scripts", {})
    return "[console_scripts]\n" + "".join(f"{name} = {target}\n" for name, target in scripts.items())


WHEEL = "Wheel-Version: 1.0\nGenerator: kernelcup_client_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _dist_info(project: Path) -> dict[str, str]:
    return {"METADATA": metadata(project), "WHEEL": WHEEL, "entry_points.txt": _entry_points(project)}


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


# -- the PEP 517 hooks ------------------------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings: dict[str, object] | None = None) -> list[str]:
    return []


def get_requires_for_build_sdist(config_settings: dict[str, object] | None = None) -> list[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict[str, object] | None = None) -> str:
    project = _project()
    name = f"{DIST}-{version(project)}.dist-info"
    folder = Path(metadata_directory) / name
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in _dist_info(project).items():
        (folder / file).write_text(text, encoding="utf-8")
    return name


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, object] | None = None,
    metadata_directory: str | None = None,
) -> str:
    project = _project()
    ver = version(project)
    info = f"{DIST}-{ver}.dist-info"
    members = dict(sorted(package_files(project).items()))  # one order, from a checkout or an sdist
    members.update({f"{info}/{file}": text.encode() for file, text in _dist_info(project).items()})
    record = [_record_line(path, data) for path, data in members.items()] + [f"{info}/RECORD,,"]
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{DIST}-{ver}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in members.items():
            member = zipfile.ZipInfo(path, ZIP_TIME)
            member.external_attr = 0o644 << 16
            member.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(member, data)
    return name


def build_sdist(sdist_directory: str, config_settings: dict[str, object] | None = None) -> str:
    """A self-contained sdist: PKG-INFO, pyproject.toml, this backend and the package's files (copies included)
    under ``src/``."""
    project = _project()
    ver = version(project)
    top = f"{DIST}-{ver}"
    members: dict[str, bytes] = {
        f"{top}/PKG-INFO": metadata(project).encode(),
        f"{top}/pyproject.toml": (project / "pyproject.toml").read_bytes(),
        f"{top}/build_backend/kernelcup_client_build.py": Path(__file__).read_bytes(),
    }
    members.update({f"{top}/src/{path}": data for path, data in package_files(project).items()})
    name = f"{top}.tar.gz"
    with tarfile.open(Path(sdist_directory) / name, "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for path, data in members.items():
            member = tarfile.TarInfo(path)
            member.size, member.mode, member.mtime = len(data), 0o644, 315532800  # 1980-01-01
            sdist.addfile(member, io.BytesIO(data))
    return name
