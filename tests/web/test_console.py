"""The console over HTTP (the real app on the test database): signing in, the session cookie's
flags, CSRF on every change, choosing a tenant, the tenant boundary and the roles, exactly as
the API draws them. The pages themselves are driven in a browser in test_browser.py."""

from __future__ import annotations

import csv
import io

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.db import bind_tenant
from docflow.documents.models import Document
from docflow.tenants import service as tenants_service
from support.console_fixtures import PASSWORD, Console, csrf, make_console, sign_in


def test_signing_in_sets_a_protected_session_cookie(browser: TestClient, console: Console) -> None:
    answer = sign_in(browser, console.emails["viewer"])
    assert answer.status_code == 303 and answer.headers["location"] == "/console/batches"
    cookie = next(
        c for c in answer.headers.get_list("set-cookie") if c.startswith("docflow_console=")
    )
    flags = {part.strip().lower() for part in cookie.split(";")}
    assert {"httponly", "secure", "samesite=lax", "path=/console"} <= flags
    assert any(f.startswith("max-age=") for f in flags)
    page = browser.get("/console/batches")
    assert page.status_code == 200
    assert console.batch_id in page.text and console.emails["viewer"] in page.text


def test_a_wrong_password_or_a_forged_form_signs_no_one_in(
    browser: TestClient, console: Console
) -> None:
    refused = sign_in(browser, console.emails["admin"], "wrong password")
    assert refused.status_code == 401 and "wrong email or password" in refused.text
    assert "docflow_console=" not in refused.headers.get("set-cookie", "")
    browser.cookies.clear()
    forged = browser.post(
        "/console/sign-in",
        data={"email": console.emails["admin"], "password": PASSWORD, "csrf_token": "guess"},
    )
    assert forged.status_code == 403
    assert browser.get("/console/batches").headers["location"].startswith("/console/sign-in")


def test_signed_out_pages_lead_to_the_sign_in_form(browser: TestClient, console: Console) -> None:
    for path in ("/console/batches", f"/console/batches/{console.batch_id}", "/console/review"):
        answer = browser.get(path)
        assert answer.status_code == 303
        assert answer.headers["location"] == f"/console/sign-in?next={path}"
    assert (
        browser.get("/console/batches", headers={"HX-Request": "true"})
        .headers["HX-Redirect"]
        .startswith("/console/sign-in")
    )


def test_every_change_needs_the_sessions_csrf_token(browser: TestClient, console: Console) -> None:
    sign_in(browser, console.emails["reviewer"])
    token = csrf(browser.get("/console/review").text)
    assert browser.post("/console/review/next").status_code == 403
    assert browser.post("/console/review/next", data={"csrf_token": "x" * 43}).status_code == 403
    taken = browser.post("/console/review/next", headers={"X-CSRF-Token": token})
    assert taken.status_code == 303 and taken.headers["location"].startswith("/console/review/doc_")
    assert browser.post("/console/sign-out").status_code == 403
    out = browser.post("/console/sign-out", data={"csrf_token": token})
    assert out.status_code == 303
    assert browser.get("/console/review").status_code == 303  # signed out


def test_a_viewer_reads_but_never_reviews(browser: TestClient, console: Console) -> None:
    sign_in(browser, console.emails["viewer"])
    token = csrf(browser.get("/console/review").text)
    document = console.documents[0]
    assert browser.get(f"/console/documents/{document}").status_code == 200
    assert "Claim the next document" not in browser.get("/console/review").text
    h = {"X-CSRF-Token": token}
    assert browser.get(f"/console/review/{document}").status_code == 403
    assert browser.get(f"/console/documents/{document}/words").status_code == 403
    for path in ("/console/review/next", f"/console/review/{document}/claim"):
        assert browser.post(path, headers=h).status_code == 403, path
    decided = browser.post(
        f"/console/review/{document}", data={"decision": "approve", "csrf_token": token}
    )
    assert decided.status_code == 403


def test_a_reviewer_claims_corrects_and_approves(browser: TestClient, console: Console) -> None:
    sign_in(browser, console.emails["reviewer"])
    token = csrf(browser.get("/console/review").text)
    first, second = console.documents
    claimed = browser.post(f"/console/review/{first}/claim", data={"csrf_token": token})
    assert claimed.status_code == 303
    form = browser.get(f"/console/review/{first}")
    assert 'id="review-form"' in form.text
    refused = browser.post(
        f"/console/review/{first}",
        data={"csrf_token": token, "decision": "approve", "field.total": "twelve"},
    )
    assert refused.status_code == 422 and 'aria-invalid="true"' in refused.text
    approved = browser.post(
        f"/console/review/{first}",
        data={"csrf_token": token, "decision": "approve", "field.total": "12.50"},
    )
    assert approved.status_code == 303
    assert approved.headers["location"] == f"/console/batches/{console.batch_id}?reviewed={first}"
    page = browser.get(f"/console/documents/{first}").text
    assert "SUCCEEDED" in page and "12.50" in page and "approve" in page  # the audit trail
    rejected = browser.post(f"/console/review/{second}/claim", data={"csrf_token": token})
    assert rejected.status_code == 303
    no_reason = browser.post(
        f"/console/review/{second}", data={"csrf_token": token, "decision": "reject"}
    )
    assert no_reason.status_code == 422
    done = browser.post(
        f"/console/review/{second}",
        data={"csrf_token": token, "decision": "reject", "reason": "not an invoice"},
    )
    assert done.status_code == 303
    batch = browser.get(f"/console/batches/{console.batch_id}").text
    assert "rejected_in_review" in batch


def test_another_tenants_objects_are_not_found(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    other = make_console(session_factory)
    sign_in(browser, console.emails["admin"])
    for path in (
        f"/console/batches/{other.batch_id}",
        f"/console/batches/{other.batch_id}/events",
        f"/console/batches/{other.batch_id}/results.csv",
        f"/console/documents/{other.documents[0]}",
        f"/console/documents/{other.documents[0]}/pages/1",
        f"/console/documents/{other.documents[0]}/words",
        f"/console/review/{other.documents[0]}",
    ):
        answer = browser.get(path)
        assert answer.status_code == 404, path
    token = csrf(browser.get("/console/review").text)
    claim = browser.post(f"/console/review/{other.documents[0]}/claim", data={"csrf_token": token})
    assert claim.status_code == 404
    switched = browser.post(
        "/console/tenants", data={"csrf_token": token, "tenant_id": other.tenant_id}
    )
    assert switched.status_code == 403


def test_a_member_of_two_tenants_chooses_and_switches(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    other = make_console(session_factory)
    with session_factory.begin() as session:
        user = tenants_service.find_user_by_email(session, email=console.emails["viewer"])
        tenants_service.add_member(session, other.tenant_id, user_id=user.id, role="reviewer")
    answer = sign_in(browser, console.emails["viewer"])
    assert answer.headers["location"] == "/console/tenants"
    assert browser.get("/console/batches").headers["location"] == "/console/tenants"
    choice = browser.get("/console/tenants")
    assert console.tenant_id in choice.text and other.tenant_id in choice.text
    token = csrf(choice.text)
    chosen = browser.post(
        "/console/tenants", data={"csrf_token": token, "tenant_id": other.tenant_id}
    )
    assert chosen.status_code == 303
    page = browser.get("/console/batches").text
    assert other.batch_id in page and console.batch_id not in page
    assert "reviewer" in page


def test_a_role_lowered_or_a_member_removed_applies_at_the_next_page(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    sign_in(browser, console.emails["reviewer"])
    token = csrf(browser.get("/console/review").text)
    with session_factory.begin() as session:
        user = tenants_service.find_user_by_email(session, email=console.emails["reviewer"])
        tenants_service.update_member(session, console.tenant_id, user_id=user.id, role="viewer")
    assert browser.post("/console/review/next", data={"csrf_token": token}).status_code == 403
    with session_factory.begin() as session:
        tenants_service.remove_member(session, console.tenant_id, user_id=user.id)
    assert browser.get("/console/batches").headers["location"] == "/console/tenants"


def test_results_download_as_csv_and_json(browser: TestClient, console: Console) -> None:
    sign_in(browser, console.emails["viewer"])
    as_csv = browser.get(f"/console/batches/{console.batch_id}/results.csv")
    assert as_csv.status_code == 200 and as_csv.headers["content-type"].startswith("text/csv")
    lines = as_csv.text.splitlines()
    assert lines[0] == "document_id,name,status,confidence,error_code,invoice_number,total"
    assert len(lines) == 3 and all("REVIEW_REQUIRED" in line for line in lines[1:])
    as_json = browser.get(f"/console/batches/{console.batch_id}/results.json").json()
    assert [d["id"] for d in as_json] == console.documents
    assert as_json[0]["result"]["fields"]["invoice_number"]["value"] == "INV-1"
    assert browser.get(f"/console/batches/{console.batch_id}/results.xml").status_code == 404


def test_results_csv_escapes_cells_a_spreadsheet_would_run_as_formulas(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    hostile = "+cmd|' /C calc'!A0.pdf"
    with session_factory.begin() as session:
        bind_tenant(session, console.tenant_id)
        document = session.get(Document, (console.tenant_id, console.documents[0]))
        assert document is not None
        document.name = hostile
    sign_in(browser, console.emails["viewer"])
    as_csv = browser.get(f"/console/batches/{console.batch_id}/results.csv")
    assert as_csv.status_code == 200
    assert "\"'" + hostile + '"' in as_csv.text
    rows = list(csv.DictReader(io.StringIO(as_csv.text)))
    assert [r["name"] for r in rows if r["document_id"] == console.documents[0]] == ["'" + hostile]


def test_a_document_is_deleted_from_its_page_by_a_member_who_may_change_data(
    browser: TestClient, console: Console
) -> None:
    deleted, kept = console.documents
    sign_in(browser, console.emails["viewer"])
    viewed = browser.get(f"/console/documents/{deleted}")
    assert viewed.status_code == 200 and "delete-form" not in viewed.text
    refused = browser.post(
        f"/console/documents/{deleted}/delete",
        data={"csrf_token": csrf(viewed.text), "confirm": "yes"},
    )
    assert refused.status_code == 403
    browser.post("/console/sign-out", data={"csrf_token": csrf(viewed.text)})

    sign_in(browser, console.emails["admin"])
    shown = browser.get(f"/console/documents/{deleted}")
    assert 'id="delete-form"' in shown.text
    token = csrf(shown.text)
    unconfirmed = browser.post(f"/console/documents/{deleted}/delete", data={"csrf_token": token})
    assert unconfirmed.status_code == 422
    assert (
        browser.post(f"/console/documents/{deleted}/delete", data={"confirm": "yes"}).status_code
        == 403
    )
    done = browser.post(
        f"/console/documents/{deleted}/delete", data={"csrf_token": token, "confirm": "yes"}
    )
    assert (done.status_code, done.headers["location"]) == (
        303,
        f"/console/batches/{console.batch_id}",
    )
    batch = browser.get(done.headers["location"]).text
    assert deleted not in batch and kept in batch
    assert browser.get(f"/console/documents/{deleted}").status_code == 404


def test_an_open_redirect_is_not_followed(browser: TestClient, console: Console) -> None:
    form = browser.get("/console/sign-in", params={"next": "https://evil.example/"})
    assert 'value="/console/batches"' in form.text
    answer = browser.post(
        "/console/sign-in",
        data={
            "email": console.emails["admin"],
            "password": PASSWORD,
            "csrf_token": csrf(form.text),
            "next": "//evil.example/",
        },
    )
    assert answer.headers["location"] == "/console/batches"


def test_console_pages_are_not_in_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert not [p for p in paths if p.startswith("/console")]
    assert "/v1/batches/{batch_id}/events" in paths


def test_the_batch_filter_takes_any_or_one_status_and_names_a_wrong_one(
    browser: TestClient, console: Console
) -> None:
    sign_in(browser, console.emails["viewer"])
    assert console.batch_id in browser.get("/console/batches?status=").text
    assert console.batch_id in browser.get("/console/batches?status=REVIEW_REQUIRED").text
    assert console.batch_id not in browser.get("/console/batches?status=FAILED").text
    wrong = browser.get("/console/batches?status=NOPE")
    assert wrong.status_code == 422 and "unknown batch status" in wrong.text
    assert wrong.headers["content-type"].startswith("text/html")


def test_skipping_opens_the_next_document_and_gives_this_one_back(
    browser: TestClient, console: Console
) -> None:
    sign_in(browser, console.emails["reviewer"])
    token = csrf(browser.get("/console/review").text)
    first = browser.post("/console/review/next", data={"csrf_token": token}).headers["location"]
    first_id = first.rsplit("/", 1)[1]
    skipped = browser.post(f"{first}/skip", data={"csrf_token": token})
    second_id = skipped.headers["location"].rsplit("/", 1)[1]
    assert {first_id, second_id} == set(console.documents)
    # The first is anyone's again: the next claim takes it.
    again = browser.post(f"/console/review/{second_id}/skip", data={"csrf_token": token})
    assert again.headers["location"] == f"/console/review/{first_id}"
    form = browser.get(again.headers["location"]).text
    assert 'id="review-form"' in form


def test_the_console_follows_a_batch_by_its_session(browser: TestClient, console: Console) -> None:
    events = f"/console/batches/{console.batch_id}/events"
    assert browser.get(events).status_code == 303  # signed out: no stream
    sign_in(browser, console.emails["viewer"])
    answer = browser.get(events)
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert answer.text.startswith("event: progress\n")
    assert '"status":"REVIEW_REQUIRED"' in answer.text
    assert answer.text.endswith('event: end\ndata: {"status":"REVIEW_REQUIRED"}\n\n')


def test_only_an_admin_manages_users(browser: TestClient, console: Console) -> None:
    for role in ("viewer", "reviewer"):
        browser.cookies.clear()
        sign_in(browser, console.emails[role])
        token = csrf(browser.get("/console/review").text)
        assert ">Users</a>" not in browser.get("/console/batches").text
        assert browser.get("/console/users").status_code == 403
        invited = browser.post(
            "/console/users",
            data={"csrf_token": token, "email": f"x-{role}@example.com", "role": "admin"},
        )
        assert invited.status_code == 403
    browser.cookies.clear()
    sign_in(browser, console.emails["admin"])
    users = browser.get("/console/users")
    assert users.status_code == 200 and all(e in users.text for e in console.emails.values())
    assert "Issuer sign-in" not in users.text  # no issuer configured, and no binding left
    token = csrf(users.text)
    email = f"new-{console.tenant_id}@example.com"
    invited = browser.post(
        "/console/users", data={"csrf_token": token, "email": email, "role": "reviewer"}
    )
    assert invited.status_code == 303 and email in browser.get("/console/users").text
    again = browser.post(
        "/console/users", data={"csrf_token": token, "email": email, "role": "viewer"}
    )
    assert again.status_code == 409 and "already a member" in again.text


def test_an_admin_changes_roles_and_removes_members_but_keeps_an_admin(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    with session_factory() as session:
        ids = {
            role: tenants_service.find_user_by_email(session, email=email).id
            for role, email in console.emails.items()
        }
    sign_in(browser, console.emails["admin"])
    token = csrf(browser.get("/console/users").text)
    changed = browser.post(
        f"/console/users/{ids['viewer']}/role", data={"csrf_token": token, "role": "reviewer"}
    )
    assert changed.status_code == 303
    last = browser.post(
        f"/console/users/{ids['admin']}/role", data={"csrf_token": token, "role": "viewer"}
    )
    assert last.status_code == 409 and "at least one admin" in last.text
    removed = browser.post(f"/console/users/{ids['reviewer']}/remove", data={"csrf_token": token})
    assert removed.status_code == 303
    with session_factory() as session:
        members = tenants_service.list_members(session, console.tenant_id)
        assert {m.user_id: m.role for m in members.items} == {
            ids["admin"]: "admin",
            ids["viewer"]: "reviewer",
        }
    other = make_console(session_factory)
    with session_factory() as session:
        stranger = tenants_service.find_user_by_email(session, email=other.emails["viewer"]).id
    foreign = browser.post(f"/console/users/{stranger}/remove", data={"csrf_token": token})
    assert foreign.status_code == 404
