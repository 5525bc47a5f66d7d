"""Validation errors reach people without pydantic's "Value error, " prefix, on every path that shows them."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import BaseModel, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from kernelcup.settings import SettingsError, load
from runners.validation import error_location, error_message


class Box(BaseModel):
    size: int

    @field_validator("size")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("size must be positive (try 1024)")
        assert v < 10**6, "size is too large"
        return v


def errors_of(**data: object) -> list:
    with pytest.raises(ValidationError) as info:
        Box(**data)
    return info.value.errors()


def test_the_validators_own_words_without_prefix() -> None:
    [err] = errors_of(size=-1)
    assert err["msg"].startswith("Value error, ")  # what pydantic says, and what users must not see
    assert error_message(err) == "size must be positive (try 1024)"
    [err] = errors_of(size=10**7)
    assert error_message(err).startswith("size is too large")
    assert error_location(err) == "size"


def test_a_plain_pydantic_message_is_kept() -> None:
    [err] = errors_of(size="many")
    assert error_message(err) == err["msg"] and "Value error" not in error_message(err)


class _Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="UXTEST_", extra="ignore")
    size: int = 1

    @field_validator("size")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("must be positive")
        return v


def test_settings_errors_name_the_variable_without_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UXTEST_SIZE", "-3")
    with pytest.raises(SettingsError) as info:
        load(_Settings)
    assert "setting UXTEST_SIZE is invalid: must be positive" in str(info.value)
    assert "Value error" not in str(info.value)


def test_the_api_answers_a_bad_field_without_prefix() -> None:
    from web.errors import install

    app = FastAPI()
    install(app)

    @app.post("/box")
    def post_box(box: Box) -> dict:
        return {"size": box.size}

    answer = TestClient(app).post("/box", json={"size": -1})
    assert answer.status_code == 422
    assert "size must be positive (try 1024)" in answer.text and "Value error" not in answer.text
