"""Standard Webhooks signatures: the published test vector, a vector computed here from the
definition, verification failures, and sealing secrets at rest."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from docflow.webhooks import signing
from docflow.webhooks.signing import VerificationError

# The example of the Standard Webhooks specification.
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TIMESTAMP = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_specifications_example_signs_and_verifies() -> None:
    signed = signing.sign(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY)
    assert signed.signature == SPEC_SIGNATURE
    assert signing.verify(SPEC_SECRET, signed.as_dict(), SPEC_BODY, now=SPEC_TIMESTAMP + 10) == (
        SPEC_ID
    )


def test_a_vector_computed_from_the_definition() -> None:
    key = bytes(range(32))
    secret = "whsec_" + base64.b64encode(key).decode()
    body = '{"id":"evt_1","type":"docflow.batch.completed.v1","data":{"n":"é"}}'.encode()
    message = b"evt_1.1700000000." + body
    expected = "v1," + base64.b64encode(hmac.new(key, message, hashlib.sha256).digest()).decode()
    headers = signing.sign(secret, "evt_1", 1700000000, body).as_dict()
    assert headers == {
        "webhook-id": "evt_1",
        "webhook-timestamp": "1700000000",
        "webhook-signature": expected,
    }


def _signed(body: bytes = b'{"a":1}', timestamp: int = 1_000_000) -> tuple[str, dict[str, str]]:
    secret = signing.new_secret()
    return secret, signing.sign(secret, "evt_x", timestamp, body).as_dict()


def test_verify_accepts_any_header_case_and_one_of_several_signatures() -> None:
    secret, headers = _signed()
    other = "v1," + base64.b64encode(b"x" * 32).decode()
    mixed = {
        "Webhook-Id": headers["webhook-id"],
        "WEBHOOK-TIMESTAMP": headers["webhook-timestamp"],
        "webhook-signature": f"{other} {headers['webhook-signature']}",
    }
    assert signing.verify(secret, mixed, b'{"a":1}', now=1_000_000) == "evt_x"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda h, b: (h, b + b" "), "no webhook-signature matches"),
        (lambda h, b: ({**h, "webhook-id": "evt_y"}, b), "no webhook-signature matches"),
        (lambda h, b: ({**h, "webhook-timestamp": "1000001"}, b), "no webhook-signature"),
        (lambda h, b: ({**h, "webhook-timestamp": "999000"}, b), "outside the tolerance"),
        (lambda h, b: ({**h, "webhook-timestamp": "soon"}, b), "not an integer"),
        (lambda h, b: ({k: v for k, v in h.items() if k != "webhook-id"}, b), "missing header"),
    ],
)
def test_verify_refuses(change: object, message: str) -> None:
    secret, headers = _signed()
    bad_headers, bad_body = change(headers, b'{"a":1}')  # type: ignore[operator]
    with pytest.raises(VerificationError, match=message):
        signing.verify(secret, bad_headers, bad_body, now=1_000_000)


def test_verify_refuses_a_signature_made_with_another_secret() -> None:
    _, headers = _signed()
    with pytest.raises(VerificationError, match="no webhook-signature matches"):
        signing.verify(signing.new_secret(), headers, b'{"a":1}', now=1_000_000)


def test_stale_and_future_timestamps_are_refused_beyond_the_tolerance() -> None:
    secret, headers = _signed(timestamp=1_000_000)
    assert signing.verify(secret, headers, b'{"a":1}', now=1_000_300) == "evt_x"
    for now in (1_000_301, 999_699):
        with pytest.raises(VerificationError, match="tolerance"):
            signing.verify(secret, headers, b'{"a":1}', now=now)
    assert signing.verify(secret, headers, b'{"a":1}', now=1_000_500, tolerance_seconds=600)


def test_secrets_are_whsec_base64_of_32_bytes_and_seal_round_trips() -> None:
    secret = signing.new_secret()
    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret[6:])) == 32
    sealed = signing.seal(secret, "deployment key")
    assert secret not in sealed
    assert signing.unseal(sealed, "deployment key") == secret
    with pytest.raises(ValueError, match="cannot be unsealed"):
        signing.unseal(sealed, "another key")
