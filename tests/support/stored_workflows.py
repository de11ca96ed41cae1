"""Workflow versions as an earlier release stored them: written through the ORM, past the rules
that came since (patterns RE2 cannot run, the definition bounds)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from docflow import db
from docflow.kit.clock import utcnow
from docflow.workflows.models import ExtractionWorkflowVersion
from docflow.workflows.repository import WorkflowRepository
from support.api_fixtures import workflow_body

LOOKBEHIND = r"(?<=Invoice No: )\S+"


def lookbehind_definition() -> dict[str, Any]:
    """The test workflow (`workflow_body`) with a lookbehind pattern locator on its first field,
    which Python's re ran and RE2 cannot: `fields.0.locators.1.pattern`."""
    body = workflow_body()
    body["fields"][0]["locators"].append({"kind": "pattern", "pattern": LOOKBEHIND})
    return body


def store_version(
    factory: sessionmaker[Session], tenant_id: str, workflow_id: str, definition: dict[str, Any]
) -> int:
    """Store `definition` as the workflow's next (current) version, unvalidated; its number.

    A read-then-write transaction: on SQLite it takes the write lock first (as the application's
    writes do), so a running worker's commit cannot make it fail half-way."""
    with db.make_write_session_factory(factory.kw["bind"])() as session:
        workflow = WorkflowRepository(session, tenant_id).get_for_update(workflow_id)
        assert workflow is not None
        workflow.current_version += 1
        canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"))
        session.add(
            ExtractionWorkflowVersion(
                tenant_id=tenant_id,
                workflow_id=workflow_id,
                version=workflow.current_version,
                definition=definition,
                schema_hash=hashlib.sha256(canonical.encode()).hexdigest(),
                created_at=utcnow(),
            )
        )
        session.commit()
        return workflow.current_version
