"""Releasing a user's OpenID Connect binding (`tenants.identities.release_oidc` and
`docflow users release-sign-in`): the next sign-in binds afresh by verified email, an admin of
any tenant the user belongs to may release it, no other tenant can, and every release is logged
naming who did it."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker
from structlog.testing import capture_logs
from typer.testing import CliRunner

from docflow.cli import app
from docflow.errors import NotFound
from docflow.tenants import identities
from docflow.tenants import service as tenants_service

ISSUER = "https://sso.example.test"
runner = CliRunner()


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCFLOW_DATABASE_URL", db_url)
    monkeypatch.setenv("DOCFLOW_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")


def _tenant_with(factory: sessionmaker[Session], email: str | None = None) -> tuple[str, str]:
    """A new tenant with a member (a new user, or the one with `email`): (tenant id, email)."""
    email = email or f"sso-{secrets.token_hex(4)}@example.com"
    with factory.begin() as session:
        tenant = tenants_service.create_tenant(session, name="SSO")
        tenants_service.invite_user(session, tenant.id, email=email, role="viewer")
    return tenant.id, email


def _sign_in(factory: sessionmaker[Session], subject: str, email: str) -> str:
    with factory.begin() as session:
        return identities.sign_in_oidc(
            session, issuer=ISSUER, subject=subject, email=email, email_verified=True
        )


def _release(factory: sessionmaker[Session], tenant_id: str, user_id: str) -> str:
    with factory.begin() as session:
        return identities.release_oidc(session, tenant_id, user_id=user_id, actor="usr_admin")


def test_a_released_user_binds_afresh_to_the_next_identity_with_their_verified_email(
    session_factory: sessionmaker[Session],
) -> None:
    tenant_id, email = _tenant_with(session_factory)
    user_id = _sign_in(session_factory, "subject-a", email)
    with pytest.raises(identities.SignInRefused) as refused:
        _sign_in(session_factory, "subject-b", email)
    assert "docflow users release-sign-in" in refused.value.detail
    assert "Users page" in refused.value.detail
    with capture_logs() as logs:
        assert _release(session_factory, tenant_id, user_id) == ISSUER
    released = [e for e in logs if e["event"] == "user.oidc_released"]
    assert released == [
        {
            "event": "user.oidc_released",
            "log_level": "info",
            "tenant_id": tenant_id,
            "user_id": user_id,
            "issuer": ISSUER,
            "subject": "subject-a",
            "actor": "usr_admin",
        }
    ]
    assert _sign_in(session_factory, "subject-b", email) == user_id
    # Bound to B now: A is the other account.
    with pytest.raises(identities.SignInRefused, match="another account of this issuer"):
        _sign_in(session_factory, "subject-a", email)


def test_any_tenant_of_the_user_releases_it_and_no_other_tenant_can(
    session_factory: sessionmaker[Session],
) -> None:
    first, email = _tenant_with(session_factory)
    second, _ = _tenant_with(session_factory, email)
    stranger, _ = _tenant_with(session_factory)
    user_id = _sign_in(session_factory, f"sub-{secrets.token_hex(4)}", email)
    with pytest.raises(NotFound, match="user not found"):
        _release(session_factory, stranger, user_id)
    assert _release(session_factory, second, user_id) == ISSUER
    with pytest.raises(identities.NotBound, match="nothing to release"):
        _release(session_factory, first, user_id)  # the binding was the user's, for both


@pytest.mark.usefixtures("cli_env")
def test_the_operator_releases_a_binding_from_the_command_line(
    session_factory: sessionmaker[Session],
) -> None:
    tenant_id, email = _tenant_with(session_factory)
    other, _ = _tenant_with(session_factory)
    user_id = _sign_in(session_factory, f"sub-{secrets.token_hex(4)}", email)
    command = ["users", "release-sign-in", "--tenant", tenant_id]
    assert "operator" in runner.invoke(app, ["users", "release-sign-in", "--help"]).output

    refused = runner.invoke(app, ["users", "release-sign-in", email.upper(), "--tenant", other])
    assert refused.exit_code == 1 and "user not found" in refused.output
    unknown = runner.invoke(app, [*command, f"nobody-{secrets.token_hex(3)}@example.com"])
    assert unknown.exit_code == 1 and "user not found" in unknown.output

    done = runner.invoke(app, [*command, email.upper(), "--by", "ops-ann"])
    assert done.exit_code == 0, done.output
    assert f"user {user_id} no longer signs in with the identity of {ISSUER}" in done.stdout
    logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert [(e["user_id"], e["actor"]) for e in logged if e["event"] == "user.oidc_released"] == [
        (user_id, "ops-ann")
    ]
    again = runner.invoke(app, [*command, user_id])
    assert again.exit_code == 1 and "no_oidc_binding" in again.output
    assert _sign_in(session_factory, "a-new-subject-" + secrets.token_hex(3), email) == user_id
