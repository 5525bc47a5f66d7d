"""The typed task snapshot (``leaderboards.snapshot.TaskSnapshot``): the JSON a leaderboard row stores reads back as
typed fields, in the form today's code writes it and in the form the first version wrote it, and stores back as it
was; its fingerprint is the one the code before the model computed (a board's runs are recorded under it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import future
from sqlalchemy import select

from leaderboards.errors import NeedsForce
from leaderboards.models import Leaderboard
from leaderboards.problems import load_problem
from leaderboards.service import LeaderboardService
from leaderboards.snapshot import (
    SnapshotError,
    TaskSnapshot,
    fingerprint,
    incomparable_changes,
    problem_from_snapshot,
    snapshot,
    template_file_name,
)
from runners.contract import DataType, Language, Mode, RankingRule

REPO = Path(__file__).resolve().parents[2]
REFERENCE = (
    "def generate_input(size, seed):\n    return size, seed\n\ndef ref_kernel(data):\n    return data\n\n"
    'def check_implementation(data, output):\n    return True, ""\n'
)
TEMPLATE = "def custom_kernel(data):\n    return data\n"
TODAY_TASK_YML = """\
description: add two vectors
dtype: fp16
templates: {pytorch: submission.py}
tests: [{size: 3, seed: 1}]
benchmarks: [{size: 9, seed: 2}, {size: 1024, seed: 5}]
holdout: [{size: 7, seed: 11}]
system_test_top: 3
"""
TODAY_JSON = (
    '{"problem":"p","task":{"description":"add two vectors","lang":"py","files":["reference.py"],'
    '"templates":{"pytorch":"submission.py"},"tests":[{"size":3,"seed":1}],"benchmarks":[{"size":9,"seed":2},'
    '{"size":1024,"seed":5}],"holdout":[{"size":7,"seed":11}],"system_test_top":3,"ranking_by":"geom",'
    '"baselines":[],"dtype":"fp16","test_timeout_s":180.0,"benchmark_timeout_s":300.0,"ranked_timeout_s":600.0},'
    '"files":{"reference.py":"def generate_input(size, seed):\\n    return size, seed\\n\\ndef ref_kernel(data):\\n'
    '    return data\\n\\ndef check_implementation(data, output):\\n    return True, \\"\\"\\n"},'
    '"templates":{"pytorch":"def custom_kernel(data):\\n    return data\\n"}}'
)
"""The row of ``TODAY_TASK_YML``'s problem as the code of commit 8a8ecb0 (before the model) wrote it."""
TODAY_FINGERPRINT = "8dbbac702957bf3181c0567d64ccbaec49efe05552fd76b5e939a6346dd31836"
"""``fingerprint`` of ``TODAY_JSON`` as the code before the model computed it."""

OLDEST: dict[str, Any] = {
    "problem": "vectoradd",
    "task": {
        "description": "add two vectors",
        "lang": "py",
        "files": ["reference.py"],
        "templates": {},
        "tests": [{"size": 3, "seed": 1}],
        "benchmarks": [{"size": 9}],
        "ranking_by": "geom",
        "test_timeout_s": 180.0,
        "benchmark_timeout_s": 300.0,
        "ranked_timeout_s": 600.0,
    },
    "files": {"reference.py": REFERENCE},
    "templates": {},
}
"""A row as the first version (commit f830914) wrote it: task.yml had only these fields, and a benchmark case
needed no seed."""
OLDEST_FINGERPRINT = "8b28c3a82ecd98290fca53b9c59428e6b1383a9c9733fa5323720268bbc415cb"
TWO_RANKS_FINGERPRINT = "a3a0a6d2da833db2a84b5684d8f489d2795accc41eef39adb07049349fdd6802"
"""``OLDEST`` with a seeded benchmark at world_size 2, as the code before the model computed it."""


def _with_task(stored: dict[str, Any], **task: Any) -> dict[str, Any]:
    return {**stored, "task": {**stored["task"], **task}}


def _folder(root: Path, task_yml: str) -> Path:
    root.mkdir(parents=True)
    (root / "task.yml").write_text(task_yml)
    (root / "reference.py").write_text(REFERENCE)
    (root / "submission.py").write_text(TEMPLATE)
    return root


def test_a_row_as_todays_code_writes_it_reads_as_typed_fields_and_stores_back_the_same(tmp_path: Path) -> None:
    problem = load_problem(_folder(tmp_path / "p", TODAY_TASK_YML))
    row = json.loads(TODAY_JSON)
    assert snapshot(problem).stored() == problem.snapshot() == row, "the JSON a leaderboard row holds is unchanged"
    snap = TaskSnapshot.load(row)
    assert snap == snapshot(problem) and snap.stored() == row
    assert snap.problem == "p" and snap.files == {"reference.py": REFERENCE} and snap.templates == {"pytorch": TEMPLATE}
    assert snap.task.dtype is DataType.FP16 and snap.task.holdout == [{"size": 7, "seed": 11}]
    assert snap.task.system_test_top == 3 and snap.task.benchmarks[1] == {"size": 1024, "seed": 5}
    assert template_file_name(snap, "pytorch") == "submission.py" and template_file_name(snap, "x") == "x.txt"
    assert fingerprint(snap) == fingerprint(snapshot(problem)) == TODAY_FINGERPRINT
    again = problem_from_snapshot(row)
    assert again.name == "p" and again.task == problem.task and again.templates == problem.templates
    assert again.request("s.py", TEMPLATE.encode(), Mode.TEST, device="cpu").files == {"reference.py": REFERENCE}


def test_a_row_the_first_version_wrote_reads_with_todays_defaults_and_keeps_its_fingerprint() -> None:
    snap = TaskSnapshot.load(OLDEST)
    task = snap.task
    assert task.lang is Language.PYTHON and task.ranking_by is RankingRule.GEOMEAN and task.dtype is DataType.FP32
    assert task.holdout == [] and task.baselines == [] and task.world_size == 1 and task.system_test_top == 10
    assert task.benchmarks == [{"size": 9}], "an unseeded benchmark of its day still reads (the runner refuses it)"
    assert fingerprint(snap) == OLDEST_FINGERPRINT
    assert TaskSnapshot.load({k: v for k, v in OLDEST.items() if k != "templates"}).templates == {}
    two = TaskSnapshot.load(_with_task(OLDEST, world_size=2, benchmarks=[{"size": 9, "seed": 2}]))
    assert fingerprint(two) == TWO_RANKS_FINGERPRINT
    assert incomparable_changes(snap, two) == ["benchmark cases changed", "world size changed from 1 to 2 ranks"]
    other = TaskSnapshot.load({**_with_task(OLDEST, lang="cu", ranking_by="mean"), "files": {"reference.py": ""}})
    assert incomparable_changes(snap, other) == [
        "reference files changed: reference.py",
        "language changed from py to cu",
        "ranking rule changed from geom to mean",
    ]
    described = TaskSnapshot.load(_with_task(OLDEST, description="reworded", tests=[{"size": 4, "seed": 9}]))
    assert incomparable_changes(snap, described) == [] and fingerprint(described) == OLDEST_FINGERPRINT


@pytest.mark.parametrize(
    "folder", sorted(p.name for p in (REPO / "problems").iterdir() if p.is_dir() and not p.name.startswith("_"))
)
def test_every_problem_stores_and_reads_back_the_same_snapshot(folder: str) -> None:
    problem = load_problem(REPO / "problems" / folder)
    snap = snapshot(problem)
    row = json.loads(json.dumps(snap.stored()))  # what the database gives back
    assert row == problem.snapshot()
    again = TaskSnapshot.load(row)
    assert again == snap and again.stored() == row and fingerprint(again) == fingerprint(snap)
    assert again.to_problem().task == problem.task and again.to_problem().files == problem.files


def test_a_changed_task_is_validated_as_a_stored_one_and_the_rest_kept() -> None:
    snap = TaskSnapshot.load(OLDEST)  # (its unseeded benchmark reads: the rules of its day, as when it was loaded)
    held = snap.with_task(holdout=[{"size": 5}])
    assert held.task.holdout == [{"size": 5}] and held.files == snap.files and held.problem == snap.problem
    assert held.stored()["task"]["holdout"] == [{"size": 5}] and snap.task.holdout == [], "the original stays"
    timed = snap.with_task(holdout=[{"size": 5, "seed": 1}], holdout_timed=True)
    with pytest.raises(SnapshotError, match="seed"):
        timed.with_task(holdout=[*timed.task.holdout, {"size": 6}])
    with pytest.raises(SnapshotError, match=r"task\.holdot: Extra inputs are not permitted"):
        snap.with_task(holdot=[])


def test_a_row_that_does_not_read_names_each_field_and_the_fix_never_the_stored_values() -> None:
    secret = {"size": 918273, "seed": 4242}
    broken = {**_with_task(OLDEST, holdout=[secret], tests="oops"), "files": ["reference.py"], "extra": 1}
    with pytest.raises(SnapshotError) as caught:
        TaskSnapshot.load(broken)
    message = str(caught.value)
    assert "task.tests: Input should be a valid list" in message and "extra: Extra inputs are not permitted" in message
    assert "files: Input should be a valid dictionary" in message and "kernelcup problems sync" in message
    assert "918273" not in message and "oops" not in message and caught.value.__cause__ is None
    for missing in ("problem", "task", "files"):
        with pytest.raises(SnapshotError, match=f"{missing}: Field required"):
            TaskSnapshot.load({k: v for k, v in OLDEST.items() if k != missing})
    with pytest.raises(SnapshotError, match="the snapshot: Input should be a valid dictionary"):
        problem_from_snapshot(None)  # type: ignore[arg-type]
    assert "918273" not in repr(TaskSnapshot.load(_with_task(OLDEST, holdout=[secret]))), "a logged one hides them"


def test_a_board_stored_by_the_first_version_is_served_and_its_problem_synced_again_changes_nothing(
    service: LeaderboardService, tmp_path: Path
) -> None:
    yml = "description: add two vectors\ntests: [{size: 3, seed: 1}]\nbenchmarks: [{size: 9, seed: 2}]\n"
    problem = load_problem(_folder(tmp_path / "vectoradd", yml))
    service.create_leaderboard(problem, name="old", deadline=future(), devices=["H100"])
    with service.db.transaction() as s:  # the row as the first version wrote it
        lb = s.scalars(select(Leaderboard).where(Leaderboard.name == "old")).one()
        lb.task = _with_task(OLDEST, benchmarks=[{"size": 9, "seed": 2}])
    assert service.task_snapshot("old") == snapshot(problem)
    view = service.task("old")
    assert view.dtype == "fp32" and view.baselines == ("reference",) and view.tests == ({"size": 3, "seed": 1},)
    folder = service.public_folder("old")
    assert yaml.safe_load(folder.files["task.yml"])["benchmarks"] == [{"size": 9, "seed": 2}]
    assert folder.files["reference.py"] == REFERENCE and folder.problem == "vectoradd"
    update = service.update_leaderboard("old", problem=problem)
    assert update.changed == () and not update.ranking_reset
    moved = load_problem(_folder(tmp_path / "moved" / "vectoradd", yml.replace("size: 9", "size: 10")))
    with pytest.raises(NeedsForce, match="benchmark cases changed"):
        service.update_leaderboard("old", problem=moved)
    forced = service.update_leaderboard("old", problem=moved, force=True)
    assert "task" in forced.changed and forced.ranking_reset
    with service.db.transaction() as s:
        row = s.scalars(select(Leaderboard).where(Leaderboard.name == "old")).one()
        assert row.task == moved.snapshot() and row.fingerprint == fingerprint(snapshot(moved))
