"""The archive's pages (issue 34): ``/archive`` lists the published kernels only, filters by problem and device and
sorts fastest first; an entry's page shows its highlighted code, licence, author and the public run's cases; an
unpublished one is a 404 page."""

from __future__ import annotations

from web_world import GOOD, World, csrf_of

from runners.contract import RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result

SLOW = GOOD + b"# the slow one\n"


def respond(request: RunRequest) -> RunResult:
    return accepted_result(request, 3000.0 if request.submission.content == SLOW else 1000.0)


def test_browse_sort_and_read_a_published_kernel(world: World) -> None:
    w, c = world, world.client
    assert "Nothing published" in c.get("/archive").text
    assert 'href="/archive"' in c.get("/").text  # the site's navigation leads there
    policy = c.put("/api/v1/admin/leaderboards/add/archive-policy", headers=w.auth(w.admin), json={"at_once": True})
    assert policy.status_code == 200
    slow = w.submit(w.ann, mode="benchmark", license="MIT", content=SLOW).json()["submission_id"]
    fast = w.submit(w.bob, mode="benchmark", license="CC0-1.0").json()["submission_id"]
    hidden = w.submit(w.bob, mode="benchmark", content=GOOD + b"# unpublished-marker\n").json()["submission_id"]
    w.serve(FakeLauncher(respond))
    page = c.get("/archive").text
    assert page.index(f'href="/archive/{fast}/cpu"') < page.index(f'href="/archive/{slow}/cpu"')  # newest first
    speed = c.get("/archive", params={"sort": "speed"}).text
    assert speed.index(f'href="/archive/{fast}/cpu"') < speed.index(f'href="/archive/{slow}/cpu"')
    assert "2 published" in page and f"/archive/{hidden}/" not in page
    assert '<option value="add"' in page and '<option value="cpu"' in page
    assert "Nothing published for this choice" in c.get("/archive", params={"device": "H100"}).text
    assert "2 published" in c.get("/archive", params={"problem": "add", "device": "cpu"}).text
    entry = c.get(f"/archive/{slow}/cpu")
    assert entry.status_code == 200
    assert "MIT" in entry.text and "by ann" in entry.text and "size=100" in entry.text and "seed" not in entry.text
    assert '<span class="k">def</span><span class="w"> </span><span class="nf">custom_kernel</span>' in entry.text
    assert "the slow one" in entry.text
    missing = c.get(f"/archive/{hidden}/cpu")
    assert missing.status_code == 404 and "unpublished-marker" not in missing.text
    assert c.get("/archive", params={"sort": "slowest"}).status_code == 422


def test_the_submit_form_takes_a_licence(world: World) -> None:
    w, c = world, world.client
    page = c.get("/signin")
    c.post("/signin", data={"token": w.ann, "csrf": csrf_of(page.text), "next": "/me"}, follow_redirects=False)
    form = c.get("/submit")
    assert '<select id="license" name="license">' in form.text and '<option value="CC-BY-4.0">' in form.text
    data = {"leaderboard": "add", "devices": "cpu", "mode": "test", "csrf": csrf_of(form.text)}
    wrong = c.post("/submit", data={**data, "license": "GPL-3.0"}, files={"file": ("k.py", GOOD)})
    assert wrong.status_code == 422 and "Unknown license" in wrong.text
    sent = c.post("/submit", data={**data, "license": "CC-BY-4.0"}, files={"file": ("k.py", GOOD)},
                  follow_redirects=False)  # fmt: skip
    assert sent.status_code == 303
    sid = int(sent.headers["location"].rsplit("/", 1)[-1])
    assert c.get(f"/api/v1/submissions/{sid}/license", headers=w.auth(w.ann)).json()["licence"] == "CC-BY-4.0"


def test_the_author_chooses_a_licence_and_withdraws_a_published_kernel_from_its_page(world: World) -> None:
    """Issue 34: the web's own way to change a licence until publication and to withdraw a published kernel."""
    w, c = world, world.client
    assert c.put("/api/v1/admin/leaderboards/add/archive-policy", headers=w.auth(w.admin),
                 json={"at_once": True}).status_code == 200  # fmt: skip
    sid = w.submit(w.ann, mode="benchmark").json()["submission_id"]
    w.serve(FakeLauncher(respond))
    page = c.get("/signin")
    c.post("/signin", data={"token": w.ann, "csrf": csrf_of(page.text), "next": "/me"})
    page = c.get(f"/submissions/{sid}")
    assert "The open archive" in page.text and "never published" in page.text
    forged = c.post(f"/submissions/{sid}/license", data={"csrf": "forged", "license": "MIT"}, follow_redirects=False)
    assert forged.status_code == 403
    saved = c.post(f"/submissions/{sid}/license", data={"csrf": csrf_of(page.text), "license": "MIT"},
                   follow_redirects=False)  # fmt: skip
    assert saved.status_code == 303 and saved.headers["location"].endswith("?licence=saved#archive-title")
    page = c.get(f"/submissions/{sid}?licence=saved")
    assert "Licence saved." in page.text and "<strong>MIT</strong>, published" in page.text
    assert c.get(f"/archive/{sid}/cpu").status_code == 200
    gone = c.post(f"/submissions/{sid}/license", data={"csrf": csrf_of(page.text), "action": "withdraw"},
                  follow_redirects=False)  # fmt: skip
    assert gone.status_code == 303 and c.get(f"/archive/{sid}/cpu").status_code == 404
    assert "withdrawn" in c.get(f"/submissions/{sid}").text
    # Someone else's submission: the page shows them no licence form, and a post is refused.
    other = w.submit(w.bob, mode="benchmark").json()["submission_id"]
    page = c.get(f"/submissions/{sid}")
    refused = c.post(f"/submissions/{other}/license", data={"csrf": csrf_of(page.text), "license": "MIT"})
    assert refused.status_code == 404
