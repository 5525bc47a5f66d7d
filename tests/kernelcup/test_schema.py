"""``kernelcup schema task|result``: the JSON Schemas come from the models, the committed copies match them, and the
problems shipped here (and a real RunResult) validate against them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from kernelcup.choices import SchemaChoice
from kernelcup.cli import build_app
from kernelcup.commands.schema import FILE_NAMES, SCHEMA_DIR, schema_text
from runners.contract import Mode, RunResult, SystemInfo, Verdict

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("which", list(SchemaChoice))
def test_committed_schema_is_the_generated_one(which: SchemaChoice) -> None:
    committed = (ROOT / SCHEMA_DIR / FILE_NAMES[which]).read_text(encoding="utf-8")
    assert committed == schema_text(which), f"docs/schemas/{FILE_NAMES[which]} is stale: run `make schemas`"


@pytest.mark.parametrize("which", list(SchemaChoice))
def test_schema_command_prints_a_valid_json_schema(which: SchemaChoice) -> None:
    result = CliRunner().invoke(build_app(), ["schema", which.value])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"].endswith("2020-12/schema")


def test_schema_command_refuses_an_unknown_name_and_lists_the_choices() -> None:
    result = CliRunner().invoke(build_app(), ["schema", "tasks"])
    assert result.exit_code == 2
    assert "task" in result.output and "result" in result.output


@pytest.mark.parametrize("task_file", sorted((ROOT / "problems").glob("*/task.yml")), ids=lambda p: p.parent.name)
def test_every_shipped_task_validates_against_the_task_schema(task_file: Path) -> None:
    schema = json.loads(schema_text(SchemaChoice.TASK))
    jsonschema.validate(yaml.safe_load(task_file.read_text(encoding="utf-8")), schema)


def test_a_misspelt_task_field_fails_the_task_schema() -> None:
    schema = json.loads(schema_text(SchemaChoice.TASK))
    task = yaml.safe_load((ROOT / "problems" / "vectoradd" / "task.yml").read_text(encoding="utf-8"))
    task["benchmark"] = task.pop("benchmarks")
    with pytest.raises(jsonschema.ValidationError, match="benchmark"):
        jsonschema.validate(task, schema)


def test_a_run_result_validates_against_the_result_schema() -> None:
    result = RunResult(
        mode=Mode.TEST,
        verdict=Verdict.ACCEPTED,
        message="all 3 tests passed",
        system=SystemInfo(),
    )
    jsonschema.validate(json.loads(result.model_dump_json()), json.loads(schema_text(SchemaChoice.RESULT)))
