"""pyproject.toml names its licence the PEP 639 way, so that building kernelcup prints no deprecation warnings.

A TOML table (``license = { text = ... }``) made setuptools print ``project.license as a TOML table is deprecated``
three times, about 30 lines of ``make demo``'s output (a newcomer's walk, 2026-11-29). The SPDX string needs
setuptools 77 or later in the build requirements.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]


def test_the_licence_is_an_spdx_string_and_the_build_takes_a_setuptools_that_reads_it() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "Apache-2.0"
    for name in pyproject["project"].get("license-files", []):
        assert list(REPO.glob(name)), f"license-files names {name}, which matches no file"
    requires = {Requirement(r).name: Requirement(r) for r in pyproject["build-system"]["requires"]}
    assert not requires["setuptools"].specifier.contains(Version("76.1")), "PEP 639's string needs setuptools>=77"
    assert requires["setuptools"].specifier.contains(Version("77.0.3"))
