"""`/readyz` in S3 mode: the bucket must exist and take a write, and a failing bucket makes the
process unready; local storage adds no check."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from docflow.main import create_app
from docflow.storage.sealed import unwrap_storage
from support.dbos_fixtures import DbosEnv, dbos_env  # noqa: F401
from support.s3_server import S3Server, s3_server  # noqa: F401


def test_readyz_checks_the_bucket_in_s3_mode(
    dbos_env: DbosEnv,  # noqa: F811
    s3_server: S3Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    storage_url = f"s3://ready/files?endpoint_url={s3_server.endpoint_url}"
    settings = dbos_env.settings.model_copy(update={"storage_url": storage_url})
    missing = create_app(settings, engine=dbos_env.engine)
    answer = TestClient(missing).get("/readyz")
    assert answer.status_code == 503
    assert answer.json()["checks"]["storage"] == "failing"
    unwrap_storage(missing.state.storage).client.create_bucket(Bucket="ready")
    present = create_app(settings, engine=dbos_env.engine)
    answer = TestClient(present).get("/readyz")
    assert answer.json()["checks"]["storage"] == "ok"
    # The probe leaves nothing behind, and nothing under a tenant's namespace.
    listed = unwrap_storage(present.state.storage).client.list_objects_v2(Bucket="ready")
    assert listed["KeyCount"] == 0


def test_local_storage_adds_no_readiness_check(dbos_env: DbosEnv) -> None:  # noqa: F811
    app = create_app(dbos_env.settings, engine=dbos_env.engine)
    assert "storage" not in TestClient(app).get("/readyz").json()["checks"]
