"""Alembic environment: configured in code by `docflow.db.run_migrations` (no alembic.ini).

The database URL comes from `config.attributes["url"]` (or `sqlalchemy.url` when Alembic is run
by hand with an ini file); the engine is built by `docflow.db.make_engine`, so SQLite gets the same
pragmas as the application.
"""

from __future__ import annotations

from alembic import context

from docflow.db import load_models, make_engine

config = context.config
target_metadata = load_models()


def _url() -> str:
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL given to the migrations")
    return str(url)


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = make_engine(_url(), pool_size=1)
    try:
        with engine.connect() as connection:
            context.configure(
                connection=connection,
                target_metadata=target_metadata,
                render_as_batch=connection.dialect.name == "sqlite",
            )
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
