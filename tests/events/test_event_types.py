"""`GET /v1/event-types` serves every type the outbox sends with its committed schema, and
docs/webhooks.md lists the same types."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
from fastapi.testclient import TestClient

from docflow.events import envelopes
from support.api_fixtures import ApiTenant, ok

SCHEMAS = Path(envelopes.__file__).with_name("schemas")
DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def test_every_type_is_served_with_its_committed_schema(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    served = ok(client.get("/v1/event-types", headers=tenant_key_a.headers), 200)["items"]
    assert [t["type"] for t in served] == list(envelopes.EVENT_TYPES)
    assert "docflow.batch.cancelled.v1" in [t["type"] for t in served]
    for item in served:
        committed = json.loads((SCHEMAS / f"{item['type']}.json").read_text())
        assert item["json_schema"] == committed
        assert item["schema_url"] == committed["$id"]
        assert item["type"] == f"docflow.{item['entity']}.{item['change']}.v{item['version']}"
        assert item["description"]
        jsonschema.Draft202012Validator.check_schema(item["json_schema"])
    assert client.get("/v1/event-types").status_code == 401
    unknown = client.get("/v1/event-types", params={"type": "x"}, headers=tenant_key_a.headers)
    assert unknown.status_code == 422


def test_the_webhooks_doc_lists_every_type() -> None:
    table = set(re.findall(r"^\| `(docflow\.[a-z_.]+\.v\d+)` \|", DOC.read_text(), flags=re.M))
    assert table == set(envelopes.EVENT_TYPES)
