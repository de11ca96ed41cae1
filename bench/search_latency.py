"""Search latency on a large index: `GET /v1/search`'s service call over N entries.

    .venv/bin/python bench/search_latency.py [--documents 100000] [--queries 200]
        [--database-url URL] [--bulk] [--json OUT]

The entries are generated and written straight through `SearchRepository.put` in
transactions of 2,000 (no OCR, no events): invoice-like field values (total, date, vendor)
and a few lines of text drawn from a fixed vocabulary with a seeded random generator, under
one tenant, with a second tenant's entries beside them (a tenant filter that works reads
none of them). Then `search.service.search` runs, one page of 50, for four kinds of query:
one word, two words, a word and a range on `total`, and a range on `date` alone. Prints p50
and p99 per kind in milliseconds, as a table and as JSON. Default database: a temporary
SQLite file (FTS5); `--database-url` a PostgreSQL database (full-text with a GIN index) that
the script migrates and fills. `--bulk` (PostgreSQL only) writes the same entries with one
multi-row INSERT per 2,000 instead of `put` one at a time: a fill in seconds rather than
half an hour on a loaded machine, for measuring the queries (its fill rate means nothing).
The machine is shared: numbers are noisy.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from docflow import db
from docflow.documents.models import Document
from docflow.extraction.definition import ExtractionWorkflowDefinition
from docflow.kit.clock import utcnow
from docflow.projects import service as projects
from docflow.search.models import SearchEntry
from docflow.search.query import read_query
from docflow.search.repository import SearchRepository
from docflow.search.service import entry_values, search
from docflow.tenancy import TenantContext
from docflow.tenants import service as tenants
from docflow.workflows import service as workflows

VOCABULARY = [
    "invoice",
    "receipt",
    "payment",
    "due",
    "net",
    "thirty",
    "sixty",
    "days",
    "order",
    "delivery",
    "freight",
    "widget",
    "bolt",
    "steel",
    "copper",
    "cable",
    "service",
    "hours",
    "consulting",
    "licence",
    "annual",
    "monthly",
    "rent",
    "deposit",
    "refund",
    "credit",
    "note",
    "discount",
    "tax",
    "vat",
    "harbour",
    "trading",
    "acme",
    "globex",
    "initech",
    "umbrella",
    "stark",
    "wayne",
    "north",
    "south",
    "east",
    "west",
    "bank",
    "transfer",
    "cheque",
    "card",
    "account",
    "reference",
    "project",
    "phase",
]
VENDORS = ["Acme", "Globex", "Initech", "Umbrella", "Stark", "Wayne", "Hooli", "Vandelay"]
BATCH = 2_000


def _definition() -> ExtractionWorkflowDefinition:
    label = [{"kind": "label", "labels": ["X"]}]
    return ExtractionWorkflowDefinition.model_validate(
        {
            "name": "bench",
            "fields": [
                {"name": "total", "type": "money", "locators": label},
                {"name": "date", "type": "date", "locators": label},
                {"name": "vendor", "locators": label},
            ],
        }
    )


def _result(rng: random.Random) -> dict[str, Any]:
    def field(value: str) -> dict[str, Any]:
        return {"value": value}

    text = "\n".join(" ".join(rng.choices(VOCABULARY, k=12)) for _ in range(6))
    return {
        "fields": {
            "total": field(f"{rng.uniform(1, 5000):.2f}"),
            "date": field(f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"),
            "vendor": field(rng.choice(VENDORS)),
        },
        "text": text,
    }


def fill(
    factory: Any, tenant_id: str, project_id: str, count: int, seed: int, *, bulk: bool = False
) -> float:
    """Write `count` entries of the tenant (through `put`, or `bulk` in multi-row INSERTs);
    seconds taken."""
    rng = random.Random(seed)
    started = time.perf_counter()
    for start in range(0, count, BATCH):
        with factory() as session, session.begin():
            repo = SearchRepository(session, tenant_id)
            rows: list[dict[str, Any]] = []
            for i in range(start, min(start + BATCH, count)):
                document = Document(
                    tenant_id=tenant_id,
                    id=f"doc_{seed:02d}{i:024d}",
                    batch_id=f"bat_{i // 100:026d}",
                    project_id=project_id,
                    workflow_id=None,
                    name=f"invoice-{i}.pdf",
                    status="SUCCEEDED",
                    confidence=0.9,
                    version=2,
                )
                values = entry_values(document, _result(rng))
                if not bulk:
                    repo.put(document.id, values)
                    continue
                row = {k: getattr(values, k) for k in values.__slots__}
                rows.append({"tenant_id": tenant_id, "document_id": document.id, **row})
            if rows:
                now = utcnow()
                session.execute(insert(SearchEntry), [{**r, "updated_at": now} for r in rows])
    return time.perf_counter() - started


def _tenant(factory: Any, name: str) -> tuple[TenantContext, str]:
    with factory() as session, session.begin():
        tenant = TenantContext(tenant_id=tenants.create_tenant(session, name=name).id)
        project = projects.create_project(session, tenant, name="bench")
        workflows.create_workflow(session, tenant, project_id=project.id, definition=_definition())
        return tenant, project.id


def _kinds(rng: random.Random) -> dict[str, Callable[[], dict[str, Any]]]:
    return {
        "one word": lambda: {"q": rng.choice(VOCABULARY), "fields": {}},
        "two words": lambda: {"q": " ".join(rng.sample(VOCABULARY, 2)), "fields": {}},
        "word + total range": lambda: {
            "q": rng.choice(VOCABULARY),
            "fields": {"field.total.gte": str(rng.randint(1000, 4000))},
        },
        "date range only": lambda: {
            "q": None,
            "fields": {"field.date.lte": f"2026-{rng.randint(1, 12):02d}-15"},
        },
    }


def measure(factory: Any, tenant: TenantContext, queries: int) -> dict[str, dict[str, float]]:
    rng = random.Random(7)
    report: dict[str, dict[str, float]] = {}
    for kind, make in _kinds(rng).items():
        times: list[float] = []
        for _ in range(queries):
            params = make()
            query = read_query(q=params["q"], project_id=None, status=None, fields=params["fields"])
            started = time.perf_counter()
            with factory() as session:
                search(session, tenant, query=query, cursor=None, limit=50)
            times.append((time.perf_counter() - started) * 1000)
        times.sort()
        report[kind] = {
            "p50_ms": round(statistics.median(times), 2),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))], 2),
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--database-url")
    parser.add_argument("--bulk", action="store_true", help="multi-row INSERTs (PostgreSQL)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.bulk and not (args.database_url or "").startswith("postgresql"):
        parser.error("--bulk needs a PostgreSQL --database-url (SQLite's FTS5 rows need put)")
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{tmp}/bench.db"
        db.run_migrations(url)
        engine = db.make_engine(url)
        factory = db.make_write_session_factory(engine)
        tenant, project_id = _tenant(factory, "bench")
        other, other_project = _tenant(factory, "neighbour")
        seconds = fill(factory, tenant.tenant_id, project_id, args.documents, 1, bulk=args.bulk)
        fill(factory, other.tenant_id, other_project, args.documents // 10, 2, bulk=args.bulk)
        if args.bulk:
            with engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE search_entries")
        report: dict[str, Any] = {
            "engine": engine.dialect.name,
            "documents": args.documents,
            "neighbour_documents": args.documents // 10,
            "fill_entries_per_second": round(args.documents / seconds),
            "queries_per_kind": args.queries,
            "latency": measure(factory, tenant, args.queries),
        }
        engine.dispose()
    print(json.dumps(report, indent=2))
    print(f"{'query':<22} {'p50 ms':>8} {'p99 ms':>8}")
    for kind, figures in report["latency"].items():
        print(f"{kind:<22} {figures['p50_ms']:>8} {figures['p99_ms']:>8}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
