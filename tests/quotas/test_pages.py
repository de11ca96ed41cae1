"""Pages count in the tenant's month as the pipeline reads them, and a month whose pages are
used up refuses new batches (a running one is never cut short)."""

from __future__ import annotations

import time

import pytest

from docflow import db
from docflow.config import Plan
from docflow.quotas import service
from docflow.tenancy import TenantContext, operator
from support.dbos_fixtures import Setup, dbos_env, invoice_pdf, setup, submit, wait_terminal

__all__ = ["dbos_env", "setup"]

PDF = "application/pdf"


def pages_used(setup: Setup) -> int:
    usage = setup.env.client.get("/v1/usage", headers=setup.tenant.headers).json()
    return int(usage["usage"]["pages"])


def test_read_pages_are_counted_and_refuse_batches_past_the_month(setup: Setup) -> None:
    assert pages_used(setup) == 0
    batch = submit(
        setup,
        [
            ("a.pdf", PDF, invoice_pdf("INV-31", "1.00")),
            ("b.pdf", PDF, invoice_pdf("INV-32", "2.00")),
            ("broken.pdf", PDF, b"%PDF-1.7 nothing readable"),  # read no page
        ],
    )
    wait_terminal(setup, batch["id"])
    deadline = time.monotonic() + 10
    while pages_used(setup) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)  # the last document's commit may follow the batch's status
    assert pages_used(setup) == 2
    tenant = TenantContext(tenant_id=operator(setup.tenant.tenant_id))
    # charged as batch creation charges it: in a write session (IMMEDIATE on SQLite), so the
    # read of the month's usage and the write of the charge never meet the runtime's writes
    sessions = db.make_write_session_factory(setup.env.engine)
    with sessions() as session, pytest.raises(service.QuotaExceeded) as refused:
        service.charge_batch(session, tenant, documents=1, plan=Plan(pages_per_month=2))
    assert refused.value.extra["quota"] == "pages_per_month"
    with sessions() as session:
        service.charge_batch(session, tenant, documents=1, plan=Plan(pages_per_month=3))
        session.commit()
    usage = setup.env.client.get("/v1/usage", headers=setup.tenant.headers).json()["usage"]
    assert usage["documents"] == 4
