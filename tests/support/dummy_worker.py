"""A worker process for heartbeat tests: DBOS with one small workflow, plus docflow's monitor.

Run as `python -m support.dummy_worker URL EXECUTOR_ID [WORKFLOW_ID]` (tests/ on the path): it
launches DBOS on the PostgreSQL database URL (whose migrations ran, and which has a table
`dummy_effects(tag, what, executor_id)`), beats and reaps every 0.2 s with a 1.5 s timeout, and,
given a WORKFLOW_ID, starts `hold_flow` under that id. It runs until killed.
"""

from __future__ import annotations

import os
import socket
import sys
import time

from dbos import DBOS, SetWorkflowID
from sqlalchemy import text

from docflow import db
from docflow.executors.monitor import ExecutorMonitor
from docflow.worker import recover_executors

HEARTBEAT_SECONDS = 0.2
TIMEOUT_SECONDS = 1.5
_engine = None


def _mark(tag: str, what: str) -> None:
    assert _engine is not None
    with _engine.begin() as conn:
        conn.execute(
            text("INSERT INTO dummy_effects (tag, what, executor_id) VALUES (:t, :w, :e)"),
            {"t": tag, "w": what, "e": DBOS.executor_id},
        )


@DBOS.step()
def mark_step(tag: str, what: str) -> None:
    _mark(tag, what)


@DBOS.workflow()
def hold_flow(tag: str) -> str:
    mark_step(tag, "start")
    DBOS.sleep(2.0)
    mark_step(tag, "end")
    return tag


def main(url: str, executor_id: str, workflow_id: str | None) -> None:
    global _engine
    _engine = db.make_engine(url, pool_size=2)
    dbos_url = url.replace("postgresql+psycopg://", "postgresql://")
    DBOS(
        config={
            "name": "docflow-dummy",
            "system_database_url": dbos_url,
            "application_version": "dummy-1",
            "executor_id": executor_id,
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": 0.1,
        }
    )
    monitor = ExecutorMonitor(
        db.make_session_factory(_engine),
        executor_id=executor_id,
        hostname=socket.gethostname(),
        pid=os.getpid(),
        heartbeat_seconds=HEARTBEAT_SECONDS,
        timeout_seconds=TIMEOUT_SECONDS,
        recover=recover_executors,
    )
    monitor.beat()
    DBOS.launch()
    monitor.start()
    if workflow_id:
        with SetWorkflowID(workflow_id):
            DBOS.start_workflow(hold_flow, workflow_id)
    print("ready", flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
