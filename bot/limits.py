"""Discord's size limits, and fitting a reply inside them.

Renderers build a ``Reply`` without thinking about limits; ``fit`` then makes it legal: a message too
long becomes a file (its head stays in the message), embed parts are cut at their limits, and a file
above the upload limit is refused with a sentence saying so instead of failing the whole reply.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field, replace

import discord

MESSAGE_CHARS = 2000
EMBED_TITLE_CHARS = 256
EMBED_DESCRIPTION_CHARS = 4096
EMBED_FIELDS = 25
EMBED_FIELD_NAME_CHARS = 256
EMBED_FIELD_VALUE_CHARS = 1024
EMBED_FOOTER_CHARS = 2048
EMBED_TOTAL_CHARS = 6000
EMBEDS_PER_MESSAGE = 10
FILES_PER_MESSAGE = 10
DEFAULT_UPLOAD_BYTES = 10 * 1024 * 1024
"""Discord's upload limit for a server without boosts; interactions tell the real one."""

ELLIPSIS = "…"


@dataclass(frozen=True)
class File:
    """An attachment to send: a name and its bytes."""

    name: str
    data: bytes


@dataclass(frozen=True)
class Reply:
    """What the bot sends: message text, embeds and files (see ``fit`` for the limits)."""

    content: str = ""
    embeds: tuple[discord.Embed, ...] = ()
    files: tuple[File, ...] = field(default_factory=tuple)

    def discord_files(self) -> list[discord.File]:
        return [discord.File(io.BytesIO(f.data), filename=f.name) for f in self.files]


def cut(text: str, limit: int) -> str:
    """``text`` shortened to at most ``limit`` characters, with an ellipsis where it was cut."""
    if len(text) <= limit:
        return text
    return text[: max(limit - len(ELLIPSIS), 0)] + ELLIPSIS


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def fit_embed(embed: discord.Embed) -> discord.Embed:
    """A copy of ``embed`` cut to Discord's per-part and total limits."""
    data = embed.to_dict()
    if "title" in data:
        data["title"] = cut(data["title"], EMBED_TITLE_CHARS)
    if "description" in data:
        data["description"] = cut(data["description"], EMBED_DESCRIPTION_CHARS)
    fields = data.get("fields", [])[:EMBED_FIELDS]
    for f in fields:
        f["name"] = cut(f["name"], EMBED_FIELD_NAME_CHARS) or "\u200b"
        f["value"] = cut(f["value"], EMBED_FIELD_VALUE_CHARS) or "\u200b"
    if fields:
        data["fields"] = fields
    if "footer" in data and "text" in data["footer"]:
        data["footer"]["text"] = cut(data["footer"]["text"], EMBED_FOOTER_CHARS)
    out = discord.Embed.from_dict(data)
    # Over the total: drop fields from the end, then shorten the description.
    while len(out) > EMBED_TOTAL_CHARS and out.fields:
        out.remove_field(len(out.fields) - 1)
    if len(out) > EMBED_TOTAL_CHARS and out.description:
        out.description = cut(out.description, max(len(out.description) - (len(out) - EMBED_TOTAL_CHARS), 0))
    return out


def fit(reply: Reply, *, upload_limit: int = DEFAULT_UPLOAD_BYTES, overflow_name: str = "message.txt") -> Reply:
    """``reply`` made legal for Discord (see the module docstring)."""
    notes: list[str] = []
    files = list(reply.files)
    content = reply.content
    if len(content) > MESSAGE_CHARS:
        files.insert(0, File(overflow_name, content.encode()))
        note = f"\n… (too long for one message: the whole text is in {overflow_name})"
        content = _cut_markdown(content, MESSAGE_CHARS - len(note) - 200) + note
    kept: list[File] = []
    for f in files:
        if len(f.data) > upload_limit:
            notes.append(
                f"{f.name} ({human_bytes(len(f.data))}) is above Discord's upload limit "
                f"({human_bytes(upload_limit)}) and was left out."
            )
        elif len(kept) >= FILES_PER_MESSAGE:
            notes.append(f"{f.name} was left out (Discord allows {FILES_PER_MESSAGE} files per message).")
        else:
            kept.append(f)
    if notes:
        content = _cut_markdown(content, MESSAGE_CHARS - sum(len(n) + 1 for n in notes) - 1)
        content = "\n".join([content, *notes]) if content else "\n".join(notes)
        content = cut(content, MESSAGE_CHARS)
    embeds = tuple(fit_embed(e) for e in reply.embeds[:EMBEDS_PER_MESSAGE])
    return replace(reply, content=content, embeds=embeds, files=tuple(kept))


def _cut_markdown(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters without leaving a code block open."""
    limit = max(limit, 0)
    if len(text) <= limit:
        return text
    head = text[: max(limit - 5, 0)]
    # Prefer a line boundary so a table row is never cut in half.
    if "\n" in head:
        head = head[: head.rfind("\n")]
    if head.count("```") % 2 == 1:
        head += "\n```"
    return head
