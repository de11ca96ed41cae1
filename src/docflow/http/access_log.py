"""uvicorn's logging without credentials: an upload URL's path is its signed token (a credential
for an hour), so every line uvicorn logs shows `/v1/uploads/{token}` instead, and every other
credential is hidden as `docflow.kit.redaction` hides it in every sink.

`uvicorn_log_config()` is uvicorn's own logging configuration with `RedactUploadTokens` on
each of its handlers; `docflow serve` and `docflow api` (one process or `--workers N`, where
uvicorn applies the configuration again in every worker process) run uvicorn with it.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from uvicorn.config import LOGGING_CONFIG

from docflow.kit.redaction import redact_text


class RedactUploadTokens(logging.Filter):
    """Redact a record's message, its arguments (uvicorn's access lines carry the path as an
    argument) and its traceback (`docflow.kit.redaction`), before any formatter sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_text(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact_text(a) if isinstance(a, str) else a for a in record.args)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration, every handler filtered by `RedactUploadTokens`."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"redact_upload_tokens": {"()": f"{__name__}.RedactUploadTokens"}}
    for handler in config["handlers"].values():
        handler["filters"] = ["redact_upload_tokens"]
    return config
