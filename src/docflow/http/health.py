"""Liveness and readiness.

`/healthz` answers 200 whenever the process serves HTTP. `/readyz` runs every registered
readiness check (the database first; later parts add their own signals with `add_check`) and
answers 200 when all pass, 503 naming the failing ones otherwise. A check that raises `Degraded`
(the process works, but something needs attention: dead letters piling up, events not being
published) makes the answer 200 with status "degraded". Check failures are logged, never echoed
(they may contain connection details).
"""

from __future__ import annotations

from typing import Annotated, Literal

import structlog
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import Engine

from docflow import db
from docflow.kit.readiness import Degraded, ReadinessCheck

log = structlog.get_logger(__name__)

CheckResult = Literal["ok", "degraded", "failing"]

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready", "degraded", "unready"]
    checks: dict[str, CheckResult]


def database_check(engine: Engine) -> ReadinessCheck:
    """A check that opens a connection and runs a trivial statement."""

    def check() -> None:
        db.ping(engine)

    return check


def add_check(app: FastAPI, name: str, check: ReadinessCheck) -> None:
    """Register a readiness check on `app` under `name`."""
    checks: dict[str, ReadinessCheck] = app.state.readiness_checks
    checks[name] = check


async def readiness_checks(request: Request) -> dict[str, ReadinessCheck]:
    """The app's registered readiness checks, by name."""
    checks: dict[str, ReadinessCheck] = request.app.state.readiness_checks
    return checks


ChecksDep = Annotated[dict[str, ReadinessCheck], Depends(readiness_checks)]


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    """Liveness: 200 whenever the process is up."""
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness, responses={503: {"model": Readiness}})
def readyz(checks: ChecksDep) -> JSONResponse:
    """Readiness: 200 when every dependency check passes ("degraded" when one is over a
    threshold but works), else 503."""
    results: dict[str, CheckResult] = {name: _run(name, check) for name, check in checks.items()}
    values = set(results.values())
    status: Literal["ready", "degraded", "unready"] = (
        "unready" if "failing" in values else "degraded" if "degraded" in values else "ready"
    )
    body = Readiness(status=status, checks=results)
    return JSONResponse(
        body.model_dump(mode="json"), status_code=503 if status == "unready" else 200
    )


def _run(name: str, check: ReadinessCheck) -> CheckResult:
    try:
        check()
    except Degraded as exc:
        log.warning("health.check_degraded", check=name, reason=str(exc))
        return "degraded"
    except Exception as exc:
        log.warning("health.check_failed", check=name, error_type=type(exc).__name__)
        return "failing"
    return "ok"
