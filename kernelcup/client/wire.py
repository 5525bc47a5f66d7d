"""The API's models and reward records as ``kernelcup.client`` uses them, from wherever this install has them.

- The full ``kernelcup`` distribution (the server's): the server's own modules, ``web.schemas`` (what the server
  sends is what the client parses), ``runners.contract`` and ``kernelcup.outcomes``, so the CLI, the MCP server and
  the client share one class per shape.
- The light ``kernelcup-client`` distribution (``pip install kernelcup-client``: ``kernelcup/client/pyproject.toml``):
  the copies of those modules its build puts in ``kernelcup.client._wire`` (``kernelcup/client/build_backend/``),
  with their imports pointed there. It installs ``kernelcup`` as a namespace package holding ``client`` alone, so
  nothing here imports ``web``, ``leaderboards`` or ``runners`` (which it lacks, and whose generic names another
  package may own) and nothing of the server's dependencies (FastAPI, SQLAlchemy, PyTorch).

Which one: the copies exist only in the light distribution (a checkout and the full distribution have no ``_wire``
folder; the build writes it into the wheel, never into the source tree). Install one of the two in an environment,
not both: the full ``kernelcup`` contains this client and ``kernelcup`` CLI's remote mode.
``tests/kernelcup/test_client_dist.py`` builds the light wheel, installs it alone in a fresh virtual environment and
checks that it imports none of those packages while it talks to a served kernelcup.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

__all__ = [
    "API_PREFIX",
    "LIGHT",
    "BatchItemOut",
    "BatchOut",
    "BudgetOut",
    "CodeOut",
    "ComparisonOut",
    "HistoryOut",
    "InviteOut",
    "JoinedOut",
    "LateEntryOut",
    "LatePageOut",
    "LeaderboardDetailOut",
    "LeaderboardOut",
    "LeaderboardUpdateOut",
    "MeOut",
    "MemberOut",
    "Mode",
    "NewInviteOut",
    "ProblemFolderOut",
    "ProgressOut",
    "RankingOut",
    "ReplayReportOut",
    "Reward",
    "StandingsOut",
    "StatsOut",
    "SubmissionOut",
    "SubmissionReceiptOut",
    "SubmissionRewardsOut",
    "SubmissionStatusOut",
    "SubmissionSummaryOut",
    "TemplateOut",
    "UserOut",
    "default_reward",
    "refused",
    "reward_of",
    "summarize",
]

LIGHT: bool = (Path(__file__).parent / "_wire" / "__init__.py").is_file()
"""True in the light distribution (its wheel alone carries ``kernelcup/client/_wire``)."""

if TYPE_CHECKING:  # (the names, for type checkers; at run time they come from _MODULES below)
    from kernelcup.outcomes import Reward, default_reward, refused, reward_of, summarize
    from runners.contract import Mode
    from web.schemas import (
        API_PREFIX,
        BatchItemOut,
        BatchOut,
        BudgetOut,
        CodeOut,
        ComparisonOut,
        HistoryOut,
        InviteOut,
        JoinedOut,
        LateEntryOut,
        LatePageOut,
        LeaderboardDetailOut,
        LeaderboardOut,
        LeaderboardUpdateOut,
        MemberOut,
        MeOut,
        NewInviteOut,
        ProblemFolderOut,
        ProgressOut,
        RankingOut,
        ReplayReportOut,
        StandingsOut,
        StatsOut,
        SubmissionOut,
        SubmissionReceiptOut,
        SubmissionRewardsOut,
        SubmissionStatusOut,
        SubmissionSummaryOut,
        TemplateOut,
        UserOut,
    )
else:
    import importlib

    _BASE = "kernelcup.client._wire." if LIGHT else ""
    """The light distribution's copies (there is no such package in a checkout), else the server's own modules."""
    _MODULES = [importlib.import_module(_BASE + m) for m in ("web.schemas", "runners.contract", "kernelcup.outcomes")]
    for _name in __all__:
        if _name != "LIGHT":
            globals()[_name] = next(getattr(m, _name) for m in _MODULES if hasattr(m, _name))
