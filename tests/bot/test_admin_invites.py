"""/admin invite-create, /admin invites, /admin invite-revoke, /admin members, /admin member-add and
/admin member-remove through SimCord (issue 29): admins only; a code is shown once, in the ephemeral answer to the
admin who made it, and in no other message anyone (the admin included) can read."""

from __future__ import annotations

import pytest
from bot_steps import raised

from bot.commands.admin import NOT_ADMIN
from bot.replies import Refused

pytestmark = pytest.mark.anyio


def readable_by(world, member) -> list[str]:
    """Every message of the channel that ``member`` can read (ephemeral ones addressed to others left out)."""
    return [m.content for m in world.channel.history(viewer=member)]


async def test_an_admin_makes_lists_and_withdraws_a_code_shown_once_and_only_to_them(world) -> None:
    world.service.update_leaderboard("addone", visible=False)
    made = await world.admin.slash(world.channel, "admin invite-create", leaderboard="addone", uses=3, days=2.0)
    assert made.ephemeral
    text = made.response.content
    code = text.split("```\n")[1].split("\n```")[0]
    assert code.startswith("kci_") and "shown only now and only to you" in text and "used 0 of 3" in text
    for member in (world.alice, world.bob):  # the channel shows nobody else the code
        assert all(code not in m for m in readable_by(world, member))

    listed = await world.admin.slash(world.channel, "admin invites", leaderboard="addone")
    assert f"`{code[:8]}…` used 0 of 3" in listed.response.content and code not in listed.response.content
    joined = await world.alice.slash(world.channel, "leaderboard join", code=code)
    assert "You're in." in joined.response.content
    never = await world.admin.slash(world.channel, "admin invite-create", leaderboard="addone", never_expires=True)
    assert "never expires" in never.response.content
    audit = await world.admin.slash(world.channel, "admin audit", action="create_invite")
    assert code not in audit.response.content and "create_invite addone" in audit.response.content

    invite_id = world.service.list_invites("addone")[-1].invite_id
    withdrawn = await world.admin.slash(world.channel, "admin invite-revoke", invite_id=invite_id)
    assert withdrawn.response.content.startswith(f"Withdrawn (nobody else joins with it): #{invite_id}")
    after = await world.bob.slash(world.channel, "leaderboard join", code=code)
    assert "withdrawn by the organisers" in after.response.content
    # Every message the admin can read holds the code once: the answer that made it.
    assert sum(code in m for m in readable_by(world, world.admin)) == 1
    public = await world.admin.slash(world.channel, "admin invite-create", leaderboard="addone")
    assert public.ephemeral  # every answer, like the first, is for the admin alone
    world.service.update_leaderboard("addone", visible=True)
    refused = await world.admin.slash(world.channel, "admin invite-create", leaderboard="addone")
    assert "is public: everyone can see and enter it without a code" in refused.response.content
    assert [type(e).__name__ for e in raised(world)] == ["InviteError", "InvalidChange"]


async def test_an_admin_reads_adds_and_removes_members(world) -> None:
    world.service.update_leaderboard("addone", visible=False)
    empty = await world.admin.slash(world.channel, "admin members", leaderboard="addone")
    assert empty.response.content.startswith("**addone** has no members: only admins see it.")
    code = world.service.create_invite("addone", actor="admin", uses=2).code
    await world.alice.slash(world.channel, "leaderboard join", code=code)
    added = await world.admin.slash(world.channel, "admin member-add", leaderboard="addone", user=world.bob,
                                    reason="a judge")  # fmt: skip
    assert added.ephemeral and f"**bob** (`discord:{world.bob.id}`) joined <t:" in added.response.content
    listed = (await world.admin.slash(world.channel, "admin members", leaderboard="addone")).response.content
    assert listed.startswith("**addone**: 2 members (earliest first)")
    assert f"**alice** (`discord:{world.alice.id}`)" in listed and f"invite #1 ({code[:8]}…)" in listed
    assert "added by an admin" in listed and code not in listed
    shown = await world.bob.slash(world.channel, "leaderboard show", leaderboard="addone")
    assert "There is no leaderboard" not in shown.response.content

    removed = await world.admin.slash(world.channel, "admin member-remove", leaderboard="addone",
                                      user=f"discord:{world.alice.id}", reason="left")  # fmt: skip
    assert removed.response.content.startswith("Removed (the board is hidden from them again): **alice**")
    hidden = await world.alice.slash(world.channel, "leaderboard show", leaderboard="addone")
    assert "There is no leaderboard named 'addone'" in hidden.response.content
    again = await world.admin.slash(world.channel, "admin member-remove", leaderboard="addone",
                                    user=f"discord:{world.alice.id}")  # fmt: skip
    assert "is no member of 'addone'" in again.response.content
    assert [type(e).__name__ for e in raised(world)] == ["LeaderboardNotFound", "NotFound"]


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("admin invite-create", {"leaderboard": "addone"}),
        ("admin invites", {}),
        ("admin invite-revoke", {"invite_id": 1}),
        ("admin members", {"leaderboard": "addone"}),
        ("admin member-remove", {"leaderboard": "addone", "user": "local:x"}),
    ],
)
async def test_everyone_else_is_refused_and_nothing_is_made(world, command, options) -> None:
    world.service.update_leaderboard("addone", visible=False)
    world.service.create_invite("addone", actor="admin")
    result = await world.alice.slash(world.channel, command, **options)
    assert result.ephemeral and result.response.content == NOT_ADMIN
    assert [type(e) for e in raised(world)] == [Refused]
    [invite] = world.service.list_invites()
    assert invite.revoked_at is None and world.service.board_members("addone") == ()


async def test_a_non_admin_cannot_add_members(world) -> None:
    world.service.update_leaderboard("addone", visible=False)
    result = await world.alice.slash(world.channel, "admin member-add", leaderboard="addone", user=world.alice)
    assert result.response.content == NOT_ADMIN and world.service.board_members("addone") == ()
    assert [type(e) for e in raised(world)] == [Refused]
