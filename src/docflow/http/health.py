"""Liveness and readiness.

`/healthz` answers 200 whenever the process serves HTTP. `/readyz` runs every registered
readiness check (the database first; later parts add their own signals with `add_check`) and
answers 200 when all pass, 503 naming the failing ones otherwise. Check failures are logged,
never echoed (they may contain connection details).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import structlog
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import Engine

log = structlog.get_logger(__name__)

ReadinessCheck = Callable[[], None]
"""Raises when the dependency it checks is not usable."""

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "unready"]
    checks: dict[str, Literal["ok", "failing"]]


def database_check(engine: Engine) -> ReadinessCheck:
    """A check that opens a connection and runs a trivial statement."""

    def check() -> None:
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1")

    return check


def add_check(app: FastAPI, name: str, check: ReadinessCheck) -> None:
    """Register a readiness check on `app` under `name`."""
    checks: dict[str, ReadinessCheck] = app.state.readiness_checks
    checks[name] = check


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    """Liveness: 200 whenever the process is up."""
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
def readyz(request: Request) -> JSONResponse:
    """Readiness: 200 when every dependency check passes (the database, ...), else 503."""
    checks: dict[str, ReadinessCheck] = request.app.state.readiness_checks
    results: dict[str, Literal["ok", "failing"]] = {}
    for name, check in checks.items():
        try:
            check()
            results[name] = "ok"
        except Exception as exc:
            log.warning("health.check_failed", check=name, error_type=type(exc).__name__)
            results[name] = "failing"
    ready = all(result == "ok" for result in results.values())
    body = Readiness(status="ready" if ready else "unready", checks=results)
    return JSONResponse(body.model_dump(mode="json"), status_code=200 if ready else 503)
