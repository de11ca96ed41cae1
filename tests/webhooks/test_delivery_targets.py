"""Where deliveries go, through the real durable runtime to a real receiver on 127.0.0.1: each
attempt resolves the endpoint's host once and connects to the address it checked; a host
re-pointed at a private address, or a stored URL that breaks today's rules, makes recorded,
categorised attempts and a dead delivery with its dead letter, never a delivery stuck PENDING."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from docflow.webhooks import urls
from docflow.webhooks.repository import WebhookRepository
from support.api_fixtures import ApiTenant, ok
from support.dbos_fixtures import DbosEnv

from .conftest import Receiver
from .helpers import delivery_log, finish, make_event, publish, setup_endpoint


class CountingResolver:
    """Answers every lookup with `address`, and keeps the names looked up."""

    def __init__(self, address: str) -> None:
        self.address = ipaddress.ip_address(address)
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[urls.Address]:
        self.lookups.append(host)
        return [self.address]


def _named(receiver: Receiver, host: str) -> str:
    return receiver.url.replace("127.0.0.1", host)


def _dead_letters(env: DbosEnv, tenant: ApiTenant) -> list[dict[str, Any]]:
    response = env.client.get(
        "/v1/dead-letters", params={"consumer": "webhooks"}, headers=tenant.headers
    )
    items: list[dict[str, Any]] = ok(response, 200)["items"]
    return items


def _store_url(env: DbosEnv, tenant: ApiTenant, endpoint_id: str, url: str) -> None:
    """Set the endpoint's URL in the database, as an endpoint registered under older rules."""
    with env.session_factory() as session:
        row = WebhookRepository(session, tenant.tenant_id).endpoint(endpoint_id)
        assert row is not None
        row.url = url
        session.commit()


def test_each_attempt_resolves_once_and_sends_to_the_checked_address(
    webhook_env: DbosEnv, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = CountingResolver("127.0.0.1")
    monkeypatch.setattr(urls, "resolve", resolver)
    receiver.script = [503]
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    url = f"/v1/webhooks/{endpoint['id']}"
    named = _named(receiver, "hooks.rebind.test")
    ok(webhook_env.client.patch(url, json={"url": named}, headers=tenant.headers), 200)
    assert finish(publish(webhook_env, tenant, make_event(tenant.tenant_id, project_id))) == [
        "DELIVERED"
    ]
    assert resolver.lookups == ["hooks.rebind.test"] * 2  # one per attempt
    host = named.split("/")[2]
    assert [r.headers["host"] for r in receiver.received] == [host, host]


def test_a_host_re_pointed_at_a_private_address_is_refused_and_dead_lettered(
    webhook_env: DbosEnv, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    named = _named(receiver, "hooks.rebind.test")
    # Registered while the name answered a public address; now it answers 127.0.0.1.
    _store_url(webhook_env, tenant, endpoint["id"], named)
    monkeypatch.setattr(urls, "resolve", CountingResolver("127.0.0.1"))
    monkeypatch.setattr(webhook_env.settings, "allow_private_webhook_urls", False)
    event = make_event(tenant.tenant_id, project_id)
    assert finish(publish(webhook_env, tenant, event)) == ["DEAD"]

    assert receiver.received == []
    [delivery] = delivery_log(webhook_env, tenant, endpoint["id"])
    assert len(delivery["attempts"]) == webhook_env.settings.webhook_max_attempts
    assert delivery["last_error"].startswith("refused: webhook URLs may not point at private")
    [letter] = [x for x in _dead_letters(webhook_env, tenant) if x["target"] == endpoint["id"]]
    assert (letter["category"], letter["event_id"]) == ("refused", event["id"])


@pytest.mark.parametrize("host", ["0127.0.0.1", "127.1"])
def test_a_stored_url_that_breaks_the_rules_is_dead_with_its_category_not_stuck(
    webhook_env: DbosEnv, receiver: Receiver, host: str
) -> None:
    tenant, project_id, endpoint = setup_endpoint(webhook_env, receiver)
    _store_url(webhook_env, tenant, endpoint["id"], _named(receiver, host))
    event = make_event(tenant.tenant_id, project_id)
    assert finish(publish(webhook_env, tenant, event)) == ["DEAD"]

    assert receiver.received == []
    [delivery] = delivery_log(webhook_env, tenant, endpoint["id"])
    assert delivery["status"] == "DEAD"
    assert len(delivery["attempts"]) == webhook_env.settings.webhook_max_attempts
    assert all(a["error"].startswith("invalid URL: ") for a in delivery["attempts"])
    [letter] = [x for x in _dead_letters(webhook_env, tenant) if x["target"] == endpoint["id"]]
    assert (letter["category"], letter["event_id"]) == ("invalid_url", event["id"])
