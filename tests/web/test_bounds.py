"""Every integer a route takes is bounded at the schema (issue 37, class 2): a value outside its range is a 422 naming
the field and the range, never a 500 with a traceback in the log (``?offset=2**63`` on the public rankings was).

The routes are not listed here: they are read from the app itself (``app.routes``: the API's and the pages'), and
every integer parameter (path, query, header, form, JSON body field) gets extreme values, anonymously and as a
signed-in admin (a bearer token for the API, a session cookie for the pages). A route added later is walked too.
"""

from __future__ import annotations

import logging
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

import annotated_types
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from fastapi.testclient import TestClient
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from web_world import GOOD, World, csrf_of

from leaderboards.results import UserRef
from web.routes.common import ID_MAX

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EXTREMES: tuple[object, ...] = (2**63, -(2**63), 2**64, -1, 0, 1e308, -1e308, "9" * 5000, "1e308", "x" * 20_000)
"""What testers sent: past a signed 64-bit integer, negative, a float too large for any integer, 5,000 digits (past
Python's int-from-string limit), a huge string."""
HUGE = "x" * 100_000
LONG = "x" * 8_000
"""The longest a URL's part may be for the client (uvicorn refuses a request head over 16 KiB)."""


@dataclass(frozen=True)
class IntField:
    method: str
    path: str
    where: str  # path, query, header, form or json
    name: str
    info: FieldInfo

    @property
    def is_page(self) -> bool:
        return not self.path.startswith("/api/")

    def bounds(self) -> tuple[int | None, int | None]:
        low = high = None
        for m in self.info.metadata:
            if isinstance(m, annotated_types.Ge):
                low = int(m.ge)  # type: ignore[call-overload]
            elif isinstance(m, annotated_types.Gt):
                low = int(m.gt) + 1  # type: ignore[call-overload]
            elif isinstance(m, annotated_types.Le):
                high = int(m.le)  # type: ignore[call-overload]
            elif isinstance(m, annotated_types.Lt):
                high = int(m.lt) - 1  # type: ignore[call-overload]
        return low, high


def _is(annotation: Any, kind: type) -> bool:
    """Whether ``annotation`` is ``kind``, optional or annotated (``int | None``, ``Annotated[int, ...] | None``)."""
    if annotation is kind:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, typing.Annotated):
        args = typing.get_args(annotation)
        return any(_is(a, kind) for a in (args[:1] if typing.get_origin(annotation) is typing.Annotated else args))
    return False


def _is_int(annotation: Any) -> bool:
    return _is(annotation, int)


def _model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model(arg)
        if found is not None:
            return found
    return None


def _params(dependant: Any) -> Iterator[tuple[str, Any]]:
    for kind in ("path_params", "query_params", "header_params", "cookie_params", "body_params"):
        for param in getattr(dependant, kind):
            yield kind.removesuffix("_params"), param
    for sub in dependant.dependencies:
        yield from _params(sub)


def routes(app: FastAPI) -> Iterator[tuple[str, str, APIRoute]]:
    """Every (method, path, route) the app serves (included routers flattened)."""
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            for method in sorted(context.methods or ()):
                yield method, str(context.path), route


def int_fields(app: FastAPI) -> list[IntField]:
    found = []
    for method, path, route in routes(app):
        for kind, param in _params(route.dependant):
            info: FieldInfo = param.field_info
            model = _model(info.annotation)
            if kind == "body" and model is not None:
                found += [
                    IntField(method, path, "json", name, field)
                    for name, field in model.model_fields.items()
                    if _is_int(field.annotation)
                ]
            elif _is_int(info.annotation):
                found.append(IntField(method, path, "form" if kind == "body" else kind, param.alias, info))
    return found


def test_the_walk_finds_the_integers_it_must(world: World) -> None:
    """The walk itself: it sees path, query, form and JSON integers of the API and of the pages."""
    seen = {(f.path, f.where, f.name) for f in int_fields(world.client.app)}  # type: ignore[arg-type]
    for expected in [
        ("/api/v1/leaderboards/{name}/rankings", "query", "offset"),
        ("/api/v1/leaderboards/{name}/rankings", "query", "limit"),
        ("/api/v1/submissions/{submission_id}", "path", "submission_id"),
        ("/api/v1/submissions", "form", "rounds"),
        ("/api/v1/admin/leaderboards/{name}/rate-limit", "json", "per_hour"),
        ("/api/v1/admin/leaderboards", "json", "rate_limit_per_hour"),
        ("/api/v1/admin/stats", "query", "days"),
        ("/submit", "form", "rounds"),
        ("/admin", "form", "submission_id"),
        ("/leaderboards/{name}", "query", "page"),
    ]:
        assert expected in seen, expected


def test_every_integer_a_route_takes_has_a_lower_and_an_upper_bound(world: World) -> None:
    unbounded = []
    for field in int_fields(world.client.app):  # type: ignore[arg-type]
        low, high = field.bounds()
        if low is None or high is None or low < -(2**63) or high > ID_MAX:
            unbounded.append(f"{field.method} {field.path} {field.where} {field.name}: {low}..{high}")
    assert not unbounded, "integers without a range a database column holds:\n" + "\n".join(unbounded)


# -- the walk with extreme values -------------------------------------------------------------------------------


def _sample(annotation: Any) -> object:
    """A valid value of a JSON field other than the one under test."""
    if _is_int(annotation):
        return 1
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (typing.Union, types.UnionType):
        return _sample(args[0])
    if origin in (tuple, list):
        return ["cpu"]
    if annotation is bool:
        return False
    if annotation is datetime:
        return "2099-01-01T00:00:00Z"
    return "x"


def _body(field: IntField, app: FastAPI, value: object) -> dict[str, object]:
    route = next(r for m, p, r in routes(app) if m == field.method and p == field.path)
    model = next(_model(p.field_info.annotation) for k, p in _params(route.dependant) if k == "body")
    assert model is not None
    body = {n: _sample(f.annotation) for n, f in model.model_fields.items() if f.is_required()}
    body[field.name] = value
    return body


def _url(path: str, ids: dict[str, str], override: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: override.get(m.group(1), ids[m.group(1)]), path)


def _in_range(field: IntField, value: object) -> bool:
    low, high = field.bounds()
    try:
        number = int(str(value))
    except ValueError:
        return False
    return (low is None or number >= low) and (high is None or number <= high)


def _send(client: TestClient, field: IntField, value: object, ids: dict[str, str], headers: dict[str, str], csrf: str):
    text = str(value)
    url = _url(field.path, ids, {field.name: text} if field.where == "path" else {})
    params = {field.name: text} if field.where == "query" else {}
    hdrs = {**headers, **({field.name: text} if field.where == "header" else {})}
    if field.where == "json":
        return client.request(field.method, url, headers=hdrs, json=_body(field, client.app, value))  # type: ignore[arg-type]
    if field.where == "form":
        data = {"csrf": csrf, "leaderboard": "add", "devices": "cpu", "mode": "compare", "action": "delete",
                field.name: text}  # fmt: skip
        files = {"file": ("k.py", GOOD), "against": ("b.py", GOOD)} if "submi" in field.path else None
        return client.request(field.method, url, headers=hdrs, data=data, files=files, params=params)
    return client.request(field.method, url, headers=hdrs, params=params)


def _page_client(world: World, token: str | None) -> tuple[TestClient, str]:
    """A client of the pages: signed in with ``token`` (its session cookie), or anonymous; and its CSRF token."""
    client = TestClient(world.client.app, raise_server_exceptions=False)
    page = client.get("/signin")
    if token is None:
        return client, csrf_of(page.text)
    r = client.post("/signin", data={"token": token, "csrf": csrf_of(page.text)}, follow_redirects=False)
    assert r.status_code == 303
    return client, csrf_of(client.get("/submit").text)


def _ids(world: World) -> dict[str, str]:
    sid = world.submit(world.ann).json()["submission_id"]
    world.serve()  # done: its event stream (an in-range ?after=) ends at once
    token_id = world.service.create_token(UserRef("carl")).info.token_id
    return {"name": "add", "language": "pytorch", "device": "cpu", "submission_id": str(sid),
            "token_id": str(token_id), "user": "local:bob", "alert_id": "1", "invite_id": "1",
            "batch_id": "1", "hack_id": "1"}  # fmt: skip


def _no_traceback(caplog: pytest.LogCaptureFixture, where: str) -> None:
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not bad, f"{where}: logged {[r.getMessage() for r in bad]}"
    assert "Traceback" not in caplog.text, where


def test_extreme_integers_on_every_route_are_a_422_naming_the_field_and_never_a_500(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    app = world.client.app
    assert isinstance(app, FastAPI)
    caplog.set_level(logging.INFO)
    ids = _ids(world)
    fields = int_fields(app)
    assert len(fields) >= 15
    api = {"anonymous": {}, "admin": world.auth(world.admin)}
    pages = {"anonymous": _page_client(world, None), "admin": _page_client(world, world.admin)}
    sent = 0
    for field in fields:
        for who in ("anonymous", "admin"):
            client, csrf = pages[who] if field.is_page else (world.client, "")
            headers = {} if field.is_page else api[who]
            for value in EXTREMES:
                r = _send(client, field, value, ids, headers, csrf)
                sent += 1
                where = f"{who}: {field.method} {field.path} {field.where} {field.name}={str(value)[:30]}"
                assert r.status_code < 500, f"{where}: {r.status_code} {r.text[:300]}"
                assert "Traceback" not in r.text, where
                _no_traceback(caplog, where)
                if _in_range(field, value):
                    continue
                anonymous_refusal = who == "anonymous" and r.status_code in (401, 403)  # no token: refused first
                if not anonymous_refusal:
                    assert r.status_code == 422, f"{where}: {r.status_code} {r.text[:300]}"
                    error = r.json()["error"]
                    assert error["field"] == field.name, where
                    low, high = field.bounds()
                    assert re.search(rf"{low}\b|{high}\b", error["message"]), (where, error["message"])
    assert sent > 300


def _string_fields(app: FastAPI) -> Iterator[tuple[str, str, str, str, FieldInfo]]:
    """(method, path, where, name, field) of every string a route takes: path, query, header, form, JSON field."""
    for method, path, route in routes(app):
        for kind, param in _params(route.dependant):
            info: FieldInfo = param.field_info
            model = _model(info.annotation)
            if kind == "body" and model is not None:
                for name, field in model.model_fields.items():
                    if field.annotation in (str, str | None):
                        yield method, path, "json", name, field
            elif info.annotation in (str, str | None):
                yield method, path, "form" if kind == "body" else kind, param.alias, info


def test_huge_and_odd_strings_in_every_field_are_no_500(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """The other half of the walk: every string a route takes gets 100,000 characters (8,000 in a URL or a header,
    the most a request's head may carry), a NUL, a lone surrogate and a Discord id past 64 bits (an integer inside a
    string), as the admin (whom the most routes let through); nothing may be a 500."""
    app = world.client.app
    assert isinstance(app, FastAPI)
    caplog.set_level(logging.INFO)
    ids = _ids(world)
    client, csrf = _page_client(world, world.admin)
    sent = 0
    for method, path, where, name, info in _string_fields(app):
        if method == "DELETE" and "{name}" in path:
            continue  # a huge name deletes nothing, but a sample name would delete the leaderboard
        headers = world.auth(world.admin) if path.startswith("/api/") else {}
        for value in (HUGE if where in ("form", "json") else LONG, "a\x00b", "\udcff", "discord:" + "9" * 30):
            override = {name: quote(value.encode("utf-8", "surrogateescape"), safe="")} if where == "path" else {}
            params = {name: value} if where == "query" else {}
            extra = {name: value.encode("utf-8", "replace").decode("latin-1")} if where == "header" else {}
            body = _body(IntField(method, path, "json", name, info), app, value) if where == "json" else None
            data = {"csrf": csrf, "action": "ban", "leaderboard": "add", name: value} if where == "form" else None
            files = {"file": ("k.py", GOOD)} if where == "form" and "submi" in path else None
            try:
                r = client.request(
                    method, _url(path, ids, override), headers={**headers, **extra}, params=params, json=body,
                    data=data, files=files,
                )  # fmt: skip
            except UnicodeEncodeError:
                continue  # the client itself cannot send it (a surrogate in a query)
            sent += 1
            at = f"{method} {path} {where} {name}={value[:20]!r}"
            assert r.status_code < 500, f"{at}: {r.status_code} {r.text[:300]}"
            _no_traceback(caplog, at)
    assert sent > 100


DATETIMES = ("0001-01-01T00:00:00+14:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59Z")
"""The ends of Python's datetime range, where converting to UTC (or adding a day) overflows."""


def test_extreme_dates_in_every_json_field_are_a_422(world: World, caplog: pytest.LogCaptureFixture) -> None:
    """A deadline at the ends of Python's date range overflowed converting to UTC (a 500 on leaderboard changes)."""
    app = world.client.app
    assert isinstance(app, FastAPI)
    caplog.set_level(logging.INFO)
    ids = _ids(world)
    sent = 0
    for method, path, route in routes(app):
        for kind, param in _params(route.dependant):
            model = _model(param.field_info.annotation)
            if kind != "body" or model is None:
                continue
            for name, info in model.model_fields.items():
                if not _is(info.annotation, datetime):
                    continue
                for value in DATETIMES:
                    body = _body(IntField(method, path, "json", name, info), app, value)
                    r = world.client.request(method, _url(path, ids, {}), headers=world.auth(world.admin), json=body)
                    sent += 1
                    at = f"{method} {path} {name}={value}"
                    assert r.status_code == 422, f"{at}: {r.status_code} {r.text[:300]}"
                    assert r.json()["error"]["field"] == name and "from 1970-01-01" in r.json()["error"]["message"]
                    _no_traceback(caplog, at)
    assert sent >= 8
