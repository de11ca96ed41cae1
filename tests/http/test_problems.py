"""The HTTP edge: problem+json for every error, authentication, health, the OpenAPI document."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import Enum

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from docflow.config import Settings
from docflow.errors import LimitExceeded, field_path
from docflow.exports.service import MEDIA_TYPES
from docflow.http.health import add_check
from docflow.main import create_app
from support.api_fixtures import ApiTenant, ok, post_project, workflow_body

PROBLEM_KEYS = {"type", "title", "status", "detail", "code", "instance", "errors"}


@pytest.mark.parametrize(
    ("authorization", "detail"),
    [
        (None, "an API key is required"),
        ("Basic dXNlcjpwYXNz", "an API key is required"),
        ("Bearer ", "an API key is required"),
        ("Bearer not-a-key", "malformed API key"),
        ("Bearer dfk_abcdefghjkmn_wrongsecret", "invalid API key"),
    ],
)
def test_unauthenticated_is_401_problem(
    client: TestClient, authorization: str | None, detail: str
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = client.get("/v1/projects", headers=headers)
    problem = ok(response, 401)
    assert response.headers["content-type"] == "application/problem+json"
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="docflow"')
    assert ('error="invalid_token"' in challenge) == (
        "API key" in detail and "required" not in detail
    )
    assert set(problem) == PROBLEM_KEYS
    assert problem["code"] == "unauthorized"
    assert problem["detail"].startswith(detail)
    assert problem["instance"] == "/v1/projects"


def test_wrong_secret_of_a_real_prefix_is_401(client: TestClient, tenant_key_a: ApiTenant) -> None:
    scheme, prefix, _ = tenant_key_a.token.split("_", 2)
    forged = f"{scheme}_{prefix}_{'x' * 43}"
    response = client.get("/v1/projects", headers={"Authorization": f"Bearer {forged}"})
    assert ok(response, 401)["detail"] == "invalid API key"


def test_unknown_route_and_method_are_problems(client: TestClient, tenant_key_a: ApiTenant) -> None:
    missing = client.get("/v1/nothing-here", headers=tenant_key_a.headers)
    assert ok(missing, 404)["code"] == "not_found"
    assert missing.headers["content-type"] == "application/problem+json"
    wrong = client.put("/v1/projects", headers=tenant_key_a.headers)
    assert ok(wrong, 405)["code"] == "method_not_allowed"


@pytest.mark.parametrize(
    ("method", "url", "allow"),
    [
        ("PUT", "/v1/projects", "GET, POST"),
        ("POST", "/v1/projects/prj_x", "DELETE, GET, PATCH"),
        ("DELETE", "/v1/batches", "GET, POST"),
        ("OPTIONS", "/v1/workflows/wfl_x", "GET, PUT"),
    ],
)
def test_405_allows_every_method_of_the_path(
    client: TestClient, tenant_key_a: ApiTenant, method: str, url: str, allow: str
) -> None:
    response = client.request(method, url, headers=tenant_key_a.headers)
    assert ok(response, 405)["code"] == "method_not_allowed"
    assert response.headers["allow"] == allow


def test_a_body_that_is_not_utf8_is_422(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = client.post(
        "/v1/projects",
        content=b'{"name": "\xff"}',
        headers={**tenant_key_a.headers, "Content-Type": "application/json"},
    )
    problem = ok(response, 422)
    assert problem["code"] == "invalid_input"
    assert problem["errors"][0]["field"] == "(body)"


def test_malformed_json_names_the_body(client: TestClient, tenant_key_a: ApiTenant) -> None:
    response = client.post(
        "/v1/projects",
        content=b"{not json",
        headers={**tenant_key_a.headers, "Content-Type": "application/json"},
    )
    problem = ok(response, 422)
    assert problem["code"] == "invalid_input"
    assert problem["errors"]


def test_body_fields_are_named_by_their_path_with_list_indexes(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    body = workflow_body()
    body["fields"][1]["locators"] = [{"kind": "pattern", "pattern": "(unclosed"}]
    project = post_project(client, tenant_key_a)
    url = f"/v1/projects/{project['id']}/workflows"
    problem = ok(client.post(url, json=body, headers=tenant_key_a.headers), 422)
    # The union tag pydantic puts in its location ("pattern") is not in the client's JSON.
    assert [e["field"] for e in problem["errors"]] == ["fields.1.locators.0.pattern"]
    assert field_path(("documents", 0, "size"), {"documents": [{"size": -1}]}) == (
        "documents.0.size"
    )
    assert field_path(("documents", 5, "size"), {"documents": []}) == "documents.5.size"


def test_unexpected_error_is_a_500_problem(api_settings: Settings, engine: Engine) -> None:
    app = create_app(api_settings, engine=engine)

    @app.get("/boom")
    def boom() -> None:
        raise RuntimeError("secret detail")

    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/boom")
    problem = ok(response, 500)
    assert problem["code"] == "internal_error"
    assert "secret" not in response.text


class _Plan(Enum):
    FREE = "free"


def test_domain_error_extra_members_are_rendered_safely(
    api_settings: Settings, engine: Engine
) -> None:
    app = create_app(api_settings, engine=engine)
    when = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

    @app.get("/limited")
    def limited() -> None:
        raise LimitExceeded(
            "over the limit",
            field="documents",
            max_bytes=10,
            retry_at=when,
            plan=_Plan.FREE,
            limits={"documents": [1, 2.5, None, True]},
            # Would replace standard members, are not RFC 9457 names, or are not plain data.
            status=200,
            code="ok",
            errors=[],
            ab=1,
            **{"bad-name": 1, "1st": 1},
            session=object(),
            ratio=float("nan"),
        )

    with TestClient(app) as client:
        response = client.get("/limited")
    problem = ok(response, 413)
    assert response.headers["content-type"] == "application/problem+json"
    assert set(problem) == PROBLEM_KEYS | {"max_bytes", "retry_at", "plan", "limits"}
    assert (problem["status"], problem["code"], problem["detail"]) == (
        413,
        "limit_exceeded",
        "over the limit",
    )
    assert problem["errors"] == [{"field": "documents", "message": "over the limit"}]
    assert problem["max_bytes"] == 10
    assert problem["retry_at"] == "2026-11-29T12:00:00+00:00"
    assert problem["plan"] == "free"
    assert problem["limits"] == {"documents": [1, 2.5, None, True]}


def test_database_contention_is_a_503_problem(api_settings: Settings, engine: Engine) -> None:
    app = create_app(api_settings, engine=engine)

    @app.get("/locked")
    def locked() -> None:
        raise OperationalError("INSERT ...", {}, Exception("database is locked"))

    with TestClient(app) as client:
        response = client.get("/locked")
    problem = ok(response, 503)
    assert problem["code"] == "database_unavailable"
    assert response.headers["retry-after"] == "1"
    assert "INSERT" not in response.text


def test_health_and_readiness(client: TestClient) -> None:
    assert ok(client.get("/healthz"), 200) == {"status": "ok"}
    body = ok(client.get("/readyz"), 200)
    # Events written by other tests without a runtime to publish them may age past the
    # threshold, and their documents go unprojected: that is "degraded" (still 200), never
    # "unready".
    checks = body["checks"]
    assert checks["database"] == "ok"
    assert set(checks) == {"database", "events", "workflows", "downstream"}
    assert checks["workflows"] == "ok"
    assert checks["downstream"] in ("ok", "degraded")
    signals = (checks["events"], checks["downstream"])
    assert body["status"] == ("ready" if signals == ("ok", "ok") else "degraded")


def test_readiness_fails_when_a_check_fails(api_settings: Settings, engine: Engine) -> None:
    app = create_app(api_settings, engine=engine)

    def stuck() -> None:
        raise RuntimeError("outbox stuck")

    add_check(app, "outbox", stuck)
    with TestClient(app) as client:
        body = ok(client.get("/readyz"), 503)
        assert body["status"] == "unready" and body["checks"]["outbox"] == "failing"
        assert body["checks"]["database"] == "ok" and body["checks"]["events"] != "failing"
        assert ok(client.get("/healthz"), 200)["status"] == "ok"


def test_readiness_fails_without_a_database() -> None:
    settings = Settings(env="test", database_url="postgresql+psycopg://nobody@127.0.0.1:1/none")
    with TestClient(create_app(settings)) as client:
        body = ok(client.get("/readyz"), 503)
    assert body["checks"] == {
        "database": "failing",
        "events": "failing",
        "workflows": "failing",
        "downstream": "failing",
    }


def test_openapi_documents_every_endpoint(client: TestClient) -> None:
    spec = ok(client.get("/openapi.json"), 200)
    assert "ApiKey" in spec["components"]["securitySchemes"]
    operations = [
        (method, path, operation)
        for path, item in spec["paths"].items()
        if path.startswith("/v1/")
        for method, operation in item.items()
    ]
    assert len(operations) >= 14
    for method, path, operation in operations:
        where = f"{method.upper()} {path}"
        assert operation.get("description"), f"{where} has no description"
        assert "\n" not in operation["description"].strip(), where
        if path.startswith("/v1/uploads/"):
            # Authorised by the signed token in its path, never by an API key.
            assert "security" not in operation, where
        else:
            assert {"ApiKey": []} in operation["security"], where
        assert {"401", "404"} <= set(operation["responses"]), where
        success = [s for s in operation["responses"] if s.startswith("2")]
        assert len(success) == 1, where
        if path.endswith("/file"):  # the original file's bytes, whatever their type
            assert "application/octet-stream" in operation["responses"][success[0]]["content"]
        elif path.endswith("/events"):  # a Server-Sent Events stream
            assert list(operation["responses"][success[0]]["content"]) == ["text/event-stream"]
        elif path.endswith("/export"):  # a streamed file in the format asked for
            assert set(operation["responses"][success[0]]["content"]) >= set(MEDIA_TYPES.values())
        elif success != ["204"]:
            content = operation["responses"][success[0]]["content"]["application/json"]
            models = content["schema"].get("anyOf", [content["schema"]])  # one, or a union
            assert all("$ref" in model for model in models), f"{where} has no response model"


def test_production_refuses_the_placeholder_secret() -> None:
    from docflow.config import PLACEHOLDER_SECRET, UnsafeConfiguration

    placeholder = Settings(
        env="production", database_url="sqlite://", signing_secret=PLACEHOLDER_SECRET
    )
    with pytest.raises(UnsafeConfiguration, match="DOCFLOW_SIGNING_SECRET"):
        create_app(placeholder)
