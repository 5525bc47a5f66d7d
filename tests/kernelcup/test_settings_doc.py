"""docs/settings.md is generated from the settings models (kernelcup.settings_doc): the committed page must be what
the models say now, and it must hold every variable they read."""

from __future__ import annotations

from kernelcup.settings_doc import DOC, env_names, main, render, settings_models


def test_the_committed_page_is_in_step_with_the_models() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "docs/settings.md is out of step: run `make settings-doc`"
    assert main(["--check"]) == 0


def test_the_page_names_every_variable_with_its_default_and_description() -> None:
    page = render()
    for _, _, model in settings_models():
        for name in env_names(model):
            assert f"`{name}`" in page, name
    assert "| `KERNELCUP_RATE_LIMIT_PER_HOUR` | `30` | Test, benchmark and profile submissions" in page
    assert "| `DISCORD_TOKEN` | required |" in page and "| `KERNELCUP_DATA_DIR` | unset |" in page
