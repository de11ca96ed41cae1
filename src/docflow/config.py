"""Settings, read only at the composition roots (main.py, worker.py, cli.py).

Everything else receives the values it needs as arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from docflow.kit import secret_file

PLACEHOLDER_SECRET = "dev-insecure-change-me"
DEFAULT_HOME = Path(".docflow")
# Under the home: the signing secret made for development when none is set.
SECRET_FILE = "signing-secret"
# Under the home: the key-encryption key made on first use when DOCFLOW_KEK_URL is not set.
KEK_FILE = "keys/kek"
# The PostgreSQL role DBOS connects as unless DOCFLOW_SYSTEM_DATABASE_URL names another.
DEFAULT_SYSTEM_ROLE = "docflow_system"


class Plan(BaseModel):
    """What a tenant on a plan may use (None: no limit): API requests per second per key with a
    burst of `burst` at once, documents (declared in batches) and pages (read) per calendar
    month (UTC), documents in one batch, and documents running at once (across every worker).
    `reserved_slots`: the document slots every worker keeps for the plan's tenants (a queue of
    the plan's own, see `documents.flows`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests_per_second: float | None = Field(default=None, gt=0, le=100_000)
    burst: int = Field(default=1, ge=1, le=100_000)
    documents_per_month: int | None = Field(default=None, ge=0)
    pages_per_month: int | None = Field(default=None, ge=0)
    max_batch_documents: int | None = Field(default=None, ge=1)
    concurrent_documents: int | None = Field(default=None, ge=1, le=10_000)
    reserved_slots: int = Field(default=0, ge=0, le=1000)

    @property
    def own_queue(self) -> bool:
        """Whether the plan's documents run on a queue of its own (it bounds its tenants'
        running documents, or reserves slots) rather than on the shared documents queue."""
        return self.concurrent_documents is not None or self.reserved_slots > 0


# Every tenant starts on this plan (`tenants.plan`); DOCFLOW_PLANS must define it.
DEFAULT_PLAN = "free"
DEFAULT_PLANS: dict[str, Plan] = {
    DEFAULT_PLAN: Plan(
        requests_per_second=50,
        burst=200,
        documents_per_month=10_000,
        pages_per_month=50_000,
        max_batch_documents=1000,
    ),
    "standard": Plan(
        requests_per_second=200,
        burst=500,
        documents_per_month=250_000,
        pages_per_month=1_000_000,
    ),
    "enterprise": Plan(),
}


class UnsafeConfiguration(RuntimeError):
    """Raised at start-up when a development-only default is used outside development."""


class Settings(BaseSettings):
    """docflow configuration, from `DOCFLOW_*` environment variables."""

    model_config = SettingsConfigDict(env_prefix="DOCFLOW_", env_file=None, extra="ignore")

    env: Literal["development", "production", "test"] = "development"
    home: Path = DEFAULT_HOME
    # Application connection. On PostgreSQL this role must not own the tables (row-level security).
    database_url: str = ""
    # Connection used by migrations (table owner). Defaults to database_url.
    migration_database_url: str = ""
    # DBOS system database (durable workflow state). The application database: the same file on
    # SQLite, schema `dbos` on PostgreSQL (so a trigger enqueues in the application's own
    # transaction), where DBOS connects as a role of its own. Defaults to the application URL
    # with the user `docflow_system` and no password; set it to give that role's password, or
    # another role name, never the application's role.
    system_database_url: str = ""
    storage_url: str = ""
    # Encryption of stored files (see docs/operations.md, "Encryption"): whether files and
    # large results are sealed per tenant; the key-encryption key (`file:///path` or
    # `kms://key-id`; empty: a key file made under the home on first use); earlier KEKs,
    # comma-separated, that still unwrap the data keys they wrapped until `docflow keys rewrap`;
    # whether an unsealed object is refused on read (on once `docflow keys seal` has sealed all).
    encrypt_files: bool = True
    encrypt_refuse_plaintext: bool = False
    kek_url: str = ""
    kek_previous_urls: str = ""
    signing_secret: str = PLACEHOLDER_SECRET
    public_base_url: str = "http://127.0.0.1:8000"
    host: str = "127.0.0.1"
    port: int = 8000

    # Pipeline
    # Documents in flight across all workers, and on one worker (0: four per CPU, so that a
    # document's database and storage waits overlap another's work); of those, how many run
    # OCR at once on one worker (0: the CPU count; OCR is CPU-bound and each engine holds its
    # own memory, so more would only queue inside the machine).
    max_concurrency: int = Field(default=64, ge=1)
    worker_concurrency: int = Field(default=0, ge=0, description="0 means four per CPU")
    ocr_concurrency: int = Field(default=0, ge=0, description="0 means the CPU count")
    upload_url_ttl_seconds: int = Field(default=3600, ge=60)
    # How long a presigned download (`GET /v1/documents/{id}/file`, S3 mode) stays valid.
    download_url_ttl_seconds: int = Field(default=300, ge=10, le=7 * 24 * 3600)
    upload_deadline_seconds: int = Field(default=24 * 3600, ge=60)
    # How long a reviewer's claim on a document lasts (renewed by claiming it again).
    review_claim_seconds: int = Field(default=15 * 60, ge=1, le=7 * 24 * 3600)
    # Measuring a workflow version on reviewed documents (`POST /v1/workflows/{id}/evaluate`,
    # `PUT ...?require_no_regression=true`): the most recently reviewed documents it reads, the
    # wall time it may spend running the engine (documents not started by then are left out and
    # the answer says so), and how many evaluations one process runs at once (others wait a
    # little, then are told to retry).
    evaluate_max_documents: int = Field(default=50, ge=1, le=1000)
    evaluate_seconds: float = Field(default=120.0, gt=0, le=3600)
    evaluate_concurrency: int = Field(default=1, ge=1, le=64)
    max_documents_per_batch: int = Field(default=1000, ge=1)
    max_document_bytes: int = Field(default=50 * 1024 * 1024, ge=1)
    # Request bodies other than uploads (which keep their signed size), refused with 413 before
    # anything reads them; workflow definitions (POST/PUT, carrying their templates) get their own.
    max_json_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_workflow_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    result_inline_max_bytes: int = Field(default=64 * 1024, ge=1024)
    # How often queue workers poll for work (latency, not throughput: a poll claims all it may):
    # the documents and batches queues, then the events and webhooks queues, whose work is
    # seconds-tolerant and whose every poll costs queries that the documents would rather have.
    queue_polling_seconds: float = Field(default=0.1, gt=0, le=10)
    background_polling_seconds: float = Field(default=0.5, gt=0, le=10)
    dbos_log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    log_format: Literal["json", "console"] = "json"

    # Processes (see docs/operations.md). A worker's executor id names the durable work it owns;
    # empty means "{hostname}-{pid}" ("local" for `docflow serve` on SQLite).
    executor_id: str = Field(default="", max_length=128)
    heartbeat_seconds: float = Field(default=5.0, gt=0)
    # A worker whose heartbeat is older than this is dead: a survivor recovers its pending work.
    executor_timeout_seconds: float = Field(default=30.0, gt=0)
    # How long a worker (or `serve` on PostgreSQL) keeps trying to reach the database at
    # start-up, with growing waits, before it exits; 0: exit at the first failure.
    startup_retry_seconds: float = Field(default=300.0, ge=0)
    # PostgreSQL connections of one process (see docs/operations.md, "Connections"): the
    # application engine's pool and how many more it may open at a peak; DBOS's own pool in a
    # process that runs the runtime (`serve`, `worker`); the pool its DBOS clients share
    # (enqueueing, `/readyz`, the runtime's client). Each process names its connections
    # `docflow-<process>[-dbos|-client|-metrics]` (`application_name` in pg_stat_activity).
    db_pool_size: int = Field(default=4, ge=1, le=200)
    db_max_overflow: int = Field(default=4, ge=0, le=200)
    system_db_pool_size: int = Field(default=8, ge=1, le=200)
    client_db_pool_size: int = Field(default=2, ge=1, le=50)
    # On SIGTERM: how long `serve` lets open HTTP requests finish, and then how long `serve` and
    # `worker` let the runtime's threads end (a step finishing; a workflow in a durable wait,
    # e.g. a webhook retry's, never would) before the process exits anyway. Whatever was cut
    # resumes from its last checkpoint when the executor restarts or a survivor recovers it.
    shutdown_timeout_seconds: float = Field(default=10.0, gt=0, le=600)

    # Webhooks (see docs/webhooks.md): attempts per delivery, the wait after each failed attempt
    # (the last value repeats), +/- this fraction of random jitter, and whether endpoints may
    # point at private, loopback, link-local or reserved addresses.
    webhook_max_attempts: int = Field(default=5, ge=1, le=20)
    webhook_retry_seconds: list[float] = Field(default=[60.0, 300.0, 1800.0, 7200.0, 28800.0])
    webhook_retry_jitter: float = Field(default=0.2, ge=0, le=1)
    webhook_timeout_seconds: float = Field(default=15.0, gt=0, le=60)
    allow_private_webhook_urls: bool = False

    # Events (see docflow.events): how often the publisher's schedule looks for unpublished
    # events, how long published events and dead letters are kept, and when /readyz reports
    # degraded (dead letters waiting, or the oldest unpublished event older than this).
    events_publish_interval_seconds: int = Field(default=2, ge=1, le=59)
    events_retention_days: int = Field(default=14, ge=1)
    events_ready_max_dead_letters: int = Field(default=100, ge=0)
    events_ready_max_unpublished_seconds: float = Field(default=60.0, gt=0)

    # How long a document's projections (its search entry) may trail the document before its
    # `downstream` state turns from PENDING to DEGRADED.
    downstream_lag_seconds: float = Field(default=60.0, gt=0)

    # Workflows in ERROR (see docflow.reconciler): how often the reconciler looks for them, and
    # how many times one is rewound before it is given up on (its work dead-lettered or failed).
    reconcile_interval_seconds: int = Field(default=30, ge=1, le=59)
    reconcile_max_rewinds: int = Field(default=3, ge=0, le=20)

    # Idempotency keys are forgotten this many hours after their first answer (hourly purge).
    idempotency_retention_hours: int = Field(default=24, ge=1)

    # Watched sources: the folder every source's path is confined to (each tenant under its own
    # directory, `<root>/<tenant id>/`), or instead an S3 bucket prefix
    # (`s3://bucket/prefix?endpoint_url=&region=`, the storage URL's form) whose keys under
    # `<prefix>/<tenant id>/` are the tenant's; neither refuses sources. The schedule's tick looks
    # for due sources every this many seconds (a source's cron is met at that granularity). A
    # file changed less than `sources_settle_seconds` ago may still be being written: it is
    # left for a later poll, so a half-copied file is never taken.
    sources_root: Path | None = None
    sources_url: str = ""
    sources_tick_seconds: int = Field(default=10, ge=1, le=59)
    sources_settle_seconds: float = Field(default=5.0, ge=0, le=3600)

    # Earned trust (docs/accuracy.md): reviews become per-field evidence that moves each
    # field's confidence cut. False: reviews teach nothing and documents are decided by the
    # workflow's static thresholds.
    learning: bool = True

    # Language-model gap-fill (see docs/llm.md): `none` sends nothing anywhere. A model per
    # tier, prices per model (USD per million tokens: input, cached input, output), the
    # provider's timeout and the step's retries of transient errors, the context sent per
    # document, how long an answer is reused, and calls per tenant per month by plan.
    llm_provider: Literal["none", "openai", "anthropic", "bedrock"] = "none"
    llm_base_url: str = ""
    llm_api_key: str = ""
    llm_region: str = "us-east-1"
    llm_model_simple: str = ""
    llm_model_standard: str = ""
    llm_model_complex: str = ""
    llm_prices: dict[str, tuple[float, float, float]] = Field(default_factory=dict)
    llm_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    llm_max_attempts: int = Field(default=3, ge=1, le=10)
    llm_context_tokens: int = Field(default=600, ge=50, le=100_000)
    llm_cache_ttl_seconds: int = Field(default=24 * 3600, ge=0)
    llm_monthly_calls: dict[str, int] = Field(default_factory=dict)

    # Metrics (see docs/operations.md, "Metrics"): whether they are served at all (off: `/metrics`
    # answers 404 and requests are not timed), the bearer token `/metrics` asks for (empty:
    # none, for a network that only lets Prometheus reach it), the port and interface a
    # `docflow worker` serves its own `/metrics` on (0: none), how long a database reading behind
    # the queue and event gauges is reused, and how many tenants the per-tenant backlog names.
    metrics_enabled: bool = True
    metrics_token: str = ""
    metrics_port: int = Field(default=0, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"
    metrics_cache_seconds: float = Field(default=5.0, ge=0, le=300)
    metrics_top_tenants: int = Field(default=10, ge=0, le=100)

    # Plans (see docs/operations.md, "Plans and quotas"): a JSON object of plan name to limits,
    # replacing the defaults whole; it must define the plan every tenant starts on ("free").
    plans: dict[str, Plan] = Field(default_factory=lambda: dict(DEFAULT_PLANS))
    # Live batch progress (`GET /v1/batches/{id}/events`, and the console's): how often the
    # stream reads the batch, the longest silence before a heartbeat comment, and how long one
    # stream may last (the client reconnects after that; a terminal batch ends it at once).
    events_stream_poll_seconds: float = Field(default=1.0, ge=0.05, le=60)
    events_stream_heartbeat_seconds: float = Field(default=15.0, gt=0, le=300)
    events_stream_max_seconds: float = Field(default=900.0, gt=0, le=24 * 3600)

    # Web console (`/console`): how long a sign-in lasts; whether its cookies are `Secure`
    # (unset: when the request or `public_base_url` is https); how much disk its rendered page
    # images may take under `home/cache/console` (oldest removed first).
    console_session_hours: int = Field(default=8, ge=1, le=30 * 24)
    console_secure_cookies: bool | None = None
    console_cache_max_bytes: int = Field(default=256 * 1024 * 1024, ge=1024 * 1024)
    # OpenID Connect sign-in to the console (`docflow.web.oidc`; docs/operations.md), offered
    # when an issuer is set: the issuer's URL (https, or http on a loopback address), this
    # client's id and secret (empty: a public client, PKCE alone), the scopes asked for, the
    # claim holding the email that finds a user at first sign-in, the button's label, and how
    # long one sign-in may wait on the issuer in all (discovery, token, keys).
    console_oidc_issuer: str = Field(default="", max_length=500)
    console_oidc_client_id: str = Field(default="", max_length=500)
    console_oidc_client_secret: str = Field(default="", max_length=2000)
    console_oidc_scopes: str = Field(default="openid email profile", max_length=500)
    console_oidc_email_claim: str = Field(default="email", min_length=1, max_length=100)
    console_oidc_label: str = Field(default="Sign in with single sign-on", max_length=100)
    console_oidc_timeout_seconds: float = Field(default=3.0, gt=0, le=10)

    # Extraction limits
    max_pages: int = Field(default=200, ge=1)
    max_pixels: int = Field(default=60_000_000, ge=1)
    ocr_seconds_per_page: float = Field(default=60.0, gt=0)
    ocr_dpi: int = Field(default=300, ge=72, le=600)
    # The second OCR tier (PP-OCR on ONNX Runtime), loaded on a worker's first page to re-read:
    # pages it recognises at once (0: the CPU count), ONNX Runtime threads per page, and the
    # longest side of a page as its text detector sees it (bench/ocr_throughput.py).
    ppocr_concurrency: int = Field(default=0, ge=0, description="0 means the CPU count")
    ppocr_threads: int = Field(default=1, ge=1, le=64)
    ppocr_det_side: int = Field(default=1280, ge=320, le=4096)

    @field_validator("plans")
    @classmethod
    def _has_default_plan(cls, plans: dict[str, Plan]) -> dict[str, Plan]:
        if DEFAULT_PLAN not in plans:
            raise ValueError(f"the plans must define {DEFAULT_PLAN!r}, every new tenant's plan")
        return plans

    @model_validator(mode="after")
    def _oidc_complete(self) -> Settings:
        if not self.console_oidc_issuer:
            return self
        issuer = urlsplit(self.console_oidc_issuer)
        loopback = issuer.hostname in ("localhost", "127.0.0.1", "::1")
        if not issuer.hostname or not (
            issuer.scheme == "https" or (issuer.scheme == "http" and loopback)
        ):
            raise ValueError(
                "console_oidc_issuer must be an https URL (http only on a loopback address)"
            )
        if not self.console_oidc_client_id:
            raise ValueError("console_oidc_client_id is required with console_oidc_issuer")
        if "openid" not in self.console_oidc_scopes.split():
            raise ValueError("console_oidc_scopes must include openid")
        return self

    @field_validator("sources_url")
    @classmethod
    def _is_bucket_prefix(cls, url: str) -> str:
        if url and (not url.startswith("s3://") or len(url) == len("s3://")):
            raise ValueError("a sources URL names an S3 bucket prefix: s3://bucket/prefix")
        return url

    @model_validator(mode="after")
    def _one_sources_root(self) -> Settings:
        if self.sources_url and self.sources_root is not None:
            raise ValueError("set DOCFLOW_SOURCES_ROOT or DOCFLOW_SOURCES_URL, not both")
        return self

    def plan(self, name: str) -> Plan:
        """The limits of plan `name`; a name the plans lack (a plan removed since a tenant was
        put on it) gets the default plan's."""
        return self.plans.get(name) or self.plans[DEFAULT_PLAN]

    def resolved_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'docflow.db'}"

    def resolved_migration_database_url(self) -> str:
        return self.migration_database_url or self.resolved_database_url()

    def resolved_system_database_url(self) -> str:
        if self.system_database_url:
            return self.system_database_url
        from sqlalchemy.engine import make_url  # here: the remote commands never need it

        url = make_url(self.resolved_database_url())
        if url.get_backend_name() != "postgresql":
            return self.resolved_database_url()
        system = url.set(username=DEFAULT_SYSTEM_ROLE, password=None)
        return system.render_as_string(hide_password=False)

    def resolved_storage_url(self) -> str:
        return self.storage_url or f"file://{(self.home / 'files').resolve()}"

    def resolved_kek_url(self) -> str:
        return self.kek_url or f"file://{(self.home / KEK_FILE).resolve()}"

    def previous_kek_urls(self) -> list[str]:
        return [url.strip() for url in self.kek_previous_urls.split(",") if url.strip()]

    def secret_files(self) -> tuple[Path, ...]:
        """The files holding this installation's keys and secrets (the KEK files, current and
        previous, and the development signing secret): none may lie where a tenant can read."""
        files = [self.home / SECRET_FILE]
        for url in (self.resolved_kek_url(), *self.previous_kek_urls()):
            parts = urlsplit(url)
            if parts.scheme == "file" and parts.path:
                files.append(Path(unquote(parts.path)))
        return tuple(files)

    def with_generated_secret(self) -> Settings:
        """These settings, with a random signing secret in development when none was set:
        made on first use and kept in `home/signing-secret` (mode 0600), so every later run
        on the same home signs upload URLs and seals endpoint secrets alike. Elsewhere (a set
        secret, production, test) the settings are returned as they are."""
        if self.env != "development" or self.signing_secret != PLACEHOLDER_SECRET:
            return self
        secret = secret_file.read_or_create(self.home / SECRET_FILE)
        return self.model_copy(update={"signing_secret": secret})

    def check_safe(self) -> None:
        """Refuse to start on development-only defaults outside development, naming the setting:
        the placeholder signing secret (any environment but development); in production, a
        secret under 32 characters, and a key-encryption key that is not configured
        (`DOCFLOW_KEK_URL` unset while files are encrypted, or naming a key file absent here):
        production never makes a KEK, so two processes can never seal with different ones."""
        if self.env != "development" and self.signing_secret == PLACEHOLDER_SECRET:
            raise UnsafeConfiguration(
                f"DOCFLOW_SIGNING_SECRET is not set (DOCFLOW_ENV={self.env} refuses the "
                "development placeholder): set the same 32+ random characters on every process"
            )
        if self.env != "production":
            return
        if len(self.signing_secret) < 32:
            raise UnsafeConfiguration("DOCFLOW_SIGNING_SECRET must be at least 32 characters")
        if self.encrypt_files and not self.kek_url:
            raise UnsafeConfiguration(
                "DOCFLOW_KEK_URL is not set: production never makes a key-encryption key; set "
                "it on every process to the same key (file:///path or kms://key-id; "
                "`docflow keys new-kek PATH` makes a key file)"
            )
        named = [("DOCFLOW_KEK_URL", self.kek_url)]
        named += [("DOCFLOW_KEK_PREVIOUS_URLS", url) for url in self.previous_kek_urls()]
        for name, url in named:
            parts = urlsplit(url)
            if parts.scheme == "file" and not Path(unquote(parts.path)).is_file():
                raise UnsafeConfiguration(
                    f"{name} names the key file {unquote(parts.path)}, which is not on this "
                    "machine: every process needs the same key"
                )

    def may_make_kek(self) -> bool:
        """Whether a missing default key file may be made on first use (never in production:
        see `check_safe`)."""
        return self.env != "production" and not self.kek_url
