"""The web pages (docs/web.md) through the ASGI app: what each page shows, who may see it, sign-in and CSRF,
submitting, the admin page, caching and the security headers. The real browser's tests are test_browser.py."""

from __future__ import annotations

import json
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers import future, make_problem, profiled
from web_world import GOOD, World, csrf_of

from leaderboards.problem_rules import MAX_TEXT_CHARS
from leaderboards.queue import JobQueue
from leaderboards.results import UserRef
from runners.contract import RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result
from web.pages import render
from web.pages.chart import best_so_far, log_ticks, score_chart
from web.pages.session import Sessions

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def sign_in(world: World, token: str) -> None:
    page = world.client.get("/signin")
    r = world.client.post(
        "/signin", data={"token": token, "csrf": csrf_of(page.text), "next": "/me"}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"] == "/me", r.text


def ranked(world: World, token: str, median: float, name: str = "k.py") -> int:
    r = world.submit(token, name=name, mode="ranked", content=GOOD + f"# {median}\n".encode())
    assert r.status_code == 202, r.text
    world.serve(FakeLauncher(lambda req: accepted_result(req, median)))
    return int(r.json()["submission_id"])


def test_home_and_leaderboard_pages_show_the_ranking(world: World) -> None:
    ranked(world, world.ann, 2000.0)
    ranked(world, world.bob, 500.0)
    c = world.client
    home = c.get("/")
    assert home.status_code == 200 and "text/html" in home.headers["content-type"]
    assert 'href="/leaderboards/add"' in home.text and "bob" in home.text
    page = c.get("/leaderboards/add", params={"device": "cpu"})
    assert page.status_code == 200
    rows = re.findall(r"<tr>\s*<td class=\"num\">(\d+)</td>\s*<td>(\w+)", page.text)
    api = c.get("/api/v1/leaderboards/add/rankings", params={"device": "cpu"}).json()
    assert rows == [(str(e["rank"]), e["user_name"]) for e in api["entries"]] == [("1", "bob"), ("2", "ann")]
    assert "<svg" in page.text and 'class="line"' in page.text  # the chart
    assert 'aria-current="page">cpu<' in page.text and "?device=H100" in page.text  # a tab per device
    assert "/leaderboards/add/templates/pytorch" in page.text
    t = c.get("/leaderboards/add/templates/pytorch")
    assert t.status_code == 200 and "attachment" in t.headers["content-disposition"]
    assert c.get("/leaderboards/nope").status_code == 404


def test_the_home_page_renders_a_summary_s_markdown_and_tests_count_from_one(world: World) -> None:
    """A newcomer's walk: the home page showed a summary's backticks as they are, and the submission page numbered
    tests and benchmarks from 0 where the CLI numbers them from 1."""
    world.service.update_leaderboard("add", description="Add `x` and **y** <b>z</b>.\nMore.", actor="test")
    home = world.client.get("/").text
    summary = '<div class="summary">Add <code>x</code> and <strong>y</strong> &lt;b&gt;z&lt;/b&gt;.</div>'
    assert summary in home and "More." not in home
    sign_in(world, world.ann)
    sid = ranked(world, world.ann, 900.0)
    page = world.client.get(f"/submissions/{sid}").text
    numbers = re.findall(r'<tr>\s*<td class="num">(\d+)</td><td><code>', page)
    assert numbers == ["1", "1", "2"]  # the one test, then the two benchmarks


def test_markdown_is_rendered_without_raw_html_and_names_are_text(world: World) -> None:
    world.service.update_leaderboard(
        "add", description="**Bold** <script>alert(1)</script> [x](javascript:alert(1))", actor="test"
    )
    for name in ("<script>x</script>", "[bold]"):
        ranked(world, world.service.create_token(UserRef(name)).token, 1000.0)
    page = world.client.get("/leaderboards/add", params={"device": "cpu"}).text
    assert "<td>&lt;script&gt;x&lt;/script&gt;</td>" in page and "<td>[bold]</td>" in page
    assert "<script>x" not in page and "<strong>Bold</strong>" in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'href="javascript:' not in page


def test_a_description_is_rendered_once_and_one_over_the_cap_shows_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """markdown-it took 10.7 s for 240 KB of '![' on every view of the page: a description is at most
    ``MAX_TEXT_CHARS`` (one at the cap takes about 0.16 s), rendered once per process; one stored before the cap
    shows as escaped text."""
    calls: list[str] = []
    real = render._markdown.render
    monkeypatch.setattr(render._markdown, "render", lambda text: calls.append(text) or real(text))
    at_cap = "![" * (MAX_TEXT_CHARS // 2 - 2) + "*a*"
    assert len(at_cap) <= MAX_TEXT_CHARS
    first = render.markdown(at_cap)
    assert render.markdown(at_cap) == first and "<em>a</em>" in first and calls == [at_cap]
    over = "![<b>" * (MAX_TEXT_CHARS // 5 + 1)
    assert render.markdown(over) == f"<pre>{'![&lt;b&gt;' * (MAX_TEXT_CHARS // 5 + 1)}</pre>" and len(calls) == 1


def test_public_pages_have_etag_and_security_headers(world: World) -> None:
    c = world.client
    r = c.get("/leaderboards/add")
    assert r.headers["etag"] and "max-age" in r.headers["cache-control"]
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"]
    again = c.get("/leaderboards/add", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert "content-security-policy" not in c.get("/api/v1/leaderboards").headers  # the API's docs load a CDN
    css = c.get("/static/style.css")
    assert css.status_code == 200 and "prefers-color-scheme" in css.text


def test_sign_in_needs_csrf_and_a_valid_token(world: World) -> None:
    c = world.client
    page = c.get("/signin")
    assert "httponly" in page.headers["set-cookie"].lower() and "samesite=lax" in page.headers["set-cookie"].lower()
    r = c.post("/signin", data={"token": world.ann, "csrf": "forged"})
    assert r.status_code == 403 and "security token" in r.text
    r = c.post("/signin", data={"token": "kc_wrong", "csrf": csrf_of(page.text)})
    assert r.status_code == 401 and "Traceback" not in r.text
    r = c.post("/signin", data={"token": world.ann, "csrf": csrf_of(page.text)}, headers={"Origin": "https://evil"})
    assert r.status_code == 403
    sign_in(world, world.ann)
    me = c.get("/me")
    assert me.status_code == 200 and "ann" in me.text and "no-store" in me.headers["cache-control"]
    assert world.ann not in me.text  # the token never reaches a page
    r = c.post("/signout", data={"csrf": "nope"})
    assert r.status_code == 403
    r = c.post("/signout", data={"csrf": csrf_of(me.text)}, follow_redirects=False)
    assert r.status_code == 303
    assert c.get("/me", follow_redirects=False).status_code == 303  # signed out: to the sign-in page


def test_a_forged_or_tampered_cookie_is_nobody() -> None:
    sessions = Sessions(b"x" * 32, 3600)
    cookie = sessions.encode(sessions.new("server-session-id"))
    decoded = sessions.decode(cookie)
    assert decoded is not None and decoded.sid == "server-session-id" and decoded.signed_in
    payload, _, sig = cookie.rpartition(".")
    assert sessions.decode(payload + "." + sig[:-2] + "AA") is None
    assert Sessions(b"y" * 32, 3600).decode(cookie) is None
    assert Sessions(b"x" * 32, -1).decode(cookie) is None  # expired
    assert "x" * 32 not in repr(sessions)


def test_submit_from_the_page_and_follow_it(world: World) -> None:
    sign_in(world, world.ann)
    c = world.client
    form = c.get("/submit")
    assert form.status_code == 200 and 'name="leaderboard"' in form.text
    data = {"leaderboard": "add", "devices": "cpu", "mode": "test", "csrf": csrf_of(form.text)}
    r = c.post("/submit", data=data, files={"file": ("k.py", GOOD)}, follow_redirects=False)
    assert r.status_code == 303, r.text
    url = r.headers["location"]
    running = c.get(url)
    assert running.status_code == 200 and 'data-events="' in running.text and "progress.js" in running.text
    world.serve()
    done = c.get(url)
    assert "accepted" in done.text and "custom_kernel" in done.text and 'class="k"' in done.text  # highlighted
    sub_id = url.rsplit("/", 1)[1]
    events = c.get(f"/submissions/{sub_id}/events")
    assert "event: done" in events.text
    # pasted code, and a bad file that shows its error on the page
    r = c.post("/submit", data={**data, "code": GOOD.decode(), "file_name": "pasted.py"}, follow_redirects=False)
    assert r.status_code == 303
    bad = c.post("/submit", data=data, files={"file": ("notes.txt", b"hello")})
    assert bad.status_code == 422 and 'role="alert"' in bad.text and "Traceback" not in bad.text
    empty = c.post("/submit", data=data)
    assert empty.status_code == 422 and "paste your code" in empty.text
    no_csrf = c.post("/submit", data={**data, "csrf": ""}, files={"file": ("k.py", GOOD)})
    assert no_csrf.status_code == 403


def test_the_same_file_again_says_so_and_run_it_again_runs_it(world: World) -> None:
    """A newcomer's walk: the same file sent again from the page landed on the earlier submission without a word;
    now the page says so, and "Run it again" (force) queues a new one."""
    world.service.settings = world.service.settings.model_copy(update={"duplicate_window_s": 600})
    sign_in(world, world.ann)
    c = world.client
    form = c.get("/submit")
    assert 'name="force"' in form.text
    data = {"leaderboard": "add", "devices": "cpu", "mode": "test", "csrf": csrf_of(form.text)}
    first = c.post("/submit", data=data, files={"file": ("k.py", GOOD)}, follow_redirects=False).headers["location"]
    again = c.post("/submit", data=data, files={"file": ("k.py", GOOD)}, follow_redirects=False).headers["location"]
    assert again == f"{first}?duplicate=1"
    assert "You sent this same file a moment ago" in c.get(again).text
    assert "You sent this same file" not in c.get(first).text
    forced = c.post("/submit", data={**data, "force": "true"}, files={"file": ("k.py", GOOD)}, follow_redirects=False)
    assert "duplicate" not in forced.headers["location"] and forced.headers["location"] != first


def test_compare_from_the_page_shows_the_ratio_per_case(world: World) -> None:
    """Issue 16: mode compare on /submit (a second file, the rounds), and the comparison on the submission page."""
    sign_in(world, world.ann)
    c = world.client
    form = c.get("/submit")
    assert 'value="compare"' in form.text and 'name="against"' in form.text and 'name="rounds"' in form.text
    fast = b"def custom_kernel(data):  # fast\n    return data\n"
    data = {"leaderboard": "add", "devices": "cpu", "mode": "compare", "rounds": "2", "csrf": csrf_of(form.text)}
    files = {"file": ("fast.py", fast), "against": ("k.py", GOOD)}
    r = c.post("/submit", data=data, files=files, follow_redirects=False)
    assert r.status_code == 303, r.text
    url = r.headers["location"]
    running = c.get(url)
    assert 'fast.py</span> vs <span class="file">k.py' in running.text and "Running: one benchmark run" in running.text

    def by_file(request: RunRequest) -> RunResult:
        return accepted_result(request, 500.0 if b"# fast" in request.submission.content else 1000.0)

    world.serve(FakeLauncher(by_file, remote_refs=False))
    done = c.get(url).text
    assert 'id="comparison-cases"' in done and 'Overall A/B time ratio <strong class="num">0.5000</strong>' in done
    assert "fast.py is faster by 50.0%" in done
    # both files' code, each under its letter (the second file is the compare's own, not only a name)
    assert 'id="code-title">Code: A = fast.py<' in done and 'id="code-b-title">Code: B = k.py<' in done
    assert done.count('<pre class="code">') == 2
    one_file = c.post("/submit", data=data, files={"file": ("fast.py", fast)})
    assert one_file.status_code == 422 and "needs a second file" in one_file.text
    two_devices = c.post("/submit", data={**data, "devices": ["cpu", "H100"]}, files=files)
    assert two_devices.status_code == 422 and "one device" in two_devices.text
    # The form's default rounds are the device's: 6 on the CPU (the select's first, empty choice).
    assert '<option value="" selected>Default (at most 14 on a GPU, 6 on the CPU' in form.text
    r = c.post("/submit", data={**data, "rounds": ""}, files=files, follow_redirects=False)
    assert r.status_code == 303, r.text
    sid = int(r.headers["location"].rsplit("/", 1)[1])
    status = world.service.submission_status(sid)
    assert status.comparison is not None and status.comparison.rounds == 6


def test_someone_elses_submission_page_is_a_404(world: World) -> None:
    sub_id = ranked(world, world.bob, 700.0)
    signed_out = world.client.get(f"/submissions/{sub_id}")
    assert signed_out.status_code == 404
    # it may be theirs: the page says how to sign in and come back (a newcomer's walk: it only said "none of yours")
    assert f'<a href="/signin?next=%2Fsubmissions%2F{sub_id}">sign in</a>' in signed_out.text
    sign_in(world, world.ann)
    theirs = world.client.get(f"/submissions/{sub_id}")
    assert theirs.status_code == 404 and "sign in</a> to see" not in theirs.text
    assert world.client.get(f"/submissions/{sub_id}/events").status_code == 404
    sign_in(world, world.admin)
    assert world.client.get(f"/submissions/{sub_id}").status_code == 200


def test_public_code_after_the_deadline(world: World) -> None:
    sub_id = ranked(world, world.bob, 700.0)
    world.service.update_leaderboard(
        "add",
        deadline=datetime.now(UTC) - timedelta(minutes=1),
        code_public_after_deadline=True,
        force=True,  # ending a live board early is a change that needs force
        actor="test",
    )
    page = world.client.get("/leaderboards/add", params={"device": "cpu"}).text
    assert f'href="/submissions/{sub_id}"' in page
    code = world.client.get(f"/submissions/{sub_id}")
    assert code.status_code == 200 and "custom_kernel" in code.text and "public after the deadline" in code.text


def test_my_submissions_newest_first_and_filtered(world: World) -> None:
    first = ranked(world, world.ann, 900.0)
    second = ranked(world, world.ann, 800.0)
    sign_in(world, world.ann)
    page = world.client.get("/me").text
    assert page.index(f">{second}<") < page.index(f">{first}<")
    assert world.client.get("/me", params={"leaderboard": "add"}).status_code == 200
    assert world.client.get("/me", params={"leaderboard": "nope"}).status_code == 404


def test_admin_page_actions(world: World) -> None:
    c = world.client
    sign_in(world, world.ann)
    assert c.get("/admin").status_code == 403
    sub_id = ranked(world, world.bob, 700.0)
    sign_in(world, world.admin)
    page = c.get("/admin")
    assert page.status_code == 200 and "Queue" in page.text
    token = csrf_of(page.text)
    r = c.post("/admin", data={"action": "pause", "leaderboard": "add", "csrf": token})
    assert r.status_code == 200 and "add is paused" in r.text and world.service.leaderboard("add").paused
    r = c.post("/admin", data={"action": "resume", "leaderboard": "add", "csrf": token})
    assert not world.service.leaderboard("add").paused
    r = c.post("/admin", data={"action": "ban", "user": "bob", "reason": "spam", "csrf": token})
    assert "bob is banned" in r.text
    r = c.post("/admin", data={"action": "unban", "user": "bob", "csrf": token})
    assert "no longer banned" in r.text
    r = c.post("/admin", data={"action": "delete", "submission_id": str(sub_id), "csrf": token})
    assert f"Submission {sub_id} is deleted" in r.text
    r = c.post("/admin", data={"action": "ban", "user": "bob", "csrf": "forged"})
    assert r.status_code == 403
    r = c.post("/admin", data={"action": "pause", "leaderboard": "nope", "csrf": token})
    assert r.status_code == 422 and "nope" in r.text


def test_chart_is_logarithmic_and_sane_for_one_point() -> None:
    now = datetime(2026, 1, 10, tzinfo=UTC)
    one = score_chart([(now - timedelta(days=1), 1000.0)], now)
    assert one is not None and one.path.count("L") == 1  # a dot and the line on to now
    assert all(label != "0 ns" for _, label in one.y_ticks)
    points = [
        (now - timedelta(days=5), 30_000.0),
        (now - timedelta(days=3), 3_000.0),
        (now - timedelta(days=1), 1_000.0),
    ]
    chart = score_chart(points, now)
    assert chart is not None
    ys = [y for _, y, _ in chart.dots]
    # log scale: 30 µs → 3 µs (10×) spans more than 3 µs → 1 µs (3×), in the ratio of the logarithms
    assert abs((ys[1] - ys[0]) / (ys[2] - ys[1]) - 1 / 0.4771) < 0.05
    assert best_so_far([(now, 5.0), (now + timedelta(1), 7.0)]) == [(now, 5.0)]
    assert score_chart([], now) is None
    assert log_ticks(100, 10_000) == [100, 1000, 10_000]
    assert log_ticks(600, 900) == [600, 900]  # no 1-2-5 value inside: the two ends


def test_the_roofline_score_is_the_ranking_rule_over_the_bounds() -> None:
    from leaderboards.scoring import roofline_score
    from runners.contract import RankingRule

    bounds = [1000.0, 4000.0]  # the runner's roofline bounds of two cases, ns
    assert roofline_score(bounds, RankingRule.GEOMEAN) == pytest.approx(2000.0)  # geomean of 1000 and 4000 ns
    assert roofline_score(bounds, RankingRule.MEAN) == pytest.approx(2500.0)
    assert roofline_score(bounds, RankingRule.LAST) == pytest.approx(4000.0)
    assert roofline_score([1000.0, None], RankingRule.GEOMEAN) is None  # one case has no bound: no share
    assert roofline_score([], RankingRule.GEOMEAN) is None


def test_the_leaderboard_page_shows_an_admin_change_at_once(world: World) -> None:
    c = world.client
    assert "paused" not in c.get("/leaderboards/add").text.split("<h1>")[1].split("</h1>")[0]
    r = c.post("/api/v1/admin/leaderboards/add/pause", headers=world.auth(world.admin))
    assert r.status_code == 200
    assert '<span class="badge">paused</span>' in c.get("/leaderboards/add").text
    c.post("/api/v1/admin/leaderboards/add/resume", headers=world.auth(world.admin))
    ranked(world, world.ann, 900.0)  # the ranking's size changes: the page's chart follows
    page = c.get("/leaderboards/add", params={"device": "cpu"}).text
    assert "ann" in page and 'class="line"' in page
    c.patch("/api/v1/admin/leaderboards/add", headers=world.auth(world.admin), json={"description": "New words"})
    assert "New words" in c.get("/leaderboards/add").text


def test_a_bug_on_a_page_is_an_error_page_without_internals(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals at /srv/kernelcup")

    monkeypatch.setattr(world.service, "list_leaderboards", broken)
    r = world.client.get("/")
    assert r.status_code == 500 and r.headers["content-type"].startswith("text/html")
    assert "not your fault" in r.text and "secret internals" not in r.text and "Traceback" not in r.text


def test_the_session_secret_is_generated_once_and_kept_private(tmp_path: Path) -> None:
    from web.pages.session import SECRET_FILE, load_secret

    made = load_secret(None, tmp_path / "data")
    path = tmp_path / "data" / SECRET_FILE
    assert len(made) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_secret(None, tmp_path / "data") == made  # reused, so sessions survive a restart
    assert load_secret("configured-secret-of-enough-length", tmp_path / "data") == b"configured-secret-of-enough-length"
    lazy = Sessions(lambda: load_secret(None, tmp_path / "elsewhere"), 60)
    assert not (tmp_path / "elsewhere").exists()  # nothing is written until a session is signed
    lazy.encode(lazy.new())
    assert (tmp_path / "elsewhere" / SECRET_FILE).exists()


def test_the_ranking_and_the_submission_page_show_the_roofline_share_on_a_known_device(world: World) -> None:
    from runners.devices import peaks_for
    from runners.entry.verdict import fill_roofline, peaks_used

    def on_an_h100(request):  # type: ignore[no-untyped-def]
        result = accepted_result(request, 10_000.0)  # 10 µs per benchmark
        benches = [b.model_copy(update={"bytes_moved": 3_350_000}) for b in result.benchmarks]  # 1 µs at 3.35 TB/s
        peaks = peaks_for("NVIDIA H100 80GB HBM3")
        share = fill_roofline(benches, peaks, request.dtype)  # what the runner computes there
        return result.model_copy(update={"benchmarks": benches, "roofline_share": share,
                                         "roofline": peaks_used(peaks, request.dtype)})  # fmt: skip

    r = world.submit(world.ann, mode="ranked", devices="H100")
    assert r.status_code == 202, r.text
    world.serve(FakeLauncher(on_an_h100))
    assert world.service.roofline_score_ns("add", "H100") == pytest.approx(1000.0)
    page = world.client.get("/leaderboards/add", params={"device": "H100"}).text
    row = re.search(r"<td>ann</td>\s*<td class=\"num\">([^<]+)</td>\s*<td class=\"num\">([^<]+)</td>", page)
    assert row and row.groups() == ("10.0 µs", "10%"), row and row.groups()
    assert "Roofline peak: <code>fp32</code> (the compute peak its flops are bounded by" in page
    assert "Timed runs report a speedup over: reference" in page
    assert "Language: Python (PyTorch, Triton, inline CUDA): .py files" in page
    assert world.service.roofline_score_ns("add", "cpu") is None  # nobody ranked there
    sign_in(world, world.ann)
    sub = world.client.get(f"/submissions/{r.json()['submission_id']}").text
    assert '10% <span class="muted">memory</span>' in sub
    assert "10% of roofline overall (H100 datasheet peaks: 3.35 TB/s, 67 TFLOP/s fp32)" in sub


def test_a_profile_run_shows_its_kernels_and_links_its_report(world: World) -> None:
    sub_id = int(world.submit(world.ann, mode="profile").json()["submission_id"])
    world.serve(FakeLauncher(profiled))
    sign_in(world, world.ann)
    page = world.client.get(f"/submissions/{sub_id}").text
    assert "<caption>Nsight Compute, per kernel launch</caption>" in page
    assert '<td title="add_kernel"><code>add_kernel</code></td><td class="num">5.18 µs</td>' in page
    assert "long_scoreboard 41.7, wait 3.12, short_scoreboard 0.21" in page
    assert "cute::tuple&lt;int, int, int, int&gt;" in page  # the full name, escaped, in the cell's title
    link = f'href="/submissions/{sub_id}/profile/cpu.ncu-rep"'
    assert link in page and "(18 B; open it in Nsight Compute)" in page
    got = world.client.get(f"/submissions/{sub_id}/profile/cpu.ncu-rep")
    assert got.status_code == 200 and got.content == b"NVRP\x00 report bytes"
    sign_in(world, world.bob)
    assert world.client.get(f"/submissions/{sub_id}/profile/cpu.ncu-rep").status_code == 404


def test_live_progress_resumes_after_the_events_the_page_shows(world: World) -> None:
    """The page lists the progress so far and its event stream starts after it (it had started from the beginning,
    and every event showed twice)."""
    sign_in(world, world.ann)
    sid = world.submit(world.ann).json()["submission_id"]
    page = world.client.get(f"/submissions/{sid}").text
    shown = re.findall(r"<li>cpu: (\w+)", page)
    assert shown == ["queued"]
    stream_url = re.search(r'data-events="([^"]+)"', page)
    assert stream_url is not None
    world.serve()
    with world.client.stream("GET", stream_url.group(1).replace("&amp;", "&")) as r:
        text = "".join(r.iter_text())
    streamed = [json.loads(b.split("data: ", 1)[1])["phase"] for b in text.split("\n\n") if "event: progress" in b]
    assert streamed == ["started", "testing", "done"]  # everything after the page's "queued", once


def test_the_home_page_is_a_table_of_problems_with_leaders_and_my_best(world: World) -> None:
    """Issue 31: the front page was a column of "No ranked entry yet." per board and device. Now: a row per problem
    with each device's leader and count and the viewer's own best; the problems nobody is ranked on are one line each
    in a folded section, and a filter box (its script shows it) finds any of them."""
    world.service.create_leaderboard(
        make_problem(world.problems, "scan", description="Prefix sums."), deadline=future(), devices=["H100"]
    )
    ranked(world, world.ann, 2000.0)
    ranked(world, world.bob, 500.0)
    home = world.client.get("/").text
    table = home.split('id="open-ranked"', 1)[1].split("</table>", 1)[0]
    assert 'href="/leaderboards/add"' in table and 'href="/leaderboards/scan"' not in table
    assert re.search(r'<span class="device">cpu</span> <span class="user">bob</span> <span class="num">500 ns</span>'
                     r' <span class="meta">2 entries</span>', table), table  # fmt: skip
    assert "nobody ranked on H100" in table and "Your best" not in table  # signed out: no column of theirs
    folded = home.split('id="open-unranked"', 1)[1].split("</details>", 1)[0]
    assert folded.startswith(">") and "nobody ranked yet (1)" in folded  # folded (no `open`), with its count
    assert 'href="/leaderboards/scan"' in folded and "Prefix sums." in folded and "No ranked entry" not in home
    assert 'data-filter="scan h100 prefix sums."' in folded and 'id="filter-box" class="filter" hidden' in home
    assert '<script src="/static/home.js" defer></script>' in home
    sign_in(world, world.ann)
    mine = world.client.get("/").text.split('data-label="Your best"', 1)[1].split("</td>", 1)[0]
    assert '<span class="device">cpu</span> #2 <span class="num">2.00 µs</span>' in mine


def test_the_home_page_shows_the_problems_open_when_nobody_is_ranked_anywhere(world: World) -> None:
    home = world.client.get("/").text
    assert 'id="open-ranked"' not in home
    assert '<details class="problems-section" id="open-unranked" open>' in home


def test_a_closed_problem_is_folded_away_with_its_leaders(world: World) -> None:
    ranked(world, world.bob, 500.0)
    ended = datetime.now(UTC) - timedelta(minutes=1)
    world.service.update_leaderboard("add", deadline=ended, force=True, actor="test")
    home = world.client.get("/").text
    assert 'id="open-ranked"' not in home and 'id="open-unranked"' not in home
    closed = home.split('<details class="problems-section" id="closed">', 1)[1].split("</details>", 1)[0]
    assert "Closed (1)" in closed and 'href="/leaderboards/add"' in closed and ended.strftime("%Y-%m-%d") in closed
    assert '<span class="user">bob</span>' in closed


def test_the_submit_form_is_for_one_leaderboard_in_test_mode_with_its_template(world: World) -> None:
    """Issue 31: the form offered every device of every board, started in ranked mode with an empty box. Now: the
    chosen board's devices, test mode, the template in the code box (a CodeMirror editor where scripts run, the plain
    textarea where they do not), and the template of another language on a link."""
    templates = {"pytorch": "# torch template\n", "triton": "# triton template\n"}
    problem = make_problem(world.problems, "scan", templates=templates)
    world.service.create_leaderboard(problem, deadline=future(), devices=["B200"])
    JobQueue(world.service.db).register_worker("w1", [])  # serves every device: all are offered
    sign_in(world, world.ann)
    form = world.client.get("/submit", params={"leaderboard": "scan"}).text
    assert re.findall(r'name="devices" value="(\w+)"', form) == ["B200"]  # not add's cpu and H100
    assert '<input type="hidden" name="leaderboard" value="scan">' in form
    assert re.search(r'name="mode" value="test" checked', form) and not re.search(r'value="ranked" checked', form)
    code = re.search(r'<textarea id="code" name="code"[^>]*>([^<]*)</textarea>', form)
    assert code is not None and code.group(1).endswith("# torch template\n"), form
    assert 'id="file_name" name="file_name" value="' in form
    assert "/static/vendor/codemirror/codemirror.min.js" in form and "/static/editor.js" in form
    triton = world.client.get("/submit", params={"leaderboard": "scan", "language": "triton"}).text
    assert "# triton template" in triton and "# torch template" not in triton
    first = world.client.get("/submit").text  # no choice: the first open board, its first device ticked
    assert re.findall(r'name="devices" value="(\w+)"( checked)?', first) == [("cpu", " checked"), ("H100", "")]
    # what the form sends as it stands (the template, test mode, the ticked device) is a submission
    data = {"leaderboard": "scan", "devices": "B200", "mode": "test", "csrf": csrf_of(form), "code": "x = 1\n"}
    r = world.client.post("/submit", data={**data, "file_name": "pytorch.py"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    bad = world.client.post("/submit", data={**data, "devices": "cpu"})  # a device of another board
    assert bad.status_code == 422 and re.findall(r'name="devices" value="(\w+)"', bad.text) == ["B200"]
    assert "x = 1\n</textarea>" in bad.text  # the code sent stays in the box


def test_the_submit_form_offers_only_devices_a_live_healthy_worker_serves(world: World) -> None:
    """Issue 31: a device nobody serves is not offered (a run there would only wait); /readyz says the same."""
    sign_in(world, world.ann)
    queue = JobQueue(world.service.db)

    def devices() -> tuple[list[str], str, bool]:
        form = world.client.get("/submit", params={"leaderboard": "add"}).text
        note = re.search(r'<p class="hint" id="unserved">([^<]*)</p>', form)
        return (
            re.findall(r'name="devices" value="(\w+)"', form),
            note.group(1) if note else "",
            "disabled>Submit" in form,
        )

    assert devices() == ([], "No worker serves cpu, H100 right now, so nothing can run here: try again later.", True)
    queue.register_worker("gpu-box", ["h100"])
    assert devices() == (["H100"], "Not offered: no worker serves cpu right now.", False)
    ready = world.client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["devices_without_worker"] == ["cpu"]
    assert ready.json()["workers_per_device"] == {"cpu": 0, "H100": 1}
    queue.set_worker_health("gpu-box", False, "runner self-check failed")  # alive, but it claims nothing
    assert devices()[0] == [] and world.client.get("/readyz").json()["unhealthy_workers"] == 1
    queue.register_worker("cpu-box", ["cpu"])
    queue.set_worker_health("gpu-box", True)
    assert devices() == (["cpu", "H100"], "", False)
    assert world.client.get("/readyz").status_code == 200


@pytest.mark.parametrize("path", ["/nope", "/admin", f"/submissions/{10**6}"])
def test_error_pages_keep_the_signed_in_navigation(world: World, path: str) -> None:
    sign_in(world, world.ann)
    page = world.client.get(path)
    assert page.status_code in (403, 404) and page.headers["content-type"].startswith("text/html")
    assert '<span class="user">ann</span>' in page.text and 'href="/me"' in page.text and "Sign out" in page.text


def test_a_bug_on_a_page_keeps_the_signed_in_navigation(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    sign_in(world, world.ann)

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(world.service, "list_leaderboards", broken)
    r = world.client.get("/")
    assert r.status_code == 500 and "not your fault" in r.text and "secret internals" not in r.text
    assert '<span class="user">ann</span>' in r.text and "Sign out" in r.text
