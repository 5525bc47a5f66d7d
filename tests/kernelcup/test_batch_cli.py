"""Batches and budgets from the Python client and the CLI (issue 33), against a kernelcup served in-process
(``served.py``: the fake launcher reads each file for its outcome)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from served import Served, served_kernelcup
from typer.testing import CliRunner

from kernelcup.cli import build_app
from kernelcup.client import ApiError
from leaderboards.results import UserRef

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "schemas" / "reward.schema.json").read_text())
FAST, SLOW, WRONG = (b"def custom_kernel(d):\n    return d\n# median 500\n", b"def custom_kernel(d):\n    return d\n"
                     b"# median 4000\n", b"def custom_kernel(d):\n    return d\n# wrong 2\n")  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_kernelcup(tmp_path_factory.mktemp("batch")) as s:
        yield s


def test_the_client_sends_a_batch_and_follows_each_candidate_to_its_reward(served: Served) -> None:
    batch = served.client.submit_batch(
        [("fast.py", FAST), ("slow.py", SLOW), ("wrong.py", WRONG), ("k.cu", b"__global__ void k() {}\n")],
        "add", "cpu", idempotency_key="client-batch-1",
    )  # fmt: skip
    assert batch.answer is not None and [i.status for i in batch.answer.items][3] == "refused"
    seen = {item.position: item for item in batch.events(timeout=60)}
    assert sorted(seen) == [0, 1, 2, 3]
    final = batch.wait(timeout=60)
    assert final.done
    rewards = [item.reward for item in final.items]
    assert all(r is not None for r in rewards)
    for r in rewards:
        jsonschema.validate(r.model_dump(mode="json"), SCHEMA)  # type: ignore[union-attr]
    fast, slow, wrong, refused = rewards
    assert fast.speedups["reference"] == pytest.approx(4.0) and slow.speedups["reference"] == pytest.approx(0.5)  # type: ignore[union-attr]
    assert wrong.verdict == "wrong_answer" and wrong.correct_fraction == pytest.approx(0.5)  # type: ignore[union-attr]
    assert refused.flags == ["refused"]  # type: ignore[union-attr]
    again = served.client.submit_batch(
        [("fast.py", FAST), ("slow.py", SLOW), ("wrong.py", WRONG), ("k.cu", b"__global__ void k() {}\n")],
        "add", "cpu", idempotency_key="client-batch-1",
    )  # fmt: skip
    assert again.id == batch.id  # the retry answered with the first batch
    reward = served.client.reward(final.items[0].submission_id)  # type: ignore[arg-type]
    assert reward.done and reward.rewards[0].reward == final.items[0].reward


def test_the_cli_submits_a_batch_and_prints_each_outcome(served: Served, tmp_path: Path) -> None:
    files = []
    for name, content in (("fast.py", FAST + b"# cli\n"), ("wrong.py", WRONG + b"# cli\n")):
        (tmp_path / name).write_bytes(content)
        files.append(str(tmp_path / name))
    env = {"KERNELCUP_SERVER": served.url, "KERNELCUP_TOKEN": served.token, "COLUMNS": "200"}
    r = CliRunner().invoke(build_app(), ["batch", "submit", *files, "-l", "add", "-d", "cpu", "--timeout", "60"],
                           env=env)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "[0] fast.py" in r.output and "accepted" in r.output and "4.00x over reference" in r.output
    assert "[1] wrong.py" in r.output and "wrong_answer" in r.output
    assert "2 candidates, 0 refused, 1 accepted; done" in r.output
    batch_id = int(r.output.split("batch #", 1)[1].split(":", 1)[0])
    shown = CliRunner().invoke(build_app(), ["batch", "show", str(batch_id), "--json"], env=env)
    assert shown.exit_code == 0 and json.loads(shown.output)["done"]
    bad = CliRunner().invoke(build_app(), ["batch", "submit", files[0], "-l", "add", "-d", "B200"], env=env)
    assert bad.exit_code == 1 and "B200" in bad.output


def test_admins_set_budgets_from_the_cli_and_a_spent_one_refuses(served: Served) -> None:
    admin = served.service.create_token(UserRef("boss"), scopes=["admin", "submit"]).token
    env = {"KERNELCUP_SERVER": served.url, "KERNELCUP_TOKEN": admin, "COLUMNS": "200"}
    r = CliRunner().invoke(build_app(), ["admin", "budget", "set", "0", "--user", "agent"], env=env)
    assert r.exit_code == 0, r.output
    assert "account local:agent: 0.0 of 0 GPU s spent" in r.output
    with pytest.raises(ApiError) as exc:
        served.client.submit(("k.py", FAST + b"# budget\n"), "add", "cpu", "test")
    assert exc.value.status == 429 and exc.value.code == "gpu_budget_exhausted" and "refills at" in exc.value.message
    listed = CliRunner().invoke(build_app(), ["admin", "budget", "list"], env=env)
    assert "account local:agent" in listed.output
    gone = CliRunner().invoke(build_app(), ["admin", "budget", "remove", "--user", "agent"], env=env)
    assert gone.exit_code == 0, gone.output
    assert served.client.my_budgets() == []
    served.client.submit(("k.py", FAST + b"# budget\n"), "add", "cpu", "test")


def test_the_client_replays_a_run_and_reads_the_report(served: Served) -> None:
    original = served.client.submit(("k.py", FAST + b"# replay\n"), "add", "cpu", "benchmark").wait(timeout=60)
    replay = served.client.replay(original.status.submission_id, idempotency_key="replay-client-1")
    assert replay.id != original.status.submission_id
    replay.wait(timeout=60)
    report = served.client.replay_report(replay.id)
    assert report.replay_of == original.status.submission_id and report.done and report.holds
    assert served.client.replay(original.status.submission_id, idempotency_key="replay-client-1").id == replay.id
