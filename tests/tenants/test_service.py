"""Tenants, users, memberships, API keys and authentication, through the real database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from docflow.errors import Conflict, InvalidInput, NotFound, Unauthorized
from docflow.kit.clock import utcnow
from docflow.tenancy import TenantContext
from docflow.tenants import service
from docflow.tenants.repository import ApiKeyRepository


def test_create_tenant_and_plan(session: Session) -> None:
    tenant = service.create_tenant(session, name="  Acme  ", plan="pro")
    assert tenant.id.startswith("ten_")
    assert (tenant.name, tenant.plan) == ("Acme", "pro")
    with pytest.raises(InvalidInput):
        service.create_tenant(session, name="x", plan="Not A Plan")
    with pytest.raises(InvalidInput):
        service.create_tenant(session, name="   ")


def test_users_are_found_by_email_case_insensitively(session: Session) -> None:
    user = service.create_user(session, email="Ada@Example.COM", name="Ada")
    assert user.email == "ada@example.com"
    assert service.find_user_by_email(session, email=" ADA@example.com ").id == user.id
    with pytest.raises(Conflict):
        service.create_user(session, email="ada@EXAMPLE.com")
    with pytest.raises(NotFound):
        service.find_user_by_email(session, email="bob@example.com")
    with pytest.raises(InvalidInput):
        service.create_user(session, email="not-an-email")


def test_a_user_can_belong_to_several_tenants(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    user = service.create_user(session, email="multi@example.com")
    a = service.add_member(session, tenant_a.tenant_id, user_id=user.id, role="admin")
    b = service.add_member(session, tenant_b.tenant_id, user_id=user.id)
    assert (a.role, b.role) == ("admin", "viewer")
    assert service.list_user_tenants(session, user_id=user.id) == sorted(
        [(tenant_a.tenant_id, "admin"), (tenant_b.tenant_id, "viewer")]
    )
    assert service.list_user_tenants(session, user_id="usr_nobody") == []
    with pytest.raises(Conflict):
        service.add_member(session, tenant_a.tenant_id, user_id=user.id)
    with pytest.raises(InvalidInput):
        service.add_member(session, tenant_b.tenant_id, user_id=user.id, role="emperor")
    with pytest.raises(NotFound):
        service.add_member(session, tenant_a.tenant_id, user_id="usr_missing")
    with pytest.raises(NotFound):
        service.add_member(session, "ten_missing", user_id=user.id)


def test_api_key_is_shown_once_and_stored_hashed(session: Session, tenant_a: TenantContext) -> None:
    key, plaintext = service.create_api_key(
        session, tenant_a.tenant_id, name="ci", scopes=["projects:write", "projects:read"]
    )
    scheme, prefix, secret = plaintext.split("_", 2)
    assert (scheme, prefix) == ("dfk", key.prefix)
    assert secret not in key.key_hash and len(key.key_hash) == 64
    assert key.scopes == ["projects:read", "projects:write"]
    assert [k.id for k in service.list_api_keys(session, tenant_a.tenant_id)] == [key.id]
    with pytest.raises(InvalidInput):
        service.create_api_key(session, tenant_a.tenant_id, name="none", scopes=[])
    with pytest.raises(NotFound):
        service.create_api_key(session, "ten_missing", name="x", scopes=["*"])


def test_authenticate_returns_the_keys_tenant(session: Session, tenant_a: TenantContext) -> None:
    key, plaintext = service.create_api_key(session, tenant_a.tenant_id, name="ci", scopes=["*"])
    context = service.authenticate(session, token=plaintext).tenant
    assert context == TenantContext(tenant_id=tenant_a.tenant_id, key_id=key.id, scopes=("*",))
    assert context.has_scope("anything")


@pytest.mark.parametrize(
    "token",
    ["", "garbage", "dfk_", "dfk_short_secret", "xyz_abcdefghjkmn_secret", "dfk_abcdefghjkmn_"],
)
def test_authenticate_rejects_malformed_keys(session: Session, token: str) -> None:
    with pytest.raises(Unauthorized):
        service.authenticate(session, token=token)


def test_authenticate_rejects_wrong_secret_and_unknown_prefix(
    session: Session, tenant_a: TenantContext
) -> None:
    _, plaintext = service.create_api_key(session, tenant_a.tenant_id, name="ci", scopes=["*"])
    prefix = plaintext.split("_")[1]
    with pytest.raises(Unauthorized, match="invalid"):
        service.authenticate(session, token=f"dfk_{prefix}_not-the-secret")
    with pytest.raises(Unauthorized, match="invalid"):
        service.authenticate(session, token="dfk_000000000000_whatever")


def test_revoked_keys_no_longer_authenticate(session: Session, tenant_a: TenantContext) -> None:
    key, plaintext = service.create_api_key(session, tenant_a.tenant_id, name="ci", scopes=["*"])
    revoked = service.revoke_api_key(session, tenant_a.tenant_id, key_id=key.id)
    first = revoked.revoked_at
    assert first is not None
    assert service.revoke_api_key(session, tenant_a.tenant_id, key_id=key.id).revoked_at == first
    with pytest.raises(Unauthorized, match="revoked"):
        service.authenticate(session, token=plaintext)


def test_another_tenants_key_cannot_be_revoked_or_listed(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    key, _ = service.create_api_key(session, tenant_a.tenant_id, name="a", scopes=["*"])
    with pytest.raises(NotFound):
        service.revoke_api_key(session, tenant_b.tenant_id, key_id=key.id)
    assert service.list_api_keys(session, tenant_b.tenant_id) == []


def test_authentication_reads_only_and_hands_out_a_use_at_most_once_a_minute(
    session: Session, tenant_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every call reads the key (a verification is trusted for seconds, a use is per minute).
    monkeypatch.setattr(service, "VERIFIED_KEY_TTL_SECONDS", 0.0)
    key, plaintext = service.create_api_key(session, tenant_a.tenant_id, name="ci", scopes=["*"])
    use = service.authenticate(session, token=plaintext).use
    assert use is not None and (use.tenant_id, use.key_id) == (tenant_a.tenant_id, key.id)
    session.refresh(key)
    assert key.last_used_at is None  # nothing written: recording the use is the caller's
    service.record_key_use(session, use)
    session.refresh(key)
    assert key.last_used_at is not None
    assert service.authenticate(session, token=plaintext).use is None

    stale = utcnow() - timedelta(minutes=5)
    ApiKeyRepository(session, tenant_a.tenant_id).touch(key.id, stale)
    again = service.authenticate(session, token=plaintext).use
    assert again is not None and again.at > stale + timedelta(minutes=4)


def test_a_use_handed_out_is_not_handed_out_again_by_a_trusted_verification(
    session: Session, tenant_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Concurrent requests of one key: the first is given the use to record, the others not.
    monkeypatch.setattr(service, "VERIFIED_KEY_TTL_SECONDS", 3600.0)
    _, plaintext = service.create_api_key(session, tenant_a.tenant_id, name="ci", scopes=["*"])
    assert service.authenticate(session, token=plaintext).use is not None
    assert service.authenticate(session, token=plaintext).use is None


def test_a_key_revoked_here_is_refused_at_once_though_verified_before(
    session: Session, tenant_a: TenantContext
) -> None:
    key, plaintext = service.create_api_key(session, tenant_a.tenant_id, name="ci", scopes=["*"])
    assert service.authenticate(session, token=plaintext).tenant.key_id == key.id
    service.revoke_api_key(session, tenant_a.tenant_id, key_id=key.id)
    with pytest.raises(Unauthorized, match="revoked"):
        service.authenticate(session, token=plaintext)


def test_a_key_revoked_elsewhere_is_refused_once_its_verification_expires(
    session: Session, tenant_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "VERIFIED_KEY_TTL_SECONDS", 3600.0)
    key, plaintext = service.create_api_key(session, tenant_a.tenant_id, name="ci", scopes=["*"])
    assert service.authenticate(session, token=plaintext).tenant.key_id == key.id
    # Revoked by another process: this one still trusts its recent verification.
    key.revoked_at = utcnow()
    session.flush()
    assert service.authenticate(session, token=plaintext).tenant.key_id == key.id
    monkeypatch.setattr(service, "VERIFIED_KEY_TTL_SECONDS", 0.0)
    with pytest.raises(Unauthorized, match="revoked"):
        service.authenticate(session, token=plaintext)
