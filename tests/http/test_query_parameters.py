"""Unknown query parameters are refused on every endpoint, as unknown body fields are: a 422
problem naming each one, whatever the route (the check is one app-wide dependency, so this
walks the OpenAPI document rather than a list kept by hand)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from support.api_fixtures import ApiTenant, ok


def test_every_endpoint_refuses_a_query_parameter_it_does_not_read(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    spec = ok(client.get("/openapi.json"), 200)
    checked = 0
    for path, item in spec["paths"].items():
        if not path.startswith("/v1/"):
            continue
        url = re.sub(r"\{[^}]+\}", "x_missing", path)
        for method, operation in item.items():
            known = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            assert "zz_unknown" not in known
            answer = client.request(
                method.upper(),
                url,
                params={"zz_unknown": "1"},
                headers=tenant_key_a.headers,
            )
            where = f"{method.upper()} {path}"
            assert answer.status_code == 422, f"{where}: {answer.status_code} {answer.text}"
            assert answer.headers["content-type"] == "application/problem+json", where
            fields = [e["field"] for e in answer.json()["errors"]]
            assert fields == ["zz_unknown"], f"{where}: {fields}"
            checked += 1
    assert checked > 40


def test_declared_parameters_pass_and_unknown_ones_are_all_named(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    h = tenant_key_a.headers
    ok(client.get("/v1/documents", params={"status": "FAILED", "limit": 1}, headers=h), 200)
    answer = client.get(
        "/v1/documents", params={"status": "FAILED", "statuses": "x", "Limit": "2"}, headers=h
    )
    assert [e["field"] for e in ok(answer, 422)["errors"]] == ["Limit", "statuses"]
