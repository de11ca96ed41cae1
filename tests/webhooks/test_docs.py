"""The verification snippet of docs/webhooks.md works on what docflow signs, and refuses a
tampered body and a stale timestamp."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from docflow.webhooks import signing

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def _snippet() -> Any:
    [code] = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    namespace: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), namespace)
    return namespace["verify_webhook"]


def test_the_documented_snippet_verifies_docflow_signatures() -> None:
    verify_webhook = _snippet()
    secret = signing.new_secret()
    body = b'{"id":"evt_9","data":{"n":"\xc3\xa9"}}'
    headers = signing.sign(secret, "evt_9", int(time.time()), body).as_dict()
    assert verify_webhook(secret, {k.title(): v for k, v in headers.items()}, body) == "evt_9"
    with pytest.raises(ValueError, match="no valid signature"):
        verify_webhook(secret, headers, body + b" ")
    stale = signing.sign(secret, "evt_9", int(time.time()) - 301, body).as_dict()
    with pytest.raises(ValueError, match="tolerance"):
        verify_webhook(secret, stale, body)
