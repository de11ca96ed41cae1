"""Security headers: every console answer (pages, redirects, errors, static files) carries the
Content-Security-Policy and X-Frame-Options, every answer (the API's too) nosniff and the
referrer policy; and the templates hold nothing that policy would refuse. That the pages still
work under it, in a browser, is in test_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from docflow.web.api import CONSOLE_POLICY
from support.api_fixtures import ApiTenant
from support.console_fixtures import Console, sign_in

TEMPLATES = Path(__file__).resolve().parents[2] / "src" / "docflow" / "web" / "templates"


def _directives(policy: str) -> dict[str, list[str]]:
    parts = (p.split() for p in policy.split(";") if p.strip())
    return {name: values for name, *values in parts}


def _common(answer: httpx.Response) -> None:
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["referrer-policy"] == "same-origin"


def _console(answer: httpx.Response) -> None:
    _common(answer)
    assert answer.headers["x-frame-options"] == "DENY"
    policy = _directives(answer.headers["content-security-policy"])
    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"]
    assert not any("unsafe" in v for values in policy.values() for v in values)


def test_console_answers_carry_the_policy(browser: TestClient, console: Console) -> None:
    _console(browser.get("/console/sign-in"))
    _console(browser.get("/console/batches"))  # the redirect to sign in
    _console(browser.get("/console/static/console.js"))
    sign_in(browser, console.emails["admin"])
    page = browser.get(f"/console/batches/{console.batch_id}")
    assert page.status_code == 200
    _console(page)
    missing = browser.get("/console/batches/bat_missing")
    assert missing.status_code == 404
    _console(missing)
    # Only one of each, even where a route sets its own.
    assert len(page.headers.get_list("content-security-policy")) == 1


def test_api_answers_carry_nosniff_and_the_referrer_policy(
    client: TestClient, tenant_key_a: ApiTenant
) -> None:
    listed = client.get("/v1/batches", headers=tenant_key_a.headers)
    assert listed.status_code == 200
    _common(listed)
    refused = client.get("/v1/batches")
    assert refused.status_code == 401
    _common(refused)
    assert "content-security-policy" not in listed.headers  # the API's own documents differ


def test_the_templates_hold_no_inline_script_or_style() -> None:
    """What the policy refuses: inline scripts (a JSON data block is no script), event handler
    attributes, javascript: addresses, style elements and attributes."""
    refused = {
        "inline script": re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>"),
        "event handler": re.compile(r"\son[a-z]+\s*=", re.IGNORECASE),
        "javascript: address": re.compile(r"javascript:", re.IGNORECASE),
        "style element": re.compile(r"<style\b", re.IGNORECASE),
        "style attribute": re.compile(r"\sstyle\s*=", re.IGNORECASE),
    }
    found = [
        (template.name, what)
        for template in sorted(TEMPLATES.glob("*.html"))
        for what, pattern in refused.items()
        if pattern.search(template.read_text())
    ]
    assert found == []
    assert "'unsafe-inline'" not in CONSOLE_POLICY and "'unsafe-eval'" not in CONSOLE_POLICY
