"""Every access pattern of PRODUCT.md is served by its index, on the engine under test.

The real repository call runs through the application's session; its SQL is captured and
EXPLAINed. On SQLite the plan comes from the same connection. On PostgreSQL, whose planner
decides by statistics, the plan comes from the owner's connection inside a transaction that
first fills the tables with a realistic spread of rows (many tenants, mostly SUCCEEDED) and
ANALYZEs them, then rolls everything back. The plan must name the index of the migration's
access-pattern table and, on SQLite, read in order without a sort.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, event, text
from sqlalchemy.orm import Session

from docflow.batches.models import TERMINAL_BATCH_STATUSES
from docflow.batches.repository import BatchFilter, BatchRepository
from docflow.documents.repository import (
    DocumentFilter,
    DocumentRepository,
    DownstreamRepository,
    downstream_due,
)
from docflow.events.repository import OutboxRepository
from docflow.kit.clock import utcnow
from docflow.projects.repository import ProjectRepository, find_retention_projects
from docflow.review.repository import ReviewRepository
from docflow.search.repository import SearchRepository, lagging_entries
from docflow.tenants.repository import ApiKeyRepository, MembershipRepository, find_user
from docflow.webhooks.repository import WebhookRepository
from docflow.workflows.repository import WorkflowRepository
from support.db_fixtures import on_postgres

# Ids of the seeded rows on PostgreSQL (any id does on SQLite, which plans without statistics).
T = "ten_g7"
PROJECT = "prj_ten_g7_1"
BATCH = "bat_ten_g7_5"
WORKFLOW = "wfl_prj_ten_g7_1_1"
DOCUMENT = "doc_bat_ten_g7_20_4"

# SQLite names the indexes of PRIMARY KEY / UNIQUE constraints itself.
SQLITE_AUTOINDEX = {
    "pk_projects": "sqlite_autoindex_projects_1",
    "uq_projects_tenant_id_name": "sqlite_autoindex_projects_2",
    "uq_users_email": "sqlite_autoindex_users_2",
    "pk_memberships": "sqlite_autoindex_memberships_1",
    "pk_documents": "sqlite_autoindex_documents_1",
    "pk_review_claims": "sqlite_autoindex_review_claims_1",
    "pk_search_entries": "sqlite_autoindex_search_entries_1",
    "pk_document_downstream": "sqlite_autoindex_document_downstream_1",
    "pk_extraction_workflow_versions": "sqlite_autoindex_extraction_workflow_versions_1",
}


def _documents(**match: str) -> Callable[[Session], Any]:
    return lambda s: DocumentRepository(s, T).page_matching(
        DocumentFilter(**match), cursor=None, limit=10
    )


def _downstream_due(session: Session) -> Any:
    before = utcnow()
    return downstream_due(
        session, changed_from=before - timedelta(minutes=1), changed_before=before, limit=500
    )


PATTERNS: list[tuple[str, Callable[[Session], Any], str]] = [
    (
        "projects of a tenant",
        lambda s: ProjectRepository(s, T).page(cursor=None, limit=10),
        "pk_projects | uq_projects_tenant_id_name",
    ),
    (
        "workflows of a project, recently updated first",
        lambda s: WorkflowRepository(s, T).page(PROJECT, cursor=None, limit=10),
        "ix_extraction_workflows_recent",
    ),
    (
        "a workflow's version dates, newest first",
        lambda s: WorkflowRepository(s, T).version_dates(WORKFLOW, limit=100),
        "pk_extraction_workflow_versions",
    ),
    ("a batch by id", lambda s: BatchRepository(s, T).get(BATCH), "ux_batches_id | pk_batches"),
    (
        "a tenant's batches by status and date",
        lambda s: BatchRepository(s, T).page(BatchFilter(status="FAILED"), cursor=None, limit=10),
        "ix_batches_status_created",
    ),
    (
        "a tenant's batches by date",
        lambda s: BatchRepository(s, T).page(cursor=None, limit=10),
        "ix_batches_created",
    ),
    (
        "a tenant's batches created in a period",
        lambda s: BatchRepository(s, T).page(
            BatchFilter(
                since=datetime(2026, 1, 1, tzinfo=UTC), until=datetime(2027, 1, 1, tzinfo=UTC)
            ),
            cursor=None,
            limit=10,
        ),
        "ix_batches_created",
    ),
    (
        "a project's batches by date",
        lambda s: BatchRepository(s, T).page(
            BatchFilter(project_id=PROJECT), cursor=None, limit=10
        ),
        "ix_batches_project_created",
    ),
    (
        "a workflow's batches by date",
        lambda s: BatchRepository(s, T).page(
            BatchFilter(workflow_id=WORKFLOW), cursor=None, limit=10
        ),
        "ix_batches_workflow_created",
    ),
    (
        "every batch of a project (deleting it with its batches)",
        lambda s: BatchRepository(s, T).in_project(PROJECT),
        "ix_batches_project_created",
    ),
    (
        "a project's finished batches created before a time (its retention)",
        lambda s: BatchRepository(s, T).created_before(
            PROJECT, before=utcnow(), statuses=sorted(TERMINAL_BATCH_STATUSES), limit=200
        ),
        "ix_batches_project_created",
    ),
    (
        "every tenant's projects that have a retention (the retention schedule)",
        lambda s: find_retention_projects(s, 500),
        "ix_projects_retention",
    ),
    (
        "documents of a batch",
        lambda s: DocumentRepository(s, T).page_in_batch(BATCH, status=None, cursor=None, limit=10),
        "ix_documents_batch",
    ),
    (
        "documents of a batch by status",
        lambda s: DocumentRepository(s, T).page_in_batch(
            BATCH, status="FAILED", cursor=None, limit=10
        ),
        "ix_documents_batch_status",
    ),
    (
        "a tenant's documents needing review",
        lambda s: DocumentRepository(s, T).page_by_status("REVIEW_REQUIRED", cursor=None, limit=10),
        "ix_documents_tenant_status",
    ),
    ("a tenant's documents, newest first", _documents(), "pk_documents"),
    (
        "the search entries' versions of a page of documents (their downstream state)",
        lambda s: SearchRepository(s, T).versions_of([DOCUMENT, DOCUMENT[:-1] + "3"]),
        "pk_search_entries",
    ),
    (
        "the events of a page of documents (their webhook deliveries' downstream state)",
        lambda s: WebhookRepository(s, T).subject_events([f"documents/{DOCUMENT}"]),
        "ix_outbox_events_subject",
    ),
    (
        "... and the webhook deliveries of those events",
        lambda s: WebhookRepository(s, T).event_deliveries(["evt_1", "evt_2"]),
        "ix_webhook_deliveries_event | uq_webhook_deliveries_tenant_id_endpoint_id_event_id",
    ),
    (
        "the events about a batch and its documents (deleting it)",
        lambda s: OutboxRepository(s, T).ids_about([f"batches/{BATCH}", f"documents/{DOCUMENT}"]),
        "ix_outbox_events_subject",
    ),
    (
        "every tenant's latest document changes before a time (the projection lag check)",
        lambda s: lagging_entries(s, before=utcnow(), limit=1000),
        "ix_documents_changed",
    ),
    (
        "a document's recorded downstream state",
        lambda s: DownstreamRepository(s, T).get(DOCUMENT),
        "pk_document_downstream",
    ),
    (
        "every tenant's documents changed in a window, their entry behind (the downstream pass)",
        _downstream_due,
        "ix_documents_changed",
    ),
    (
        "... and every tenant's deliveries created in that window, still pending",
        _downstream_due,
        "ix_webhook_deliveries_pending",
    ),
    ("... of a project", _documents(project_id=PROJECT), "ix_documents_project"),
    ("... of a workflow", _documents(workflow_id=WORKFLOW), "ix_documents_workflow"),
    ("... of a batch", _documents(batch_id=BATCH), "ix_documents_batch"),
    # PostgreSQL takes the status index's few rows and sorts them; SQLite, without statistics,
    # reads the tenant's documents backwards, keeping those in the status.
    ("... in a status", _documents(status="FAILED"), "ix_documents_tenant_status | pk_documents"),
    (
        "... created in a time range",
        _documents(after="doc_01", before="doc_02"),
        "pk_documents",
    ),
    (
        "... whose field needs review",
        _documents(status="REVIEW_REQUIRED", weak_field="total"),
        "ix_documents_tenant_status | pk_documents",
    ),
    (
        "the review queue",
        lambda s: ReviewRepository(s, T).next_unclaimed(project_id=None, now=utcnow(), skip=()),
        "ix_documents_tenant_status",
    ),
    (
        "the review queue of a project",
        lambda s: ReviewRepository(s, T).next_unclaimed(project_id=PROJECT, now=utcnow(), skip=()),
        "ix_documents_project_status",
    ),
    ("a document's claim", lambda s: ReviewRepository(s, T).claim(DOCUMENT), "pk_review_claims"),
    (
        "a document's reviews",
        lambda s: ReviewRepository(s, T).page_reviews(DOCUMENT, cursor=None, limit=10),
        "ix_document_reviews_document",
    ),
    (
        "a workflow's reviewed documents, most recently reviewed first",
        lambda s: ReviewRepository(s, T).recently_reviewed(WORKFLOW, limit=50),
        "ix_documents_workflow_reviewed",
    ),
    (
        "the fields reviews corrected, of given documents",
        lambda s: ReviewRepository(s, T).corrected_fields([DOCUMENT, "doc_x"]),
        "ix_document_reviews_document",
    ),
    (
        "members of a tenant, by user id",
        lambda s: MembershipRepository(s, T).page(cursor=None, limit=10),
        "pk_memberships",
    ),
    (
        "a member's API keys",
        lambda s: ApiKeyRepository(s, T).active_of_user("usr_7"),
        "ix_api_keys_user_id",
    ),
    (
        "documents of a batch among given ids (a diff's counterparts in an uploaded batch)",
        lambda s: DocumentRepository(s, T).in_batch_with_ids(BATCH, [f"doc_{BATCH}_2", "doc_x"]),
        "pk_documents | ix_documents_batch",
    ),
    (
        "documents of a batch re-running given uploads (a diff's counterparts in a re-run)",
        lambda s: DocumentRepository(s, T).in_batch_with_sources(BATCH, ["doc_a", "doc_b"]),
        "ix_documents_batch_source",
    ),
    (
        "documents of a batch whose uploads a re-run did not run (a diff's second part)",
        lambda s: DocumentRepository(s, T).page_not_rerun(
            BATCH, rerun_batch_id=f"bat_{T}_6", keyed_by_source=False, cursor=None, limit=10
        ),
        "ix_documents_batch",
    ),
    (
        "uploads outside a batch (is a deleted batch's file still run elsewhere?)",
        lambda s: DocumentRepository(s, T).uploads_elsewhere(BATCH, ["doc_a", "doc_b"]),
        "pk_documents",
    ),
    (
        "re-runs of uploads outside a batch (... by a re-run?)",
        lambda s: DocumentRepository(s, T).reruns_elsewhere(BATCH, ["doc_a", "doc_b"]),
        "ix_documents_source",
    ),
    (
        "a user by email",
        lambda s: find_user(s, email="a@example.com"),
        "uq_users_email",
    ),
    (
        "a tenant's member by email",
        lambda s: MembershipRepository(s, T).by_email("u7@example.com"),
        "uq_users_email",
    ),
]


def _captured(session: Session, call: Callable[[Session], Any]) -> tuple[str, Any]:
    captured: list[tuple[str, Any]] = []
    connection = session.connection()

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "set_config" not in statement:
            captured.append((statement, params))

    event.listen(connection, "before_cursor_execute", capture)
    try:
        call(session)
    finally:
        event.remove(connection, "before_cursor_execute", capture)
    assert len(captured) == 1, captured
    return captured[0]


SEED = """
INSERT INTO tenants SELECT 'ten_g' || i, 't', 'free', now() FROM generate_series(1, 50) i;
INSERT INTO projects SELECT t.id, 'prj_' || t.id || '_' || j, 'p' || j, '', 0, 0, now(), now()
  FROM tenants t, generate_series(1, 10) j WHERE t.id LIKE 'ten_g%';
INSERT INTO extraction_workflows
  SELECT p.tenant_id, 'wfl_' || p.id || '_' || k, p.id, 'w' || k, 1,
         now() - k * interval '1 hour', now() - k * interval '1 hour'
  FROM projects p, generate_series(1, 5) k WHERE p.tenant_id LIKE 'ten_g%';
INSERT INTO extraction_workflow_versions
  SELECT w.tenant_id, w.id, 1, '{}'::json, 'h', now() FROM extraction_workflows w
  WHERE w.tenant_id LIKE 'ten_g%';
INSERT INTO batches
  SELECT t.id, 'bat_' || t.id || '_' || b, 'prj_' || t.id || '_1', 'wfl_prj_' || t.id || '_1_1', 1,
         CASE WHEN b % 50 = 0 THEN 'FAILED' WHEN b % 20 = 0 THEN 'REVIEW_REQUIRED'
              WHEN b % 10 = 0 THEN 'PROCESSING' ELSE 'SUCCEEDED' END,
         4, 4, 4, 0, 0, NULL, now(), NULL, NULL,
         now() - b * interval '1 minute', now() - b * interval '1 minute', 1
  FROM tenants t, generate_series(1, 200) b WHERE t.id LIKE 'ten_g%';
INSERT INTO documents
  SELECT b.tenant_id, 'doc_' || b.id || '_' || d, b.id, 'f.pdf', 'application/pdf', 1, 1, NULL,
         NULL, NULL,
         CASE WHEN d = 4 AND b.status <> 'SUCCEEDED' THEN b.status ELSE 'SUCCEEDED' END,
         NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, b.created_at, b.updated_at,
         b.project_id, b.workflow_id, NULL
  FROM batches b, generate_series(1, 4) d WHERE b.tenant_id LIKE 'ten_g%';
UPDATE documents SET reviewed_at = updated_at WHERE right(id, 2) = '_4' AND tenant_id LIKE 'ten_g%';
INSERT INTO document_reviews
  SELECT d.tenant_id, 'rev_' || d.id, d.id, 'approve', '', 'key_1', 'REVIEW_REQUIRED',
         'SUCCEEDED', d.updated_at
  FROM documents d WHERE d.reviewed_at IS NOT NULL AND d.tenant_id LIKE 'ten_g%';
INSERT INTO search_entries (tenant_id, document_id, project_id, batch_id, workflow_id, name,
                            status, confidence, version, fields, numbers, dates, body, updated_at)
  SELECT d.tenant_id, d.id, d.project_id, d.batch_id, d.workflow_id, d.name, d.status, NULL,
         d.version, '{}'::json, '{}'::json, '{}'::json, d.name, d.updated_at
  FROM documents d WHERE d.tenant_id LIKE 'ten_g%';
INSERT INTO document_review_fields
  SELECT r.tenant_id, r.id, 'total', NULL, 0.5, '1.00' FROM document_reviews r
  WHERE r.tenant_id LIKE 'ten_g%';
INSERT INTO users SELECT 'usr_' || i, 'u' || i || '@example.com', '', now()
  FROM generate_series(1, 2000) i;
INSERT INTO memberships SELECT t.id, 'usr_' || (row_number() OVER ()), 'viewer'
  FROM tenants t, generate_series(1, 20) u WHERE t.id LIKE 'ten_g%';
INSERT INTO api_keys
  SELECT m.tenant_id, 'key_' || m.user_id || '_' || k, 'k',
         m.user_id || '_' || k || '_' || m.tenant_id, 'h', '["read"]'::json, now(), NULL, NULL,
         m.user_id
  FROM memberships m, generate_series(1, 3) k WHERE m.tenant_id LIKE 'ten_g%';
ANALYZE;
"""


@pytest.fixture(scope="module")
def seeded_owner(owner_engine: Engine) -> Iterator[Connection | None]:
    """PostgreSQL: the owner's connection in a transaction over seeded, analysed tables."""
    if not on_postgres():
        yield None
        return
    with owner_engine.connect() as owner:
        owner.begin()
        for statement in SEED.split(";"):
            if statement.strip():
                owner.execute(text(statement))
        owner.exec_driver_sql("SET LOCAL enable_seqscan = off")
        yield owner
        owner.rollback()


@pytest.fixture
def explain(seeded_owner: Connection | None, session: Session) -> Callable[[str, Any], str]:
    """EXPLAIN a captured statement (see the module docstring)."""
    if seeded_owner is None:
        connection = session.connection()
        return lambda sql, params: "\n".join(
            str(r[-1]) for r in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)
        )
    owner = seeded_owner
    return lambda sql, params: "\n".join(
        owner.exec_driver_sql(f"EXPLAIN {_lookup_body(owner, sql)}", params).scalars().all()
    )


def _lookup_body(owner: Connection, sql: str) -> str:
    """A call of a SECURITY DEFINER lookup (never inlined) as the query inside it, its
    parameters `p_<name>` bound from the call's `<name>`, so the plan shows the index."""
    called = re.search(r"FROM (docflow_\w+)\(", sql)
    if called is None:
        return sql
    body = owner.execute(
        text("SELECT prosrc FROM pg_proc WHERE proname = :n"), {"n": called.group(1)}
    ).scalar_one()
    return re.sub(r"\bp_(\w+)", r"%(\1)s", body)


@pytest.mark.parametrize(("pattern", "call", "index"), PATTERNS, ids=[p[0] for p in PATTERNS])
def test_access_pattern_uses_its_index(
    session: Session,
    explain: Callable[[str, Any], str],
    pattern: str,
    call: Callable[[Session], Any],
    index: str,
) -> None:
    statement, params = _captured(session, call)
    plan = explain(statement, params)
    accepted = [i.strip() for i in index.split("|")]
    if not on_postgres():
        accepted = [SQLITE_AUTOINDEX.get(i, i) for i in accepted]
        # Without statistics SQLite must read the index in the listed order, never sort.
        assert "USE TEMP B-TREE" not in plan, f"{pattern} sorts: {plan}"
    # PostgreSQL may fetch a handful of matching rows by bitmap and sort them: cheaper, and fine.
    assert any(i in plan for i in accepted), f"{pattern}: {plan}"
