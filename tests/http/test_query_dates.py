"""Every route that takes a time in its query string refuses, as a 422 naming the parameter,
what is not an RFC 3339 date-time with its offset inside the stored range: found in the app's
OpenAPI document, so a route added later with a date parameter is covered too."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from support.api_fixtures import ApiTenant

BAD_TIMES = [
    "0001-01-01T00:00:00+14:00",  # before year 1 once in UTC
    "9999-12-31T23:59:59-14:00",  # past year 9999 once in UTC
    "0.5",  # a number (seconds since 1970 to pydantic's lax mode)
    "1700000000",
    "2026-12-01",  # a date
    "2026-12-01T10:00:00",  # no offset
    "yesterday",
]


def _is_time(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if schema.get("format") in ("date-time", "date"):
        return True
    return any(_is_time(part) for part in schema.get("anyOf", []) + schema.get("oneOf", []))


def routes_with_time_queries(app: FastAPI) -> list[tuple[str, str, str]]:
    """(method, path with its parameters filled, query parameter) of every route whose query
    takes a time, read from the app's OpenAPI document (what clients are told)."""
    found = []
    for path, operations in app.openapi()["paths"].items():
        filled = re.sub(r"\{[^}]+\}", "x", path)
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query" and _is_time(parameter.get("schema")):
                    found.append((method.upper(), filled, parameter["name"]))
    return found


def test_the_routes_with_time_queries_are_found(app: FastAPI) -> None:
    found = {(method, path, name) for method, path, name in routes_with_time_queries(app)}
    assert {
        ("GET", "/v1/batches", "since"),
        ("GET", "/v1/batches", "until"),
        ("GET", "/v1/documents", "until"),
        ("GET", "/v1/dead-letters", "since"),
        ("GET", "/v1/usage/llm", "until"),
    } <= found


@pytest.mark.parametrize("value", BAD_TIMES)
def test_bad_times_are_422_on_every_route(
    app: FastAPI, client: TestClient, tenant_key_a: ApiTenant, value: str
) -> None:
    for method, path, name in routes_with_time_queries(app):
        response = client.request(method, path, params={name: value}, headers=tenant_key_a.headers)
        assert response.status_code == 422, (method, path, name, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        fields = [error["field"] for error in response.json()["errors"]]
        assert name in fields, (method, path, response.json())


def test_a_time_with_an_offset_is_accepted_on_every_route(
    app: FastAPI, client: TestClient, tenant_key_a: ApiTenant
) -> None:
    for method, path, name in routes_with_time_queries(app):
        value = "2026-01-01T00:00:00+14:00" if name == "since" else "9998-12-30T23:59:59-14:00"
        response = client.request(method, path, params={name: value}, headers=tenant_key_a.headers)
        assert response.status_code < 400 or response.status_code == 404, (path, response.text)
