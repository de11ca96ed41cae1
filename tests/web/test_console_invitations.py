"""The console's own-account pages: tenant names in the tenant choice and as JSON, invitations
accepted or declined after sign-in, and the user's own name."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.tenants import invitations
from docflow.tenants import service as tenants_service
from support.console_fixtures import Console, csrf, make_console, sign_in


def _invite(factory: sessionmaker[Session], tenant_id: str, email: str) -> str:
    with factory.begin() as session:
        sent = invitations.add_by_email(
            session, tenant_id, email=email, role="reviewer", actor="tests"
        )
        return sent.id


def test_an_invited_user_accepts_then_chooses_the_tenant_by_name(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    other = make_console(session_factory)
    email = console.emails["viewer"]
    invitation = _invite(session_factory, other.tenant_id, email)
    assert sign_in(browser, email).headers["location"] == "/console/batches"
    mine = browser.get("/console/me/tenants").json()
    with session_factory() as session:
        names = {
            t: tenants_service.get_tenant(session, t).name
            for t in (console.tenant_id, other.tenant_id)
        }
    assert mine["tenants"] == [
        {
            "id": console.tenant_id,
            "name": names[console.tenant_id],
            "role": "viewer",
            "current": True,
        }
    ]
    assert [(i["id"], i["tenant_name"], i["role"]) for i in mine["invitations"]] == [
        (invitation, names[other.tenant_id], "reviewer")
    ]
    page = browser.get("/console/tenants")
    assert names[other.tenant_id] in page.text and names[console.tenant_id] in page.text
    token = csrf(page.text)
    accepted = browser.post(f"/console/invitations/{invitation}/accept", data={"csrf_token": token})
    assert accepted.status_code == 303
    mine = browser.get("/console/me/tenants").json()
    assert mine["invitations"] == []
    assert {(t["id"], t["name"], t["role"]) for t in mine["tenants"]} == {
        (console.tenant_id, names[console.tenant_id], "viewer"),
        (other.tenant_id, names[other.tenant_id], "reviewer"),
    }
    chosen = browser.post(
        "/console/tenants", data={"csrf_token": token, "tenant_id": other.tenant_id}
    )
    assert chosen.status_code == 303
    batches = browser.get("/console/batches").text
    assert other.batch_id in batches and names[other.tenant_id] in batches


def test_a_declined_invitation_is_gone_and_only_its_user_answers_it(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    other = make_console(session_factory)
    invitation = _invite(session_factory, other.tenant_id, console.emails["viewer"])
    sign_in(browser, console.emails["reviewer"])
    token = csrf(browser.get("/console/tenants").text)
    stolen = browser.post(f"/console/invitations/{invitation}/accept", data={"csrf_token": token})
    assert stolen.status_code == 404
    browser.cookies.clear()
    sign_in(browser, console.emails["viewer"])
    token = csrf(browser.get("/console/tenants").text)
    declined = browser.post(
        f"/console/invitations/{invitation}/decline", data={"csrf_token": token}
    )
    assert declined.status_code == 303
    assert browser.get("/console/me/tenants").json()["invitations"] == []
    with session_factory() as session:
        assert invitations.list_invitations(session, other.tenant_id) == []


def test_a_user_sets_their_own_name_and_an_admin_sees_an_invitation_without_it(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    sign_in(browser, console.emails["viewer"])
    token = csrf(browser.get("/console/tenants").text)
    named = browser.post("/console/me/name", data={"csrf_token": token, "name": "Vera Viewer"})
    assert named.status_code == 303
    other = make_console(session_factory)
    browser.cookies.clear()
    sign_in(browser, other.emails["admin"])
    token = csrf(browser.get("/console/users").text)
    sent = browser.post(
        "/console/users",
        data={"csrf_token": token, "email": console.emails["viewer"], "role": "viewer"},
    )
    assert sent.status_code == 303
    users = browser.get("/console/users").text
    assert console.emails["viewer"] in users and "invited" in users
    assert "Vera Viewer" not in users and console.tenant_id not in users
