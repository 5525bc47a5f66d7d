"""A field is declared once: each API model built from a core view (``Model.model_validate(view)``, which reads the
view's attributes and silently drops any the model lacks) has exactly the view's fields, except those listed below
with the reason they are left out of the API (``NOT_EXPOSED``) or exist only in it (``API_ONLY``)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest
from pydantic import BaseModel

from leaderboards import (
    archive,
    audit,
    batches,
    budgets,
    competition,
    events,
    holdout,
    invites,
    late,
    moderation,
    public_problem,
    rejudge,
    replay,
    results,
    retiming,
    stats,
    sync,
)
from web import schemas
from web.routes import archive as archive_api
from web.routes import batches as batches_api
from web.routes import budgets as budgets_api
from web.routes import invites as invites_api
from web.routes import late as late_api
from web.routes import moderation as moderation_api
from web.routes import standings as standings_api

WEB = Path(schemas.__file__).resolve().parent

PAIRS: tuple[tuple[type[BaseModel], type], ...] = (
    (schemas.LeaderboardOut, results.LeaderboardSummary),
    (schemas.ProblemFolderOut, public_problem.PublicFolder),
    (schemas.TemplateOut, results.TemplateFile),
    (schemas.RankingEntryOut, results.RankingEntry),
    (schemas.RankingOut, results.Ranking),
    (schemas.HistoryPoint, results.HistoryPoint),
    (schemas.HistorySeriesOut, results.HistorySeries),
    (schemas.HistoryOut, results.ScoreHistory),
    (schemas.JobReceiptOut, results.JobReceipt),
    (schemas.SubmissionReceiptOut, results.SubmissionReceipt),
    (schemas.JobEventOut, results.JobEventView),
    (schemas.JobOut, results.JobView),
    (schemas.ComparisonOut, results.ComparisonView),
    (schemas.SubmissionStatusOut, results.SubmissionStatus),
    (schemas.PublicResultOut, results.PublicResult),
    (schemas.SubmissionOut, results.SubmissionDetails),
    (schemas.SubmissionSummaryOut, results.SubmissionSummary),
    (schemas.CodeOut, results.SubmissionCodeView),
    (schemas.ProgressOut, events.ProgressUpdate),
    (schemas.TokenOut, results.TokenView),
    (schemas.NewTokenOut, results.NewToken),
    (schemas.SyncItemOut, results.SyncItem),
    (schemas.SyncReportOut, sync.SyncReport),
    (schemas.LeaderboardUpdateOut, results.LeaderboardUpdate),
    (schemas.UserOut, results.UserView),
    (schemas.WorkerOut, results.WorkerView),
    (schemas.QueueStatsOut, results.QueueStats),
    (schemas.ImpossibleRunOut, results.ImpossibleRun),
    (schemas.UsageStatsOut, results.UsageStats),
    (schemas.ReadinessOut, stats.Readiness),
    (archive_api.ArchiveCaseOut, archive.ArchiveCase),
    (archive_api.ArchiveSpeedupOut, archive.ArchiveSpeedup),
    (archive_api.ArchiveEntryOut, archive.ArchiveEntry),
    (archive_api.ArchivePageOut, archive.ArchivePage),
    (archive_api.LicenceOut, archive.LicenceView),
    (archive_api.ArchiveAccountOut, archive.ArchiveAccountView),
    (archive_api.SimilarKernelOut, archive.SimilarKernel),
    (archive_api.NearCloneOut, archive.NearClone),
    (schemas.InviteOut, invites.InviteView),
    (schemas.NewInviteOut, invites.NewInvite),
    (schemas.JoinedOut, invites.Joined),
    (schemas.MemberOut, invites.MemberView),
    (schemas.LateJobOut, late.LateJob),
    (schemas.LateEntryOut, late.LateEntry),
    (schemas.LatePageOut, late.LatePage),
    (moderation_api.ModerationOut, moderation.ModerationView),
    (moderation_api.AuditEntryOut, audit.AuditEntry),
    (moderation_api.AuditPageOut, audit.AuditPage),
    (moderation_api.RejudgeOut, rejudge.RejudgeView),
    (moderation_api.AlertOut, rejudge.AlertView),
    (schemas.StandingRowOut, competition.StandingRow),
    (schemas.ExcludedRowOut, competition.ExcludedRow),
    (schemas.StandingsOut, competition.StandingsView),
    (standings_api.CoverageOut, holdout.Coverage),
    (standings_api.SystemTestsOut, holdout.SystemTestsQueued),
    (standings_api.RetimeQueuedOut, retiming.RetimeQueued),
    (standings_api.MachineFigureOut, retiming.MachineFigure),
    (standings_api.RetimedRowOut, retiming.RetimedRow),
    (standings_api.RetimingOut, retiming.RetimingView),
    (schemas.BatchItemOut, batches.BatchItemView),
    (schemas.BatchOut, batches.BatchView),
    (schemas.DeviceRewardOut, batches.DeviceReward),
    (schemas.SubmissionRewardsOut, batches.SubmissionRewards),
    (schemas.BudgetOut, budgets.BudgetView),
    (schemas.ReplayCaseOut, replay.ReplayCase),
    (schemas.ReplayDeviceOut, replay.ReplayDevice),
    (schemas.ReplayReportOut, replay.ReplayReport),
)
"""(API model, the core view it is built from), nested models included."""

NOT_EXPOSED: dict[tuple[type, str], str] = {
    (results.LeaderboardSummary, "creator"): "the admin who created the board: audit data (the audit log has it)",
    (results.RankingEntry, "user_id"): "the database's id of a person: the API names people by user_name",
    (results.JobView, "ranked_note"): "the author's only (the bot shows it to them alone); a job's status is public",
    (results.JobView, "ranked_flagged"): "for moderators: it goes to the moderation queue, not to the public",
    (results.SubmissionDetails, "code"): "served by its own route (GET .../code), which checks who may read it",
    (results.LeaderboardUpdate, "created"): "set only when problems sync creates a board; this route only updates one",
    (results.UserView, "discord_id"): "a Discord account's id: personal data the API does not hand out",
    (late.LateEntry, "admitted_reason"): "shown inside `note` ('late, admitted by X because Y')",
    (results.SubmissionReceipt, "visible"): "tells the bot to show a hidden board's status to its author only; the "
    "API answers the author alone anyway",
}
"""Fields of a core view that the API leaves out on purpose, each with why."""

API_ONLY: dict[tuple[type[BaseModel], str], str] = {
    (schemas.SubmissionReceiptOut, "links"): "URLs to follow the submission: only the HTTP surface knows its URLs",
    (schemas.SubmissionOut, "links"): "URLs to follow the submission: only the HTTP surface knows its URLs",
    (schemas.PublicResultOut, "ncu_report_url"): "the report is too big for JSON: this is where its own route is",
    (schemas.PublicResultOut, "ncu_report_bytes"): "the size of the report that ncu_report_url downloads",
    (schemas.BatchOut, "links"): "URLs to follow the batch: only the HTTP surface knows its URLs",
}
"""Fields only the API has (the route fills them in), each with why."""


def view_fields(view: type) -> set[str]:
    """The data a view holds: its declared fields (what ``from_attributes`` would drop if the model lacks them)."""
    if dataclasses.is_dataclass(view):
        return {f.name for f in dataclasses.fields(view)}
    if issubclass(view, BaseModel):
        return set(view.model_fields)
    raise TypeError(f"{view.__qualname__} is neither a dataclass nor a pydantic model")


def view_properties(view: type) -> set[str]:
    """What a view derives from its fields (``accepted``, ``done``): an API field may be read from one."""
    return {name for name, value in inspect.getmembers(view) if isinstance(value, property) and name[0] != "_"}


def model_fields(model: type[BaseModel]) -> set[str]:
    """The attribute each field of an API model is read from (its alias where it has one: ``schema_`` <- schema)."""
    return {
        field.validation_alias if isinstance(field.validation_alias, str) else field.alias or name
        for name, field in model.model_fields.items()
    }


def differences(model: type[BaseModel], view: type) -> tuple[list[str], list[str]]:
    """The view's fields the model drops, and the model's fields the view lacks, less the listed exceptions."""
    in_view, in_model = view_fields(view), model_fields(model)
    left_out = sorted(f for f in in_view - in_model if (view, f) not in NOT_EXPOSED)
    only_api = sorted(f for f in in_model - in_view - view_properties(view) if (model, f) not in API_ONLY)
    return left_out, only_api


@pytest.mark.parametrize(("model", "view"), PAIRS, ids=lambda t: t.__qualname__)
def test_an_api_model_has_its_views_fields(model: type[BaseModel], view: type) -> None:
    left_out, only_api = differences(model, view)
    assert not left_out, (
        f"{view.__qualname__} has {left_out} and {model.__qualname__} drops them silently: expose them in the "
        "model, or list them in NOT_EXPOSED with the reason"
    )
    assert not only_api, (
        f"{model.__qualname__} has {only_api}, which {view.__qualname__} lacks: add them to the view (declared "
        "once, in the core), or list them in API_ONLY with the reason"
    )


def test_a_field_added_to_a_view_alone_is_caught() -> None:
    @dataclasses.dataclass(frozen=True)
    class View:
        score_ns: float
        ranked_score_ns: float | None

        @property
        def scored(self) -> bool:
            return self.ranked_score_ns is not None

    class Out(BaseModel):
        score_ns: float
        scored: bool
        link: str = ""

    assert differences(Out, View) == (["ranked_score_ns"], ["link"])
    dropped = Out.model_validate(View(1.0, 2.0), from_attributes=True).model_dump()
    assert "ranked_score_ns" not in dropped, "what this guards against: from_attributes drops it without a word"


def test_every_listed_exception_is_still_a_real_difference() -> None:
    views = {view: model for model, view in PAIRS}
    stale = [f"{v.__qualname__}.{f}" for v, f in NOT_EXPOSED if v not in views or f not in view_fields(v)
             or f in model_fields(views[v])]  # fmt: skip
    models = {model: view for model, view in PAIRS}
    stale += [f"{m.__qualname__}.{f}" for m, f in API_ONLY if m not in models or f not in model_fields(m)
              or f in view_fields(models[m]) | view_properties(models[m])]  # fmt: skip
    assert not stale, f"listed as a difference but no longer one (remove them from the list): {stale}"


ROUTE_MODULES = (schemas, archive_api, invites_api, late_api, moderation_api, standings_api, batches_api, budgets_api)
"""The modules whose API models the walk below checks."""


def test_every_model_a_route_validates_from_a_view_is_paired() -> None:
    """Every ``X.model_validate(...)`` under web/ of a model in web/schemas.py or web/routes/ is checked above."""
    paired = {model.__name__ for model, _ in PAIRS}
    ours = {
        name
        for module in ROUTE_MODULES
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, BaseModel)
    }
    validated: set[str] = set()
    for path in WEB.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "model_validate" and isinstance(node.value, ast.Name):
                validated.add(node.value.id)
    unpaired = sorted((validated & ours) - paired)
    assert not unpaired, f"built from a core view but not in PAIRS: {unpaired}"
