"""A problem's ``hack_space`` (``task.yml``): the inputs anyone may try against a board's entries, and the strict check
of one such case.

An input hack is a case of ``generate_input`` that an account submits against a board's accepted entries
(``leaderboards.hacks``). The problem says which cases are fair game: each parameter of ``generate_input`` with its
type and range, and a cap on the product of its sizes, so that a hack costs a bounded run. A case is checked here
before anything runs: every declared parameter given, nothing else, each of its type (an integer is not a float, a
boolean is not an integer), in its range, finite, one of its choices; the sizes' product under the cap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from leaderboards.problem_rules import CASE_KEY, MAX_CASE_INT

__all__ = ["HackField", "HackParam", "HackSpace", "ParamType", "hack_case_issues"]

MAX_HACK_PARAMS = 16
MAX_CHOICES = 32
MAX_HACK_SIZE = 2**31
"""The largest cap a problem may put on the product of a hack's sizes (elements, not bytes)."""


class ParamType(StrEnum):
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    STR = "str"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


Bound = Annotated[float, Field(allow_inf_nan=False)]


class HackParam(_Strict):
    """One parameter of ``generate_input`` a hack may set."""

    type: ParamType
    min: Bound | None = Field(default=None, description="Least value (int and float).")
    max: Bound | None = Field(default=None, description="Greatest value (int and float).")
    choices: list[str] | None = Field(
        default=None, max_length=MAX_CHOICES, description="The values a str parameter may take."
    )

    @model_validator(mode="after")
    def _consistent(self) -> HackParam:
        numeric = self.type in (ParamType.INT, ParamType.FLOAT)
        if numeric and (self.min is None or self.max is None):
            raise ValueError(f"a {self.type.value} parameter needs min and max (a hack stays inside a range)")
        if numeric and self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        if not numeric and (self.min is not None or self.max is not None):
            raise ValueError(f"a {self.type.value} parameter has no min or max")
        if self.type is ParamType.INT and not all(
            float(b).is_integer() and abs(b) <= MAX_CASE_INT for b in (self.min, self.max) if b is not None
        ):
            raise ValueError("an int parameter's min and max are whole numbers within 64 bits")
        if (self.type is ParamType.STR) != (self.choices is not None):
            raise ValueError("a str parameter lists its choices (and only a str parameter does)")
        if self.choices is not None and not self.choices:
            raise ValueError("choices lists at least one value")
        return self


class HackSpace(_Strict):
    """``task.yml``'s ``hack_space``: the cases an input hack may try."""

    params: dict[str, HackParam] = Field(
        min_length=1,
        max_length=MAX_HACK_PARAMS,
        description="Every parameter of generate_input, with its type and range: {size: {type: int, min: 1, max: "
        "1048576}, seed: {type: int, min: 0, max: 2147483647}}.",
    )
    sizes: list[str] = Field(
        default_factory=list,
        description="The int parameters whose product max_size caps (the tensor dimensions); required (a hack's run "
        "is bounded by it): [rows, cols], or [size, size] for a square.",
    )
    max_size: int = Field(
        default=1 << 24, strict=True, ge=1, le=MAX_HACK_SIZE, description="The cap on the product of the sizes."
    )

    @model_validator(mode="after")
    def _names(self, info: ValidationInfo) -> HackSpace:
        stored = bool(info.context and info.context.get("stored"))  # a board's snapshot: checked when it was synced
        if not self.sizes and not stored:
            raise ValueError(
                "sizes is required: name the int parameters whose product is the input's size (sizes: [rows, cols]; "
                "one parameter twice for a square, sizes: [size, size]), so that max_size caps what a hack runs"
            )
        for name in self.params:
            if not CASE_KEY.fullmatch(name):
                raise ValueError(f"{name!a} is not a parameter name of generate_input")
        for name in self.sizes:
            if self.params.get(name) is None or self.params[name].type is not ParamType.INT:
                raise ValueError(f"sizes names {name!r}, which is not an int parameter of params")
        return self


@dataclass(frozen=True)
class HackField:
    """What is wrong with one parameter of a hack (``field`` is the parameter's name, or "case")."""

    field: str
    message: str


def _type_issue(value: Any, param: HackParam) -> str | None:
    if param.type is ParamType.BOOL:
        return None if isinstance(value, bool) else f"{value!r} is not true or false"
    if param.type is ParamType.STR:
        if not isinstance(value, str):
            return f"{value!r} is not text"
        return None if value in (param.choices or []) else f"{value!r} is not one of {', '.join(param.choices or [])}"
    if isinstance(value, bool):
        return f"{value!r} is a boolean, not a number"
    if param.type is ParamType.INT and not isinstance(value, int):
        return f"{value!r} is not a whole number"
    if param.type is ParamType.FLOAT and not isinstance(value, int | float):
        return f"{value!r} is not a number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not finite"
    assert param.min is not None and param.max is not None  # the model's validator made sure
    if not param.min <= value <= param.max:
        low, high = (int(b) if param.type is ParamType.INT else b for b in (param.min, param.max))
        return f"{value!r} is outside {low} .. {high}"
    return None


def hack_case_issues(space: HackSpace, case: Any) -> list[HackField]:
    """Everything wrong with ``case`` (a JSON object a hacker sent) as a case of ``space``; empty when it is one."""
    if not isinstance(case, dict):
        return [HackField("case", 'a hack is an object of generate_input\'s parameters, e.g. {"size": 1000}')]
    issues = [
        HackField(str(key)[:64], f"is not a parameter of this problem's hack space ({', '.join(space.params)})")
        for key in case
        if key not in space.params
    ]
    for name, param in space.params.items():
        if name not in case:
            issues.append(HackField(name, f"is missing ({param.type.value})"))
            continue
        issue = _type_issue(case[name], param)
        if issue:
            issues.append(HackField(name, issue))
    if not issues and space.sizes:
        product = math.prod(int(case[name]) for name in space.sizes)
        if product > space.max_size:
            issues.append(HackField("case", (
                f"{' * '.join(space.sizes)} is {product:,}, above this problem's cap of {space.max_size:,} (a hack "
                "is a correctness case: small inputs find what large ones do)"
            )))  # fmt: skip
    return issues


def normal_case(space: HackSpace, case: dict[str, Any]) -> dict[str, Any]:
    """A valid case (``hack_case_issues`` found nothing) as one value per case: a float parameter's value as a float,
    -0.0 as 0.0, so that ``{"scale": 1}`` and ``{"scale": 1.0}`` are one case to the once-per-case rule and the
    refund of a unit (red team, 2026-11-29: they hashed apart)."""
    return {
        name: float(value) + 0.0 if space.params[name].type is ParamType.FLOAT else value
        for name, value in case.items()
    }
