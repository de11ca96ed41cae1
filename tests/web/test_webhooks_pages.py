"""The console's webhooks pages over HTTP: every project's endpoints, an endpoint's delivery
log with its attempts, redelivery through the webhooks service (the `write` scope), and the
tenant boundary."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Settings
from docflow.events import envelopes
from docflow.events import service as events_service
from docflow.events.consumers import register_consumer, unregister_consumer
from docflow.events.envelopes import Envelope
from docflow.kit import ids
from docflow.kit.clock import utcnow
from docflow.projects import service as projects_service
from docflow.tenancy import TenantContext, from_credential
from docflow.webhooks import deliveries, signing
from docflow.webhooks import service as webhooks_service
from docflow.webhooks.models import DeliveryStatus
from docflow.webhooks.transport import AttemptResult
from support.console_fixtures import Console, csrf, make_console, sign_in

HOOK = "https://93.184.215.14/hooks"


def _endpoint(
    factory: sessionmaker[Session], settings: Settings, console: Console
) -> tuple[str, str]:
    """A project with an endpoint, and a delivery to it that died after one refused attempt."""
    with factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        project = projects_service.create_project(session, tenant, name="Hooks")
        endpoint = webhooks_service.create_endpoint(
            session,
            tenant,
            project_id=project.id,
            url=HOOK,
            key_material=settings.signing_secret,
            allow_private=False,
        ).endpoint
        now = utcnow()
        delivery_id, number = deliveries.open_delivery(
            session,
            console.tenant_id,
            endpoint_id=endpoint.id,
            event_id="evt_console_1",
            event_type="docflow.batch.completed.v1",
            now=now,
        )
        deliveries.record_attempt(
            session,
            console.tenant_id,
            delivery_id=delivery_id,
            number=number,
            result=AttemptResult(status_code=503, latency_ms=12, error="HTTP 503"),
            status=DeliveryStatus.DEAD,
            attempted_at=now,
            next_retry_at=None,
        )
        return endpoint.id, delivery_id


def test_endpoints_and_their_delivery_log_are_shown(
    browser: TestClient,
    console: Console,
    session_factory: sessionmaker[Session],
    api_settings: Settings,
) -> None:
    endpoint_id, delivery_id = _endpoint(session_factory, api_settings, console)
    sign_in(browser, console.emails["viewer"])
    listed = browser.get("/console/webhooks")
    assert listed.status_code == 200 and endpoint_id in listed.text and HOOK in listed.text
    log = browser.get(f"/console/webhooks/{endpoint_id}")
    assert log.status_code == 200
    assert delivery_id in log.text and "DEAD" in log.text and "503 in 12 ms" in log.text
    assert "Redeliver" not in log.text  # a viewer may not


def test_redelivering_goes_through_the_webhooks_service(
    browser: TestClient,
    console: Console,
    session_factory: sessionmaker[Session],
    api_settings: Settings,
) -> None:
    endpoint_id, delivery_id = _endpoint(session_factory, api_settings, console)
    url = f"/console/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver"
    sign_in(browser, console.emails["reviewer"])
    token = csrf(browser.get("/console/review").text)
    assert browser.post(url, data={"csrf_token": token}).status_code == 403
    browser.cookies.clear()
    sign_in(browser, console.emails["admin"])
    page = browser.get(f"/console/webhooks/{endpoint_id}").text
    assert "Redeliver" in page
    token = csrf(page)
    # The delivery was made here by hand: no dead letter and no job keep its event, so the
    # service refuses, as the API does for an event no longer kept.
    refused = browser.post(url, data={"csrf_token": token})
    assert refused.status_code == 409 and "no longer kept" in refused.text
    missing = browser.post(
        f"/console/webhooks/{endpoint_id}/deliveries/dlv_missing/redeliver",
        data={"csrf_token": token},
    )
    assert missing.status_code == 404


def test_another_tenants_endpoint_is_not_found(
    browser: TestClient,
    console: Console,
    session_factory: sessionmaker[Session],
    api_settings: Settings,
) -> None:
    other = make_console(session_factory)
    endpoint_id, delivery_id = _endpoint(session_factory, api_settings, other)
    sign_in(browser, console.emails["admin"])
    assert endpoint_id not in browser.get("/console/webhooks").text
    assert browser.get(f"/console/webhooks/{endpoint_id}").status_code == 404
    token = csrf(browser.get("/console/review").text)
    foreign = browser.post(
        f"/console/webhooks/{endpoint_id}/deliveries/{delivery_id}/redeliver",
        data={"csrf_token": token},
    )
    assert foreign.status_code == 404


def _dead_letter(factory: sessionmaker[Session], tenant_id: str, consumer: str) -> str:
    """A dead letter of `consumer` (not a registered one: a redrive is refused as unroutable)."""
    raw = Envelope(
        id=ids.new_id("evt"),
        source=envelopes.source_for(tenant_id),
        type=envelopes.WORKFLOW_PUBLISHED,
        time=utcnow(),
        subject="workflows/wfl_x",
        data={"tenant_id": tenant_id},
    ).to_dict()
    with factory.begin() as session:
        return events_service.add_dead_letter(
            session,
            consumer_name=consumer,
            raw=raw,
            error="HTTP 503 from the receiver",
            category="http_5xx",
            attempts=5,
            workflow_id=ids.new_id("wf"),
        )


def test_dead_letters_are_listed_and_redriven_through_the_events_service(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    letter_id = _dead_letter(session_factory, console.tenant_id, "console-retired")
    url = f"/console/webhooks/dead-letters/{letter_id}/redrive"
    sign_in(browser, console.emails["reviewer"])
    listed = browser.get("/console/webhooks").text
    assert letter_id in listed and "console-retired" in listed and "HTTP 503" in listed
    assert 'name="reason"' not in listed  # a reviewer may not redrive
    assert browser.post(url, data={"csrf_token": csrf(listed), "reason": "back"}).status_code == 403
    browser.cookies.clear()
    sign_in(browser, console.emails["admin"])
    listed = browser.get("/console/webhooks").text
    assert f'action="/console/webhooks/dead-letters/{letter_id}/redrive"' in listed
    token = csrf(listed)
    assert browser.post(url, data={"reason": "back"}).status_code == 403  # no CSRF token
    assert browser.post(url, data={"csrf_token": token, "reason": ""}).status_code == 422
    assert browser.post(url, data={"csrf_token": token, "reason": "x" * 501}).status_code == 422
    # The letter's consumer is no longer registered: the service refuses, as the CLI does.
    refused = browser.post(url, data={"csrf_token": token, "reason": "receiver is back"})
    assert refused.status_code == 409 and "not registered" in refused.text
    missing = browser.post(
        "/console/webhooks/dead-letters/dlq_missing/redrive",
        data={"csrf_token": token, "reason": "receiver is back"},
    )
    assert missing.status_code == 404


def test_another_tenants_dead_letter_is_not_found(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    other = make_console(session_factory)
    letter_id = _dead_letter(session_factory, other.tenant_id, "console-retired")
    sign_in(browser, console.emails["admin"])
    listed = browser.get("/console/webhooks").text
    assert letter_id not in listed and "No dead letter." in listed
    foreign = browser.post(
        f"/console/webhooks/dead-letters/{letter_id}/redrive",
        data={"csrf_token": csrf(listed), "reason": "receiver is back"},
    )
    assert foreign.status_code == 404


@pytest.fixture
def redrivable() -> Iterator[str]:
    """A registered consumer that takes no new event: only a redrive reaches it."""
    register_consumer(
        "console-redrivable", handles=lambda _session, _envelope: False, handler=lambda *_: None
    )
    yield "console-redrivable"
    unregister_consumer("console-redrivable")


def test_a_redrive_is_recorded_with_the_member_and_the_reason(
    browser: TestClient,
    console: Console,
    session_factory: sessionmaker[Session],
    redrivable: str,
) -> None:
    letter_id = _dead_letter(session_factory, console.tenant_id, redrivable)
    sign_in(browser, console.emails["admin"])
    token = csrf(browser.get("/console/webhooks").text)
    url = f"/console/webhooks/dead-letters/{letter_id}/redrive"
    done = browser.post(
        url, data={"csrf_token": token, "reason": "receiver is back"}, follow_redirects=False
    )
    assert done.status_code == 303, done.text
    row = browser.get("/console/webhooks").text
    assert f"by console {console.emails['admin']}: receiver is back" in row
    assert f'action="{url}"' not in row  # no second redrive offered
    again = browser.post(url, data={"csrf_token": token, "reason": "twice"})
    assert again.status_code == 409 and "redriven already" in again.text


def _endpoints(factory: sessionmaker[Session], console: Console, project_id: str) -> list[str]:
    with factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        listed = webhooks_service.list_endpoints(
            session, tenant, project_id=project_id, cursor=None, limit=10
        )
        return [e.id for e in listed.items]


def _hooks_project(factory: sessionmaker[Session], console: Console) -> str:
    with factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        return projects_service.create_project(session, tenant, name="Hooks").id


def test_an_admin_registers_an_endpoint_and_sees_its_secret_once(
    browser: TestClient,
    console: Console,
    session_factory: sessionmaker[Session],
    api_settings: Settings,
) -> None:
    project_id = _hooks_project(session_factory, console)
    sign_in(browser, console.emails["admin"])
    assert "New endpoint" in browser.get("/console/webhooks").text
    form = browser.get("/console/webhooks/new")
    assert form.status_code == 200 and "docflow.batch.completed.v1" in form.text
    token = csrf(form.text)
    fields = {"csrf_token": token, "project_id": project_id}
    private = browser.post(
        "/console/webhooks/new", data={**fields, "url": "http://127.0.0.1:9/hooks"}
    )
    assert private.status_code == 422 and '<code class="path">url</code>' in private.text
    unknown = browser.post(
        "/console/webhooks/new", data={**fields, "url": HOOK, "event_types": ["docflow.nope"]}
    )
    assert unknown.status_code == 422 and '<code class="path">event_types</code>' in unknown.text
    assert _endpoints(session_factory, console, project_id) == []
    created = browser.post(
        "/console/webhooks/new",
        data={**fields, "url": HOOK, "event_types": ["docflow.batch.completed.v1"]},
    )
    assert created.status_code == 201 and created.headers["cache-control"] == "no-store"
    (endpoint_id,) = _endpoints(session_factory, console, project_id)
    secret = created.text.split('<code id="secret">', 1)[1].split("</code>", 1)[0]
    assert secret.startswith("whsec_")
    with session_factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        endpoint = webhooks_service.get_endpoint(session, tenant, endpoint_id=endpoint_id)
        assert endpoint.event_types == ["docflow.batch.completed.v1"]
        assert signing.unseal(endpoint.secret_sealed, api_settings.signing_secret) == secret
    # Never shown again: not on the endpoint's page nor in the list.
    assert secret not in browser.get(f"/console/webhooks/{endpoint_id}").text
    assert secret not in browser.get("/console/webhooks").text


def test_registering_an_endpoint_needs_write_csrf_and_a_project_of_the_tenant(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    project_id = _hooks_project(session_factory, console)
    other = make_console(session_factory)
    foreign = _hooks_project(session_factory, other)
    sign_in(browser, console.emails["reviewer"])
    listed = browser.get("/console/webhooks")
    assert "New endpoint" not in listed.text
    assert browser.get("/console/webhooks/new").status_code == 403
    data = {"csrf_token": csrf(listed.text), "project_id": project_id, "url": HOOK}
    assert browser.post("/console/webhooks/new", data=data).status_code == 403
    browser.cookies.clear()
    sign_in(browser, console.emails["admin"])
    token = csrf(browser.get("/console/webhooks").text)
    forged = {"csrf_token": "forged", "project_id": project_id, "url": HOOK}
    assert browser.post("/console/webhooks/new", data=forged).status_code == 403
    elsewhere = {"csrf_token": token, "project_id": foreign, "url": HOOK}
    assert browser.post("/console/webhooks/new", data=elsewhere).status_code == 404
    assert _endpoints(session_factory, console, project_id) == []
    assert _endpoints(session_factory, other, foreign) == []
