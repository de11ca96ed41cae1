"""Signing in to the console through an OpenID Connect issuer in headless Chromium (Debian's
`chromium`, driven by Playwright): a real `docflow serve` configured with the local issuer of
`support.oidc_issuer`, its button on the sign-in page, the issuer's own page, and back on the
console signed in. With DOCFLOW_CONSOLE_SCREENSHOTS=DIR the sign-in page's screenshot is saved
there (docs/console/sign-in-oidc.png). Without Chromium the test fails; it never skips."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from docflow import db
from docflow.tenants import service as tenants_service
from support.browser_watch import watch
from support.oidc_issuer import CLIENT_ID, CLIENT_SECRET, Issuer, Person, running_issuer
from support.process_fixtures import Served, served

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
LABEL = "Sign in with Example SSO"
EMAIL = "sso-person@example.com"
SCREENSHOTS = os.environ.get("DOCFLOW_CONSOLE_SCREENSHOTS")


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        yield running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, issuer: Issuer) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("oidc-home")
    env = {
        "DOCFLOW_CONSOLE_OIDC_ISSUER": issuer.url,
        "DOCFLOW_CONSOLE_OIDC_CLIENT_ID": CLIENT_ID,
        "DOCFLOW_CONSOLE_OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "DOCFLOW_CONSOLE_OIDC_LABEL": LABEL,
    }
    with served(home, home / "serve.log", env) as running:
        engine = db.make_engine(f"sqlite:///{home / 'docflow.db'}")
        try:
            with db.make_write_session_factory(engine).begin() as session:
                tenant = tenants_service.create_tenant(session, name="SSO tenant")
                tenants_service.invite_user(session, tenant.id, email=EMAIL, role="admin")
        finally:
            engine.dispose()
        issuer.redirect_uris = {f"{running.base_url}/console/sign-in/oidc/callback"}
        yield running


@pytest.fixture
def page() -> Iterator[Page]:
    assert CHROMIUM.is_file(), (
        f"{CHROMIUM} is missing: install Debian's chromium package (scripts/install.sh does)"
    )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(60_000)
        opened = context.new_page()
        troubles = watch(opened)
        yield opened
        browser.close()
        assert (troubles.violations, troubles.errors) == ([], [])


def test_signing_in_through_the_issuers_page_lands_on_the_console(
    page: Page, server: Served, issuer: Issuer
) -> None:
    issuer.identity = Person("sso-subject-1", EMAIL)
    console = f"{server.base_url}/console"
    page.goto(f"{console}/batches")
    expect(page).to_have_url(re.compile(r"/console/sign-in\?next="))
    button = page.get_by_role("button", name=LABEL)
    expect(button).to_be_visible()
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / "sign-in-oidc.png"), full_page=True)
    button.click()
    expect(page).to_have_url(re.compile(rf"^{re.escape(issuer.url)}/authorize\?"))
    page.get_by_role("button", name=f"Continue as {EMAIL}").click()
    expect(page).to_have_url(f"{console}/batches")
    expect(page.get_by_text(EMAIL)).to_be_visible()
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["docflow_console"]["httpOnly"] and "docflow_console_oidc" not in cookies
    page.get_by_role("link", name="Users").click()  # an admin's page: the role came along
    expect(page.locator("#members")).to_contain_text(EMAIL)
