"""/leaderboard submit in mode compare (issue 16): two attachments, one device; the public status shows the overall
A/B time ratio like a score, the author's report the per-case ratios; mistakes are explained privately."""

from __future__ import annotations

import pytest
from bot_fakes import accepted, launcher
from bot_steps import GOOD, STATUS_INTERVAL, raised, serve_queue, submit

from leaderboards.errors import UserError
from leaderboards.results import UserRef

pytestmark = pytest.mark.anyio

FASTER = b"def custom_kernel(data):  # faster\n    return [x + 1 for x in data[0]]\n"


def by_file(request):
    return accepted(request, 10_000.0 if b"# faster" in request.submission.content else 12_500.0)


async def test_a_compare_posts_its_ratio_and_reports_each_case(world) -> None:
    result = await submit(world, world.alice, file=("fast.py", FASTER), mode="compare", against=("kernel.py", GOOD),
                          rounds=2)  # fmt: skip
    assert result.response.content.startswith("Submission #1 received"), result.response.content
    header = result.followups[0].content.splitlines()[0]
    assert header == "**Submission #1** · `fast.py` → **addone** · compare · by alice · vs `kernel.py`, 2 rounds"
    await serve_queue(world, launcher(by_file))
    await world.env.advance_time(STATUS_INTERVAL)
    public = result.followups[0].content
    assert "✅ **cpu**: accepted" in public
    assert "A/B time ratio **0.8000** (95% interval 0.8000 to 0.8000) over 2 rounds" in public
    assert "faster by" not in public  # the words and the cases are its author's
    private = result.followups[1]
    assert private.ephemeral
    assert (
        "fast.py takes 0.8000x the time of kernel.py" in private.content
        and "fast.py is faster by 20.0%" in private.content
    )
    assert "A 10.0 µs · B 12.5 µs · A/B **0.8000** (0.8000 to 0.8000)" in private.content


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"mode": "compare"}, "A compare takes two files: choose mode compare and attach the second one"),
        ({"against": ("b.py", GOOD)}, "`against` is the second file of a compare: choose mode compare"),
        ({"mode": "compare", "against": ("b.py", GOOD), "device": "cpu, H100"}, "runs both files on one device"),
        ({"mode": "compare", "against": ("b.py", GOOD), "rounds": 3}, "even number of rounds from 2 to 20"),
    ],
)
async def test_compare_mistakes_are_explained_only_to_the_submitter(world, options, expected) -> None:
    result = await submit(world, world.alice, **options)
    assert result.ephemeral
    assert expected in result.response.content
    assert world.service.user_submissions(UserRef("alice", world.alice.id)) == ()
    assert all(isinstance(e, UserError) for e in raised(world))
