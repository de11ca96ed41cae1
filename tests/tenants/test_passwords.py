"""Console passwords: a member's password is set and signs them in; every other case answers
the same refusal; what a password may be is bounded."""

from __future__ import annotations

import time

import pytest
from sqlalchemy.orm import Session

from docflow.errors import InvalidInput, NotFound, Unauthorized
from docflow.tenants import passwords
from docflow.tenants import service as tenants_service


def _member(session: Session, email: str, role: str = "reviewer") -> tuple[str, str]:
    tenant = tenants_service.create_tenant(session, name="Passwords")
    member = tenants_service.invite_user(session, tenant.id, email=email, role=role)
    return tenant.id, member.user_id


def test_a_member_with_a_password_signs_in_by_email_in_any_case(session: Session) -> None:
    tenant_id, user_id = _member(session, "Ann@Example.com")
    passwords.set_password(session, tenant_id, user_id=user_id, password="correct horse")
    assert (
        passwords.sign_in(session, email=" ANN@example.COM ", password="correct horse") == user_id
    )
    stored = tenants_service.get_member(session, tenant_id, user_id=user_id).user.password_hash
    assert stored is not None and stored.startswith("$argon2id$")
    assert "correct horse" not in stored


def test_wrong_password_unknown_email_and_no_password_answer_alike(session: Session) -> None:
    tenant_id, user_id = _member(session, "bob@example.com")
    _member(session, "nopassword@example.com")
    passwords.set_password(session, tenant_id, user_id=user_id, password="s3cret-pass")
    answers = []
    for email, password in (
        ("bob@example.com", "wrong-pass"),
        ("nobody@example.com", "s3cret-pass"),
        ("nopassword@example.com", "s3cret-pass"),
        ("not an email", "s3cret-pass"),
        ("bob@example.com", "x" * 100_000),
    ):
        started = time.perf_counter()
        with pytest.raises(Unauthorized) as refused:
            passwords.sign_in(session, email=email, password=password)
        answers.append(str(refused.value))
        assert time.perf_counter() - started < 1.0
    assert set(answers) == {"wrong email or password"}


def test_a_new_password_replaces_the_old(session: Session) -> None:
    tenant_id, user_id = _member(session, "carol@example.com")
    passwords.set_password(session, tenant_id, user_id=user_id, password="first-password")
    passwords.set_password(session, tenant_id, user_id=user_id, password="second-password")
    assert passwords.sign_in(session, email="carol@example.com", password="second-password")
    with pytest.raises(Unauthorized):
        passwords.sign_in(session, email="carol@example.com", password="first-password")


def test_a_password_is_set_only_for_a_member_of_the_tenant(session: Session) -> None:
    _, user_id = _member(session, "dan@example.com")
    other = tenants_service.create_tenant(session, name="Other")
    with pytest.raises(NotFound):
        passwords.set_password(session, other.id, user_id=user_id, password="long enough")


@pytest.mark.parametrize("bad", ["short", "x" * (passwords.MAX_LENGTH + 1), "with\x00nul-char"])
def test_a_password_out_of_bounds_is_refused_naming_it(session: Session, bad: str) -> None:
    tenant_id, user_id = _member(session, "erin@example.com")
    with pytest.raises(InvalidInput) as refused:
        passwords.set_password(session, tenant_id, user_id=user_id, password=bad)
    assert refused.value.field == "password"


def test_signed_in_reads_the_user_and_their_tenants_afresh(session: Session) -> None:
    tenant_id, user_id = _member(session, "fay@example.com", role="viewer")
    second = tenants_service.create_tenant(session, name="Second")
    tenants_service.add_member(session, second.id, user_id=user_id, role="admin")
    found = passwords.signed_in(session, user_id=user_id)
    assert found.email == "fay@example.com"
    assert dict(found.tenants) == {tenant_id: "viewer", second.id: "admin"}
    assert found.role_in(second.id) == "admin" and found.role_in("ten_other") is None
    assert passwords.signed_in(session, user_id="usr_missing").tenants == ()
