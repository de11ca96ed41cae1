"""One redaction for every sink: each kind of credential is hidden wherever it appears in a
text, a value named as a credential is hidden whole, and everything else is left as it was."""

from __future__ import annotations

import pytest

from docflow.documents.uploads.urls import sign_upload, upload_url
from docflow.kit.redaction import is_secret_name, redact_attributes, redact_text

TOKEN = sign_upload(
    "s3cret", tenant_id="ten_1", document_id="doc_1", content_type="x/y", max_bytes=9, expires_at=9
)
PRESIGNED = (
    "https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    "&X-Amz-Credential=AKIAEXAMPLE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request"
    "&X-Amz-Security-Token=FwoGZXIvYXdzEXAMPLE&X-Amz-Signature=0123abcdef"
)


@pytest.mark.parametrize(
    ("text", "hidden", "kept"),
    [
        (
            f"PUT {upload_url('http://h', TOKEN)}?x=1",
            [TOKEN],
            ["PUT http://h/v1/uploads/{token}?x=1"],
        ),
        (PRESIGNED, ["AKIAEXAMPLE", "FwoGZXIvYXdzEXAMPLE", "0123abcdef"], ["X-Amz-Algorithm=AWS4"]),
        ("url.query: signature=abc123&limit=5", ["abc123"], ["signature={redacted}", "limit=5"]),
        ("Authorization: Bearer dfk_ab12cd34_S3cr3t-_x", ["S3cr3t"], ["Bearer {redacted}"]),
        ("key dfk_ab12cd34_S3cr3t-_x used", ["S3cr3t"], ["dfk_ab12cd34_{redacted} used"]),
        ("Basic dXNlcjpwYXNzd29yZA==", ["dXNlcjpwYXNzd29yZA"], ["Basic {redacted}"]),
        ("secret whsec_MDEyMzQ1Njc4OQ+/= end", ["MDEyMzQ1Njc4OQ"], ["whsec_{redacted} end"]),
    ],
)
def test_every_kind_of_credential_is_hidden(text: str, hidden: list[str], kept: list[str]) -> None:
    redacted = redact_text(text)
    for secret in hidden:
        assert secret not in redacted
    for part in kept:
        assert part in redacted
    assert redact_text(redacted) == redacted  # redacting twice changes nothing


def test_ordinary_text_is_left_alone() -> None:
    for text in (
        "GET /v1/batches/bat_1?limit=5&cursor=abc HTTP/1.1",
        'WWW-Authenticate: Bearer realm="docflow"',
        "the Basic plan, csrf_token=kept",
    ):
        assert redact_text(text) == text


def test_attributes_named_as_credentials_are_hidden_whole() -> None:
    attributes = {
        "http.request.header.authorization": ("Token abc",),
        "http.request.header.cookie": "session=abc",
        "url.path": f"/v1/uploads/{TOKEN}",
        "http.response.status_code": 200,
        "nested": {"api_key": "abc", "ok": "fine"},
    }
    assert redact_attributes(attributes) == {
        "http.request.header.authorization": "{redacted}",
        "http.request.header.cookie": "{redacted}",
        "url.path": "/v1/uploads/{token}",
        "http.response.status_code": 200,
        "nested": {"api_key": "{redacted}", "ok": "fine"},
    }
    assert not is_secret_name("max_tokens") and is_secret_name("upload_token")
