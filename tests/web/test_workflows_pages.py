"""The console's workflows pages over HTTP: every project's workflows, a workflow's versions,
the YAML editor validating as the API does (each error beside its field path), publishing a
new version (the `write` scope), CSRF, and the tenant boundary."""

from __future__ import annotations

import html

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.db import bind_tenant
from docflow.kit.clock import utcnow
from docflow.projects import service as projects_service
from docflow.tenancy import TenantContext, from_credential
from docflow.trust.models import FieldTrust
from docflow.workflows import service as workflows_service
from support.console_fixtures import Console, csrf, make_console, sign_in
from support.db_fixtures import sample_definition


def _workflow(factory: sessionmaker[Session], console: Console) -> str:
    with factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        project = projects_service.create_project(session, tenant, name="Invoices")
        return workflows_service.create_workflow(
            session, tenant, project_id=project.id, definition=sample_definition()
        ).id


def _current(factory: sessionmaker[Session], console: Console, workflow_id: str) -> int:
    with factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        return workflows_service.get_workflow(session, tenant, workflow_id=workflow_id).version


EDITED = """\
name: Invoice
fields:
  - name: invoice_number
    locators:
      - kind: label
        labels: [Invoice No, Invoice number]
confidence_threshold: 0.5
review_threshold: 0.8
"""

# Two mistakes: a pattern RE2 refuses and an unknown field type.
BROKEN = """\
name: Invoice
fields:
  - name: invoice_number
    locators:
      - kind: label
        labels: [Invoice No]
      - kind: pattern
        pattern: "(?<=No )\\\\d+"
  - name: total
    type: currency
    locators:
      - kind: label
        labels: [Total]
"""


def test_a_viewer_reads_workflows_but_may_not_save(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id = _workflow(session_factory, console)
    sign_in(browser, console.emails["viewer"])
    listed = browser.get("/console/workflows")
    assert listed.status_code == 200 and "Invoices" in listed.text and workflow_id in listed.text
    shown = browser.get(f"/console/workflows/{workflow_id}")
    assert shown.status_code == 200
    assert "invoice_number" in shown.text and "Save as a new version" not in shown.text
    token = csrf(shown.text)
    refused = browser.post(
        f"/console/workflows/{workflow_id}",
        data={"csrf_token": token, "definition": EDITED, "version": "1"},
    )
    assert refused.status_code == 403
    assert _current(session_factory, console, workflow_id) == 1


def test_saving_publishes_a_version_and_the_old_one_stays_readable(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id = _workflow(session_factory, console)
    sign_in(browser, console.emails["admin"])
    editor = browser.get(f"/console/workflows/{workflow_id}").text
    assert "Save as a new version" in editor
    saved = browser.post(
        f"/console/workflows/{workflow_id}",
        data={"csrf_token": csrf(editor), "definition": EDITED, "version": "1"},
        follow_redirects=False,
    )
    assert saved.status_code == 303
    assert _current(session_factory, console, workflow_id) == 2
    current = browser.get(f"/console/workflows/{workflow_id}").text
    assert "version 2 of 2" in current and "Invoice number" in current and "total" not in current
    first = browser.get(f"/console/workflows/{workflow_id}?version=1").text
    assert "version 1 of 2" in first and "money" in first
    # An editor opened at version 1 no longer publishes: version 2 came meanwhile.
    stale = browser.post(
        f"/console/workflows/{workflow_id}",
        data={"csrf_token": csrf(editor), "definition": EDITED, "version": "1"},
    )
    assert stale.status_code == 409
    assert _current(session_factory, console, workflow_id) == 2


def test_errors_are_shown_at_their_field_paths_and_nothing_is_published(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id = _workflow(session_factory, console)
    sign_in(browser, console.emails["admin"])
    token = csrf(browser.get(f"/console/workflows/{workflow_id}").text)
    answer = browser.post(
        f"/console/workflows/{workflow_id}",
        data={"csrf_token": token, "definition": BROKEN, "version": "1"},
    )
    assert answer.status_code == 422
    text = html.unescape(answer.text)
    assert '<code class="path">fields.0.locators.1.pattern</code>' in text
    assert '<code class="path">fields.1.type</code>' in text
    assert "(?<=No )" in text  # the text sent is kept in the editor
    for bad in ("name: [unclosed", "- a list", "a: &x [1]\nb: *x", "[" * 40_000):
        refused = browser.post(
            f"/console/workflows/{workflow_id}",
            data={"csrf_token": token, "definition": bad, "version": "1"},
        )
        assert refused.status_code == 422 and "(workflow)" in refused.text
    deep = browser.post(
        f"/console/workflows/{workflow_id}",
        data={"csrf_token": token, "definition": "{a: " * 30 + "1" + "}" * 30, "version": "1"},
    )
    assert deep.status_code == 422 and "nests deeper than 20 levels" in deep.text
    too_long = browser.post(
        f"/console/workflows/{workflow_id}",
        data={"csrf_token": token, "definition": "#" * 50_001, "version": "1"},
    )
    assert too_long.status_code == 422
    assert _current(session_factory, console, workflow_id) == 1


def test_saving_needs_the_sessions_csrf_token(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id = _workflow(session_factory, console)
    sign_in(browser, console.emails["admin"])
    for data in (
        {"definition": EDITED, "version": "1"},
        {"csrf_token": "forged", "definition": EDITED, "version": "1"},
    ):
        assert browser.post(f"/console/workflows/{workflow_id}", data=data).status_code == 403
    assert _current(session_factory, console, workflow_id) == 1


def test_another_tenants_workflow_is_not_found(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    other = make_console(session_factory)
    workflow_id = _workflow(session_factory, other)
    sign_in(browser, console.emails["admin"])
    assert workflow_id not in browser.get("/console/workflows").text
    assert browser.get(f"/console/workflows/{workflow_id}").status_code == 404
    token = csrf(browser.get("/console/workflows").text)
    foreign = browser.post(
        f"/console/workflows/{workflow_id}",
        data={"csrf_token": token, "definition": EDITED, "version": "1"},
    )
    assert foreign.status_code == 404
    assert _current(session_factory, other, workflow_id) == 1


def test_the_versions_list_shows_when_and_by_whom_each_version_was_published(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id = _workflow(session_factory, console)
    sign_in(browser, console.emails["admin"])
    editor = browser.get(f"/console/workflows/{workflow_id}").text
    browser.post(
        f"/console/workflows/{workflow_id}",
        data={"csrf_token": csrf(editor), "definition": EDITED, "version": "1"},
    )
    with session_factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        dates = workflows_service.version_dates(session, tenant, workflow_id=workflow_id, limit=10)
    assert [number for number, _, _ in dates] == [2, 1]
    # Version 1 was created by the services as the operator, version 2 in the console.
    assert [by for _, _, by in dates] == [f"console {console.emails['admin']}", "operator"]
    shown = browser.get(f"/console/workflows/{workflow_id}?version=1").text
    start = shown.index('aria-label="Versions"')
    versions = shown[start : shown.index("</nav>", start)]
    for number, published, by in dates:
        assert f'version={number}"' in versions
        assert f'<time datetime="{published.isoformat()}">' in versions
        assert f"by {by}" in versions
    assert versions.index("version=2") < versions.index("version=1")


def _project(factory: sessionmaker[Session], console: Console) -> str:
    with factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        return projects_service.create_project(session, tenant, name="Receipts").id


def _names(factory: sessionmaker[Session], console: Console, project_id: str) -> list[str]:
    with factory.begin() as session:
        tenant = TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))
        listed = workflows_service.list_workflows(
            session, tenant, project_id=project_id, cursor=None, limit=10
        )
        return [w.name for w in listed.items]


def test_an_admin_creates_a_workflow_and_errors_are_shown_at_their_paths(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    project_id = _project(session_factory, console)
    sign_in(browser, console.emails["admin"])
    assert "New workflow" in browser.get("/console/workflows").text
    form = browser.get(f"/console/workflows/new?project_id={project_id}")
    assert form.status_code == 200 and "Create the workflow" in form.text
    token = csrf(form.text)
    broken = browser.post(
        "/console/workflows/new",
        data={"csrf_token": token, "project_id": project_id, "definition": BROKEN},
    )
    assert broken.status_code == 422
    shown = html.unescape(broken.text)
    assert "fields.0.locators.1.pattern" in shown and "fields.1.type" in shown
    assert "(?<=No )" in shown  # the text sent stays in the form
    assert _names(session_factory, console, project_id) == []
    created = browser.post(
        "/console/workflows/new",
        data={"csrf_token": token, "project_id": project_id, "definition": EDITED},
        follow_redirects=False,
    )
    assert created.status_code == 303
    opened = browser.get(created.headers["location"]).text
    assert "version 1 of 1" in opened and "invoice_number" in opened
    assert _names(session_factory, console, project_id) == ["Invoice"]
    # A second workflow of that name in the project: the conflict is shown at `name`.
    again = browser.post(
        "/console/workflows/new",
        data={"csrf_token": token, "project_id": project_id, "definition": EDITED},
    )
    assert again.status_code == 422
    assert '<code class="path">name</code>' in again.text
    assert _names(session_factory, console, project_id) == ["Invoice"]


def test_creating_a_workflow_needs_write_csrf_and_a_project_of_the_tenant(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    other_console = make_console(session_factory)
    project_id = _project(session_factory, console)
    foreign = _project(session_factory, other_console)
    sign_in(browser, console.emails["viewer"])
    listed = browser.get("/console/workflows")
    assert "New workflow" not in listed.text
    assert browser.get("/console/workflows/new").status_code == 403
    data = {"csrf_token": csrf(listed.text), "project_id": project_id, "definition": EDITED}
    assert browser.post("/console/workflows/new", data=data).status_code == 403
    assert _names(session_factory, console, project_id) == []
    sign_in(browser, console.emails["admin"])
    token = csrf(browser.get("/console/workflows").text)
    forged = {"csrf_token": "forged", "project_id": project_id, "definition": EDITED}
    assert browser.post("/console/workflows/new", data=forged).status_code == 403
    other = {"csrf_token": token, "project_id": foreign, "definition": EDITED}
    assert browser.post("/console/workflows/new", data=other).status_code == 404
    assert _names(session_factory, console, project_id) == []
    assert _names(session_factory, other_console, foreign) == []


def test_the_workflow_page_shows_each_fields_trust_and_warns_of_a_drift(
    browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id = _workflow(session_factory, console)
    sign_in(browser, console.emails["viewer"])
    fresh = browser.get(f"/console/workflows/{workflow_id}").text
    assert "Earned trust" in fresh and "until measured, by the review threshold" in fresh
    assert "Drift:" not in fresh
    with session_factory.begin() as session:
        bind_tenant(session, console.tenant_id)
        session.add(
            FieldTrust(
                tenant_id=console.tenant_id,
                workflow_id=workflow_id,
                workflow_version=1,
                field="total",
                examples=90,
                correct=80,
                cut=0.97,
                precision=0.99,
                lower_bound=0.981,
                automation_rate=0.42,
                drifted_at=utcnow(),
                updated_at=utcnow(),
            )
        )
    shown = html.unescape(browser.get(f"/console/workflows/{workflow_id}").text)
    assert "Drift: the precision of total at its cut fell below the target 0.98" in (
        shown.replace("<code>", "").replace("</code>", "")
    )
    assert "0.990 (≥ 0.981)" in shown and "42%" in shown
