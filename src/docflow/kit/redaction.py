"""The one redaction of credentials before anything leaves the process: access log lines,
structured logs (and the tracebacks of error reports they carry), and exported spans, their
events and their status.

What is hidden, wherever it appears in a text:
- an upload URL's signed token: `/v1/uploads/{token}`;
- signed query parameters (`X-Amz-Signature`, `X-Amz-Credential`, `X-Amz-Security-Token`,
  `X-Goog-Signature`, `signature`, `sig`, `token`, `access_token`...): `name={redacted}`;
- the credential of an `Authorization` value (`Bearer {redacted}`, `Basic {redacted}`);
- API keys, all but their public prefix (`dfk_<prefix>_{redacted}`), and webhook signing
  secrets (`whsec_{redacted}`).
A value whose name says it is a credential (`authorization`, `cookie`, `set-cookie`,
`secret`, `password`, `api_key`...) is hidden whole by `redact_attributes`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, MutableMapping
from typing import Any

from docflow.errors import UPLOAD_PATH

REDACTED = "{redacted}"

_SIGNED_PARAMETERS = (
    "X-Amz-Signature",
    "X-Amz-Credential",
    "X-Amz-Security-Token",
    "X-Goog-Signature",
    "X-Goog-Credential",
    "signature",
    "sig",
    "token",
    "access_token",
    "api_key",
    "apikey",
    "secret",
)
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Whatever follows the upload prefix up to the end of the path segment, genuine or not.
    (re.compile(rf"({re.escape(UPLOAD_PATH)})[^/?#\s\"'<>]+"), r"\g<1>{token}"),
    (
        re.compile(
            rf"(?<![A-Za-z0-9_.-])((?:{'|'.join(map(re.escape, _SIGNED_PARAMETERS))})=)"
            r"[^&#\s\"'<>]+",
            re.IGNORECASE,
        ),
        rf"\g<1>{REDACTED}",
    ),
    (re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE), rf"\g<1> {REDACTED}"),
    (re.compile(r"\b(dfk_[A-Za-z0-9]+_)[A-Za-z0-9_-]+"), rf"\g<1>{REDACTED}"),
    (re.compile(r"\b(whsec_)[A-Za-z0-9+/=_-]+"), rf"\g<1>{REDACTED}"),
)
_SECRET_NAMES = re.compile(
    r"(^|[._-])(authorization|cookie|set-cookie|set_cookie|secret|password|api_key|"
    r"x-api-key|signing_secret|token)$",
    re.IGNORECASE,
)


def redact_text(text: str) -> str:
    """`text` with every credential it holds replaced (see the module's documentation)."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_url(url: str) -> str:
    """A URL, path or query without its credentials: the same rules as any text."""
    return redact_text(url)


def redact_value(value: Any) -> Any:
    """A string redacted, a list, tuple or mapping item by item, anything else unchanged."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list | tuple):
        return type(value)(redact_value(item) for item in value)
    if isinstance(value, Mapping):
        return redact_attributes(value)
    return value


def is_secret_name(name: str) -> bool:
    """Whether a value named `name` (an attribute, a header, a log field) is a credential."""
    return bool(_SECRET_NAMES.search(name))


def redact_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes (of a span, an event, a log line) with credentials hidden: a value named as
    a credential whole, every other string value by `redact_text`."""
    return {
        name: REDACTED if is_secret_name(name) and value else redact_value(value)
        for name, value in attributes.items()
    }


def redact_log_event(_logger: object, _name: str, event: MutableMapping[str, Any]) -> Any:
    """A structlog processor, after the traceback is rendered (`format_exc_info`): every field
    of a log line redacted, the traceback of an error report included."""
    redacted = redact_attributes(event)
    event.clear()
    event.update(redacted)
    return event


class RedactRecords(logging.Filter):
    """A standard-library logging filter (uvicorn's handlers, DBOS's logger): a record's
    message, its arguments (uvicorn's access lines carry the path as an argument) and its
    traceback redacted, before any formatter sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_text(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact_value(a) for a in record.args)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact_text(record.exc_text)
        return True


def redact_logger(name: str) -> None:
    """Redact every record logged on the standard-library logger `name` (once)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactRecords) for f in logger.filters):
        logger.addFilter(RedactRecords())
