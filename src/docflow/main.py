"""The HTTP application's composition root: `create_app(settings)`.

Nothing runs at import time: the engine is made (or received) when the app is created and
disposed when its lifespan ends, so tests and the CLI choose the database explicitly.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from sqlalchemy import Engine

from docflow import __version__, bootstrap, db
from docflow.batches.api import router as batches_router
from docflow.config import Settings
from docflow.documents.api import router as documents_router
from docflow.documents.uploads.api import router as upload_router
from docflow.encryption.service import open_file_storage
from docflow.errors import UPLOAD_PATH
from docflow.events.api import router as events_router
from docflow.events.health import events_check
from docflow.exports.api import router as exports_router
from docflow.history.api import router as history_router
from docflow.http.body_limit import BodyLimitMiddleware, BodyLimits, RouteLimit
from docflow.http.headers import API_HEADERS, ResponseHeaders
from docflow.http.health import database_check
from docflow.http.health import router as health_router
from docflow.http.inputs import refuse_unstorable_values
from docflow.http.metrics import RequestMetrics
from docflow.http.metrics import router as metrics_router
from docflow.http.problems import PROBLEM_RESPONSES, install_problem_handlers
from docflow.http.query import refuse_unknown_query_parameters
from docflow.http.routes import RouteTemplates
from docflow.http.tracing import TELEMETRY, RequestIds
from docflow.kit.readiness import ReadinessCheck
from docflow.llm.api import router as llm_router
from docflow.observability import metrics, tracing
from docflow.observability.sources import installation_scrape
from docflow.projects.api import router as projects_router
from docflow.quotas.api import router as usage_router
from docflow.quotas.limiter import limiter_for
from docflow.reconciler.health import workflows_check
from docflow.review.api import router as review_router
from docflow.runtime import context, launch
from docflow.search.api import router as search_router
from docflow.search.health import downstream_check
from docflow.sources.api import router as sources_router
from docflow.storage.health import storage_check
from docflow.storage.sealed import unwrap_storage
from docflow.tenants.api import router as tenants_router
from docflow.tenants.users_api import router as users_router
from docflow.trust.api import router as trust_router
from docflow.web.api import mount_console
from docflow.web.auth_api import PREFIX as CONSOLE_PREFIX
from docflow.web.oidc import OidcConfig
from docflow.webhooks.api import router as webhooks_router
from docflow.workflows.api import router as workflows_router
from docflow.workflows.evaluation import Evaluator, ReadingEngines, local_engines

API_PREFIX = "/v1"


def create_app(
    settings: Settings,
    *,
    engine: Engine | None = None,
    executor_id: str | None = None,
    process: str = "api",
) -> FastAPI:
    """Build the API for `settings`; a given `engine` is used as is and not disposed here.
    `process` names this process's PostgreSQL connections (`launch.connection_name`).

    With `executor_id` the app's lifespan also launches the durable runtime in this process
    (queue workers and the scheduler: `docflow serve`) and shuts it down at the end. Without it
    the app only enqueues, through a DBOS client on the same database.
    """
    settings.check_safe()
    tracing.configure()
    owned_engine = engine is None
    app_engine = engine if engine is not None else launch.app_engine(settings, process)
    clients = launch.client_engine(settings, process)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if executor_id is not None:
            launch.launch(
                settings,
                flows=bootstrap.flows(),
                executor_id=executor_id,
                engine=app_engine,
                process=process,
            )
            app.state.dbos_client = context.services().client
        try:
            yield
        finally:
            if executor_id is not None:
                launch.shutdown()
            else:
                app.state.dbos_client.destroy()
            readiness_client.destroy()
            scrape.close()
            if clients is not None:
                clients.dispose()
            if owned_engine:
                app_engine.dispose()

    app = FastAPI(
        title="docflow",
        version=__version__,
        description="Multi-tenant document extraction. Authenticate with "
        "`Authorization: Bearer <api key>`; errors are RFC 9457 problem+json.",
        lifespan=lifespan,
        telemetry=TELEMETRY,  # type: ignore[arg-type]
        dependencies=[
            Depends(refuse_unstorable_values),
            Depends(refuse_unknown_query_parameters),
        ],
    )
    app.state.settings = settings
    metrics.record(settings.metrics_enabled)
    app.state.engine = app_engine
    app.state.session_factory = db.make_session_factory(app_engine)
    app.state.write_session_factory = db.make_write_session_factory(app_engine)
    app.state.limiter = limiter_for(
        app.state.write_session_factory, dialect=app_engine.dialect.name
    )
    app.state.storage = open_file_storage(settings, app_engine)
    app.state.evaluator = evaluator(settings)
    # Replaced by the runtime's own client when the lifespan launches the runtime.
    app.state.dbos_client = launch.open_client(settings, engine=clients)
    readiness_client = launch.open_client(settings, engine=clients, retry_connection_errors=False)
    checks: dict[str, ReadinessCheck] = {
        "database": database_check(app_engine),
        "events": events_check(app_engine, settings),
        "workflows": workflows_check(readiness_client),
        "downstream": downstream_check(app_engine, settings),
    }
    if (storage := storage_check(unwrap_storage(app.state.storage))) is not None:
        checks["storage"] = storage
    app.state.readiness_checks = checks
    scrape = installation_scrape(settings, app_engine, process=process)
    app.state.metrics_registry = scrape.registry
    install_problem_handlers(app)
    app.include_router(health_router)
    if settings.metrics_enabled:  # off: `/metrics` is a 404 and requests are not timed
        app.include_router(metrics_router)
    for router in (
        projects_router,
        workflows_router,
        trust_router,
        batches_router,
        documents_router,
        review_router,
        history_router,
        events_router,
        tenants_router,
        users_router,
        webhooks_router,
        llm_router,
        usage_router,
        search_router,
        exports_router,
        sources_router,
    ):
        app.include_router(router, prefix=API_PREFIX, responses=PROBLEM_RESPONSES)
    app.include_router(upload_router, prefix=API_PREFIX)
    mount_console(
        app,
        secret=settings.signing_secret,
        session_hours=settings.console_session_hours,
        cache_dir=settings.home / "cache" / "console",
        cache_max_bytes=settings.console_cache_max_bytes,
        limits=launch.engine_limits(settings),
        oidc=OidcConfig.from_settings(settings),
    )
    # Added last, so outermost: a body is bounded before authentication or parsing reads it.
    app.add_middleware(BodyLimitMiddleware, limits=body_limits(settings))
    # Outside even the body limit, so refused bodies are counted (and have an id) too.
    if settings.metrics_enabled:
        app.add_middleware(RequestMetrics, route_of=RouteTemplates())
    app.add_middleware(RequestIds)
    # Outermost: every answer, a refused body's included, says nosniff and its referrer policy.
    app.add_middleware(ResponseHeaders, headers=API_HEADERS)
    return app


def evaluator(settings: Settings) -> Evaluator:
    """What a workflow evaluation may spend. It reads with the runtime's engines where this
    process runs the runtime (`docflow serve`: shared with the document workers, so OCR stays
    within `ocr_concurrency`), else with one engine of its own."""
    own = local_engines(
        launch.engine_limits(settings),
        ppocr_det_side=settings.ppocr_det_side,
        ppocr_threads=settings.ppocr_threads,
    )

    def engines() -> ReadingEngines:
        if not context.launched():
            return own()
        services = context.services()
        return ReadingEngines(services.ocr(), services.second_ocr(), services.limits)

    return Evaluator(
        engines=engines,
        max_documents=settings.evaluate_max_documents,
        seconds=settings.evaluate_seconds,
        max_document_bytes=settings.max_document_bytes,
        max_result_bytes=settings.max_document_bytes,
        concurrency=settings.evaluate_concurrency,
    )


# What a multipart form adds around the file it carries (boundaries, headers, the CSRF field).
SAMPLE_FORM_BYTES = 64 * 1024


def body_limits(settings: Settings) -> BodyLimits:
    """The request body limits: uploads keep the size their URL was signed for (the upload
    endpoint enforces it while spooling to disk), a sample uploaded on the console's canvas the
    document size limit (and its form's few fields), workflow definitions have their own limit,
    every other body the JSON limit."""
    workflow = settings.max_workflow_body_bytes
    sample = settings.max_document_bytes + SAMPLE_FORM_BYTES
    return BodyLimits(
        default=settings.max_json_body_bytes,
        routes=(
            RouteLimit("PUT", re.compile(re.escape(UPLOAD_PATH)), None),
            RouteLimit(
                "POST", re.compile(rf"{CONSOLE_PREFIX}/workflows/[^/]+/canvas/sample/?$"), sample
            ),
            RouteLimit("POST", re.compile(rf"{API_PREFIX}/projects/[^/]+/workflows/?$"), workflow),
            RouteLimit("PUT", re.compile(rf"{API_PREFIX}/workflows/[^/]+/?$"), workflow),
            RouteLimit("POST", re.compile(rf"{API_PREFIX}/workflows/[^/]+/evaluate/?$"), workflow),
        ),
    )
