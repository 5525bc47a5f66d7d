"""The FastAPI application: the routes, the error shape, the body limit and the metrics, on one service.

``create_app(service, settings)`` builds everything and connects nowhere (the service was opened by the composition
root, ``kernelcup serve``). Routes are plain functions, so FastAPI runs them in its thread pool and the blocking
service never runs on the event loop; the event stream is async and polls through ``asyncio.to_thread``.

Pages (issue 14, ``web/pages/``, docs/web.md) mount beside ``/api`` on the same app: Jinja2 views over the same
service calls and typed answers, with their own session cookie, security headers and HTML error pages.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from starlette.middleware.sessions import SessionMiddleware
from starlette.types import Scope

from leaderboards.problem_rules import DeviceCheck
from leaderboards.service import LeaderboardService
from leaderboards.sync import ReferenceCheck
from web import errors
from web.cache import CachedReadsMiddleware, TTLCache
from web.metrics import ApiMetrics, MetricsMiddleware
from web.pages import admin as admin_page
from web.pages import archive as archive_pages
from web.pages import competition as competition_pages
from web.pages import forms, oauth, views
from web.pages import moderation as moderation_page
from web.pages import retiming as retiming_page
from web.pages.base import PageHeadersMiddleware, error_page, install_error_pages
from web.pages.render import STATIC
from web.pages.session import Sessions, load_secret
from web.routes import admin, events, health, invites, late, leaderboards, me, moderation, standings, submissions
from web.routes import archive as archive_api
from web.routes import batches as batches_api
from web.routes import budgets as budgets_api
from web.routes import hacks as hacks_api
from web.routes import login as cli_login
from web.schemas import API_PREFIX
from web.settings import WebSettings

MULTIPART_ENVELOPE = 64 * 1024
"""Room for the multipart headers and the other form fields around a submission's files."""
UPLOAD_PATHS = (f"{API_PREFIX}/submissions", "/submit")
"""The routes that take submission files: up to two (a compare's ``against``), each checked on its own."""
BATCH_PATH = f"{API_PREFIX}/batches"
"""The route that takes a batch: up to ``batch_max_candidates`` files, each checked on its own."""

DESCRIPTION = """\
Submit GPU kernels to kernelcup's leaderboards and follow them, from a program or the `kernelcup` CLI.

**Tokens.** Send `Authorization: Bearer <token>`. Get one with `/token` in Discord, or from an admin
(`kernelcup tokens create NAME`). Public reads (leaderboards, rankings, history, templates) need none.

**Errors** all have one shape: `{"error": {"code": "...", "message": "...", "field": ...}}`.
"""


DOCS_URL = "/api/docs"
SWAGGER_UI = "/static/vendor/swagger-ui"
"""Swagger UI's files, vendored from npm's ``swagger-ui-dist`` (its README there says which version): FastAPI's
default page loads them from a public CDN, and was blank offline."""


def operation_id(route: APIRoute) -> str:
    """A short operationId, what generated clients name their methods by: the route function's name (``submit``,
    ``get_rankings``), ``admin_`` before it for the admin routes (``admin_delete_submission``), instead of FastAPI's
    name, path and method run together (``get_rankings_api_v1_leaderboards__name__rankings_get``). Unique across the
    API (``tests/web/test_docs.py``)."""
    return f"admin_{route.name}" if "admin" in route.tags else route.name


def api_docs() -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url="/api/openapi.json",
        title="kernelcup API",
        swagger_js_url=f"{SWAGGER_UI}/swagger-ui-bundle.js",
        swagger_css_url=f"{SWAGGER_UI}/swagger-ui.css",
        swagger_favicon_url=f"{SWAGGER_UI}/favicon-32x32.png",
        # no validator badge: Swagger UI would send the spec to validator.swagger.io for it
        swagger_ui_parameters={"validatorUrl": None},
    )


def create_app(
    service: LeaderboardService,
    settings: WebSettings,
    *,
    reference_check: Callable[[], ReferenceCheck] | None = None,
    device_check: DeviceCheck | None = None,
) -> FastAPI:
    """``reference_check`` and ``device_check`` are what ``POST /api/v1/admin/sync`` checks a problem set with, as
    ``kernelcup problems sync`` and ``/admin sync`` do (the composition root passes them; without them sync makes
    the checks that need neither)."""
    app = FastAPI(
        title="kernelcup API",
        version="1",
        description=DESCRIPTION,
        docs_url=None,  # served by api_docs below, from this site's own copy of Swagger UI
        redoc_url=None,
        openapi_url="/api/openapi.json",
        generate_unique_id_function=operation_id,
    )
    app.state.service = service
    app.state.settings = settings
    app.state.reference_check = reference_check
    app.state.device_check = device_check
    app.state.rankings_cache = TTLCache(settings.rankings_cache_s)
    app.state.pages_cache = TTLCache(views.CHART_TTL_S)
    app.state.metrics = metrics = ApiMetrics(service)
    app.state.stream_slots = events.StreamSlots(settings.sse_max_per_user, settings.sse_max_streams)
    secret = settings.session_secret.get_secret_value() if settings.session_secret else None
    data_dir = service.settings.resolved_data_dir()
    app.state.sessions = Sessions(lambda: load_secret(secret, data_dir), settings.session_max_age_s)
    app.state.sign_in_providers = oauth.providers(settings)
    app.state.oauth = oauth.build_oauth(settings)
    errors.install(app)
    install_error_pages(app)
    for module in (archive_api, leaderboards, standings, late, invites, moderation, submissions, events, me, admin,
                   batches_api, budgets_api, hacks_api,
                   health, views, forms, admin_page, moderation_page, retiming_page, competition_pages, oauth,
                   archive_pages, cli_login):  # fmt: skip
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_api_route(DOCS_URL, api_docs, include_in_schema=False)

    upload_limit = service.settings.max_submission_bytes
    upload_message = (
        f"The upload is larger than the limit: submission files may be up to {upload_limit / 1024:.0f} KiB each "
        "(two for a compare)."
    )
    body_message = f"The request body is larger than {settings.max_body_bytes / 1024:.0f} KiB."

    batch_files = service.settings.batch_max_candidates
    batch_message = (
        f"The upload is larger than the limit: a batch takes up to {batch_files} files of up to "
        f"{upload_limit / 1024:.0f} KiB each."
    )

    def limit_for(scope: Scope) -> tuple[int, str, str]:
        if scope["path"] in UPLOAD_PATHS:  # each file's own limit is the service's check, as it is read
            return 2 * upload_limit + MULTIPART_ENVELOPE, "file_too_large", upload_message
        if scope["path"] == BATCH_PATH:  # (red team, 2026-11-28: a batch was held to 1 MiB in all)
            return batch_files * upload_limit + MULTIPART_ENVELOPE, "file_too_large", batch_message
        return settings.max_body_bytes, "body_too_large", body_message

    # Outermost last: metrics see every request, a fresh cached ranking is answered before routing, errors turn
    # what escaped into the error shape, the body limit stops an upload before the multipart parser reads it.
    app.add_middleware(errors.BodyLimitMiddleware, limit_for=limit_for)
    app.add_middleware(errors.ErrorMiddleware, page=error_page)
    app.add_middleware(
        CachedReadsMiddleware,
        cache=app.state.rankings_cache,
        pattern=leaderboards.RANKINGS_PATH,
        route=leaderboards.RANKINGS_ROUTE,
    )
    if app.state.sign_in_providers:  # Authlib keeps a provider sign-in's state in Starlette's signed session cookie
        app.add_middleware(
            SessionMiddleware,
            secret_key=oauth.state_secret(load_secret(secret, data_dir)),
            session_cookie=oauth.STATE_COOKIE,
            max_age=oauth.STATE_MAX_AGE_S,
            path=oauth.STATE_PATH,
            https_only=(settings.public_url or "").startswith("https://"),
        )
    app.add_middleware(PageHeadersMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app
