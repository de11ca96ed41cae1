"""PostgreSQL restarts in the middle of a batch (`pg_ctl restart -m fast`, as `pg_ctlcluster
... restart` does), on a private server of this test: the machine's shared server is never
restarted. The API (the real app in process, which runs no workflow, like `docflow api`) and
two `docflow worker` processes run with small pool caps on a server whose `max_connections`
leaves room for exactly those caps (plus the superuser's reserve).

Afterwards: `/readyz` is 200 again within seconds of the restart (every check opens fresh
connections: a pooled connection the restart closed is replaced, not reported), the batch
completes with every document counted once, and no process ever held more connections than
its caps, each process naming its connections (`application_name`)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine

from docflow import db
from docflow.config import Settings
from docflow.main import create_app
from docflow.system_db import migrate_system_database
from support.api_fixtures import PUBLIC_BASE_URL
from support.db_fixtures import APP_ROLE, SYSTEM_ROLE
from support.faults import (
    EXECUTOR_TIMEOUT_SECONDS,
    HEARTBEAT_SECONDS,
    FaultEnv,
    batch_state,
    create_batch,
    upload_all,
    wait_finished,
)
from support.private_postgres import PrivateServer, private_server
from support.process_fixtures import FreshPostgres, wait_for

pytestmark = [
    pytest.mark.postgres_only,
    pytest.mark.slow,
]

POOLS = {
    "DOCFLOW_DB_POOL_SIZE": "2",
    "DOCFLOW_DB_MAX_OVERFLOW": "2",
    "DOCFLOW_SYSTEM_DB_POOL_SIZE": "4",
    "DOCFLOW_CLIENT_DB_POOL_SIZE": "1",
}
# What each connection name may hold at most with POOLS (docs/operations.md's table).
CAPS = {
    "docflow-api": 4,
    "docflow-api-client": 1,
    "docflow-api-metrics": 1,
    "docflow-worker": 4,
    "docflow-worker-dbos": 5,  # its pool, and DBOS's notification listener
    "docflow-worker-client": 1,
}
WORKERS = ("restart-a", "restart-b")
# The API's and two workers' caps, and the superuser's reserve (3) for this test's own reads.
MAX_CONNECTIONS = 6 + 2 * 10 + 3
DOCUMENTS = 16
READY_WITHIN_SECONDS = 15


def _settings(tmp: Path, owner_url: str, app_url: str) -> Settings:
    return Settings(
        env="test",
        home=tmp,
        database_url=app_url,
        migration_database_url=owner_url,
        storage_url=f"file://{tmp / 'files'}",
        public_base_url=PUBLIC_BASE_URL,
        db_pool_size=2,
        db_max_overflow=2,
        system_db_pool_size=4,
        client_db_pool_size=1,
    )


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateServer]:
    with private_server(max_connections=MAX_CONNECTIONS) as started:
        yield started


@pytest.fixture(scope="module")
def env(server: PrivateServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultEnv]:
    owner_url = server.admin_url
    db.ensure_app_role(owner_url, APP_ROLE)
    db.ensure_system_role(owner_url, SYSTEM_ROLE)
    db.run_migrations(owner_url, app_role=APP_ROLE)
    app_url = db.role_url(owner_url, APP_ROLE)
    tmp = tmp_path_factory.mktemp("restart")
    settings = _settings(tmp, owner_url, app_url)
    migrate_system_database(settings, app_role=APP_ROLE)
    worker_env = {
        "PYTHONUNBUFFERED": "1",
        "DOCFLOW_ENV": "test",
        "DOCFLOW_HOME": str(tmp),
        "DOCFLOW_DATABASE_URL": app_url,
        "DOCFLOW_STORAGE_URL": settings.resolved_storage_url(),
        "DOCFLOW_QUEUE_POLLING_SECONDS": "0.05",
        "DOCFLOW_WORKER_CONCURRENCY": "4",
        "DOCFLOW_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
        "DOCFLOW_EXECUTOR_TIMEOUT_SECONDS": str(EXECUTOR_TIMEOUT_SECONDS),
        "DOCFLOW_EXECUTOR_ID": "",
        **POOLS,
    }
    with TestClient(create_app(settings)) as client:
        yield FaultEnv(FreshPostgres(owner_url, app_url), settings, client, tmp, worker_env)


class Sampler:
    """Reads pg_stat_activity every 0.1 s (as the superuser, from its reserve) and keeps the
    most connections seen per `application_name`."""

    def __init__(self, owner_url: str) -> None:
        self.most: Counter[str] = Counter()
        self._url = owner_url
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        engine = create_engine(self._url, pool_size=1, pool_pre_ping=True)
        try:
            while not self._stop.wait(0.1):
                try:
                    with engine.connect() as conn:
                        rows = conn.exec_driver_sql(
                            "SELECT application_name, count(*) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                            "GROUP BY application_name"
                        ).all()
                except Exception:
                    continue  # the server is restarting
                for name, count in rows:
                    self.most[str(name)] = max(self.most[str(name)], int(count))
        finally:
            engine.dispose()


def _ready(env: FaultEnv) -> bool:
    return env.client.get("/readyz").status_code == 200


def test_readyz_recovers_and_pools_stay_capped_across_a_restart(
    env: FaultEnv, server: PrivateServer
) -> None:
    workers = env.workers("restart")
    with Sampler(server.admin_url) as sampler:
        for executor in WORKERS:
            workers.start(executor)
        try:
            assert _ready(env), env.client.get("/readyz").text
            submitted = create_batch(env, DOCUMENTS)
            upload_all(env, submitted)
            wait_for(
                lambda: batch_state(env, submitted)["succeeded_count"] >= 2,
                timeout=120,
                what=f"documents to be done before the restart (log: {workers.log})",
            )
            server.restart()
            restarted = time.monotonic()
            wait_for(
                lambda: _ready(env),
                timeout=READY_WITHIN_SECONDS,
                what=f"/readyz to answer 200 after the restart: {env.client.get('/readyz').text}",
                interval=0.5,
            )
            recovered = time.monotonic() - restarted
            wait_finished(env, submitted, workers, timeout=240)
            assert _ready(env), env.client.get("/readyz").text
        finally:
            workers.stop_all()
    state = batch_state(env, submitted)
    assert state["status"] == "SUCCEEDED", state
    assert state["succeeded_count"] == DOCUMENTS, state
    print(f"/readyz 200 again {recovered:.1f} s after the restart; connections {sampler.most}")
    for name, cap in CAPS.items():
        # Two workers share their names: each holds at most the cap.
        processes = 2 if name.startswith("docflow-worker") else 1
        assert sampler.most[name] <= cap * processes, (name, sampler.most)
    assert sampler.most["docflow-worker-dbos"] > 0, sampler.most
    assert sampler.most["docflow-api"] > 0, sampler.most
