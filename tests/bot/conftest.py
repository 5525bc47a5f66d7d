"""SimCord world for the bot: the real service on a SQLite database in a temporary folder, a tiny problem,
the served guild (``GUILD_ID``) with a channel, a competitor and an admin whose role is configured by id. Every
test drives the bot through discord.py's own machinery (SimCord 3.2.1), offline."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import simcord
from bot_steps import ADMIN_ROLE, GUILD_ID, STATUS_INTERVAL

from bot.client import KernelcupBot
from bot.settings import BotSettings
from leaderboards.db import open_database
from leaderboards.problems import load_problem
from leaderboards.service import LeaderboardService
from leaderboards.settings import CoreSettings

TASK_YML = """\
description: |
  Add one to every element. Input: data = (x,), a float32 tensor. Return x + 1.
templates:
  pytorch: templates/pytorch.py
tests:
  - {size: 8, seed: 1}
  - {size: 16, seed: 2}
benchmarks:
  - {size: 1024, seed: 3}
ranking_by: geom
"""

REFERENCE = """\
def generate_input(size, seed):
    return ([float(i) for i in range(size)],)


def ref_kernel(data):
    return [x + 1 for x in data[0]]


def check_implementation(data, output):
    return output == ref_kernel(data), "mismatch"
"""

TEMPLATE = "def custom_kernel(data):\n    raise NotImplementedError\n"

PROBLEM_SET = """\
name: starter
problems:
  - directory: addone
    deadline: 2099-01-01
    devices: [cpu, H100]
"""


def write_problem(root: Path, name: str = "addone") -> Path:
    folder = root / name
    (folder / "templates").mkdir(parents=True)
    (folder / "task.yml").write_text(TASK_YML)
    (folder / "reference.py").write_text(REFERENCE)
    (folder / "templates" / "pytorch.py").write_text(TEMPLATE)
    return folder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def problems_dir(tmp_path: Path) -> Path:
    root = tmp_path / "problems"
    write_problem(root)
    (root / "starter.yaml").write_text(PROBLEM_SET)
    return root


@pytest.fixture
def service(tmp_path: Path, problems_dir: Path) -> LeaderboardService:
    settings = CoreSettings(
        data_dir=tmp_path / "data",
        database_url=None,
        rate_limit_per_hour=None,
        ranked_rate_limit_per_hour=None,
        max_new_files_per_day=None,
        duplicate_window_s=0,
    )
    svc = LeaderboardService(open_database(settings), settings)
    svc.create_leaderboard(
        load_problem(problems_dir / "addone"),
        name="addone",
        deadline=datetime.now(UTC) + timedelta(days=30),
        devices=["cpu", "H100"],
    )
    return svc


@pytest.fixture
def bot_settings(problems_dir: Path) -> BotSettings:
    return BotSettings(
        _env_file=None,
        token="test-token",
        guild_ids=[GUILD_ID],
        admin_role_ids=[1],  # the world's admin role gets its id when it is made; the world sets it
        announce_channel_id=None,
        status_interval_s=STATUS_INTERVAL,
        problems_dir=problems_dir,
        problem_set="starter.yaml",
    )


@dataclass
class World:
    env: simcord.Env
    bot: KernelcupBot
    service: LeaderboardService
    channel: simcord.ChannelHandle
    alice: simcord.MemberActor
    bob: simcord.MemberActor
    admin: simcord.MemberActor
    admin_role: simcord.RoleHandle
    guild: simcord.GuildHandle


@pytest.fixture
async def world(service: LeaderboardService, bot_settings: BotSettings) -> AsyncIterator[World]:
    bot = KernelcupBot(service, bot_settings)
    async with simcord.run(bot) as env:
        guild = env.create_guild("kernels", id=GUILD_ID)
        channel = guild.create_text_channel("submissions")
        role = guild.create_role(ADMIN_ROLE)
        bot.settings.admin_role_ids = [role.id]
        alice = guild.add_member(env.create_user("alice"))
        bob = guild.add_member(env.create_user("bob"))
        admin = guild.add_member(env.create_user("root"), roles=[role])
        yield World(env, bot, service, channel, alice, bob, admin, role, guild)


def source(body: str) -> bytes:
    return textwrap.dedent(body).encode()
