"""Alembic environment. The engine comes from ``leaderboards.db.alembic_config`` (config built in code), or
from ``DATABASE_URL``/the default SQLite file when the ``alembic`` command is run by hand."""

from __future__ import annotations

from alembic import context

from kernelcup.settings import load
from leaderboards.db import make_engine
from leaderboards.models import Base
from leaderboards.settings import CoreSettings

target_metadata = Base.metadata


def run_migrations_online() -> None:
    engine = context.config.attributes.get("engine")
    if engine is None:
        engine = make_engine(load(CoreSettings).resolved_database_url())
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # Rebuilding a table (batch mode) drops the old one; with foreign keys on, that DELETE would cascade into
            # every child table. SQLite only lets the pragma change outside a transaction, hence the DBAPI level.
            connection.connection.dbapi_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
            if sqlite:
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise RuntimeError(f"the migration left rows whose foreign keys point nowhere: {broken[:5]}")
        if sqlite:
            connection.invalidate()  # never hand this foreign-keys-off connection back to the pool


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run against a database")
run_migrations_online()
