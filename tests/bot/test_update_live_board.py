"""/admin update on a live leaderboard (issue 37), through SimCord: a rename or a deadline in the past is refused
with what it affects until it is run again with force: True; the audit log names the Discord admin."""

from __future__ import annotations

import pytest
from bot_steps import raised, serve_queue, submit
from sqlalchemy import select

from leaderboards.errors import LiveChangeNeedsForce
from leaderboards.models import AuditLog

pytestmark = pytest.mark.anyio


async def test_a_live_rename_and_closing_need_force_true(world) -> None:
    await submit(world, world.alice, mode="ranked")
    await serve_queue(world)
    assert world.service.ranking("addone", "cpu").total == 1

    refused = await world.admin.slash(world.channel, "admin update", leaderboard="addone", name="addone-final")
    text = refused.response.content
    assert "renaming it to 'addone-final'" in text and "1 ranked entry (of alice)" in text and "force: True" in text
    assert world.service.leaderboard("addone").name == "addone"
    closing = await world.admin.slash(world.channel, "admin update", leaderboard="addone", deadline="2020-01-01")
    assert "moving its deadline into the past" in closing.response.content
    assert world.service.leaderboard("addone").is_open
    assert [type(e) for e in raised(world)] == [LiveChangeNeedsForce, LiveChangeNeedsForce]

    done = await world.admin.slash(world.channel, "admin update", leaderboard="addone", name="addone-final", force=True)
    assert done.response.content == "**addone** (now **addone-final**) updated: name."
    with world.service.db.transaction() as s:
        audit = s.scalars(select(AuditLog).where(AuditLog.action == "update_leaderboard")).one()
        assert audit.actor.startswith("discord:") and audit.detail["new"] == {"name": "addone-final"}
        assert audit.detail["forced_while_live"] is True
