"""``/admin …``: problem sync, leaderboard changes, bans, rate limits, statistics, moderation, invite codes and the
members of hidden leaderboards. Admins only.

The guard is one check on the whole group (``check_admin``): in a served server (``DISCORD_GUILD_IDS``), members
holding one of the admin roles (``DISCORD_ADMIN_ROLE_IDS``), compared by id, never by name, may use it;
everyone else gets a polite refusal and nothing happens. Each command then makes one service call and says what
changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import discord
from discord import app_commands

from bot.calls import call, user_ref
from bot.commands.leaderboard import MAX_CHOICES, parse_devices
from bot.context import BotContext
from bot.invites import invite_line, invites_text, member_line, members_text, new_invite_text
from bot.limits import Reply
from bot.moderation import audit_text, moderation_text, rejudge_text
from bot.replies import Refused, defer, send
from bot.reports import queue_text, timestamp, usage_text
from bot.settings import BotSettings
from bot.standings import retime_queued_text, retiming_text
from leaderboards.dates import DATE_HELP, parse_when
from leaderboards.errors import InvalidChange
from leaderboards.invites import MAX_INVITE_DAYS, MAX_INVITE_USES
from leaderboards.moderation import ModerationState
from leaderboards.paths import inside
from leaderboards.problems import Problem, ProblemFormatError, load_problem
from leaderboards.results import UserRef
from leaderboards.retiming import DEFAULT_RETIME_ROUNDS, MAX_RETIME_ROUNDS
from leaderboards.sync import SyncAction, SyncReport, check_one_problem, sync_problem_set

NOT_ADMIN = "Sorry, only this server's kernelcup admins can use admin commands. Nothing was changed."
ID_MAX = 2**63 - 1
AUDIT_PAGE = 15
"""Audit entries per /admin audit reply (a Discord message holds 2,000 characters)."""


def is_admin_here(interaction: discord.Interaction, settings: BotSettings) -> bool:
    """Whether the interaction comes from a served server and its member holds an admin role there (by id)."""
    if interaction.guild_id is None or interaction.guild_id not in settings.guild_ids:
        return False
    roles = getattr(interaction.user, "roles", None) or []
    return any(r.id in settings.admin_role_ids and r.guild.id == interaction.guild_id for r in roles)


def check_admin(interaction: discord.Interaction, settings: BotSettings) -> bool:
    """The group's check: admins pass; anyone else gets a polite refusal (``Refused``) and nothing happens."""
    if interaction.guild is None:
        raise Refused("Admin commands work in the server, not in direct messages.")
    if not is_admin_here(interaction, settings):
        raise Refused(NOT_ADMIN)
    return True


def actor(interaction: discord.Interaction) -> str:
    return f"discord:{interaction.user.id} ({interaction.user.name})"


def _load(bot: BotContext, text: str | None, devices: Sequence[str], skip_run: bool) -> Problem | None:
    """The problem folder ``text`` (None: no new problem), checked as ``/admin sync`` checks a set: the devices
    against the runner's routes, and the reference on its own cases unless ``skip_run``."""
    try:
        problem = load_problem(inside(bot.settings.problems_dir, text)) if text else None
        check = bot.reference_check() if bot.reference_check is not None and not skip_run else None
        check_one_problem(problem, devices, check=check, device_check=bot.device_check)
    except ProblemFormatError as exc:
        raise InvalidChange(f"Not done, the problem or its devices have errors:\n{exc}") from None
    return problem


def sync_text(report: SyncReport) -> str:
    lines = ["**Problem sync**"]
    for item in report.items:
        line = f"**{item.leaderboard}**: {item.action.value}"
        if item.changed:  # with old and new values where the sync gives them (the set file is the source of truth)
            line += f" ({', '.join(report.details(item))})"
        if item.ranking_reset:
            line += ", ranking started over"
        if item.action is SyncAction.NEEDS_FORCE:
            line += f": {'; '.join(item.reasons)}."
        lines.append(line)
    lines.extend(f"⚠️ {w.field}: {w.message}" for w in report.warnings)
    if report.applied:
        lines.append("Applied.")
    else:
        lines.append(
            "**Nothing was applied** (a set is applied whole or not at all). Run again with force:True to apply it; "
            "rankings whose benchmarks or reference changed start over."
        )
    return "\n".join(lines)


def _sync(bot: BotContext, path: str | None, force: bool, skip_run: bool, who: str) -> str:
    root = bot.settings.problems_dir
    target = inside(root, path or bot.settings.problem_set)
    check = None
    if bot.reference_check is not None and not skip_run:
        try:
            check = bot.reference_check()
        except Exception as exc:  # e.g. no sandboxed runner on this machine: say so, sync nothing
            raise InvalidChange(
                f"The problems' references cannot be run here ({exc}). Nothing was synced; run "
                "`kernelcup problems validate --run` where they can, then sync with skip_run:True."
            ) from None
    try:
        report = sync_problem_set(
            bot.service, target, force=force, actor=who, check=check, device_check=bot.device_check
        )
    except ProblemFormatError as exc:
        raise InvalidChange(f"The problem set has errors, nothing was synced:\n{exc}") from None
    return sync_text(report)


@app_commands.guild_only()
class AdminCommands(app_commands.Group):
    def __init__(self, ctx: BotContext) -> None:
        super().__init__(name="admin", description="Run the competition (admins only)")
        self.ctx = ctx

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        return check_admin(interaction, self.ctx.settings)

    async def _leaderboards(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Every leaderboard, hidden ones too, for admins; nothing for anyone else (discord.py runs no group check
        before autocomplete, so the role is checked here)."""
        if not is_admin_here(interaction, self.ctx.settings):
            return []
        boards = await call(self.ctx.service.list_leaderboards, include_hidden=True)
        current = current.lower()
        names = sorted(b.name for b in boards if current in b.name.lower())
        return [app_commands.Choice(name=n, value=n) for n in names[:MAX_CHOICES]]

    @app_commands.command(name="sync", description="Create/update leaderboards from a problem set")
    @app_commands.describe(
        path="A problem-set file inside the problems folder (default: the configured one)",
        force="Apply changes that make old scores incomparable (their ranking starts over)",
        skip_run="Do not run the references of new or changed problems first",
    )
    async def sync(
        self, interaction: discord.Interaction, path: str | None = None, force: bool = False, skip_run: bool = False
    ) -> None:
        await defer(interaction)
        text = await call(_sync, self.ctx, path, force, skip_run, actor(interaction))
        await send(interaction, Reply(content=text))

    @app_commands.command(name="create", description="Create a leaderboard from a problem folder")
    @app_commands.describe(
        problem="The problem folder, inside the problems folder (e.g. vectoradd)",
        deadline=DATE_HELP,
        devices="Device names, separated by commas (e.g. H100,cpu)",
        name="The leaderboard's name (default: the folder's name)",
        skip_run="Do not run the problem's reference on its own cases first",
    )
    async def create(
        self,
        interaction: discord.Interaction,
        problem: str,
        deadline: str,
        devices: str,
        name: str | None = None,
        skip_run: bool = False,
    ) -> None:
        await defer(interaction)
        bot = self.ctx
        chosen = parse_devices(devices) or []
        loaded = await call(_load, bot, problem, chosen, skip_run)
        summary = await call(
            bot.service.create_leaderboard,
            loaded,
            name=name,
            deadline=parse_when(deadline),
            devices=chosen,
            creator=actor(interaction),
        )
        await send(
            interaction,
            Reply(
                content=f"Created **{summary.name}** on {', '.join(summary.devices)}, "
                f"open until {timestamp(summary.deadline, 'f')}."
            ),
        )

    @app_commands.command(
        name="update", description="Rename a leaderboard, or change its deadline, devices, visibility or problem"
    )
    @app_commands.describe(
        name="A new name for it",
        problem="Reload the problem from this folder (inside the problems folder)",
        deadline=DATE_HELP,
        devices="Device names, separated by commas",
        visible="Show it in /leaderboard list",
        force="Confirm a change to a live leaderboard (rename, deadline in the past) or one that resets its ranking",
        skip_run="With a new problem: do not run its reference on its own cases first",
    )
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def update(
        self,
        interaction: discord.Interaction,
        leaderboard: str,
        name: str | None = None,
        problem: str | None = None,
        deadline: str | None = None,
        devices: str | None = None,
        visible: bool | None = None,
        force: bool = False,
        skip_run: bool = False,
    ) -> None:
        await defer(interaction)
        bot = self.ctx
        chosen = parse_devices(devices)
        loaded = await call(_load, bot, problem, chosen or (), skip_run)
        # On a live leaderboard a rename or a deadline in the past is refused with what it affects (the error's
        # message, shown as it is); running the command again with force: True confirms it.
        result = await call(
            bot.service.update_leaderboard,
            leaderboard,
            new_name=name,
            problem=loaded,
            deadline=parse_when(deadline) if deadline else None,
            devices=chosen,
            visible=visible,
            force=force,
            actor=actor(interaction),
        )
        if not result.changed:
            text = f"**{leaderboard}**: nothing to change."
        else:
            renamed = f" (now **{result.leaderboard.name}**)" if result.leaderboard.name != leaderboard else ""
            text = f"**{leaderboard}**{renamed} updated: {', '.join(result.changed)}."
            if result.ranking_reset:
                text += " Its ranking started over (old scores are not comparable)."
        await send(interaction, Reply(content=text))

    @app_commands.command(name="delete", description="Delete a leaderboard with all its submissions")
    @app_commands.describe(confirm="Type the leaderboard's name again to confirm")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def delete(self, interaction: discord.Interaction, leaderboard: str, confirm: str) -> None:
        await defer(interaction)
        if confirm != leaderboard:
            raise InvalidChange(f"Not deleted: type the name {leaderboard!r} exactly in 'confirm' to delete it.")
        await call(self.ctx.service.delete_leaderboard, leaderboard, actor=actor(interaction))
        await send(interaction, Reply(content=f"Deleted **{leaderboard}** and all its submissions."))

    @app_commands.command(name="pause", description="Stop accepting submissions to a leaderboard")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def pause(self, interaction: discord.Interaction, leaderboard: str) -> None:
        await defer(interaction)
        await call(self.ctx.service.pause, leaderboard, actor=actor(interaction))
        await send(interaction, Reply(content=f"**{leaderboard}** is paused: new submissions are refused."))

    @app_commands.command(name="resume", description="Accept submissions to a paused leaderboard again")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def resume(self, interaction: discord.Interaction, leaderboard: str) -> None:
        await defer(interaction)
        await call(self.ctx.service.resume, leaderboard, actor=actor(interaction))
        await send(interaction, Reply(content=f"**{leaderboard}** accepts submissions again."))

    @app_commands.command(name="ban", description="Refuse a user's submissions and hide them from the rankings")
    async def ban(self, interaction: discord.Interaction, user: discord.User, reason: str | None = None) -> None:
        await defer(interaction)
        await call(self.ctx.service.ban_user, user_ref(user), reason=reason or "", actor=actor(interaction))
        await send(interaction, Reply(content=f"{user.mention} is banned" + (f": {reason}" if reason else ".")))

    @app_commands.command(name="unban", description="Lift a ban (their rankings come back)")
    async def unban(self, interaction: discord.Interaction, user: discord.User) -> None:
        await defer(interaction)
        await call(self.ctx.service.unban_user, user_ref(user), actor=actor(interaction))
        await send(interaction, Reply(content=f"{user.mention} is no longer banned."))

    @app_commands.command(name="delete-submission", description="Delete a submission (it leaves every ranking)")
    async def delete_submission(self, interaction: discord.Interaction, submission_id: int) -> None:
        await defer(interaction)
        await call(self.ctx.service.delete_submission, submission_id, actor=actor(interaction))
        await send(interaction, Reply(content=f"Submission #{submission_id} is deleted and left the rankings."))

    @app_commands.command(name="rate-limit", description="Submissions per user per hour on a leaderboard")
    @app_commands.describe(per_hour="Submissions per hour; leave out to use the server-wide default")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def rate_limit(
        self,
        interaction: discord.Interaction,
        leaderboard: str,
        per_hour: app_commands.Range[int, 1, 10_000] | None = None,
    ) -> None:
        await defer(interaction)
        await call(self.ctx.service.set_rate_limit, leaderboard, per_hour, actor=actor(interaction))
        what = f"{per_hour} submissions per user per hour" if per_hour else "the server-wide default"
        await send(interaction, Reply(content=f"**{leaderboard}** now allows {what}."))

    @app_commands.command(name="moderate", description="Flag, quarantine, judge hacked or clear an entry")
    @app_commands.describe(
        submission_id="The entry's submission id",
        state="quarantined and hacked leave every ranking; cleared comes back",
        reason="Why: the author reads it, the audit log keeps it",
    )
    @app_commands.choices(state=[app_commands.Choice(name=s.value, value=s.value) for s in ModerationState])
    async def moderate(
        self,
        interaction: discord.Interaction,
        submission_id: app_commands.Range[int, 1, ID_MAX],
        state: str,
        reason: app_commands.Range[str, 1, 1000],
    ) -> None:
        await defer(interaction)
        view = await call(self.ctx.service.moderate, submission_id, state, actor=actor(interaction), reason=reason)
        await send(interaction, Reply(content=moderation_text(view)))

    @app_commands.command(name="audit", description="The audit log: who did what, when")
    @app_commands.describe(
        action="Only this action (e.g. moderate, ban)", by="Only this actor (e.g. discord:123 (name))",
        days="Only the last N days", before="Entries older than this id (paging)",
    )  # fmt: skip
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def audit(
        self,
        interaction: discord.Interaction,
        leaderboard: str | None = None,
        action: str | None = None,
        by: str | None = None,
        days: app_commands.Range[int, 1, 3650] | None = None,
        before: app_commands.Range[int, 1, ID_MAX] | None = None,
    ) -> None:
        await defer(interaction)
        since = datetime.now(UTC) - timedelta(days=days) if days is not None else None
        page = await call(self.ctx.service.audit_log, actor=by, action=action, leaderboard=leaderboard,
                          since=since, before=before, limit=AUDIT_PAGE)  # fmt: skip
        await send(interaction, Reply(content=audit_text(page)))

    @app_commands.command(name="rejudge", description="Run the best entries again, below everyone's submissions")
    @app_commands.describe(top="How many entries per device (default 10)", device="Only this device")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def rejudge(
        self,
        interaction: discord.Interaction,
        leaderboard: str,
        top: app_commands.Range[int, 1, 1000] = 10,
        device: str | None = None,
    ) -> None:
        await defer(interaction)
        queued = await call(self.ctx.service.queue_rejudges, leaderboard, actor=actor(interaction), top=top,
                            device=device)  # fmt: skip
        await send(interaction, Reply(content=rejudge_text(leaderboard, queued)))

    @app_commands.command(name="retime", description="Re-time the best entries side by side on every live machine")
    @app_commands.describe(
        top="How many entries per device (default 10)",
        rounds="Interleaved rounds (default 6)",
        device="Only this device",
    )
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def retime(
        self,
        interaction: discord.Interaction,
        leaderboard: str,
        top: app_commands.Range[int, 2, 1000] = 10,
        rounds: app_commands.Range[int, 2, MAX_RETIME_ROUNDS] = DEFAULT_RETIME_ROUNDS,
        device: str | None = None,
    ) -> None:
        await defer(interaction)
        queued = await call(self.ctx.service.queue_retiming, leaderboard, actor=actor(interaction), top=top,
                            rounds=rounds, device=device)  # fmt: skip
        await send(interaction, Reply(content=retime_queued_text(leaderboard, queued)))

    @app_commands.command(name="retiming", description="The latest re-timing: pooled scores, ties, each machine")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def retiming(self, interaction: discord.Interaction, leaderboard: str, device: str | None = None) -> None:
        await defer(interaction)
        view = await call(self.ctx.service.retiming, leaderboard, device)
        await send(interaction, Reply(content=retiming_text(view)))

    @app_commands.command(name="invite-create", description="A code that lets people into a hidden leaderboard")
    @app_commands.describe(
        uses="How many people may join with it (default 1)",
        days="How many days it stays valid (default 7)",
        never_expires="Valid until withdrawn with /admin invite-revoke",
    )
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def invite_create(
        self,
        interaction: discord.Interaction,
        leaderboard: str,
        uses: app_commands.Range[int, 1, MAX_INVITE_USES] = 1,
        days: app_commands.Range[float, 0.001, float(MAX_INVITE_DAYS)] = 7.0,
        never_expires: bool = False,
    ) -> None:
        await defer(interaction)  # ephemeral: the code is shown once, to this admin only
        expires = None if never_expires else timedelta(days=days)
        new = await call(self.ctx.service.create_invite, leaderboard, actor=actor(interaction), uses=uses,
                         expires_in=expires)  # fmt: skip
        await send(interaction, Reply(content=new_invite_text(new)), ephemeral=True)

    @app_commands.command(name="invites", description="Invite codes: their number, prefix, uses and expiry")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def invites(self, interaction: discord.Interaction, leaderboard: str | None = None) -> None:
        await defer(interaction)
        listed = await call(self.ctx.service.list_invites, leaderboard)
        await send(interaction, Reply(content=invites_text(listed, leaderboard)))

    @app_commands.command(name="invite-revoke", description="Withdraw an invite code (its members stay in)")
    @app_commands.describe(invite_id="The invite's number (#N in /admin invites)")
    async def invite_revoke(
        self, interaction: discord.Interaction, invite_id: app_commands.Range[int, 1, ID_MAX]
    ) -> None:
        await defer(interaction)
        invite = await call(self.ctx.service.revoke_invite, invite_id, actor=actor(interaction))
        await send(interaction, Reply(content=f"Withdrawn (nobody else joins with it): {invite_line(invite)}"))

    @app_commands.command(name="members", description="Who is in a hidden leaderboard, and by which invite")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def members(self, interaction: discord.Interaction, leaderboard: str) -> None:
        await defer(interaction)
        listed = await call(self.ctx.service.board_members, leaderboard)
        await send(interaction, Reply(content=members_text(leaderboard, listed)))

    @app_commands.command(name="member-add", description="Let someone into a hidden leaderboard without a code")
    @app_commands.describe(reason="Why: the audit log keeps it")
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def member_add(
        self, interaction: discord.Interaction, leaderboard: str, user: discord.User, reason: str = ""
    ) -> None:
        await defer(interaction)
        member = await call(self.ctx.service.add_member, leaderboard, user_ref(user), actor=actor(interaction),
                            reason=reason)  # fmt: skip
        await send(interaction, Reply(content=member_line(member)))

    @app_commands.command(name="member-remove", description="Take a member out of a hidden leaderboard")
    @app_commands.describe(
        user="The member as /admin members shows them: discord:ID or a local name", reason="Why: the audit log keeps it"
    )
    @app_commands.autocomplete(leaderboard=_leaderboards)
    async def member_remove(
        self,
        interaction: discord.Interaction,
        leaderboard: str,
        user: app_commands.Range[str, 1, 200],
        reason: str = "",
    ) -> None:
        await defer(interaction)
        member = await call(self.ctx.service.remove_member, leaderboard, UserRef.parse(user.strip()),
                            actor=actor(interaction), reason=reason)  # fmt: skip
        await send(interaction, Reply(content=f"Removed (the board is hidden from them again): {member_line(member)}"))

    @app_commands.command(name="stats", description="The queue, the workers and usage")
    @app_commands.describe(days="Usage of the last N days (default: all time)")
    async def stats(
        self, interaction: discord.Interaction, days: app_commands.Range[int, 1, 3650] | None = None
    ) -> None:
        await defer(interaction)
        service = self.ctx.service
        since = datetime.now(UTC) - timedelta(days=days) if days is not None else None
        queue = await call(service.queue_stats)
        usage = await call(service.usage_stats, since)
        clones = await call(service.near_clones)  # issue 34: the top entries' near clones by other accounts
        shown = [f"- {c.text}" for c in clones[:5]] or ["none by another account at 80% or more"]
        more = [f"... and {len(clones) - 5} more on the web's /admin page"] if len(clones) > 5 else []
        near = "\n".join(["**Near clones of the top entries**", *shown, *more])
        await send(interaction, Reply(content=queue_text(queue) + "\n\n" + usage_text(usage) + "\n\n" + near))
