"""``kernelcup.client.KernelEnv``: reset() shows the problem and its template, step(code) answers the trusted side's
reward record, against a kernelcup served in-process (``served.py``, the fake launcher reading each file)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from helpers import future, make_problem
from served import TEMPLATE, TESTS, Served, served_kernelcup

from kernelcup.client import KernelEnv
from kernelcup.outcomes import Reward


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_kernelcup(tmp_path_factory.mktemp("env")) as s:
        yield s


def test_reset_shows_the_problem_and_its_template(served: Served) -> None:
    env = KernelEnv(served.client, "add", device="H100")
    obs = env.reset()
    assert (obs.leaderboard, obs.device, obs.language, obs.file_name) == ("add", "H100", "pytorch", "add_pytorch.py")
    assert obs.template == f"#!POPCORN leaderboard add\n{TEMPLATE}"  # served: a copy of it submits to its board
    assert obs.description == "Add two vectors: return a + b."
    assert list(obs.tests) == TESTS
    with pytest.raises(ValueError, match="runs on cpu, H100, not B200"):
        KernelEnv(served.client, "add", device="B200").reset()
    with pytest.raises(ValueError, match="has templates for pytorch, not triton"):
        KernelEnv(served.client, "add", language="triton").reset()


def test_a_leaderboard_without_templates_says_so(served: Served, tmp_path: Path) -> None:
    served.service.create_leaderboard(make_problem(tmp_path, "bare", templates={}), deadline=future(), devices=["cpu"])
    with pytest.raises(ValueError, match="bare has no template to start from"):
        KernelEnv(served.client, "bare").reset()


def test_step_rewards_the_speedup_of_an_accepted_kernel(served: Served) -> None:
    env = KernelEnv(served.client, "add", device="cpu")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(TEMPLATE)
    env.reset()
    record = env.step("# median 500\n" + TEMPLATE)
    assert isinstance(record, Reward) and record.accepted and record.verdict == "accepted"
    assert (record.correct_fraction, record.speedup, record.reward) == (1.0, 4.0, 4.0)
    assert record.score_ns == pytest.approx(500, rel=0.02) and record.submission_id is not None
    assert record.as_dict()["speedup"] == 4.0
    versioned = record.versioned  # the server's reward record, as its JSON Schema says
    assert versioned is not None and versioned["version"] == 2 and versioned["speedups"]["reference"] == 4.0
    schema = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / "reward.schema.json").read_text())
    jsonschema.validate(versioned, schema)
    assert served.client.submission(record.submission_id).result().status.mode == "benchmark"


def test_step_gives_partial_correctness_and_zero_reward_to_a_wrong_kernel(served: Served) -> None:
    env = KernelEnv(served.client, "add", device="cpu")
    env.reset()
    wrong = env.step("# wrong 3\n" + TEMPLATE)
    assert (wrong.verdict, wrong.correct_fraction, wrong.speedup, wrong.reward) == ("wrong_answer", 0.25, None, 0.0)
    broken = env.step("# compile error\n")
    assert (broken.verdict, broken.correct_fraction, broken.reward) == ("compile_error", 0.0, 0.0)
    assert broken.message == "it does not compile"


def test_a_refused_file_is_a_record_not_a_crash_and_reward_fn_is_the_callers(served: Served) -> None:
    env = KernelEnv(served.client, "add", device="cpu", mode="test",
                    reward_fn=lambda accepted, correct, speedup: correct - (0 if accepted else 1))  # fmt: skip
    env.reset()
    empty = env.step("")
    assert (empty.verdict, empty.reward, empty.submission_id) == ("refused", 0.0, None) and "empty" in empty.message
    assert empty.versioned is not None and empty.versioned["flags"] == ["refused"]
    tested = env.step("# median 800\n" + TEMPLATE)
    assert tested.accepted and tested.speedup is None and tested.reward == 1.0  # test mode: nothing timed
    assert env.step("# wrong 2\n" + TEMPLATE).reward == -0.5
    assert env.steps == 3
