"""Structured logs: one JSON object per line on standard error, dotted event names.

Every line is redacted (`docflow.kit.redaction`) before it is rendered: no credential, no
upload token, not even in an error's traceback (DBOS's own lines too).

Standard output stays for what a command prints for people and scripts (tables, a new API
key); logs never mix with it. Configured once, at a composition root.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

from docflow.kit.redaction import redact_log_event, redact_logger
from docflow.observability.tracing import add_trace_ids

LogFormat = Literal["json", "console"]


class _StderrLogger:
    """Writes each line to whatever `sys.stderr` is when the line is logged (not when logging
    was configured), so a replaced or closed stream (a test runner's) is never written to."""

    def msg(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    log = debug = info = warn = warning = error = critical = exception = fatal = msg


def _stderr_logger(*_args: object) -> _StderrLogger:
    return _StderrLogger()


def configure_logging(level: str = "INFO", *, fmt: LogFormat = "json") -> None:
    """Send structlog's events to stderr at `level`, one line each."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_trace_ids,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact_log_event,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_stderr_logger,
        cache_logger_on_first_use=False,
    )
    # DBOS logs through the standard library (a failed workflow's error among others).
    redact_logger("dbos")
