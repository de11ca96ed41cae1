"""Console sign-in through OpenID Connect, over real HTTP against a local issuer
(`support.oidc_issuer`): the code flow with PKCE, the id token's checks, which user an identity
is (bound subject, verified email), and every refusal answered with the sign-in page, never a
5xx but for an issuer that does not answer."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker
from structlog.testing import capture_logs

from docflow import db
from docflow.config import Settings
from docflow.main import create_app
from docflow.tenants import passwords
from docflow.tenants import service as tenants_service
from docflow.tenants import status as tenant_status
from docflow.tenants.models import User
from docflow.web.sessions import COOKIE, OIDC_COOKIE
from support.console_fixtures import PASSWORD, csrf, make_console
from support.console_fixtures import sign_in as sign_in_with_password
from support.oidc_issuer import CLIENT_ID, CLIENT_SECRET, Issuer, Person, running_issuer
from support.timing import within

LABEL = "Sign in with the test issuer"
TIMEOUT = 6.0  # generous: a loaded machine answers slowly, and the hang test waits it out


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        yield running


@pytest.fixture(scope="module")
def oidc_app(api_settings: Settings, engine: Engine, app: FastAPI, issuer: Issuer) -> FastAPI:
    """The real app (on the database the session's `app` prepared) with the issuer set."""
    settings = api_settings.model_copy(
        update={
            "console_oidc_issuer": issuer.url,
            "console_oidc_client_id": CLIENT_ID,
            "console_oidc_client_secret": CLIENT_SECRET,
            "console_oidc_label": LABEL,
            "console_oidc_timeout_seconds": TIMEOUT,
        }
    )
    return create_app(settings, engine=engine)


@pytest.fixture
def browser(oidc_app: FastAPI, issuer: Issuer) -> Iterator[TestClient]:
    issuer.fault = None
    with TestClient(oidc_app, base_url="https://testserver", follow_redirects=False) as client:
        yield client


def member(factory: sessionmaker[Session], *, role: str = "reviewer") -> tuple[str, str, str]:
    """A new tenant with a member (no password): (tenant id, user id, email)."""
    tag = secrets.token_hex(4)
    email = f"oidc-{tag}@example.com"
    with factory.begin() as session:
        tenant = tenants_service.create_tenant(session, name=f"OIDC {tag}")
        added = tenants_service.invite_user(session, tenant.id, email=email, role=role)
        return tenant.id, added.user_id, email


def start(browser: TestClient, next: str = "") -> str:
    """Press the sign-in page's issuer button: the issuer's authorization URL."""
    form = browser.get("/console/sign-in")
    assert LABEL in form.text
    answer = browser.post(
        "/console/sign-in/oidc", data={"csrf_token": csrf(form.text), "next": next}
    )
    assert answer.status_code == 303, answer.text
    return str(answer.headers["location"])


def come_back(browser: TestClient, callback: str) -> httpx.Response:
    parts = urlsplit(callback)
    assert callback.startswith("https://docflow.test/console/sign-in/oidc/callback?"), callback
    return browser.get(f"{parts.path}?{parts.query}")


def sign_in(browser: TestClient, issuer: Issuer, person: Person, next: str = "") -> httpx.Response:
    issuer.identity = person
    return come_back(browser, issuer.approve(start(browser, next)))


def test_signing_in_through_the_issuer_opens_the_password_session(
    browser: TestClient, issuer: Issuer, session_factory: sessionmaker[Session]
) -> None:
    tenant_id, user_id, email = member(session_factory)
    url = start(browser, "/console/review")
    query = parse_qs(urlsplit(url).query)
    assert url.startswith(f"{issuer.url}/authorize?")
    assert query["code_challenge_method"] == ["S256"] and query["scope"] == ["openid email profile"]
    assert query["redirect_uri"] == ["https://docflow.test/console/sign-in/oidc/callback"]
    issuer.identity = Person(f"sub-{secrets.token_hex(4)}", email.upper())
    with capture_logs() as logs:
        answer = come_back(browser, issuer.approve(url))
    assert answer.status_code == 303 and answer.headers["location"] == "/console/review"
    cookie = answer.headers.get_list("set-cookie")
    assert any(
        c.startswith(f"{COOKIE}=") and "HttpOnly" in c and "SameSite=lax" in c for c in cookie
    )
    assert any(c.startswith(f'{OIDC_COOKIE}=""') for c in cookie)  # used once
    events = [(e["event"], e.get("method")) for e in logs]
    assert ("user.signed_in", "oidc") in events and ("user.oidc_bound", None) in events
    # The PKCE verifier and the client's secret went to the token endpoint.
    sent = issuer.token_requests[-1]
    assert sent["code_verifier"] and sent["authorization"].startswith("Basic ")
    # The session is the password one: the same pages, the role, the CSRF token.
    page = browser.get("/console/review")
    assert page.status_code == 200 and email in page.text and "reviewer" in page.text
    assert browser.post("/console/sign-out").status_code == 403  # no CSRF token
    out = browser.post("/console/sign-out", data={"csrf_token": csrf(page.text)})
    assert out.status_code == 303
    with session_factory() as session:
        db.bind_tenant(session, tenant_id)  # the directory row is visible through a membership
        user = session.get(User, user_id)
        assert user is not None and (user.oidc_issuer, user.oidc_subject) == (
            issuer.url,
            issuer.identity.subject,
        )


def test_a_bound_identity_signs_in_whatever_email_the_issuer_sends_later(
    browser: TestClient, issuer: Issuer, session_factory: sessionmaker[Session]
) -> None:
    _, _, email = member(session_factory)
    subject = f"sub-{secrets.token_hex(4)}"
    assert sign_in(browser, issuer, Person(subject, email)).status_code == 303
    browser.cookies.clear()
    moved = Person(subject, f"renamed-{secrets.token_hex(3)}@example.com", email_verified=False)
    answer = sign_in(browser, issuer, moved)
    assert answer.status_code == 303
    assert email in browser.get("/console/batches").text


def test_another_identity_with_the_email_of_a_bound_user_is_refused(
    browser: TestClient, issuer: Issuer, session_factory: sessionmaker[Session]
) -> None:
    _, _, email = member(session_factory)
    assert sign_in(browser, issuer, Person(f"sub-{secrets.token_hex(4)}", email)).status_code == 303
    browser.cookies.clear()
    answer = sign_in(browser, issuer, Person(f"sub-{secrets.token_hex(4)}", email))
    assert answer.status_code == 403
    assert "signs in with another account of this issuer" in answer.text
    assert "docflow users release-sign-in" in answer.text  # the way out
    assert COOKIE not in browser.cookies


@pytest.mark.parametrize("fault", ["wrong_nonce", "wrong_audience", "expired", "bad_signature"])
def test_an_id_token_failing_a_check_is_refused(
    browser: TestClient, issuer: Issuer, session_factory: sessionmaker[Session], fault: str
) -> None:
    _, _, email = member(session_factory)
    issuer.fault = fault
    with capture_logs() as logs:
        answer = sign_in(browser, issuer, Person(f"sub-{secrets.token_hex(4)}", email))
    assert answer.status_code == 401, logs
    assert "failed its checks" in answer.text and 'role="alert"' in answer.text
    assert COOKIE not in browser.cookies
    refused = [e for e in logs if e["event"] == "user.sign_in_refused"]
    assert refused and refused[0]["reason"] == "token"


@pytest.mark.parametrize(
    ("verified", "known", "message"),
    [
        (False, True, "has not verified your email"),
        (True, False, "no docflow user has the email"),
    ],
)
def test_an_identity_matching_no_user_is_refused_with_a_clear_page(
    browser: TestClient,
    issuer: Issuer,
    session_factory: sessionmaker[Session],
    verified: bool,
    known: bool,
    message: str,
) -> None:
    _, _, email = member(session_factory)
    person = Person(f"sub-{secrets.token_hex(4)}", email if known else f"x-{email}", verified)
    answer = sign_in(browser, issuer, person)
    assert answer.status_code == 403 and message in answer.text
    assert LABEL in answer.text  # the sign-in page again, to try another way
    assert COOKIE not in browser.cookies


def test_a_member_of_a_suspended_tenant_is_refused_by_either_sign_in(
    browser: TestClient, issuer: Issuer, session_factory: sessionmaker[Session]
) -> None:
    tenant_id, user_id, email = member(session_factory)
    subject = f"sub-{secrets.token_hex(4)}"
    assert sign_in(browser, issuer, Person(subject, email)).status_code == 303
    with session_factory.begin() as session:
        tenant_status.suspend_tenant(session, tenant_id, actor="tests", reason="unpaid")
    assert browser.get("/console/batches").status_code == 403  # the open session too
    with session_factory.begin() as session:
        passwords.set_password(session, tenant_id, user_id=user_id, password="a-password-1")
    browser.cookies.clear()
    answer = sign_in(browser, issuer, Person(subject, email))
    assert answer.status_code == 403 and "your tenant is suspended" in answer.text
    form = browser.get("/console/sign-in")
    by_password = browser.post(
        "/console/sign-in",
        data={"email": email, "password": "a-password-1", "csrf_token": csrf(form.text)},
    )
    assert by_password.status_code == 403 and "your tenant is suspended" in by_password.text
    assert COOKIE not in browser.cookies


def test_an_answer_without_the_flow_of_this_browser_is_refused(
    browser: TestClient, issuer: Issuer, session_factory: sessionmaker[Session]
) -> None:
    _, _, email = member(session_factory)
    issuer.identity = Person(f"sub-{secrets.token_hex(4)}", email)
    callback = issuer.approve(start(browser))
    parts = urlsplit(callback)
    forged = parts.query.replace("state=", "state=x")
    assert browser.get(f"{parts.path}?{forged}").status_code == 400  # another state
    browser.cookies.clear()
    answer = browser.get(f"{parts.path}?{parts.query}")  # no flow cookie: another browser
    assert answer.status_code == 400 and "in another browser" in answer.text
    assert COOKIE not in browser.cookies


def test_an_issuer_that_hangs_holds_a_sign_in_no_longer_than_the_timeout(
    browser: TestClient, issuer: Issuer, session_factory: sessionmaker[Session]
) -> None:
    _, _, email = member(session_factory)
    issuer.identity = Person(f"sub-{secrets.token_hex(4)}", email)
    callback = issuer.approve(start(browser))
    issuer.fault = "hang"
    with within(TIMEOUT + 1):  # the wall clock: at most five times that
        answer = come_back(browser, callback)
    assert answer.status_code == 502 and "did not answer in time" in answer.text
    assert COOKIE not in browser.cookies


def test_without_an_issuer_there_is_no_issuer_button(app: FastAPI) -> None:
    with TestClient(app, base_url="https://testserver", follow_redirects=False) as client:
        form = client.get("/console/sign-in")
        assert form.status_code == 200 and "/console/sign-in/oidc" not in form.text
        answer = client.post("/console/sign-in/oidc", data={"csrf_token": csrf(form.text)})
        assert answer.status_code == 404
        assert client.get("/console/sign-in/oidc/callback?state=x&code=y").status_code == 404


def _user_id(factory: sessionmaker[Session], email: str) -> str:
    with factory() as session:
        return tenants_service.find_user_by_email(session, email=email).id


def _bound_subject(factory: sessionmaker[Session], tenant_id: str, user_id: str) -> str | None:
    with factory() as session:
        db.bind_tenant(session, tenant_id)  # the directory row is visible through a membership
        user = session.get(User, user_id)
        assert user is not None
        return user.oidc_subject


def _members_row(html: str, user_id: str) -> str:
    return html.split(f'data-user="{user_id}"', 1)[1].split("</tr>", 1)[0]


def test_an_admin_releases_a_binding_and_the_next_identity_with_the_email_is_bound(
    browser: TestClient,
    oidc_app: FastAPI,
    issuer: Issuer,
    session_factory: sessionmaker[Session],
) -> None:
    team = make_console(session_factory)
    email = team.emails["viewer"]
    viewer = _user_id(session_factory, email)
    first, second = (f"sub-{secrets.token_hex(4)}" for _ in range(2))
    assert sign_in(browser, issuer, Person(first, email)).status_code == 303
    browser.cookies.clear()
    assert sign_in(browser, issuer, Person(second, email)).status_code == 403
    with TestClient(oidc_app, base_url="https://testserver", follow_redirects=False) as admin:
        sign_in_with_password(admin, team.emails["admin"], PASSWORD)
        users = admin.get("/console/users").text
        assert "Release" in _members_row(users, viewer)
        assert "Release" not in _members_row(
            users, _user_id(session_factory, team.emails["reviewer"])
        )
        release = f"/console/users/{viewer}/release-sign-in"
        assert admin.post(release).status_code == 403  # no CSRF token
        with capture_logs() as logs:
            released = admin.post(release, data={"csrf_token": csrf(users)})
        assert released.status_code == 303 and released.headers["location"] == "/console/users"
        assert "Release" not in _members_row(admin.get("/console/users").text, viewer)
        admin_id = _user_id(session_factory, team.emails["admin"])
        assert [(e["user_id"], e["actor"]) for e in logs if e["event"] == "user.oidc_released"] == [
            (viewer, admin_id)
        ]
        again = admin.post(release, data={"csrf_token": csrf(users)})
        assert again.status_code == 409 and "nothing to release" in again.text
    assert _bound_subject(session_factory, team.tenant_id, viewer) is None
    # The viewer's new account at the issuer, with the same verified email: bound to it now.
    with capture_logs() as logs:
        assert sign_in(browser, issuer, Person(second, email)).status_code == 303
    assert "user.oidc_bound" in [e["event"] for e in logs]
    assert _bound_subject(session_factory, team.tenant_id, viewer) == second


def test_only_an_admin_of_a_tenant_of_the_user_releases_their_binding(
    browser: TestClient,
    oidc_app: FastAPI,
    issuer: Issuer,
    session_factory: sessionmaker[Session],
) -> None:
    team, other = make_console(session_factory), make_console(session_factory)
    email = team.emails["viewer"]
    viewer = _user_id(session_factory, email)
    subject = f"sub-{secrets.token_hex(4)}"
    assert sign_in(browser, issuer, Person(subject, email)).status_code == 303
    release = f"/console/users/{viewer}/release-sign-in"
    for who in (team.emails["viewer"], team.emails["reviewer"], other.emails["admin"]):
        with TestClient(oidc_app, base_url="https://testserver", follow_redirects=False) as client:
            sign_in_with_password(client, who, PASSWORD)
            token = csrf(client.get("/console/batches").text)
            answer = client.post(release, data={"csrf_token": token})
            # A viewer or reviewer may not; another tenant's admin does not see the user.
            assert answer.status_code == (404 if who == other.emails["admin"] else 403)
    assert _bound_subject(session_factory, team.tenant_id, viewer) == subject
    # A member of both tenants: the other tenant's admin may release it then.
    with session_factory.begin() as session:
        tenants_service.add_member(session, other.tenant_id, user_id=viewer)
    with TestClient(oidc_app, base_url="https://testserver", follow_redirects=False) as client:
        sign_in_with_password(client, other.emails["admin"], PASSWORD)
        token = csrf(client.get("/console/users").text)
        assert client.post(release, data={"csrf_token": token}).status_code == 303
    assert _bound_subject(session_factory, team.tenant_id, viewer) is None
