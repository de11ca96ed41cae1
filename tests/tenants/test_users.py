"""A tenant's users and roles through the real database: adding by email, roles and the scopes
they grant, keys of a user (narrowed by the role at authentication), the last admin."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from docflow import db
from docflow.errors import InvalidInput, NotFound, Unauthorized
from docflow.tenancy import TenantContext
from docflow.tenants import service
from docflow.tenants.repository import MembershipRepository


@pytest.fixture(autouse=True)
def trusted_for_long(monkeypatch: pytest.MonkeyPatch) -> None:
    # A verified key is trusted for an hour: a change that takes effect must do so in spite of
    # this process's recent verification.
    monkeypatch.setattr(service, "VERIFIED_KEY_TTL_SECONDS", 3600.0)


def test_inviting_adds_a_new_email_to_the_directory_and_a_known_one_as_it_is(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    member = service.invite_user(
        session, tenant_a.tenant_id, email=" Rita@Example.com ", name="Rita", role="reviewer"
    )
    user = member.user
    assert (user.email, user.name, member.role) == ("rita@example.com", "Rita", "reviewer")
    # The same person in another tenant: the directory's user, their name kept.
    other = service.invite_user(
        session, tenant_b.tenant_id, email="RITA@example.com", name="Someone else", role="admin"
    )
    assert (other.user_id, other.user.name, other.role) == (user.id, "Rita", "admin")
    assert service.list_user_tenants(session, user_id=user.id) == sorted(
        [(tenant_a.tenant_id, "reviewer"), (tenant_b.tenant_id, "admin")]
    )
    with pytest.raises(service.AlreadyAMember) as again:
        service.invite_user(session, tenant_a.tenant_id, email="rita@example.com", role="viewer")
    assert (again.value.code, again.value.status, again.value.field) == (
        "already_a_member",
        409,
        "email",
    )


@pytest.mark.parametrize(
    ("email", "role", "field"),
    [("not-an-email", "viewer", "email"), ("ok@example.com", "member", "role")],
)
def test_bad_email_or_role_is_invalid_input_naming_the_field(
    session: Session, tenant_a: TenantContext, email: str, role: str, field: str
) -> None:
    with pytest.raises(InvalidInput) as bad:
        service.invite_user(session, tenant_a.tenant_id, email=email, role=role)
    assert bad.value.field == field
    assert service.list_members(session, tenant_a.tenant_id).items == []


def test_members_are_listed_a_page_at_a_time_by_id(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    ids = sorted(
        service.invite_user(
            session, tenant_a.tenant_id, email=f"p{i}@example.com", role="viewer"
        ).user_id
        for i in range(3)
    )
    service.invite_user(session, tenant_b.tenant_id, email="elsewhere@example.com", role="admin")
    first = service.list_members(session, tenant_a.tenant_id, limit=2)
    assert [m.user_id for m in first.items] == ids[:2] and first.next_cursor is not None
    rest = service.list_members(session, tenant_a.tenant_id, cursor=first.next_cursor, limit=2)
    assert [m.user_id for m in rest.items] == ids[2:] and rest.next_cursor is None
    assert [m.user.email for m in rest.items] == [
        service.get_member(session, tenant_a.tenant_id, user_id=ids[2]).user.email
    ]


@pytest.mark.parametrize(
    ("key_scopes", "role", "effective"),
    [
        (("*",), None, ("*",)),
        (("*",), "admin", ("*",)),
        (("*",), "reviewer", ("read", "review")),
        (("*",), "viewer", ("read",)),
        (("read", "write"), "admin", ("read", "write")),
        (("read", "write"), "reviewer", ("read", "review")),  # write implies review
        (("read", "write"), "viewer", ("read",)),
        (("admin",), "reviewer", ()),
        (("read",), "unknown", ()),
    ],
)
def test_a_keys_scopes_are_narrowed_to_its_users_role(
    key_scopes: tuple[str, ...], role: str | None, effective: tuple[str, ...]
) -> None:
    assert service.effective_scopes(key_scopes, role) == effective


def test_a_key_of_a_user_holds_no_scope_beyond_the_role_and_names_a_member(
    session: Session, tenant_a: TenantContext, tenant_b: TenantContext
) -> None:
    viewer = service.invite_user(session, tenant_a.tenant_id, email="v@example.com", role="viewer")
    with pytest.raises(InvalidInput) as beyond:
        service.create_api_key(
            session, tenant_a.tenant_id, name="k", scopes=["read", "write"], user_id=viewer.user_id
        )
    assert beyond.value.field == "scopes" and "write" in beyond.value.detail
    stranger = service.invite_user(session, tenant_b.tenant_id, email="b@example.com", role="admin")
    for user_id in (stranger.user_id, "usr_00000000000000000000000000"):
        with pytest.raises(NotFound) as missing:
            service.create_api_key(
                session, tenant_a.tenant_id, name="k", scopes=["read"], user_id=user_id
            )
        assert missing.value.field == "user_id"
    key, _ = service.create_api_key(
        session, tenant_a.tenant_id, name="k", scopes=["read"], user_id=viewer.user_id
    )
    assert key.user_id == viewer.user_id
    assert service.scopes_within_role(
        session, tenant_a.tenant_id, user_id=viewer.user_id, scopes=["*"]
    ) == ["read"]


def test_authentication_attributes_the_key_to_its_user(
    session: Session, tenant_a: TenantContext
) -> None:
    member = service.invite_user(
        session, tenant_a.tenant_id, email="r@example.com", role="reviewer"
    )
    key, token = service.create_api_key(
        session, tenant_a.tenant_id, name="k", scopes=["read", "review"], user_id=member.user_id
    )
    context = service.authenticate(session, token=token).tenant
    assert context == TenantContext(
        tenant_id=tenant_a.tenant_id,
        key_id=key.id,
        scopes=("read", "review"),
        user_id=member.user_id,
    )
    assert context.actor == member.user_id
    assert context.has_scope("review") and not context.has_scope("write")
    _, tenant_token = service.create_api_key(session, tenant_a.tenant_id, name="t", scopes=["*"])
    tenant_key = service.authenticate(session, token=tenant_token).tenant
    assert tenant_key.user_id is None and tenant_key.actor == tenant_key.key_id


def test_a_lower_role_narrows_the_users_keys_at_once(
    session: Session, tenant_a: TenantContext
) -> None:
    service.invite_user(session, tenant_a.tenant_id, email="boss@example.com", role="admin")
    member = service.invite_user(session, tenant_a.tenant_id, email="a@example.com", role="admin")
    _, token = service.create_api_key(
        session, tenant_a.tenant_id, name="k", scopes=["*"], user_id=member.user_id
    )
    assert service.authenticate(session, token=token).tenant.has_scope("write")
    service.update_member(session, tenant_a.tenant_id, user_id=member.user_id, role="reviewer")
    narrowed = service.authenticate(session, token=token).tenant
    assert narrowed.scopes == ("read", "review")
    service.update_member(session, tenant_a.tenant_id, user_id=member.user_id, role="viewer")
    assert service.authenticate(session, token=token).tenant.scopes == ("read",)
    # Raised again, the key holds its own scopes again: the role bounds it, never widens it.
    service.update_member(session, tenant_a.tenant_id, user_id=member.user_id, role="admin")
    assert service.authenticate(session, token=token).tenant.scopes == ("*",)


def test_renaming_changes_the_directorys_name(session: Session, tenant_a: TenantContext) -> None:
    member = service.invite_user(session, tenant_a.tenant_id, email="n@example.com", role="viewer")
    renamed = service.update_member(
        session, tenant_a.tenant_id, user_id=member.user_id, name="  Nora  ", by_user=member.user_id
    )
    assert (renamed.user.name, renamed.role) == ("Nora", "viewer")
    assert service.find_user_by_email(session, email="n@example.com").name == "Nora"
    with pytest.raises(InvalidInput) as bad:
        service.update_member(session, tenant_a.tenant_id, user_id=member.user_id, role="owner")
    assert bad.value.field == "role"


def test_removing_a_user_revokes_their_keys_at_once(
    session: Session, tenant_a: TenantContext
) -> None:
    member = service.invite_user(session, tenant_a.tenant_id, email="x@example.com", role="viewer")
    key, token = service.create_api_key(
        session, tenant_a.tenant_id, name="k", scopes=["read"], user_id=member.user_id
    )
    assert service.authenticate(session, token=token).tenant.user_id == member.user_id
    assert service.remove_member(session, tenant_a.tenant_id, user_id=member.user_id) == [key.id]
    with pytest.raises(Unauthorized, match="revoked"):
        service.authenticate(session, token=token)
    with pytest.raises(NotFound):
        service.get_member(session, tenant_a.tenant_id, user_id=member.user_id)
    # The key stays, revoked and naming its user; the user stays in the directory.
    (kept,) = service.list_api_keys(session, tenant_a.tenant_id)
    assert (kept.user_id, kept.revoked_at is not None) == (member.user_id, True)
    assert service.find_user_by_email(session, email="x@example.com").id == member.user_id
    with pytest.raises(NotFound):
        service.remove_member(session, tenant_a.tenant_id, user_id=member.user_id)


def test_a_key_whose_user_is_no_longer_a_member_is_refused(
    session: Session, tenant_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    member = service.invite_user(session, tenant_a.tenant_id, email="g@example.com", role="viewer")
    _, token = service.create_api_key(
        session, tenant_a.tenant_id, name="k", scopes=["read"], user_id=member.user_id
    )
    # The membership gone without the service (its keys not revoked): the lookup sees it.
    session.delete(MembershipRepository(session, tenant_a.tenant_id).get(member.user_id))
    session.flush()
    monkeypatch.setattr(service, "VERIFIED_KEY_TTL_SECONDS", 0.0)
    with pytest.raises(Unauthorized, match="no longer a member"):
        service.authenticate(session, token=token)


def test_a_tenant_keeps_at_least_one_admin(session: Session, tenant_a: TenantContext) -> None:
    first = service.invite_user(session, tenant_a.tenant_id, email="1@example.com", role="admin")
    viewer = service.invite_user(session, tenant_a.tenant_id, email="v@example.com", role="viewer")
    for attempt in (
        lambda: service.update_member(
            session, tenant_a.tenant_id, user_id=first.user_id, role="viewer"
        ),
        lambda: service.remove_member(session, tenant_a.tenant_id, user_id=first.user_id),
    ):
        with pytest.raises(service.LastAdmin) as refused:
            attempt()
        assert (refused.value.code, refused.value.status) == ("last_admin", 409)
    assert service.get_member(session, tenant_a.tenant_id, user_id=first.user_id).role == "admin"
    # Renaming the only admin, or keeping their role, is no loss.
    service.update_member(session, tenant_a.tenant_id, user_id=first.user_id, role="admin")
    # Once another member is admin, the first may step down, then leave.
    service.update_member(session, tenant_a.tenant_id, user_id=viewer.user_id, role="admin")
    service.update_member(session, tenant_a.tenant_id, user_id=first.user_id, role="reviewer")
    service.remove_member(session, tenant_a.tenant_id, user_id=first.user_id)
    with pytest.raises(service.LastAdmin):
        service.remove_member(session, tenant_a.tenant_id, user_id=viewer.user_id)


def test_two_admins_stepping_down_at_once_leave_one(engine: Engine) -> None:
    """Each of the last two admins demoted in its own transaction, the second while the first
    is open: the second waits for the first (the admins are locked) and is then refused."""
    factory = db.make_write_session_factory(engine)
    with factory.begin() as setup:
        tenant = service.create_tenant(setup, name="Two admins")
        first, second = (
            service.invite_user(
                setup, tenant.id, email=f"{who}-{tenant.id}@example.com", role="admin"
            ).user_id
            for who in ("first", "second")
        )
    outcome: list[str] = []

    def demote_second() -> None:
        try:
            with factory.begin() as session:
                service.update_member(session, tenant.id, user_id=second, role="viewer")
            outcome.append("demoted")
        except service.LastAdmin:
            outcome.append("refused")

    with factory.begin() as session:
        service.update_member(session, tenant.id, user_id=first, role="viewer")
        racer = threading.Thread(target=demote_second)
        racer.start()
        racer.join(timeout=1.0)
        assert racer.is_alive(), "the second demotion did not wait for the first"
    racer.join(timeout=30)
    assert outcome == ["refused"]
    with factory() as session:
        roles = {m.user_id: m.role for m in service.list_members(session, tenant.id).items}
    assert roles == {first: "viewer", second: "admin"}


def test_a_key_verified_while_its_users_role_changes_is_narrowed_once_committed(
    engine: Engine,
) -> None:
    """A request verifying the key during the change reads the old role (not yet committed) and
    would remember it: the commit forgets it again."""
    writes, reads = db.make_write_session_factory(engine), db.make_session_factory(engine)
    with writes.begin() as setup:
        tenant = service.create_tenant(setup, name="Changing roles")
        service.invite_user(setup, tenant.id, email=f"boss-{tenant.id}@example.com", role="admin")
        member = service.invite_user(
            setup, tenant.id, email=f"m-{tenant.id}@example.com", role="admin"
        ).user_id
        _, token = service.create_api_key(setup, tenant.id, name="k", scopes=["*"], user_id=member)
    with writes.begin() as session:
        service.update_member(session, tenant.id, user_id=member, role="viewer")
        with reads() as meanwhile:
            assert service.authenticate(meanwhile, token=token).tenant.scopes == ("*",)
    with reads() as after:
        assert service.authenticate(after, token=token).tenant.scopes == ("read",)


@pytest.mark.parametrize("same_tenant", [True, False], ids=["same tenant", "another tenant"])
def test_an_email_added_twice_at_once_is_one_user(engine: Engine, same_tenant: bool) -> None:
    """The second request's insert waits for the first's, and fails on a unique key once the
    first commits: it reads again and answers as if it had come second."""
    factory = db.make_write_session_factory(engine)
    with factory.begin() as setup:
        first = service.create_tenant(setup, name="First").id
        second = first if same_tenant else service.create_tenant(setup, name="Second").id
    email = f"both-{first}@example.com"
    outcome: list[str] = []

    def add_again() -> None:
        try:
            with factory.begin() as session:
                service.invite_user(session, second, email=email, role="viewer")
            outcome.append("added")
        except service.AlreadyAMember:
            outcome.append("already a member")

    with factory.begin() as session:
        user_id = service.invite_user(session, first, email=email, role="admin").user_id
        racer = threading.Thread(target=add_again)
        racer.start()
        racer.join(timeout=1.0)
        assert racer.is_alive(), "the second request did not wait for the first"
    racer.join(timeout=30)
    assert outcome == (["already a member"] if same_tenant else ["added"])
    with factory() as session:
        assert service.find_user_by_email(session, email=email).id == user_id
        assert [t for t, _ in service.list_user_tenants(session, user_id=user_id)] == sorted(
            {first, second}
        )
