"""``kernelcup schema task|result``: the JSON Schemas of ``task.yml`` and of a run's result, made from the pydantic
models the platform itself validates with (``leaderboards.problems.Task``, ``runners.contract.RunResult``).

Editors and programs validate against them; the committed copies under ``docs/schemas/`` are regenerated with
``make schemas`` (``tests/kernelcup/test_schema.py`` checks that they match).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from kernelcup.choices import SchemaChoice

SCHEMA_DIR = Path("docs") / "schemas"
FILE_NAMES = {SchemaChoice.TASK: "task.schema.json", SchemaChoice.RESULT: "result.schema.json"}
TITLES = {
    SchemaChoice.TASK: "kernelcup task.yml (a problem folder's description, cases and files)",
    SchemaChoice.RESULT: "kernelcup RunResult (what one run of a submission returns)",
}


def json_schema(which: SchemaChoice) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``task.yml`` or of ``RunResult``, as the platform validates them."""
    if which is SchemaChoice.TASK:
        from leaderboards.problems import Task

        schema = Task.model_json_schema()
    else:
        from runners.contract import RunResult

        schema = RunResult.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "description": TITLES[which],
    }


def schema_text(which: SchemaChoice) -> str:
    """The schema as the committed file holds it: indented, keys in the models' order, a final newline."""
    return json.dumps(json_schema(which), indent=2, ensure_ascii=False) + "\n"


def register(app: typer.Typer) -> None:
    @app.command("schema")
    def schema_cmd(
        which: SchemaChoice = typer.Argument(..., help="task: the task.yml of a problem folder; result: a RunResult."),
    ) -> None:
        """Print the JSON Schema of task.yml or of a run's result (RunResult), for editors and programs."""
        typer.echo(schema_text(which), nl=False)
