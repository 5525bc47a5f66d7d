"""The pages say one outcome in plain words (issue 31): a verdict as the runner words it ("wrong answer"), never its
snake_case value nor the job's "succeeded", and a benchmark's spread as its interquartile range."""

from __future__ import annotations

from web_world import World, csrf_of

from runners.contract import RunRequest, RunResult, Verdict
from runners.launchers.fake import FakeLauncher, accepted_result
from runners.stats import timing_stats


def wrong(request: RunRequest) -> RunResult:
    return RunResult(verdict=Verdict.WRONG_ANSWER, mode=request.mode, message="3 of 9 elements differ")


def timed(request: RunRequest) -> RunResult:
    """Accepted, each benchmark timed from ten samples (enough for a spread) from 100 to 190 µs."""
    result = accepted_result(request)
    stats = timing_stats([100_000.0 + 10_000 * i for i in range(10)])
    return result.model_copy(update={"benchmarks": [b.model_copy(update={"stats": stats}) for b in result.benchmarks]})


def page_of(w: World, token: str, path: str) -> str:
    """A page as the token's account sees it, signed in through /signin."""
    form = w.client.get("/signin")
    signed = w.client.post("/signin", data={"token": token, "csrf": csrf_of(form.text), "next": "/me"},
                           follow_redirects=False)  # fmt: skip
    assert signed.status_code == 303, signed.text
    page = w.client.get(path)
    assert page.status_code == 200, page.text
    return page.text


def test_a_wrong_answer_reads_as_words_on_the_submission_page_and_on_mine(world: World) -> None:
    w = world
    sid = w.submit(w.ann, mode="test").json()["submission_id"]
    w.serve(FakeLauncher(wrong))
    for text in (page_of(w, w.ann, f"/submissions/{sid}"), page_of(w, w.ann, "/me")):
        assert "wrong answer" in text and "wrong_answer" not in text and "succeeded" not in text


def test_a_benchmark_shows_its_interquartile_range(world: World) -> None:
    w = world
    sid = w.submit(w.ann, mode="benchmark").json()["submission_id"]
    w.serve(FakeLauncher(timed))
    page = page_of(w, w.ann, f"/submissions/{sid}")
    assert ">IQR</th>" in page and "± std" not in page
    assert "122–168 µs" in page  # the quartiles of 100, 110, …, 190 µs
