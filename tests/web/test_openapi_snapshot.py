"""The API's shape is under test: the app's OpenAPI document must equal the committed snapshot, so a change to a
route or a model (a field added, renamed or dropped) shows up in review as a change to that file."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "openapi_snapshot.py"


def snapshot_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openapi_snapshot", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_openapi_document_matches_the_snapshot() -> None:
    script = snapshot_script()
    now = script.render(script.current())
    saved = script.SNAPSHOT.read_text(encoding="utf-8")
    assert now == saved, (
        f"the API's OpenAPI document differs from {script.SNAPSHOT.name}:\n{script.diff(saved, now)}\n\n"
        f"If the change is intended, regenerate the snapshot and commit it: {script.REGENERATE}"
    )


def test_a_difference_is_shown_as_a_readable_diff() -> None:
    script = snapshot_script()
    before = script.render({"paths": {"/a": {"get": {"summary": "old"}}}})
    after = script.render({"paths": {"/a": {"get": {"summary": "new"}}}})
    shown = script.diff(before, after)
    assert '-        "summary": "old"' in shown and '+        "summary": "new"' in shown
