"""Helpers of the watched-sources tests: a source made, polled and its runs read through the
API of a launched runtime (`support.dbos_fixtures.Setup`)."""

from __future__ import annotations

import time
from typing import Any

from dbos import DBOS

from support.api_fixtures import ok
from support.dbos_fixtures import Setup

NEVER = "0 0 1 1 *"  # once a year: these tests poll by hand


def sources_url(s: Setup, tail: str = "") -> str:
    return f"/v1/projects/{s.project_id}/sources{tail}"


def create_source(s: Setup, path: str, **extra: Any) -> dict[str, Any]:
    body = {"path": path, "workflow_id": s.workflow_id, "cron": NEVER, **extra}
    return ok(s.env.client.post(sources_url(s), json=body, headers=s.tenant.headers), 201)


def source_runs(s: Setup, source_id: str) -> list[dict[str, Any]]:
    page = ok(s.env.client.get(sources_url(s, f"/{source_id}/runs"), headers=s.tenant.headers), 200)
    items: list[dict[str, Any]] = page["items"]
    return items


def wait_run(s: Setup, source_id: str, run_id: str, timeout: float = 60.0) -> dict[str, Any]:
    """The run `run_id` once its poll workflow has finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for run in source_runs(s, source_id):
            if run["id"] == run_id:
                status = DBOS.get_workflow_status(run_id)
                if status is not None and status.status == "SUCCESS":
                    return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not finish: {source_runs(s, source_id)}")


def poll_source(s: Setup, source_id: str) -> dict[str, Any]:
    """Poll the source now through the API; its run once finished."""
    url = sources_url(s, f"/{source_id}/poll")
    accepted = ok(s.env.client.post(url, headers=s.tenant.headers), 202)
    return wait_run(s, source_id, accepted["run_id"])
