"""The API against its own OpenAPI document: schemathesis generates requests for every
operation (valid ones and invalid ones) with a real API key, and every answer must be no 5xx, a
documented status with its documented content type and headers, and a body of the documented
schema. A short, seeded run, so a failure found once is found again."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.schemas import APIOperation
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from docflow.config import Settings
from docflow.main import create_app
from support.api_fixtures import ApiTenant, make_api_tenant

EXAMPLES = 6
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def schemathesis_app(api_settings: Settings, engine: Engine) -> FastAPI:
    # An app of its own: schemathesis keeps the app's lifespan running until the process ends.
    return create_app(api_settings, engine=engine)


@pytest.fixture(scope="module")
def fuzz_tenant(session_factory: sessionmaker[Session]) -> ApiTenant:
    return make_api_tenant(session_factory, "Schemathesis")


def _failures(operation: APIOperation, mode: GenerationMode, tenant: ApiTenant) -> list[str]:
    """Run `operation` with generated cases of `mode`; the failures schemathesis reported.

    Plain hypothesis over each operation's strategy, not schemathesis' pytest plugin: its lazy
    (fixture-loaded) schemas need a pytest internal that pytest 9.2 no longer has.
    """

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: the report is the first case
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        case.call_and_validate(headers=tenant.headers, checks=CHECKS)

    try:
        run()
    except Unsatisfiable:
        return []  # nothing of this mode to send (no parameters to make invalid)
    except (Exception, BaseExceptionGroup) as exc:  # schemathesis' failures, per operation
        return [f"{operation.label} ({mode}): {exc}"]
    return []


@pytest.mark.slow
def test_api_conforms_to_its_schema(schemathesis_app: FastAPI, fuzz_tenant: ApiTenant) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", schemathesis_app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 20
    failures = [
        failure
        for operation in operations
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
        for failure in _failures(operation, mode, fuzz_tenant)
    ]
    assert not failures, "\n\n".join(failures)
