"""Tenant isolation at the HTTP edge: for every endpoint that takes an id, tenant B gets the same
404 for tenant A's ids as for ids that do not exist, A's objects stay untouched, and B's lists
never show A's objects. A new `/v1/...{id}` endpoint without a case here fails
`test_every_endpoint_with_an_id_is_covered`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from dbos import DBOS
from fastapi.testclient import TestClient
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Settings
from docflow.kit.clock import utcnow
from docflow.system_db import migrate_system_database
from docflow.webhooks import deliveries
from support.api_fixtures import (
    ApiTenant,
    TenantObjects,
    documents_body,
    make_api_tenant,
    make_objects,
    ok,
    workflow_body,
)
from support.db_fixtures import APP_ROLE

Body = Callable[[TenantObjects], dict[str, Any] | None]
Query = Callable[[dict[str, str]], dict[str, str]]
PUBLIC_HOOK = "https://93.184.215.14/hooks"
# The webhook endpoint and delivery made for each tenant of the `tenants` fixture, by tenant id.
ENDPOINTS: dict[str, tuple[str, str]] = {}
# The folder source made for each tenant of the `tenants` fixture, by tenant id.
SOURCES: dict[str, str] = {}
# The users (an admin and a viewer) added to each tenant of the `tenants` fixture, by tenant id.
USERS: dict[str, tuple[str, str]] = {}
# The invitation each tenant of the `tenants` fixture sent to the other's viewer, by tenant id.
INVITATIONS: dict[str, str] = {}


def _none(_: TenantObjects) -> None:
    return None


def _no_query(_: dict[str, str]) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # as in the OpenAPI document
    body: Body = field(default=_none)
    # The query, from the ids the path is filled with (another of the same tenant's ids).
    query: Query = field(default=_no_query)
    # What the owner gets at the same URL (a GET): it reaches the handler, not a wrong URL.
    owner_status: int = 200
    # The owner's answer is a Server-Sent Events stream (it ends at the app's stream limit).
    stream: bool = False

    @property
    def id(self) -> str:
        return f"{self.method} {self.path}"


CASES = [
    Case("GET", "/v1/projects/{project_id}"),
    Case("PATCH", "/v1/projects/{project_id}", lambda _: {"name": "taken over"}),
    # With its batches: the strongest form of the deletion.
    Case("DELETE", "/v1/projects/{project_id}", query=lambda _: {"cascade": "true"}),
    Case("POST", "/v1/projects/{project_id}/workflows", lambda _: workflow_body("intruder")),
    Case("GET", "/v1/projects/{project_id}/workflows"),
    Case("GET", "/v1/workflows/{workflow_id}"),
    Case("PUT", "/v1/workflows/{workflow_id}", lambda _: workflow_body(description="changed")),
    Case(
        "PUT",
        "/v1/workflows/{workflow_id}",
        lambda _: workflow_body(description="measured first"),
        query=lambda _: {"require_no_regression": "true"},
    ),
    Case("POST", "/v1/workflows/{workflow_id}/evaluate", lambda _: workflow_body("candidate")),
    Case("GET", "/v1/workflows/{workflow_id}/trust"),
    Case("GET", "/v1/batches/{batch_id}"),
    Case("GET", "/v1/batches/{batch_id}/documents"),
    Case("GET", "/v1/batches/{batch_id}/events", stream=True),
    Case("GET", "/v1/batches/{batch_id}/export"),
    Case("POST", "/v1/batches/{batch_id}/start"),
    Case("POST", "/v1/batches/{batch_id}/cancel"),
    Case("DELETE", "/v1/batches/{batch_id}"),
    Case("POST", "/v1/batches/{batch_id}/rerun", lambda _: {"workflow_version": 1}),
    # The owner's batch against itself is refused (422), past the batch's lookup.
    Case(
        "GET",
        "/v1/batches/{batch_id}/diff",
        query=lambda ids: {"against": ids["batch_id"]},
        owner_status=422,
    ),
    Case("POST", "/v1/documents/{document_id}/uploaded"),
    Case("POST", "/v1/documents/{document_id}/upload-url"),
    Case("GET", "/v1/documents/{document_id}"),
    Case("DELETE", "/v1/documents/{document_id}"),
    # The owner's file has not landed: `file_not_uploaded`, past the document's lookup.
    Case("GET", "/v1/documents/{document_id}/file", owner_status=404),
    # The owner's document has not been processed: `document_not_read`, past its lookup.
    Case("GET", "/v1/documents/{document_id}/words", owner_status=409),
    Case("POST", "/v1/documents/{document_id}/claim"),
    Case("DELETE", "/v1/documents/{document_id}/claim"),
    Case(
        "POST",
        "/v1/documents/{document_id}/review",
        lambda _: {"fields": {"total": "12.50"}, "decision": "approve"},
    ),
    Case("GET", "/v1/documents/{document_id}/reviews"),
    Case("GET", "/v1/batches/{batch_id}/history"),
    Case("GET", "/v1/documents/{document_id}/history"),
    Case("DELETE", "/v1/api-keys/{key_id}"),
    Case("POST", "/v1/projects/{project_id}/webhooks", lambda _: {"url": PUBLIC_HOOK}),
    Case("GET", "/v1/projects/{project_id}/webhooks"),
    Case("GET", "/v1/webhooks/{endpoint_id}"),
    Case("PATCH", "/v1/webhooks/{endpoint_id}", lambda _: {"enabled": False}),
    Case("DELETE", "/v1/webhooks/{endpoint_id}"),
    Case("GET", "/v1/webhooks/{endpoint_id}/deliveries"),
    Case("POST", "/v1/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver"),
    Case(
        "POST",
        "/v1/projects/{project_id}/sources",
        lambda objects: {
            "path": "inbox",
            "workflow_id": objects.workflow["id"],
            "cron": "0 * * * *",
        },
    ),
    Case("GET", "/v1/projects/{project_id}/sources"),
    Case("GET", "/v1/projects/{project_id}/sources/{source_id}"),
    Case("PATCH", "/v1/projects/{project_id}/sources/{source_id}", lambda _: {"paused": True}),
    Case("DELETE", "/v1/projects/{project_id}/sources/{source_id}"),
    Case("GET", "/v1/projects/{project_id}/sources/{source_id}/runs"),
    Case("POST", "/v1/projects/{project_id}/sources/{source_id}/poll"),
    Case("GET", "/v1/users/{user_id}"),
    Case("PATCH", "/v1/users/{user_id}", lambda _: {"role": "admin", "name": "taken over"}),
    Case("DELETE", "/v1/users/{user_id}"),
    Case("DELETE", "/v1/users/invitations/{invitation_id}"),
]

# Endpoints with a path parameter that is not a tenant object's id; each needs a reason.
NOT_TENANT_IDS: dict[str, str] = {
    "PUT /v1/uploads/{token}": "the signed token is the credential and names its own tenant",
}

MISSING = {
    "project_id": "prj_00000000000000000000000000",
    "workflow_id": "wfl_00000000000000000000000000",
    "batch_id": "bat_00000000000000000000000000",
    "document_id": "doc_00000000000000000000000000",
    "key_id": "key_00000000000000000000000000",
    "endpoint_id": "whe_00000000000000000000000000",
    "delivery_id": "whd_00000000000000000000000000",
    "user_id": "usr_00000000000000000000000000",
    "source_id": "src_00000000000000000000000000",
    "invitation_id": "inv_00000000000000000000000000",
}


def _ids(objects: TenantObjects) -> dict[str, str]:
    return {
        "project_id": objects.project["id"],
        "workflow_id": objects.workflow["id"],
        "batch_id": objects.batch["id"],
        "document_id": objects.document_id,
        "key_id": objects.tenant.key_id,
        "endpoint_id": ENDPOINTS[objects.tenant.tenant_id][0],
        "delivery_id": ENDPOINTS[objects.tenant.tenant_id][1],
        "user_id": USERS[objects.tenant.tenant_id][1],
        "admin_id": USERS[objects.tenant.tenant_id][0],
        "source_id": SOURCES[objects.tenant.tenant_id],
        "invitation_id": INVITATIONS[objects.tenant.tenant_id],
    }


def _url(case: Case, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], case.path)


@pytest.fixture(scope="module", autouse=True)
def durable_tables(owner_db_url: str, db_url: str) -> None:
    """The history endpoints read DBOS's tables: create them in the session's database, as the
    owner (on PostgreSQL in schema `dbos`, granted to DBOS's own role)."""
    url = make_url(owner_db_url)
    if url.get_backend_name() == "sqlite":
        DBOS.migrate(url.set(drivername="sqlite").render_as_string(hide_password=False))
    else:
        settings = Settings(database_url=db_url, migration_database_url=owner_db_url)
        migrate_system_database(settings, app_role=APP_ROLE)


@pytest.fixture(scope="module")
def tenants(
    client: TestClient, session_factory: sessionmaker[Session]
) -> Iterator[tuple[TenantObjects, TenantObjects]]:
    a = make_objects(client, make_api_tenant(session_factory, "Isolation A"))
    b = make_objects(client, make_api_tenant(session_factory, "Isolation B"))
    for objects in (a, b):
        url = f"/v1/projects/{objects.project['id']}/webhooks"
        endpoint = ok(
            client.post(url, json={"url": PUBLIC_HOOK}, headers=objects.tenant.headers), 201
        )
        with session_factory() as session:
            delivery_id, _ = deliveries.open_delivery(
                session,
                objects.tenant.tenant_id,
                endpoint_id=endpoint["id"],
                event_id="evt_isolation",
                event_type="docflow.batch.completed.v1",
                now=utcnow(),
            )
            session.commit()
        ENDPOINTS[objects.tenant.tenant_id] = (endpoint["id"], delivery_id)
        h = objects.tenant.headers
        admin, viewer = (
            ok(client.post("/v1/users", json={"email": email, "role": role}, headers=h), 201)
            for email, role in (
                (f"admin-{objects.tenant.tenant_id}@example.com", "admin"),
                (f"viewer-{objects.tenant.tenant_id}@example.com", "viewer"),
            )
        )
        USERS[objects.tenant.tenant_id] = (admin["id"], viewer["id"])
        source = {"path": "inbox", "workflow_id": objects.workflow["id"], "cron": "0 * * * *"}
        url = f"/v1/projects/{objects.project['id']}/sources"
        SOURCES[objects.tenant.tenant_id] = ok(client.post(url, json=source, headers=h), 201)["id"]
    for objects, other in ((a, b), (b, a)):
        body = {"email": f"viewer-{other.tenant.tenant_id}@example.com", "role": "viewer"}
        invited = client.post("/v1/users", json=body, headers=objects.tenant.headers)
        INVITATIONS[objects.tenant.tenant_id] = ok(invited, 201)["id"]
    yield a, b


def _request(
    client: TestClient,
    case: Case,
    ids: dict[str, str],
    tenant: ApiTenant,
    body: dict[str, Any] | None,
) -> Any:
    url = _url(case, ids)
    return client.request(
        case.method, url, params=case.query(ids), json=body, headers=tenant.headers
    )


def _without_instance(problem: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in problem.items() if k != "instance"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_other_tenants_ids_answer_404_like_missing_ones(
    client: TestClient, tenants: tuple[TenantObjects, TenantObjects], case: Case
) -> None:
    a, b = tenants
    body = case.body(a)
    foreign = _request(client, case, _ids(a), b.tenant, body)
    missing = _request(client, case, MISSING, b.tenant, body)
    assert foreign.status_code == 404, foreign.text
    assert missing.status_code == 404, missing.text
    assert foreign.headers["content-type"] == missing.headers["content-type"]
    assert _without_instance(foreign.json()) == _without_instance(missing.json())
    if case.method == "GET":
        # The owner reaches the same URL: the 404 above is isolation, not a wrong URL (the
        # answer may be a stream or a file: an export).
        owner = _request(client, case, _ids(a), a.tenant, None)
        if case.stream:
            assert owner.status_code == 200 and owner.text.startswith("event: progress\n")
        else:
            assert owner.status_code == case.owner_status, owner.text


def test_owner_objects_are_untouched(
    client: TestClient, tenants: tuple[TenantObjects, TenantObjects]
) -> None:
    a, b = tenants
    # Run every attempt (again) first, so this test stands on its own.
    for case in CASES:
        _request(client, case, _ids(a), b.tenant, case.body(a))
    h = a.tenant.headers
    assert (
        ok(client.get(f"/v1/projects/{a.project['id']}", headers=h), 200)["name"]
        == (a.project["name"])
    )
    assert ok(client.get(f"/v1/workflows/{a.workflow['id']}", headers=h), 200)["version"] == 1
    workflows = ok(client.get(f"/v1/projects/{a.project['id']}/workflows", headers=h), 200)
    assert [w["id"] for w in workflows["items"]] == [a.workflow["id"]]
    keys = ok(client.get("/v1/api-keys", headers=h), 200)["items"]
    assert [k["revoked_at"] for k in keys] == [None]
    invited = ok(client.get("/v1/users/invitations", headers=h), 200)["items"]
    assert [i["id"] for i in invited] == [_ids(a)["invitation_id"]]
    users = ok(client.get("/v1/users", headers=h), 200)["items"]
    assert sorted((u["id"], u["role"], u["name"]) for u in users) == sorted(
        [(_ids(a)["admin_id"], "admin", ""), (_ids(a)["user_id"], "viewer", "")]
    )
    batch = ok(client.get(f"/v1/batches/{a.batch['id']}", headers=h), 200)
    assert (batch["status"], batch["cancelled_count"]) == ("CREATED", 0)
    endpoint = ok(client.get(f"/v1/webhooks/{_ids(a)['endpoint_id']}", headers=h), 200)
    assert endpoint["enabled"] is True
    hooks = ok(client.get(f"/v1/projects/{a.project['id']}/webhooks", headers=h), 200)["items"]
    assert [e["id"] for e in hooks] == [_ids(a)["endpoint_id"]]


def test_creating_with_another_tenants_ids_is_404(
    client: TestClient, tenants: tuple[TenantObjects, TenantObjects]
) -> None:
    a, b = tenants
    attempts = [
        (a.project["id"], a.workflow["id"], "project not found"),
        (b.project["id"], a.workflow["id"], "workflow not found"),
    ]
    for project_id, workflow_id, detail in attempts:
        body = {
            "project_id": project_id,
            "workflow_id": workflow_id,
            "documents": documents_body(1),
        }
        assert (
            ok(client.post("/v1/batches", json=body, headers=b.tenant.headers), 404)["detail"]
            == detail
        )
    key_of_a_user = {"name": "borrowed", "user_id": _ids(a)["admin_id"]}
    refused = ok(client.post("/v1/api-keys", json=key_of_a_user, headers=b.tenant.headers), 404)
    assert (refused["detail"], refused["errors"][0]["field"]) == ("user not found", "user_id")


def test_comparing_with_another_tenants_batch_is_404(
    client: TestClient, tenants: tuple[TenantObjects, TenantObjects]
) -> None:
    """B's own batch against A's: the same 404 as against a batch that does not exist."""
    a, b = tenants
    url = f"/v1/batches/{b.batch['id']}/diff"
    foreign = client.get(url, params={"against": a.batch["id"]}, headers=b.tenant.headers)
    missing = client.get(url, params={"against": MISSING["batch_id"]}, headers=b.tenant.headers)
    assert foreign.status_code == missing.status_code == 404, foreign.text
    assert _without_instance(foreign.json()) == _without_instance(missing.json())
    assert (
        ok(client.get("/v1/batches", headers=a.tenant.headers), 200)["items"][0]["rerun_of"] is None
    )


@pytest.mark.parametrize(
    ("url", "query"),
    [
        ("/v1/projects", {}),
        ("/v1/batches", {}),
        ("/v1/batches", {"status": "CREATED"}),
        ("/v1/api-keys", {}),
        ("/v1/users", {}),
        ("/v1/users/invitations", {}),
    ],
)
def test_lists_never_show_other_tenants_objects(
    client: TestClient,
    tenants: tuple[TenantObjects, TenantObjects],
    url: str,
    query: dict[str, str],
) -> None:
    a, b = tenants
    listed = ok(client.get(url, params=query, headers=b.tenant.headers), 200)["items"]
    ids = {item["id"] for item in listed}
    assert ids, "tenant B has objects of its own here"
    assert ids <= set(_ids(b).values())
    assert not ids & set(_ids(a).values())


@pytest.mark.parametrize(
    "query",
    [
        {"project_id": "{project_id}"},
        {"workflow_id": "{workflow_id}"},
        {"project_id": "{project_id}", "status": "CREATED"},
    ],
)
def test_batch_filters_never_show_other_tenants_batches(
    client: TestClient, tenants: tuple[TenantObjects, TenantObjects], query: dict[str, str]
) -> None:
    a, b = tenants
    for owner, other in ((a, b), (b, a)):
        params = {k: v.format(**_ids(owner)) for k, v in query.items()}
        seen = ok(client.get("/v1/batches", params=params, headers=owner.tenant.headers), 200)
        assert owner.batch["id"] in {x["id"] for x in seen["items"]}
        listed = ok(client.get("/v1/batches", params=params, headers=other.tenant.headers), 200)
        assert listed["items"] == []


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"status": "PENDING_UPLOAD"},
        {"project_id": "{project_id}"},
        {"workflow_id": "{workflow_id}"},
        {"batch_id": "{batch_id}"},
    ],
)
def test_document_queries_never_show_other_tenants_documents(
    client: TestClient, tenants: tuple[TenantObjects, TenantObjects], query: dict[str, str]
) -> None:
    a, b = tenants
    for owner, other in ((a, b), (b, a)):
        params = {k: v.format(**_ids(owner)) for k, v in query.items()}
        seen = ok(client.get("/v1/documents", params=params, headers=owner.tenant.headers), 200)
        assert {d["id"] for d in seen["items"]} >= {d["id"] for d in owner.batch["documents"]}
        # The other tenant asking with the owner's ids finds none of the owner's documents.
        listed = ok(client.get("/v1/documents", params=params, headers=other.tenant.headers), 200)
        assert not {d["id"] for d in listed["items"]} & {d["id"] for d in owner.batch["documents"]}


def test_every_endpoint_with_an_id_is_covered(client: TestClient) -> None:
    spec = ok(client.get("/openapi.json"), 200)
    with_ids = {
        f"{method.upper()} {path}"
        for path, item in spec["paths"].items()
        if path.startswith("/v1/") and "{" in path
        for method in item
    }
    covered = {case.id for case in CASES} | set(NOT_TENANT_IDS)
    assert with_ids - covered == set(), "add a cross-tenant case for these endpoints"
    assert covered - with_ids == set(), "these cases name endpoints that no longer exist"
