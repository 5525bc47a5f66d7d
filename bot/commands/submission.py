"""``/submission …``: an author's archive consent for one of their submissions (issue 34), from Discord.

``/submission license ID LICENCE`` chooses the licence (until the entry is published; then it is refused, naming
``/submission withdraw``), ``/submission withdraw ID`` takes a published entry out of the archive and every later
export. Both make the same service call as the web's ``PUT /api/v1/submissions/{id}/license`` and
``POST …/license/withdraw`` (``LeaderboardService.set_submission_licence`` / ``withdraw_from_archive``): the author
only (someone else's submission answers like a missing one), replies only its user sees.
"""

from __future__ import annotations

from datetime import datetime

import discord
from discord import app_commands

from bot.calls import call, user_ref
from bot.context import BotContext
from bot.cooldowns import spend
from bot.limits import Reply
from bot.replies import defer, send
from leaderboards.archive import LicenceView
from leaderboards.licences import CHOICES as LICENCE_CHOICES
from leaderboards.licences import NONE


def _when(at: datetime) -> str:
    return f"<t:{int(at.timestamp())}:f>"


def licence_text(view: LicenceView, *, withdrew: bool = False) -> str:
    """What an author reads about one submission's archive licence after changing it."""
    head = f"Submission #{view.submission_id}"
    if withdrew:
        return (
            f"{head} is withdrawn from the archive: it is no longer published and is left out of every later export "
            f"(exports already downloaded cannot be recalled). Choosing a licence again with `/submission license` "
            "is consent again."
        )
    if view.licence == NONE:
        return f"{head}: licence none. Its code is never published."
    if view.published:
        return f"{head}: licence {view.licence}. It is published in the open archive."
    at = f"when its leaderboard publishes, {_when(view.publishes_at)}" if view.publishes_at else "never"
    return (
        f"{head}: licence {view.licence}. It will be published in the open archive {at}; until then you may change "
        "the licence, after that only withdraw it (`/submission withdraw`)."
    )


class SubmissionCommands(app_commands.Group):
    """``/submission license`` and ``/submission withdraw``."""

    def __init__(self, ctx: BotContext) -> None:
        super().__init__(name="submission", description="Your submissions' archive licence")
        self.ctx = ctx

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        """Each command spends one of the user's common command budget, like ``/leaderboard`` ones."""
        spend(self.ctx.cooldowns, self.ctx.settings, "command", interaction)
        return True

    @app_commands.command(name="license", description="Choose one of your submissions' archive licence")
    @app_commands.describe(
        submission_id="The submission number (#N in its status message)",
        license="none: never published; otherwise published under it when its leaderboard allows",
    )
    @app_commands.choices(license=[app_commands.Choice(name=c, value=c) for c in LICENCE_CHOICES])
    async def license(self, interaction: discord.Interaction, submission_id: int, license: str) -> None:
        await defer(interaction)
        view = await call(self.ctx.service.set_submission_licence, submission_id, user_ref(interaction), license)
        await send(interaction, Reply(content=licence_text(view)))

    @app_commands.command(name="withdraw", description="Take one of your submissions out of the open archive")
    @app_commands.describe(submission_id="The submission number (#N in its status message)")
    async def withdraw(self, interaction: discord.Interaction, submission_id: int) -> None:
        await defer(interaction)
        view = await call(self.ctx.service.withdraw_from_archive, submission_id, user_ref(interaction))
        await send(interaction, Reply(content=licence_text(view, withdrew=True)))
