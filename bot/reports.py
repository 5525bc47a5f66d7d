"""Pure renderers of the service's answers into Discord replies (text, embeds, files).

Each function takes a result object of ``leaderboards.results`` (and plain values) and returns a
``Reply`` or text; none of them talks to Discord or the service, so each is tested on its own.
Limits are applied later by ``bot.limits.fit``.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from datetime import datetime

import discord

from bot.limits import EMBED_DESCRIPTION_CHARS, FILES_PER_MESSAGE, File, Reply, cut
from bot.render import FAIL, PASS, WAIT, failure_excerpt, format_case, format_ns, logs_text, one_line, result_lines
from leaderboards.formatting import outcome_text, score_text
from leaderboards.results import (
    ComparisonView,
    JobStatus,
    JobView,
    LeaderboardSummary,
    NewToken,
    QueueStats,
    RankChangeView,
    Ranking,
    SubmissionDetails,
    SubmissionReceipt,
    SubmissionStatus,
    SubmissionSummary,
    TaskView,
    UsageStats,
)
from runners.contract import Mode

RUNNING = "⚙️"

NAME_CHARS = 18
RANKING_LABELS = {
    "last": "median of the last benchmark",
    "mean": "mean of the benchmark medians",
    "geom": "geometric mean of the benchmark medians",
}


def timestamp(when: datetime, style: str = "R") -> str:
    """A Discord timestamp: every reader sees it in their own time zone (R: '3 hours ago')."""
    return f"<t:{int(when.timestamp())}:{style}>"


def quiet(text: str) -> str:
    """Text that came from a user (a file name, an exception message, program output) with its mentions made
    inert: ``@everyone``, ``@here``, ``<@id>`` and ``<@&id>`` show as text and ping nobody, even where a message
    allows mentions."""
    return discord.utils.escape_mentions(text)


def safe(text: str, limit: int = NAME_CHARS) -> str:
    """A user-chosen name made safe inside a code block and cut to ``limit`` characters."""
    text = quiet(text.replace("`", "'").replace("\n", " "))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def queued_line(device: str, position: int | None, runner_online: bool | None, attempt: str = "") -> str:
    if runner_online is False:  # "queued" for hours would hide that nothing serves this device right now
        where = f" (#{position})" if position else ""
        return f"{WAIT} **{device}**: no runner for {device} is online; your job waits in the queue{where}{attempt}"
    where = f" (#{position} in the queue)" if position else ""
    return f"{WAIT} **{device}**: queued{where}{attempt}"


def job_line(job: JobView, *, public: bool = False) -> str:
    """One line for one device of a submission, at any point of its life.

    ``public``: for everyone in the channel: status, phase, verdict, score and rank, never the runner's message (it
    can quote the competitor's code and output) nor a phase's detail (after a claim it names the worker, its host
    and pid, and whose lease expired); its author reads them privately."""
    attempt = f" (attempt {job.attempts}/{job.max_attempts})" if job.attempts > 1 and not job.finished else ""
    if job.status is JobStatus.QUEUED:
        return queued_line(job.device, job.queue_position, job.runner_online, attempt)
    if job.status is JobStatus.RUNNING:
        phase = "started"
        if job.events:
            last = job.events[-1]
            phase = last.phase + (f": {one_line(last.detail, 80)}" if last.detail and not public else "")
        return f"{RUNNING} **{job.device}**: {phase}{attempt}"
    if job.status is JobStatus.CANCELLED:
        return f"{FAIL} **{job.device}**: cancelled"
    if job.accepted:
        parts = [f"{PASS} **{job.device}**: accepted"]
        if job.score_ns is not None:
            note = None if public else job.ranked_note  # why the ranked score did not pool: the author's only
            parts.append(f"score **{score_text(job.score_ns, job.ranked_score_ns, note)}**")
        if job.secret_passed is False:
            parts.append("secret-seed run failed: not ranked")
        if job.rank is not None:
            parts.append(f"rank **#{job.rank}** (your best)")
        elif job.secret_passed:
            parts.append("not better than your best: your rank stays")
        return " · ".join(parts)
    text = f"{FAIL} **{job.device}**: {outcome_text(job.status, job.verdict)}"
    if job.error and not public:
        text += f": {quiet(one_line(job.error, 200))}"
    return text


def status_header(submission_id: int, leaderboard: str, file_name: str, mode: str, user_name: str) -> str:
    file_name, user_name = safe(file_name, 60), safe(user_name, 40)
    return f"**Submission #{submission_id}** · `{file_name}` → **{leaderboard}** · {mode} · by {user_name}"


def _header(status: SubmissionStatus) -> str:
    head = status_header(status.submission_id, status.leaderboard, status.file_name, status.mode, status.user_name)
    cmp = status.comparison
    return head if cmp is None else f"{head} · vs `{safe(cmp.file_b, 60)}`, {cmp.rounds} rounds"


def ratio_line(view: ComparisonView) -> str | None:
    """A finished compare's overall A/B time ratio with its interval (public, like a score), else None."""
    c = view.result
    if c is None or c.ratio is None or c.ci_low is None or c.ci_high is None:
        return None
    return f"A/B time ratio **{c.ratio:.4f}** (95% interval {c.ci_low:.4f} to {c.ci_high:.4f}) over {c.rounds} rounds"


def comparison_lines(view: ComparisonView) -> list[str]:
    """A compare's report for its author: the verdict in words, then per case each file's median and the ratio."""
    c = view.result
    if c is None:
        return []
    lines = [f"↳ {one_line(c.message)}" if c.message else f"↳ {c.verdict.label}"]
    for k in c.cases:
        lines.append(
            f"`{format_case(k.case)}`: A {format_ns(k.median_a_ns)} · B {format_ns(k.median_b_ns)} · "
            f"A/B **{k.ratio:.4f}** ({k.ci_low:.4f} to {k.ci_high:.4f})"
        )
    return lines


def status_text(status: SubmissionStatus, *, public: bool = True) -> str:
    """The live status message: a header and one line per device (``public``: nothing but status, verdict, score
    and rank, as everyone in the channel sees it; a compare's overall ratio is its score)."""
    lines = [_header(status)]
    lines.extend(job_line(job, public=public) for job in status.jobs)
    ratio = ratio_line(status.comparison) if status.comparison is not None else None
    if ratio:
        lines.append(ratio)
    if status.deleted:
        lines.append("(this submission was deleted by an admin)")
    return quiet("\n".join(lines))


def thread_intro(receipt: SubmissionReceipt) -> str:
    """The first message of a submission's private thread."""
    return (
        f"The report of submission #{receipt.submission_id} (`{safe(receipt.file_name, 60)}` on "
        f"**{receipt.leaderboard}**, {receipt.mode}) comes here when it has run: results, messages and logs, "
        "for you (and the server's moderators) only."
    )


def public_report(status: SubmissionStatus, details_where: str) -> str:
    """The status message once every device is done: what everyone may see, and where its author finds the rest."""
    return status_text(status) + f"\n{details_where}"


def report(details: SubmissionDetails) -> Reply:
    """The final report: per device its status line, test verdicts, benchmark times, score and rank.

    Logs (compile output, stdout, stderr) and the profile go in attached files, one per device; a profile run
    under Nsight Compute also attaches its report (``.ncu-rep``), to open in Nsight Compute.
    """
    status = details.status
    results = {r.device: r.result for r in details.results}
    lines = [_header(status)]
    files: list[File] = []
    for job in status.jobs:
        lines.append("")
        lines.append(job_line(job))
        if status.comparison is not None and job.finished:
            ratio = ratio_line(status.comparison)
            lines.extend([ratio] if ratio else [])
            lines.extend(comparison_lines(status.comparison))
        result = results.get(job.device)
        if result is not None:
            if job.finished:
                if not result.verdict.passed and result.message:
                    lines.append(f"↳ {one_line(result.message)}")
                lines.extend(result_lines(result)[1:])
                excerpt = failure_excerpt(result)
                if excerpt:
                    lines.append(excerpt)
            if status.mode == Mode.RANKED and job.secret_passed is not None:
                lines.append(
                    "secret-seed run: passed" if job.secret_passed else "secret-seed run: **failed** (not ranked)"
                )
            logs = logs_text(result)
            if logs:
                files.append(File(f"logs-{status.submission_id}-{_file_safe(job.device)}.txt", logs.encode()))
            if result.profile:
                files.append(
                    File(f"profile-{status.submission_id}-{_file_safe(job.device)}.txt", result.profile.encode())
                )
            if result.ncu_report:  # (left out with a note by ``fit`` when it is over the server's upload limit)
                files.append(File(f"profile-{status.submission_id}-{_file_safe(job.device)}.ncu-rep",
                                  result.ncu_report))  # fmt: skip
    return Reply(content=quiet("\n".join(lines)), files=tuple(files))


def _file_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def leaderboards_text(boards: Sequence[LeaderboardSummary]) -> str:
    """``/leaderboard list``: one line per leaderboard with its state, devices and deadline."""
    if not boards:
        return "There are no leaderboards yet. An admin creates them with `/admin sync`."
    lines = ["**Leaderboards**"]
    for b in boards:
        if b.paused:
            state = "⏸️ paused"
        elif b.is_open:
            state = f"🟢 open, closes {timestamp(b.deadline)}"
        else:
            state = f"🔒 closed {timestamp(b.deadline)}"
        hidden = " (hidden)" if not b.visible else ""
        lines.append(
            f"**{b.name}**{hidden}: {state} · {', '.join(b.devices)} · {b.lang} · "
            f"{b.submissions} submission{'s' if b.submissions != 1 else ''}"
        )
    return "\n".join(lines)


def ranking_table(ranking: Ranking, highlight_user: int | None = None) -> str:
    """One device's ranking as a fixed-width table in a code block."""
    rule = RANKING_LABELS.get(ranking.ranking_by, ranking.ranking_by)
    head = f"**{ranking.device}**: {ranking.total} ranked · score = {rule}, lower is better"
    if not ranking.entries:
        return f"{head}\nNo ranked submissions yet: be the first with `/leaderboard submit … mode:ranked`."
    rows = [f"{'#':>3}  {'user':<{NAME_CHARS}}  {'score':>10}  {'id':>6}  submitted"]
    for e in ranking.entries:
        mark = "›" if highlight_user is not None and e.user_id == highlight_user else " "
        rows.append(
            f"{e.rank:>3}{mark} {safe(e.user_name):<{NAME_CHARS}}  {format_ns(e.score_ns):>10}  "
            f"{e.submission_id:>6}  {e.submitted_at:%Y-%m-%d %H:%M}"
        )
    more = f"\n… and {ranking.total - len(ranking.entries)} more" if ranking.total > len(ranking.entries) else ""
    return head + "\n```\n" + "\n".join(rows) + "\n```" + more


def show_text(name: str, rankings: Sequence[Ranking]) -> str:
    """``/leaderboard show``: the leaderboard's name, then one table per device."""
    return "\n".join([f"## {name}", *(ranking_table(r) for r in rankings)])


def submissions_text(leaderboard: str, subs: Sequence[SubmissionSummary]) -> str:
    """``/leaderboard mine``: the user's submissions, newest first, one line per device."""
    if not subs:
        return f"You have no submissions on **{leaderboard}** yet."
    lines = [f"**Your submissions on {leaderboard}** (newest first)"]
    for s in subs:
        lines.append(f"**#{s.submission_id}** · `{safe(s.file_name, 40)}` · {s.mode} · {timestamp(s.created_at)}")
        if s.moderation_note:
            lines.append(f"  ⚠️ {quiet(s.moderation_note)}")
        if s.late:
            lines.append(f"  _{s.late}_")
        lines.extend(f"  {job_line(job)}" for job in s.jobs)
    lines.append("Details of one: `/leaderboard submission ID`.")
    return "\n".join(lines)


def task_reply(task: TaskView) -> Reply:
    """``/leaderboard task``: the description as an embed, the problem's files attached (beyond Discord's ten
    attachments, reference.py and one zip of the others)."""
    description = task.description
    long = len(description) > EMBED_DESCRIPTION_CHARS
    files, zipped = _task_files(task, FILES_PER_MESSAGE - long)
    if long:  # a long statement is read whole in a file, its head here
        note = f"\n… (the whole description is in {task.name}-description.md)"
        files.insert(0, File(f"{task.name}-description.md", description.encode()))
        description = cut(description, EMBED_DESCRIPTION_CHARS - len(note)) + note
    embed = discord.Embed(title=task.name, description=description)
    embed.add_field(name="Language", value=task.language or task.lang)
    embed.add_field(name="Devices", value=", ".join(task.devices) or "–")
    embed.add_field(name="Deadline", value=timestamp(task.deadline, "f"))
    embed.add_field(name="Score", value=RANKING_LABELS.get(task.ranking_by, task.ranking_by))
    embed.add_field(name="Data type", value=f"{task.dtype} (its peak bounds the roofline)")
    embed.add_field(name="Speedup over", value=", ".join(task.baselines))
    if task.templates:
        embed.add_field(
            name="Templates",
            value=", ".join(sorted(task.templates)) + f"\n`/leaderboard template {task.name} LANGUAGE`",
            inline=False,
        )
    embed.add_field(name="Cases", value=f"{len(task.tests)} tests, {len(task.benchmarks)} benchmarks", inline=False)
    if zipped:
        embed.add_field(name="Files", value=f"{len(task.files)}: {zipped} holds all but reference.py", inline=False)
    return Reply(embeds=(embed,), files=tuple(files))


def _task_files(task: TaskView, room: int) -> tuple[list[File], str]:
    """The problem's files as attachments, and the name of the zip holding some of them ("": none). Each is its own
    attachment while they fit in ``room``; else reference.py is, and the others travel in one zip, in their folders
    (Discord allows ``FILES_PER_MESSAGE`` attachments; ``fit`` would leave the rest out)."""
    named = sorted(task.files.items())
    if len(named) <= room:
        return [File(name.replace("/", "_"), text.encode()) for name, text in named], ""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in named:
            if name != "reference.py":
                archive.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), text, zipfile.ZIP_DEFLATED)
    zipped = f"{task.name}-files.zip"
    files = [File(name, text.encode()) for name, text in named if name == "reference.py"]
    return [*files, File(zipped, buffer.getvalue())], zipped


def queue_text(stats: QueueStats) -> str:
    """``/admin stats`` (queue part): jobs by device and status, the oldest waiting job, live workers."""
    lines = ["**Queue**"]
    if not stats.jobs:
        lines.append("No jobs.")
    for device, counts in sorted(stats.jobs.items()):
        lines.append(f"**{device}**: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    if stats.oldest_queued_at is not None:
        lines.append(f"Oldest queued job since {timestamp(stats.oldest_queued_at)}")
    if stats.workers:
        lines.append(
            "Workers: "
            + ", ".join(f"{safe(w.worker_id, 40)} ({', '.join(w.devices) or 'any device'})" for w in stats.workers)
        )
        lines.extend(
            f"⚠️ {safe(w.worker_id, 40)} is **unhealthy** and claims no jobs: {safe(w.health_note, 300)}"
            for w in stats.workers
            if not w.healthy
        )
    else:
        lines.append("Workers: **none alive**; start one with `kernelcup worker`.")
    return "\n".join(lines)


def usage_text(usage: UsageStats) -> str:
    since = f" since {timestamp(usage.since)}" if usage.since else ""
    lines = [
        f"**Usage{since}**",
        f"{usage.submissions} submissions from {usage.users} users; runners busy {usage.runs_seconds / 3600:.1f} h",
    ]
    if usage.by_leaderboard:
        lines.append("By leaderboard: " + ", ".join(f"{k} {v}" for k, v in sorted(usage.by_leaderboard.items())))
    if usage.by_mode:
        lines.append("By mode: " + ", ".join(f"{k} {v}" for k, v in sorted(usage.by_mode.items())))
    if usage.impossible_runs:
        lines.append(
            f"**Speed-of-light gate:** {usage.impossible_runs} run(s) rejected as faster than their device can be "
            "(forged timings or a broken timer; never ranked). Newest:"
        )
        for r in usage.impossible_latest:
            what = "secret run" if r.secret else quiet(one_line(r.message, 160))
            lines.append(
                f"- #{r.submission_id} by {safe(r.user_name, 40)} on {safe(r.leaderboard, 40)} ({r.device}), "
                f"{timestamp(r.at)}: {what}"
            )
    else:
        lines.append("Speed-of-light gate: no run rejected")
    return "\n".join(lines)


def announcement_text(change: RankChangeView) -> str:
    """A new #1 or top-3 entry, for the announcement channel."""
    who = f"<@{change.user_discord_id}>" if change.user_discord_id is not None else f"**{safe(change.user_name, 40)}**"
    if change.new_rank == 1:
        headline = f"🏆 New #1 on **{change.leaderboard}** ({change.device})!"
    else:
        headline = f"🎉 New top {max(change.new_rank, 3)} on **{change.leaderboard}** ({change.device}):"
    moved = f"from #{change.old_rank} " if change.old_rank is not None else ""
    text = f"{headline} {who} moves {moved}to #{change.new_rank} with **{format_ns(change.score_ns)}**"
    if change.previous_score_ns is not None:
        text += f" (their previous best: {format_ns(change.previous_score_ns)})"
    return text + f" · submission #{change.submission_id}"


def token_text(new: NewToken, server: str | None) -> str:
    """``/token``: the token (shown this once), when it expires, and how to use it."""
    expires = f"expires {timestamp(new.info.expires_at)}" if new.info.expires_at else "never expires"
    where = server or "https://<this server's API>"
    return (
        f"Your API token (#{new.info.token_id}, {expires}). It is shown only now and only to you; keep it secret:\n"
        f"```\n{new.token}\n```\n"
        f"Use it with the CLI: `kernelcup login --server {where} --token <token>`, then `kernelcup submit FILE`; "
        "or send it as `Authorization: Bearer <token>` to the API. Run /token again for a new one; "
        "`kernelcup logout --revoke` revokes it."
    )
