"""The template canvas over HTTP: its page on a sample document (the words to pick an anchor
from, the workflow's regions as boxes), the live preview of what each box extracts (the real
engine on the sample's words; problem+json naming the field for a bad box, 404 for another
tenant's document, 403 for a viewer), and measuring then publishing the boxes as a version,
recorded with who published it."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from docflow.batches.repository import BatchRepository
from docflow.corpus.generate import make_document
from docflow.documents.repository import DocumentRepository
from docflow.extraction.definition import RegionLocator
from docflow.extraction.limits import EngineLimits
from docflow.extraction.ocr.fake import FakeOcrEngine
from docflow.projects import service as projects_service
from docflow.tenancy import TenantContext, from_credential
from docflow.web import pages
from docflow.workflows import service as workflows_service
from support.console_fixtures import Console, csrf, make_console, sign_in
from support.db_fixtures import sample_definition
from support.timing import within

PROBLEM = "application/problem+json"


def _tenant(console: Console) -> TenantContext:
    return TenantContext(tenant_id=from_credential(console.tenant_id), scopes=("*",))


def _setup(app: FastAPI, factory: sessionmaker[Session], console: Console) -> tuple[str, str]:
    """A workflow of the console's tenant, and its first document holding a generated invoice."""
    data = make_document(7, 0).pdf
    document_id = console.documents[0]
    key = f"tenants/{console.tenant_id}/canvas/{document_id}.pdf"
    app.state.storage.write_bytes(key, data)
    with factory.begin() as session:
        tenant = _tenant(console)
        documents = DocumentRepository(session, tenant.tenant_id)
        document = documents.get(document_id)
        assert document is not None
        assert documents.compare_and_set(
            document_id, expected_version=document.version, storage_key=key, size=len(data)
        )
        project = projects_service.create_project(session, tenant, name="Canvas")
        workflow_id = workflows_service.create_workflow(
            session, tenant, project_id=project.id, definition=sample_definition()
        ).id
    return workflow_id, document_id


def _word(data: bytes, pattern: str) -> dict[str, Any]:
    """The first word on page 1 of `data` matching `pattern`, as the canvas lists it."""
    read = pages.read_document(data, FakeOcrEngine(), EngineLimits())
    return next(w for w in pages.page_words(read)[0] if re.fullmatch(pattern, w["text"]))


def _around(box: list[float], pad: float = 0.004) -> dict[str, float]:
    x0, y0, x1, y1 = box
    return {"x0": x0 - pad, "y0": y0 - pad, "x1": x1 + pad, "y1": y1 + pad}


def _preview(browser: TestClient, workflow_id: str, token: str, body: Any) -> Any:
    return browser.post(
        f"/console/workflows/{workflow_id}/canvas/preview",
        json=body,
        headers={"X-CSRF-Token": token, "Accept": "application/json"},
    )


def test_the_canvas_shows_the_sample_and_previews_what_each_box_extracts(
    app: FastAPI, browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id, document_id = _setup(app, session_factory, console)
    sign_in(browser, console.emails["admin"])
    shown = browser.get(f"/console/workflows/{workflow_id}/canvas?document_id={document_id}")
    assert shown.status_code == 200
    data = json.loads(
        re.search(r'<script type="application/json" id="canvas-data">(.*?)</script>', shown.text)[1]  # type: ignore[index]
    )
    assert data["boxes"] == [] and len(data["words"]) == 1 and len(data["words"][0]) > 10
    assert f"/console/documents/{document_id}/pages/1" in shown.text
    token = csrf(shown.text)
    number = next(w for w in data["words"][0] if w["text"].startswith("INV-"))
    label = next(w for w in data["words"][0] if w["text"] == "No:")
    box = {
        "name": "reference",
        "box": _around(number["box"]),
        "anchor": label["text"],
        "anchor_box": dict(zip(("x0", "y0", "x1", "y1"), label["box"], strict=True)),
    }
    with within(1.0):
        answer = _preview(browser, workflow_id, token, {"document_id": document_id, "boxes": [box]})
    assert answer.status_code == 200, answer.text
    found = answer.json()["fields"]["reference"]
    assert found["value"] == number["text"] and found["page"] == 1 and found["confidence"] > 0.5
    # An empty region extracts nothing, and says so.
    empty = {"name": "nothing", "box": {"x0": 0.0, "y0": 0.995, "x1": 0.004, "y1": 1.0}}
    answer = _preview(browser, workflow_id, token, {"document_id": document_id, "boxes": [empty]})
    assert answer.status_code == 200
    assert answer.json()["fields"]["nothing"]["value"] is None


def test_a_bad_box_another_tenants_document_and_a_viewer_are_refused(
    app: FastAPI, browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id, document_id = _setup(app, session_factory, console)
    sign_in(browser, console.emails["admin"])
    token = csrf(browser.get(f"/console/workflows/{workflow_id}/canvas").text)
    good = {"x0": 0.1, "y0": 0.1, "x1": 0.2, "y1": 0.2}
    for boxes, field in (
        ([{"name": "a", "box": {"x0": 0.5, "y0": 0.1, "x1": 0.2, "y1": 0.2}}], "boxes.0.box"),
        ([{"name": "a", "box": {**good, "x1": 1.5}}], "boxes.0.box.x1"),
        ([{"name": "a", "box": good, "type": "line_items"}], "boxes.0.type"),
        ([{"name": "a", "box": good, "anchor": "Total"}], "boxes.0.anchor_box"),
        ([{"name": "Bad Name", "box": good}], "boxes.0.name"),
        ([{"name": "a", "box": good}, {"name": "a", "box": good}], "boxes"),
        ([], "boxes"),
        ([{"name": f"f{i}", "box": good} for i in range(201)], "boxes"),
    ):
        answer = _preview(browser, workflow_id, token, {"document_id": document_id, "boxes": boxes})
        assert answer.status_code == 422, (field, answer.text)
        assert answer.headers["content-type"].startswith(PROBLEM)
        assert field in [e["field"] for e in answer.json()["errors"]], (field, answer.json())
    other = make_console(session_factory)
    box = {"name": "a", "box": good}
    answer = _preview(
        browser, workflow_id, token, {"document_id": other.documents[0], "boxes": [box]}
    )
    assert answer.status_code == 404 and answer.headers["content-type"].startswith(PROBLEM)
    assert (
        browser.get(
            f"/console/workflows/{workflow_id}/canvas?document_id={other.documents[0]}"
        ).status_code
        == 404
    )
    browser.cookies.clear()
    sign_in(browser, console.emails["viewer"])
    token = csrf(browser.get(f"/console/workflows/{workflow_id}").text)
    assert browser.get(f"/console/workflows/{workflow_id}/canvas").status_code == 403
    answer = _preview(browser, workflow_id, token, {"document_id": document_id, "boxes": [box]})
    assert answer.status_code == 403 and answer.headers["content-type"].startswith(PROBLEM)


def test_boxes_are_measured_then_published_as_a_version_recording_its_publisher(
    app: FastAPI, browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id, document_id = _setup(app, session_factory, console)
    sign_in(browser, console.emails["admin"])
    token = csrf(browser.get(f"/console/workflows/{workflow_id}/canvas").text)
    region = {"x0": 0.1, "y0": 0.1, "x1": 0.4, "y1": 0.2}
    boxes = [{"name": "total", "type": "money", "box": region}, {"name": "po", "box": region}]
    form = {
        "csrf_token": token,
        "document_id": document_id,
        "version": "1",
        "boxes": json.dumps(boxes),
    }
    url = f"/console/workflows/{workflow_id}/canvas"
    measured = browser.post(url, data={**form, "action": "measure"})
    assert measured.status_code == 200, measured.text
    assert "no reviewed documents" in measured.text and "Publish as version 2" in measured.text
    # An error is shown at its path and nothing is published: an enum needs its values.
    enum = [{"name": "kind", "type": "enum", "box": region}]
    refused = browser.post(url, data={**form, "boxes": json.dumps(enum), "action": "publish"})
    assert refused.status_code == 422 and "fields.2" in refused.text
    bad = browser.post(url, data={**form, "boxes": "[{", "action": "publish"})
    assert bad.status_code == 422 and "not valid JSON" in bad.text
    published = browser.post(url, data={**form, "action": "publish"})
    assert published.status_code == 303, published.text
    with session_factory.begin() as session:
        view = workflows_service.get_workflow(session, _tenant(console), workflow_id=workflow_id)
    assert view.version == 2 and view.published_by == f"console {console.emails['admin']}"
    total, po = view.definition.field("total"), view.definition.field("po")
    assert isinstance(total.locators[0], RegionLocator) and total.locators[0].box.x1 == 0.4
    assert [loc.kind for loc in total.locators] == ["region", "label"]  # the label stays after
    assert po.locators[0].kind == "region"
    assert view.definition.template and view.definition.template.sample_document_id == document_id
    page = browser.get(f"/console/workflows/{workflow_id}")
    assert f"by console {console.emails['admin']}" in page.text
    # The canvas opens again on the template's sample with the regions as boxes.
    again = browser.get(url)
    assert f'data-document="{document_id}"' in again.text and '"name": "po"' in again.text
    # Published from a canvas opened at version 1: refused, since version 2 exists.
    stale = browser.post(url, data={**form, "action": "publish"})
    assert stale.status_code == 409 and "published meanwhile" in stale.text


def test_a_sample_uploaded_on_the_canvas_becomes_a_document_of_the_workflow_and_opens(
    app: FastAPI, browser: TestClient, console: Console, session_factory: sessionmaker[Session]
) -> None:
    workflow_id, _ = _setup(app, session_factory, console)
    sign_in(browser, console.emails["admin"])
    shown = browser.get(f"/console/workflows/{workflow_id}/canvas")
    assert f'action="/console/workflows/{workflow_id}/canvas/sample"' in shown.text
    token = csrf(shown.text)
    data = make_document(11, 0).pdf
    answer = browser.post(
        f"/console/workflows/{workflow_id}/canvas/sample",
        data={"csrf_token": token},
        files={"file": ("sample.pdf", data, "application/pdf")},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    location = answer.headers["location"]
    document_id = location.rsplit("document_id=", 1)[1]
    with session_factory() as session:
        document = DocumentRepository(session, _tenant(console).tenant_id).get(document_id)
        assert document is not None
        assert document.name == "sample.pdf" and document.size == len(data)
        assert document.storage_key is not None and document.sha256 is not None
        batch = document.batch_id
    opened = browser.get(location)
    assert opened.status_code == 200
    assert f'data-document="{document_id}"' in opened.text and "sample.pdf" in opened.text
    # The sample is a document of a batch of this workflow, processed as any other.
    with session_factory() as session:
        recorded = BatchRepository(session, _tenant(console).tenant_id).get(batch)
        assert recorded is not None and recorded.workflow_id == workflow_id
        assert recorded.document_count == 1
    # A sample larger than the JSON bodies' limit (a scan, say) is taken up to the document
    # size limit.
    large = data + b"\n%" + b"x" * (app.state.settings.max_json_body_bytes + 1)
    taken = browser.post(
        f"/console/workflows/{workflow_id}/canvas/sample",
        data={"csrf_token": token},
        files={"file": ("large.pdf", large, "application/pdf")},
        follow_redirects=False,
    )
    assert taken.status_code == 303, taken.text
    # An empty file is refused at its field, nothing recorded.
    empty = browser.post(
        f"/console/workflows/{workflow_id}/canvas/sample",
        data={"csrf_token": token},
        files={"file": ("empty.pdf", b"", "application/pdf")},
        follow_redirects=False,
    )
    assert empty.status_code == 422 and "the file is empty" in empty.text
    assert "Not uploaded: 1 error." in empty.text
    # Without the token, or as a viewer, nothing is uploaded.
    assert (
        browser.post(
            f"/console/workflows/{workflow_id}/canvas/sample",
            files={"file": ("sample.pdf", data, "application/pdf")},
            follow_redirects=False,
        ).status_code
        == 403
    )
    browser.cookies.clear()
    sign_in(browser, console.emails["viewer"])
    token = csrf(browser.get(f"/console/workflows/{workflow_id}").text)
    refused = browser.post(
        f"/console/workflows/{workflow_id}/canvas/sample",
        data={"csrf_token": token},
        files={"file": ("sample.pdf", data, "application/pdf")},
        follow_redirects=False,
    )
    assert refused.status_code == 403
