"""Where a text document's time goes: the embedded pipeline in this very process, measured.

Runs one batch of generated one-page text invoices through the real API (in process, so one
interpreter holds everything, as in `docflow serve`) on a fresh SQLite database, and prints:
documents per second, the process's CPU time per document, and the database statements per
document by kind (every engine in the process is counted: the application's and DBOS's).

To see which code the CPU goes to, sample it with py-spy (a dev dependency) and aggregate:

    py-spy record --gil -r 250 -f raw -o prof.txt -- python -m bench.pipeline_profile --count 400
    python -m bench.pipeline_profile --aggregate prof.txt --count 400

`--gil` samples only the thread holding the interpreter lock: with every document in one
process, that lock is the resource the documents share, so the shares printed are the shares of
the cost per document. The conclusions drawn from it are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, event

from docflow import bootstrap, db
from docflow.config import Settings
from docflow.corpus.generate import make_document
from docflow.demo import prepare_tenant
from docflow.extraction.workflow_file import load_workflow_file
from docflow.kit.logs import configure_logging
from docflow.main import create_app
from docflow.runtime import launch

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
BASE_URL = "http://testserver"
# Categories of sampled stacks, first match wins: (label, substrings of the stack).
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("engine (extract_document)", ("extract_document",)),
    ("document.extract around the engine", ("extract (docflow/documents/flows.py",)),
    ("document.persist", ("persist (docflow/documents/flows.py",)),
    ("document flow: DBOS checkpoints", ("document_flow",)),
    ("batch flow", ("batch_flow",)),
    ("events publisher", ("publish_flow", "publish_tick")),
    ("queue polling (DBOS)", ("queue_worker_thread",)),
    ("other workflow start and end (DBOS)", ("_execute_workflow_wthread",)),
    ("API: upload landing", ("land_upload",)),
    ("API: HTTP, routing, status reads", ("starlette", "fastapi", "anyio", "httpx")),
    ("setup of this profile (not per document)", ("<module>",)),
)


class StatementCounter:
    """Counts every statement run on any SQLAlchemy engine of the process, by kind."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        event.listen(Engine, "before_cursor_execute", self._count)

    def _count(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.counts[kind_of(statement)] += 1


def kind_of(statement: str) -> str:
    """`VERB table` of a statement (`SELECT documents`, `INSERT dbos.operation_outputs`)."""
    text = " ".join(statement.split())
    verb = text.split(" ", 1)[0].upper()
    patterns = {
        "SELECT": r"\bFROM\s+([\w.\"]+)",
        "INSERT": r"\bINTO\s+([\w.\"]+)",
        "UPDATE": r"^UPDATE\s+([\w.\"]+)",
        "DELETE": r"\bFROM\s+([\w.\"]+)",
    }
    found = re.search(patterns[verb], text, re.IGNORECASE) if verb in patterns else None
    table = found.group(1).replace('"', "").replace("main.", "dbos.") if found else ""
    return f"{verb} {table}".strip()


def run_batch(count: int, counter: StatementCounter) -> tuple[dict[str, float], Counter[str]]:
    """One batch of `count` text invoices, POST to terminal; its figures and the statements it
    ran, by kind."""
    home = Path(tempfile.mkdtemp(prefix="docflow-profile-"))
    url = f"sqlite:///{home / 'docflow.db'}"
    db.run_migrations(url)
    settings = Settings(
        home=home,
        database_url=url,
        storage_url=f"file://{home / 'files'}",
        public_base_url=BASE_URL,
        max_documents_per_batch=max(count, 1),
    )
    engine = db.make_engine(url)
    launch.launch(
        settings, flows=bootstrap.flows(), executor_id="profile", engine=engine, schedules=False
    )
    try:
        files = [make_document(2026, k % 3 if k % 7 < 3 else k % 4) for k in range(count)]
        with TestClient(create_app(settings, engine=engine)) as client:
            with db.make_session_factory(engine)() as session, session.begin():
                tenant = prepare_tenant(session, name="Profile")
            headers = {"Authorization": f"Bearer {tenant.token}"}
            project = client.post("/v1/projects", json={"name": "P"}, headers=headers).json()
            body = load_workflow_file(EXAMPLES / "invoice.yaml").model_dump(
                mode="json", exclude_none=True
            )
            workflow = client.post(
                f"/v1/projects/{project['id']}/workflows", json=body, headers=headers
            ).json()
            before, cpu, start = Counter(counter.counts), time.process_time(), time.perf_counter()
            declared = [
                {"name": f"{f.name}-{k}.pdf", "content_type": "application/pdf", "size": len(f.pdf)}
                for k, f in enumerate(files)
            ]
            batch = client.post(
                "/v1/batches",
                json={
                    "project_id": project["id"],
                    "workflow_id": workflow["id"],
                    "documents": declared,
                },
                headers=headers,
            ).json()
            for target, generated in zip(batch["documents"], files, strict=True):
                path = target["upload_url"].removeprefix(BASE_URL)
                client.put(path, content=generated.pdf, headers={"Content-Type": "application/pdf"})
            while True:
                state = client.get(f"/v1/batches/{batch['id']}", headers=headers).json()
                if state["status"] not in ("CREATED", "PROCESSING"):
                    break
                time.sleep(0.05)
            seconds = time.perf_counter() - start
            cpu_ms = (time.process_time() - cpu) * 1000
            ran = counter.counts - before
            figures = {
                "seconds": seconds,
                "docs_per_s": count / seconds,
                "cpu_ms_per_doc": cpu_ms / count,
                "statements_per_doc": sum(ran.values()) / count,
            }
            return figures, ran
    finally:
        launch.shutdown()
        engine.dispose()


def aggregate(raw: Path) -> list[tuple[str, float, int]]:
    """(category, share of samples, samples) from py-spy's raw output, largest first."""
    shares: Counter[str] = Counter()
    for line in raw.read_text().splitlines():
        stack, _, number = line.rpartition(" ")
        label = next((name for name, keys in CATEGORIES if any(k in stack for k in keys)), "other")
        shares[label] += int(number)
    total = sum(shares.values()) or 1
    return [(label, n / total, n) for label, n in shares.most_common()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pipeline_profile", description=__doc__)
    parser.add_argument("--count", type=int, default=400, help="documents in the batch")
    parser.add_argument("--aggregate", type=Path, help="py-spy raw output to summarise")
    parser.add_argument("--rate", type=int, default=250, help="py-spy's sampling rate (Hz)")
    args = parser.parse_args(argv)
    if args.aggregate:
        print(f"{'share':>6}  {'ms/doc':>7}  where the interpreter lock was held")
        for label, share, samples in aggregate(args.aggregate):
            print(f"{share:6.1%}  {samples / args.rate * 1000 / args.count:7.2f}  {label}")
        return 0
    configure_logging("WARNING", fmt="console")  # the report only, on standard output
    figures, ran = run_batch(args.count, StatementCounter())
    print(
        f"{args.count} text documents: {figures['seconds']:.1f} s, "
        f"{figures['docs_per_s']:.1f} docs/s, {figures['cpu_ms_per_doc']:.1f} ms CPU per document, "
        f"{figures['statements_per_doc']:.1f} statements per document"
    )
    print("statements per document, by kind (all engines of the process):")
    for kind, n in ran.most_common(25):
        if n / args.count >= 0.05:
            print(f"  {n / args.count:6.2f}  {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
