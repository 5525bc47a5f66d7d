"""Rendering pages: the Jinja2 environment (autoescaping on), safe Markdown, server-side syntax highlighting, and
the response of a page (ETag, Cache-Control, 304)."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_for_filename
from pygments.lexers.python import PythonLexer
from pygments.util import ClassNotFound

from leaderboards.formatting import (
    KERNEL_COLUMNS,
    MISSING,
    format_bytes,
    format_iqr,
    format_ns,
    format_share,
    format_speedup,
    kernel_row,
    kernels_text,
    outcome_text,
    provenance_text,
    roofline_summary,
    score_text,
    verdict_words,
)
from leaderboards.problem_rules import MAX_TEXT_CHARS
from leaderboards.results import Principal

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
STATIC = Path(__file__).resolve().parent.parent / "static"
LOG_CAP = 64 * 1024
"""Most characters of one log (stdout, stderr, compile output) a page shows."""

# Markdown from task.yml: CommonMark with raw HTML off (it shows as text); links through markdown-it's own check,
# which refuses javascript:, vbscript:, file: and data: (but images) URLs.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False})
_formatter = HtmlFormatter(nowrap=True)


def markdown(text: str) -> Markup:
    """A description as HTML, rendered once per text and process (markdown-it takes about 0.16 s for one of
    brackets at the cap, ``MAX_TEXT_CHARS``, and a page is viewed often); one above the cap, stored before it was
    set, shows as plain text."""
    text = text or ""
    if len(text) > MAX_TEXT_CHARS:
        return Markup("<pre>{}</pre>").format(text)
    return Markup(_rendered(text))


@functools.lru_cache(maxsize=256)
def _rendered(text: str) -> str:
    return _markdown.render(text)


def markdown_inline(text: str) -> Markup:
    """One line of Markdown inside an element of the page's own (``code`` spans, emphasis, links; no paragraph)."""
    return Markup(_markdown.renderInline(text or ""))


def highlight(code: str, file_name: str) -> Markup:
    """The code as HTML spans with pygments' short class names (styled by the site's stylesheet)."""
    try:
        lexer = get_lexer_for_filename(file_name, stripnl=False)
    except ClassNotFound:
        lexer = PythonLexer(stripnl=False)
    return Markup(pygments_highlight(code, lexer, _formatter))


def when(value: datetime | None) -> str:
    return MISSING if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def time_left(deadline: datetime, now: datetime | None = None) -> str:
    """'3 days left', '5 hours left', 'closed'."""
    seconds = (deadline - (now or datetime.now(UTC))).total_seconds()
    if seconds <= 0:
        return "closed"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} left"
    return "under a minute left"


def capped(text: str | None, limit: int = LOG_CAP) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters not shown)"


def job_score(job: Any) -> str:
    """A job's score, and the one it ranks by where that differs (``score_text``); a dash when it has none."""
    return score_text(job.score_ns, job.ranked_score_ns) if job.score_ns is not None else format_ns(None)


def outcome(job: Any) -> str:
    """A job's one outcome in plain words (``outcome_text``): its verdict's, else its state's."""
    return outcome_text(job.status, job.verdict)


env = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
env.filters.update(
    ns=format_ns,
    job_score=job_score,
    speedup=format_speedup,
    when=when,
    time_left=time_left,
    share=format_share,
    roofline_summary=roofline_summary,
    markdown=markdown,
    markdown_inline=markdown_inline,
    capped=capped,
    kernel_row=kernel_row,
    kernels=kernels_text,
    provenance=provenance_text,
    bytes=format_bytes,
    outcome=outcome,
    verdict=verdict_words,
    iqr=format_iqr,
)
env.globals.update(kernel_columns=KERNEL_COLUMNS)


@dataclass(frozen=True)
class Viewer:
    """Who is looking at a page: the signed-in principal (or None) and the CSRF token of their session."""

    who: Principal | None
    csrf: str = ""


def render(request: Request, template: str, viewer: Viewer, status: int = 200, **context: Any) -> HTMLResponse:
    html = env.get_template(template).render(request=request, viewer=viewer, who=viewer.who, **context)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"})


def cached_page(request: Request, template: str, viewer: Viewer, **context: Any) -> Response:
    """A page anyone may read: an ETag of its bytes and a 304 when the browser has them. Shared caches may keep
    it briefly while nobody is signed in; a signed-in view (it names the person) is private."""
    html = env.get_template(template).render(request=request, viewer=viewer, who=viewer.who, **context).encode()
    etag = '"' + hashlib.sha256(html).hexdigest()[:32] + '"'
    headers = {
        "ETag": etag,
        "Cache-Control": "private, no-cache" if viewer.who is not None else "public, max-age=5, must-revalidate",
        "Vary": "Cookie",
    }
    if etag in {t.strip() for t in request.headers.get("if-none-match", "").split(",")}:
        return Response(status_code=304, headers=headers)
    return HTMLResponse(html, headers=headers)
