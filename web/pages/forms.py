"""The pages that change something: sign in and out, ``/submit``. Every form carries the session's CSRF token."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse, Response

from leaderboards.errors import InvalidToken, UserError
from leaderboards.licences import CHOICES as LICENCE_CHOICES
from leaderboards.results import (
    COMPARE_CPU_ROUNDS,
    COMPARE_DEFAULT_ROUNDS,
    COMPARE_MAX_ROUNDS,
    COMPARE_MIN_ROUNDS,
    SubmissionMode,
)
from leaderboards.service import LeaderboardService
from web.auth import service_of
from web.pages.base import principal_of, session_of, sessions_of, sign_in_first, viewer
from web.pages.render import Viewer, render
from web.routes.common import SubmissionId
from web.routes.submissions import split_devices
from web.settings import PROVIDER_TITLES

router = APIRouter(include_in_schema=False)

PASTED_NAME = "submission.py"


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path on this site only (never //elsewhere or a full URL)."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/"


def sign_in_buttons(request: Request) -> list[tuple[str, str]]:
    """The providers' sign-in the page offers (``/auth/{name}``), as (name, title): those the operator turned on."""
    return [(name, PROVIDER_TITLES[name]) for name in request.app.state.settings.enabled_providers()]


@router.get("/signin")
def signin_page(request: Request, next: str = "/") -> Response:
    sessions = sessions_of(request)
    session = session_of(request)
    fresh = session is None
    session = session or sessions.new()
    response = render(
        request,
        "signin.html",
        Viewer(principal_of(request, session), sessions.csrf_token(session)),
        next=safe_next(next),
        providers=sign_in_buttons(request),
    )
    if fresh:
        sessions.store(response, request, session)
    return response


@router.post("/signin")
def signin(
    request: Request,
    token: str = Form(""),
    csrf: str = Form(""),
    next: str = Form("/"),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    sessions = sessions_of(request)
    session = session_of(request)
    sessions.check_csrf(request, session, csrf)
    assert session is not None
    try:
        sid, _ = service.open_session(token.strip(), via="token", max_age=timedelta(seconds=sessions.max_age_s))
    except InvalidToken as exc:
        view = Viewer(None, sessions.csrf_token(session))
        return render(
            request,
            "signin.html",
            view,
            status=401,
            error=exc.message,
            next=safe_next(next),
            providers=sign_in_buttons(request),
        )
    response = RedirectResponse(safe_next(next), status_code=303)
    sessions.store(response, request, sessions.new(sid))
    return response


@router.post("/signout")
def signout(request: Request, csrf: str = Form(""), service: LeaderboardService = Depends(service_of)) -> Response:
    sessions = sessions_of(request)
    session = session_of(request)
    sessions.check_csrf(request, session, csrf)
    assert session is not None
    if session.signed_in:  # ended on the server: a copy of the cookie is nobody now (a Discord sign-in: its token too)
        service.end_session(session.sid, actor="web: sign-out")
    response = RedirectResponse("/", status_code=303)
    sessions.clear(response, request)
    return response


@router.post("/submissions/{submission_id}/license")
def set_licence(
    request: Request,
    submission_id: SubmissionId,
    csrf: str = Form(""),
    action: str = Form("set", max_length=16),
    license: str = Form("", max_length=32),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    """The author's archive choice from their submission's page (issue 34): a licence until it is published, or
    withdrawing a published kernel. Back to the page, saying what was done; a refusal is the error page's."""
    session = session_of(request)
    sessions_of(request).check_csrf(request, session, csrf)
    who = principal_of(request, session)
    if who is None:
        return RedirectResponse(f"/signin?next=/submissions/{submission_id}", status_code=303)
    if action == "withdraw":
        service.withdraw_from_archive(submission_id, who.user)
        said = "withdrawn"
    else:
        service.set_submission_licence(submission_id, who.user, license)
        said = "saved"
    return RedirectResponse(f"/submissions/{submission_id}?licence={said}#archive-title", status_code=303)


NEWCOMERS_LANGUAGE = "pytorch"
"""The template the form starts with where a leaderboard has one: the language every newcomer reads."""
MODE_HINTS = {
    SubmissionMode.TEST: "checks it against the reference, untimed",
    SubmissionMode.BENCHMARK: "checks and times it, not ranked",
    SubmissionMode.RANKED: "checks and times it on public and secret inputs, and ranks it",
    SubmissionMode.PROFILE: "checks and profiles it (Nsight Compute on a GPU)",
    SubmissionMode.COMPARE: "times two files against each other on one device, not ranked",
}


def _submit_form(
    request: Request,
    view: Viewer,
    service: LeaderboardService,
    chosen: str | None,
    *,
    language: str | None = None,
    status: int = 200,
    **context: object,
) -> Response:
    """The form for one leaderboard (``chosen``, else the first open one): those of its devices a live worker serves
    (the others named as not served now), its templates, and the code prefilled with the template in ``language``
    (its first) unless ``context`` brings the code sent."""
    boards = [b for b in service.list_leaderboards() if b.is_open]
    board = next((b for b in boards if b.name == chosen), boards[0] if boards else None)
    if board is not None:
        task = service.task(board.name)
        languages = sorted(task.templates, key=lambda lang: (lang != NEWCOMERS_LANGUAGE, lang))
        language = language if language in task.templates else next(iter(languages), None)
        if language is not None:
            context.setdefault("code", task.templates[language])
            context.setdefault("file_name", task.template_files[language])
        context.update(languages=languages, language=language)
        live = service.live_workers()  # a device no live, healthy worker serves is not offered: it would only wait
        offered = [d for d in board.devices if live.serve(d)]
        context.update(offered=offered, unserved=[d for d in board.devices if not live.serve(d)])
        context.setdefault("picked", offered[:1])  # one device to start with; tick more to run on each
    context.setdefault("rounds", None)  # the device's default, which the service picks
    context.setdefault("mode", SubmissionMode.TEST.value)
    context.setdefault("licence", "")  # the file's '#!kernelcup license:' line, else the account's default
    return render(
        request,
        "submit.html",
        view,
        status=status,
        boards=boards,
        board=board,
        modes=MODE_HINTS,
        licence_choices=LICENCE_CHOICES,
        round_choices=list(range(COMPARE_MIN_ROUNDS, COMPARE_MAX_ROUNDS + 1, 2)),
        default_rounds=f"at most {COMPARE_DEFAULT_ROUNDS} on a GPU, {COMPARE_CPU_ROUNDS} on the CPU",
        **context,
    )


@router.get("/submit")
def submit_page(
    request: Request,
    leaderboard: str | None = None,
    language: str | None = None,
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    if view.who is None:
        return sign_in_first(request)
    return _submit_form(request, view, service, leaderboard, language=language)


@router.post("/submit")
def submit(
    request: Request,
    file: UploadFile | None = File(None),
    code: str = Form(""),
    file_name: str = Form(""),
    leaderboard: str = Form(""),
    devices: list[str] = Form([]),
    mode: str = Form(""),
    against: UploadFile | None = File(None),
    rounds: int | None = Form(None, ge=COMPARE_MIN_ROUNDS, le=COMPARE_MAX_ROUNDS),
    force: bool = Form(False),
    license: str = Form("", max_length=32),
    csrf: str = Form(""),
    view: Viewer = Depends(viewer),
    service: LeaderboardService = Depends(service_of),
) -> Response:
    sessions_of(request).check_csrf(request, session_of(request), csrf)
    if view.who is None:
        return sign_in_first(request)
    try:
        if file is not None and file.filename:
            name = file.filename
            service.check_upload_size(name, file.size or 0)
            content = file.file.read(service.settings.max_submission_bytes + 1)
        elif code.strip():
            name, content = file_name.strip() or PASTED_NAME, code.replace("\r\n", "\n").encode()
        else:
            raise UserError("Choose a file to upload, or paste your code.", code="invalid_field", field="file")
        picked = split_devices(devices)
        if mode == SubmissionMode.COMPARE:
            if against is None or not against.filename:
                raise UserError(
                    "A compare needs a second file: choose it under 'Compare with'.",
                    code="invalid_field",
                    field="against",
                )
            if picked is not None and len(picked) > 1:
                raise UserError("A compare runs on one device: tick one.", code="invalid_field", field="devices")
            service.check_upload_size(against.filename, against.size or 0)
            content_b = against.file.read(service.settings.max_submission_bytes + 1)
            one = picked[0] if picked else None
            receipt = service.compare(
                view.who.user, name, content, against.filename, content_b, leaderboard or None, one, rounds
            )
        else:
            receipt = service.submit(view.who.user, name, content, leaderboard or None, picked, mode or None,
                                     force=force, licence=license or None)  # fmt: skip
    except UserError as exc:
        return _submit_form(
            request,
            view,
            service,
            leaderboard,
            status=422,
            error=exc.message,
            picked=devices,
            mode=mode,
            rounds=rounds,
            force=force,
            code=code,
            file_name=file_name,
            licence=license,
        )
    # The same file a moment ago: its earlier submission, saying so (a newcomer's second try showed it silently).
    again = "?duplicate=1" if receipt.duplicate else ""
    return RedirectResponse(f"/submissions/{receipt.submission_id}{again}", status_code=303)
