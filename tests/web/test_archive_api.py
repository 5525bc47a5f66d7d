"""The archive's API (issue 34): a licence given with the upload, changed and withdrawn by its author only, the account
default, the admin's publication policy, and ``GET /api/v1/archive``'s filters, pages and bounds."""

from __future__ import annotations

import pytest
from test_pages import sign_in
from web_world import GOOD, World, error_of

from runners.contract import RunRequest, RunResult
from runners.launchers.fake import FakeLauncher, accepted_result


def publish_at_once(w: World) -> None:
    r = w.client.put("/api/v1/admin/leaderboards/add/archive-policy", headers=w.auth(w.admin), json={"at_once": True})
    assert r.status_code == 200, r.text
    assert w.client.put("/api/v1/admin/leaderboards/add/archive-policy", headers=w.auth(w.ann),
                        json={"at_once": True}).status_code == 403  # fmt: skip


def test_a_licensed_upload_is_published_where_the_board_allows_and_withdrawn_by_its_author(world: World) -> None:
    w, c = world, world.client
    assert c.get("/api/v1/archive").json() == {
        "entries": [], "total": 0, "offset": 0, "limit": 20, "total_exact": True, "next_cursor": None}  # fmt: skip
    sid = w.submit(w.ann, mode="benchmark", license="MIT").json()["submission_id"]
    w.submit(w.bob, mode="benchmark", content=GOOD + b"# bob\n")  # no licence: never published
    w.serve()
    assert c.get("/api/v1/archive").json()["total"] == 0  # before the deadline
    assert c.get(f"/api/v1/submissions/{sid}/license", headers=w.auth(w.ann)).json()["publishes_at"]
    publish_at_once(w)
    page = c.get("/api/v1/archive").json()
    assert [(e["submission_id"], e["licence"], e["author"], e["device"]) for e in page["entries"]] == [
        (sid, "MIT", "ann", "cpu")
    ]
    entry = page["entries"][0]
    assert entry["code"] == GOOD.decode() and entry["problem"] and entry["fingerprint"]
    assert [case["case"] for case in entry["cases"]] == [{"size": 100}, {"size": 1000}]
    assert c.get(f"/api/v1/archive/{sid}/cpu").json() == entry
    changed = c.put(f"/api/v1/submissions/{sid}/license", headers=w.auth(w.ann), json={"license": "CC0-1.0"})
    assert changed.status_code == 422 and "Withdraw it" in error_of(changed)["message"]
    others = c.post(f"/api/v1/submissions/{sid}/license/withdraw", headers=w.auth(w.bob))
    assert others.status_code == 404  # someone else's submission is answered like a missing one
    assert c.post(f"/api/v1/submissions/{sid}/license/withdraw", headers=w.auth(w.ann)).json()["withdrawn"]
    assert c.get("/api/v1/archive").json()["total"] == 0
    assert c.get(f"/api/v1/archive/{sid}/cpu").status_code == 404


def test_the_account_default_and_the_name_the_archive_gives(world: World) -> None:
    w, c = world, world.client
    me = c.put("/api/v1/me/archive", headers=w.auth(w.bob), json={"default_license": "cc-by-4.0", "author_name": "B"})
    assert me.json() == {"default_licence": "CC-BY-4.0", "author_name": "B"}
    assert c.get("/api/v1/me/archive", headers=w.auth(w.bob)).json() == me.json()
    bad = c.put("/api/v1/me/archive", headers=w.auth(w.bob), json={"default_license": "GPL"})
    assert bad.status_code == 422 and error_of(bad)["field"] == "default_license"
    w.submit(w.bob, mode="test")
    w.serve()
    publish_at_once(w)
    assert [(e["licence"], e["author"]) for e in c.get("/api/v1/archive").json()["entries"]] == [("CC-BY-4.0", "B")]
    wrong = w.submit(w.ann, license="GPL-3.0")
    assert wrong.status_code == 422 and error_of(wrong)["code"] == "unknown_license"


def test_filters_pages_and_bounds(world: World) -> None:
    w, c = world, world.client
    publish_at_once(w)
    ids = [w.submit(w.ann, mode="benchmark", license="MIT", content=GOOD + b"#%d\n" % i).json()["submission_id"]
           for i in range(3)]  # fmt: skip
    w.serve()
    page = c.get("/api/v1/archive", params={"limit": 2}).json()
    assert page["total"] == 3 and [e["submission_id"] for e in page["entries"]] == ids[::-1][:2]  # newest first
    rest = c.get("/api/v1/archive", params={"limit": 2, "offset": 2}).json()
    assert [e["submission_id"] for e in rest["entries"]] == ids[:1] and rest["next_cursor"] is None
    after = c.get("/api/v1/archive", params={"limit": 2, "cursor": page["next_cursor"]}).json()  # keyset: same page
    assert [e["submission_id"] for e in after["entries"]] == ids[:1] and after["next_cursor"] is None
    speed = c.get("/api/v1/archive", params={"limit": 1, "sort": "speed"}).json()
    wrong = c.get("/api/v1/archive", params={"cursor": speed["next_cursor"]})  # a fastest-first cursor, newest first
    assert wrong.status_code == 422 and error_of(wrong)["field"] == "cursor"
    assert "next_cursor unchanged" in error_of(wrong)["message"]
    assert c.get("/api/v1/archive", params={"device": "H100"}).json()["total"] == 0
    assert c.get("/api/v1/archive", params={"problem": "nope"}).json()["total"] == 0
    assert c.get("/api/v1/archive", params={"leaderboard": "add", "accepted": True}).json()["total"] == 3
    assert c.get("/api/v1/archive", params={"after": "2999-01-01T00:00:00Z"}).json()["total"] == 0
    assert c.get("/api/v1/archive", params={"sort": "speed"}).json()["total"] == 3
    for params in ({"limit": 101}, {"offset": -1}, {"sort": "slowest"}, {"min_speedup": -1}, {"cursor": "x" * 401}):
        assert c.get("/api/v1/archive", params=params).status_code == 422, params


def test_no_archive_route_shows_a_secret_run_a_seed_or_unpublished_code(world: World) -> None:
    """A walk over the archive's routes after ranked runs whose secret run timed at a number nothing else has, with
    a second author's unlicensed file carrying a marker: neither, nor a case's seed, is in any answer."""
    w, c = world, world.client
    secret_ns = 987654.25

    def respond(request: RunRequest) -> RunResult:
        return accepted_result(request, secret_ns if request.seed is not None else 1000.0)

    publish_at_once(w)
    sid = w.submit(w.ann, mode="ranked", license="CC0-1.0").json()["submission_id"]
    other = w.submit(w.bob, mode="ranked", content=GOOD + b"# bob-unpublished-marker\n").json()["submission_id"]
    w.serve(FakeLauncher(respond))
    paths = [p for p in c.get("/api/openapi.json").json()["paths"] if p.startswith("/api/v1/archive")]
    assert sorted(paths) == [
        "/api/v1/archive",
        "/api/v1/archive/similar",
        "/api/v1/archive/{submission_id}/similar",
        "/api/v1/archive/{submission_id}/{device}",
    ]
    answers = [c.get("/api/v1/archive", params={"sort": sort}) for sort in ("newest", "speed")]
    answers += [c.get(f"/api/v1/archive/{i}/{d}") for i in (sid, other) for d in ("cpu", "H100", "similar")]
    problem = answers[0].json()["entries"][0]["problem"]
    answers.append(c.post("/api/v1/archive/similar", data={"problem": problem}, files={"file": ("q.py", GOOD)}))
    assert [a.status_code for a in answers] == [200, 200, 200, 404, 200, 404, 404, 404, 200]
    assert [k["submission_id"] for k in answers[-1].json()] == [sid]  # bob's unlicensed file is never a match
    assert answers[0].json()["entries"][0]["score_ns"] == pytest.approx(1000.0)  # the public run's
    for answer in answers:
        assert "987654" not in answer.text and "bob-unpublished-marker" not in answer.text and "seed" not in answer.text


ANN_CODE = b"""def custom_kernel(data):
    a, b = data
    out = a.new_empty(a.shape)
    for i in range(0, a.numel(), 4096):
        out.view(-1)[i : i + 4096] = a.view(-1)[i : i + 4096] + b.view(-1)[i : i + 4096]
    return out
"""
BOB_CODE = b"""import torch


def custom_kernel(data):
    return torch.add(*data)
"""
ANN_RENAMED = b"""def custom_kernel(xs):
    left, right = xs
    res = left.new_empty(left.shape)
    for k in range(0, left.numel(), 4096):
        res.view(-1)[k : k + 4096] = left.view(-1)[k : k + 4096] + right.view(-1)[k : k + 4096]
    return res
"""


def test_similar_kernels_by_id_and_by_file(world: World) -> None:
    w, c = world, world.client
    publish_at_once(w)
    ann = w.submit(w.ann, mode="test", license="MIT", content=ANN_CODE).json()["submission_id"]
    bob = w.submit(w.bob, mode="test", license="MIT", content=BOB_CODE).json()["submission_id"]
    hidden = w.submit(w.bob, mode="test", content=ANN_RENAMED).json()["submission_id"]  # licence none
    w.serve()
    problem = c.get("/api/v1/archive").json()["entries"][0]["problem"]
    found = c.post("/api/v1/archive/similar", data={"problem": problem}, files={"file": ("q.py", ANN_RENAMED)})
    assert found.status_code == 200, found.text
    ranked = found.json()
    assert [k["submission_id"] for k in ranked] == [ann, bob]
    assert ranked[0]["similarity"] > 0.8 > ranked[1]["similarity"]
    assert ranked[0]["author"] == "ann" and ranked[0]["licence"] == "MIT"
    near = c.get(f"/api/v1/archive/{ann}/similar").json()
    assert [k["submission_id"] for k in near] == [bob]  # itself left out; the unpublished copy never appears
    assert c.get(f"/api/v1/archive/{hidden}/similar").status_code == 404
    assert c.post("/api/v1/archive/similar", data={"problem": "nope"}, files={"file": ("q.py", b"x")}).json() == []
    assert c.get(f"/api/v1/archive/{ann}/similar", params={"limit": 51}).status_code == 422


def test_admins_list_near_clones_of_the_top_entries(world: World) -> None:
    w, c = world, world.client
    ann = w.submit(w.ann, mode="ranked", content=ANN_CODE).json()["submission_id"]
    bob = w.submit(w.bob, mode="ranked", content=ANN_RENAMED).json()["submission_id"]  # unpublished: admins see it
    w.serve()
    assert c.get("/api/v1/admin/near-clones", headers=w.auth(w.ann)).status_code == 403
    found = c.get("/api/v1/admin/near-clones", headers=w.auth(w.admin), params={"leaderboard": "add"})
    assert found.status_code == 200, found.text
    [clone] = found.json()
    assert (clone["submission_id"], clone["of_submission_id"], clone["user"], clone["of_user"]) == (
        bob,
        ann,
        "bob",
        "ann",
    )
    assert clone["similarity"] >= 0.8 and f"#{bob} (bob) is" in clone["text"] and clone["leaderboard"] == "add"
    assert c.get("/api/v1/admin/near-clones", headers=w.auth(w.admin), params={"top": 0}).status_code == 422
    sign_in(w, w.admin)
    page = c.get("/admin")
    assert page.status_code == 200 and clone["text"] in page.text  # the admin page lists it too


def test_the_archive_page_links_past_the_count_where_it_stopped(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    from leaderboards import archive
    from web.pages import archive as pages

    w, c = world, world.client
    publish_at_once(w)
    for marker in range(3):
        w.submit(w.ann, mode="test", license="MIT", content=GOOD + f"# {marker}\n".encode())
    w.serve()
    monkeypatch.setattr(archive, "ARCHIVE_COUNT_MAX", 1)
    monkeypatch.setattr(pages, "ARCHIVE_PAGE_SIZE", 2)
    first = c.get("/archive").text
    assert "1+ published, page 1<" in first and "page=2" in first  # a next page though the count stopped at 1
    assert "page=3" not in c.get("/archive", params={"page": 2}).text  # the last page (one entry): no next
