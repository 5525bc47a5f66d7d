"""Fitting replies inside Discord's limits: long text becomes a file, big files are refused in words."""

from __future__ import annotations

import discord

from bot.limits import (
    EMBED_FIELD_VALUE_CHARS,
    EMBED_TOTAL_CHARS,
    MESSAGE_CHARS,
    File,
    Reply,
    cut,
    fit,
    fit_embed,
    human_bytes,
)


def test_cut_marks_where_it_cut() -> None:
    assert cut("abc", 5) == "abc"
    assert cut("abcdef", 4) == "abc…"


def test_human_bytes() -> None:
    assert human_bytes(512) == "512 B"
    assert human_bytes(10 * 1024 * 1024) == "10.0 MiB"


def test_short_reply_is_unchanged() -> None:
    reply = Reply(content="hello", files=(File("a.txt", b"x"),))
    assert fit(reply) == reply


def test_long_message_moves_to_a_file_and_keeps_code_blocks_closed() -> None:
    text = "```\n" + "\n".join(f"row {i:05d} " + "x" * 40 for i in range(200)) + "\n```"
    out = fit(Reply(content=text), overflow_name="report.txt")
    assert len(out.content) <= MESSAGE_CHARS
    assert out.content.count("```") % 2 == 0
    assert "report.txt" in out.content
    assert out.files[0] == File("report.txt", text.encode())


def test_file_above_the_upload_limit_is_refused_with_a_sentence() -> None:
    out = fit(Reply(content="report", files=(File("log.txt", b"x" * 2048), File("ok.txt", b"y"))), upload_limit=1024)
    assert [f.name for f in out.files] == ["ok.txt"]
    assert "log.txt (2.0 KiB) is above Discord's upload limit (1.0 KiB) and was left out." in out.content
    assert out.content.startswith("report")


def test_more_than_ten_files_are_left_out_by_name() -> None:
    out = fit(Reply(files=tuple(File(f"f{i}.txt", b"x") for i in range(12))))
    assert len(out.files) == 10
    assert "f11.txt was left out" in out.content


def test_embed_parts_and_total_are_cut() -> None:
    embed = discord.Embed(title="t" * 300, description="d" * 5000)
    for i in range(30):
        embed.add_field(name=f"f{i}", value="v" * 2000)
    out = fit_embed(embed)
    assert len(out.title) == 256
    assert len(out.fields) <= 25
    assert all(len(f.value) <= EMBED_FIELD_VALUE_CHARS for f in out.fields)
    assert len(out) <= EMBED_TOTAL_CHARS
