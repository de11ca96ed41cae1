"""uvicorn's logging without credentials: an upload URL's path is its signed token (a credential
for an hour), so every line uvicorn logs shows `/v1/uploads/{token}` instead.

`uvicorn_log_config()` is uvicorn's own logging configuration with `RedactUploadTokens` on
each of its handlers; `docflow serve` and `docflow api` (one process or `--workers N`, where
uvicorn applies the configuration again in every worker process) run uvicorn with it.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

from uvicorn.config import LOGGING_CONFIG

from docflow.errors import UPLOAD_PATH

# Whatever follows the upload prefix up to the end of the path segment, genuine token or not.
_UPLOAD_TOKEN = re.compile(rf"({re.escape(UPLOAD_PATH)})[^/?#\s\"]+")


def redact(text: str) -> str:
    """`text` with every upload token replaced by `{token}`."""
    return _UPLOAD_TOKEN.sub(r"\g<1>{token}", text)


class RedactUploadTokens(logging.Filter):
    """Replace upload tokens in a record's message and arguments (uvicorn's access lines carry
    the path as an argument), before any formatter sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration, every handler filtered by `RedactUploadTokens`."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"redact_upload_tokens": {"()": f"{__name__}.RedactUploadTokens"}}
    for handler in config["handlers"].values():
        handler["filters"] = ["redact_upload_tokens"]
    return config
