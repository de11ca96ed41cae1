"""Signed upload URLs: a token round-trips, and any change, other secret or late use is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from docflow.documents.uploads.urls import (
    ExpiredUploadToken,
    InvalidUploadToken,
    UploadContentTypeMismatch,
    UploadGrant,
    check_content_type,
    sign_upload,
    upload_url,
    verify_upload,
)

SECRET = "a-test-signing-secret-of-decent-length"
NOW = 1_800_000_000
GRANT = UploadGrant(
    tenant_id="ten_01jabcdefghjkmnpqrstvwxyz0",
    document_id="doc_01jabcdefghjkmnpqrstvwxyz1",
    content_type="application/pdf",
    max_bytes=50 * 1024 * 1024,
    expires_at=NOW + 3600,
)


def sign(grant: UploadGrant = GRANT, secret: str = SECRET) -> str:
    return sign_upload(
        secret,
        tenant_id=grant.tenant_id,
        document_id=grant.document_id,
        content_type=grant.content_type,
        max_bytes=grant.max_bytes,
        expires_at=grant.expires_at,
    )


def test_a_token_round_trips() -> None:
    token = sign()
    assert token.startswith("v1.")
    assert verify_upload(SECRET, token, now=NOW) == GRANT


def test_a_token_is_url_path_safe_and_compact() -> None:
    token = sign()
    assert set(token) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
    assert len(token) < 250


def test_every_single_byte_change_is_refused() -> None:
    token = sign()
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.=+/ "
    for position, original in enumerate(token):
        for replacement in alphabet:
            if replacement == original:
                continue
            tampered = token[:position] + replacement + token[position + 1 :]
            with pytest.raises(InvalidUploadToken) as refused:
                verify_upload(SECRET, tampered, now=NOW)
            assert type(refused.value) is InvalidUploadToken, tampered


def test_truncated_or_extended_tokens_are_refused() -> None:
    token = sign()
    for cut in range(len(token)):
        with pytest.raises(InvalidUploadToken):
            verify_upload(SECRET, token[:cut], now=NOW)
    for extra in ("A", ".", "=", "==", "\n"):
        with pytest.raises(InvalidUploadToken):
            verify_upload(SECRET, token + extra, now=NOW)


def test_a_payload_from_another_grant_does_not_fit_a_signature() -> None:
    mine = sign()
    other = sign(_bigger())
    spliced = other.rsplit(".", 1)[0] + "." + mine.rsplit(".", 1)[1]
    with pytest.raises(InvalidUploadToken):
        verify_upload(SECRET, spliced, now=NOW)


def _bigger() -> UploadGrant:
    return UploadGrant(
        tenant_id=GRANT.tenant_id,
        document_id=GRANT.document_id,
        content_type=GRANT.content_type,
        max_bytes=10**12,
        expires_at=GRANT.expires_at,
    )


def test_a_token_signed_with_another_secret_is_refused() -> None:
    with pytest.raises(InvalidUploadToken):
        verify_upload(SECRET, sign(secret="another-secret-entirely-of-decent-length"), now=NOW)
    with pytest.raises(InvalidUploadToken):
        verify_upload(SECRET + "x", sign(), now=NOW)


def test_expiry_is_exclusive() -> None:
    token = sign()
    assert verify_upload(SECRET, token, now=GRANT.expires_at - 1) == GRANT
    with pytest.raises(ExpiredUploadToken) as expired:
        verify_upload(SECRET, token, now=GRANT.expires_at)
    assert expired.value.status == 403
    with pytest.raises(ExpiredUploadToken):
        verify_upload(SECRET, token, now=GRANT.expires_at + 10**6)


def test_an_expired_forgery_is_reported_as_invalid_not_expired() -> None:
    forged = sign(secret="not-the-server-secret-but-long-enough")
    with pytest.raises(InvalidUploadToken) as refused:
        verify_upload(SECRET, forged, now=GRANT.expires_at + 1)
    assert type(refused.value) is InvalidUploadToken


@pytest.mark.parametrize(
    "token",
    [
        "",
        "v1",
        "v1..",
        "v2.e30.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "é" * 60,
        "v1." * 2000,
    ],
)
def test_malformed_tokens_are_refused(token: str) -> None:
    with pytest.raises(InvalidUploadToken):
        verify_upload(SECRET, token, now=NOW)


def test_refusals_are_forbidden_errors() -> None:
    with pytest.raises(InvalidUploadToken) as refused:
        verify_upload(SECRET, "garbage", now=NOW)
    assert (refused.value.status, refused.value.code) == (403, "invalid_upload_url")


@pytest.mark.parametrize(
    "changes",
    [
        {"secret": ""},
        {"tenant_id": ""},
        {"document_id": ""},
        {"content_type": ""},
        {"max_bytes": -1},
    ],
)
def test_signing_refuses_empty_values(changes: dict[str, object]) -> None:
    arguments: dict[str, object] = {
        "secret": SECRET,
        "tenant_id": GRANT.tenant_id,
        "document_id": GRANT.document_id,
        "content_type": GRANT.content_type,
        "max_bytes": GRANT.max_bytes,
        "expires_at": GRANT.expires_at,
        **changes,
    }
    secret = arguments.pop("secret")
    with pytest.raises(ValueError):
        sign_upload(secret, **arguments)  # type: ignore[arg-type]


def test_upload_url_joins_base_and_token() -> None:
    assert upload_url("https://docs.example.com/", "v1.abc.def") == (
        "https://docs.example.com/v1/uploads/v1.abc.def"
    )
    assert upload_url("http://127.0.0.1:8000", "t") == "http://127.0.0.1:8000/v1/uploads/t"


texts = st.text(min_size=1, max_size=200)


@given(
    tenant_id=texts,
    document_id=texts,
    content_type=texts,
    max_bytes=st.integers(min_value=0, max_value=2**63),
    expires_at=st.integers(min_value=-(2**40), max_value=2**40),
    secret=texts,
    flip=st.integers(min_value=0),
)
def test_property_round_trip_and_tamper(
    tenant_id: str,
    document_id: str,
    content_type: str,
    max_bytes: int,
    expires_at: int,
    secret: str,
    flip: int,
) -> None:
    grant = UploadGrant(tenant_id, document_id, content_type, max_bytes, expires_at)
    token = sign(grant, secret)
    assert verify_upload(secret, token, now=expires_at - 1) == grant
    with pytest.raises(ExpiredUploadToken):
        verify_upload(secret, token, now=expires_at)
    position = flip % len(token)
    replacement = "A" if token[position] != "A" else "B"
    tampered = token[:position] + replacement + token[position + 1 :]
    with pytest.raises(InvalidUploadToken) as refused:
        verify_upload(secret, tampered, now=expires_at - 1)
    assert type(refused.value) is InvalidUploadToken
    with pytest.raises(InvalidUploadToken):
        verify_upload(secret + "-other", token, now=expires_at - 1)


@pytest.mark.parametrize("sent", [None, "application/pdf", " application/pdf "])
def test_the_signed_content_type_or_none_is_accepted(sent: str | None) -> None:
    check_content_type(GRANT, sent)


@pytest.mark.parametrize(
    "sent",
    ["image/png", "application/PDF", "application/pdf; charset=binary", "", "application/x-pdf"],
)
def test_another_content_type_is_refused_as_s3_would(sent: str) -> None:
    with pytest.raises(UploadContentTypeMismatch) as refused:
        check_content_type(GRANT, sent)
    assert refused.value.status == 403
    assert refused.value.extra == {"expected_content_type": "application/pdf"}
