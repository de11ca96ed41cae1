"""uvicorn's logging without credentials: an upload URL's path is its signed token (a credential
for an hour), so every line uvicorn logs shows `/v1/uploads/{token}` instead, and every other
credential is hidden as `docflow.kit.redaction` hides it in every sink.

`uvicorn_log_config()` is uvicorn's own logging configuration with the shared
`docflow.kit.redaction.RedactRecords` filter on each of its handlers; `docflow serve` and
`docflow api` (one process or `--workers N`, where uvicorn applies the configuration again in
every worker process) run uvicorn with it.
"""

from __future__ import annotations

import copy
from typing import Any

from uvicorn.config import LOGGING_CONFIG


def uvicorn_log_config() -> dict[str, Any]:
    """uvicorn's default logging configuration, every handler filtered by `RedactRecords`."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config["filters"] = {"redact_upload_tokens": {"()": "docflow.kit.redaction.RedactRecords"}}
    for handler in config["handlers"].values():
        handler["filters"] = ["redact_upload_tokens"]
    return config
