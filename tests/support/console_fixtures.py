"""Console fixtures: a tenant with an admin, a reviewer and a viewer who have passwords and a
batch waiting for review; an https client of the real app (its cookies are Secure); signing in
through the real form."""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.tenancy import TenantContext, from_credential
from docflow.tenants import passwords
from docflow.tenants import service as tenants_service
from support.review_fixtures import reviewable_batch

PASSWORD = "console-pass-1"
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


@dataclass(frozen=True)
class Console:
    tenant_id: str
    emails: dict[str, str]  # role -> email
    batch_id: str
    documents: list[str]


def _user(session: Session, tenant_id: str, role: str, tag: str) -> str:
    email = f"{role}-{tag}@example.com"
    member = tenants_service.invite_user(session, tenant_id, email=email, role=role)
    passwords.set_password(session, tenant_id, user_id=member.user_id, password=PASSWORD)
    return email


def make_console(factory: sessionmaker[Session]) -> Console:
    tag = secrets.token_hex(4)
    with factory.begin() as session:
        tenant = tenants_service.create_tenant(session, name=f"Console {tag}")
        emails = {
            role: _user(session, tenant.id, role, tag) for role in ("admin", "reviewer", "viewer")
        }
        batch = reviewable_batch(
            session, TenantContext(tenant_id=from_credential(tenant.id)), review=2
        )
        return Console(tenant.id, emails, batch.id, [d.id for d in batch.documents])


@pytest.fixture
def console(session_factory: sessionmaker[Session]) -> Console:
    return make_console(session_factory)


@pytest.fixture
def browser(app: FastAPI) -> Iterator[TestClient]:
    """A client on https (the app's public URL is https: its cookies are Secure)."""
    yield TestClient(app, base_url="https://testserver", follow_redirects=False)


def csrf(html: str) -> str:
    found = _CSRF.search(html)
    assert found, html[:2000]
    return found.group(1)


def sign_in(client: TestClient, email: str, password: str = PASSWORD) -> Any:
    form = client.get("/console/sign-in")
    assert form.status_code == 200
    return client.post(
        "/console/sign-in",
        data={"email": email, "password": password, "csrf_token": csrf(form.text)},
    )
