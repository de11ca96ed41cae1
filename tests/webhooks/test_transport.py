"""One attempt against real receivers on 127.0.0.1: the host is resolved once and the request
goes to the address that was checked (the URL's name in `Host`, in TLS's server name and in
the certificate check), a name re-pointed at a private address is refused, and whatever else
stops an attempt becomes a categorised result instead of an exception."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import Iterator
from pathlib import Path

import certifi
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from docflow.webhooks import transport, urls
from support.http_server import serving

from .conftest import Receiver, _handler

BODY, HEADERS = b"{}", {"webhook-id": "evt_1"}


class Resolver:
    """The DNS as the test scripts it: each lookup of a name answers the next scripted list of
    addresses (the last one repeats), and every lookup is counted."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[urls.Address]:
        self.lookups.append(host)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return [ipaddress.ip_address(a) for a in answer]


def _named(receiver: Receiver, host: str) -> str:
    """The receiver's URL with `host` in place of 127.0.0.1."""
    return receiver.url.replace("127.0.0.1", host)


def test_the_request_goes_to_the_checked_address_under_the_urls_name(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A rebinding name: its first answer is the receiver, every later one an address where
    # nothing listens. One lookup serves both the check and the connection.
    resolver = Resolver(["127.0.0.1"], ["127.0.0.2"])
    monkeypatch.setattr(urls, "resolve", resolver)
    url = _named(receiver, "hooks.rebind.test")
    result = transport.post(url, BODY, HEADERS, timeout=5, allow_private=True)
    assert (result.status_code, result.error) == (200, None)
    assert resolver.lookups == ["hooks.rebind.test"]
    [got] = receiver.received
    assert got.headers["host"] == url.split("/")[2]
    assert got.headers["webhook-id"] == "evt_1"


def test_a_name_re_pointed_at_a_private_address_is_refused_at_delivery(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = Resolver(["93.184.215.14"], ["127.0.0.1"])
    monkeypatch.setattr(urls, "resolve", resolver)
    url = _named(receiver, "hooks.rebind.test")
    assert urls.check_url(url, allow_private=False) == url  # registration: a public answer
    result = transport.post(url, BODY, HEADERS, timeout=5, allow_private=False)
    assert (result.status_code, result.category) == (None, "refused")
    assert "private, loopback" in (result.error or "")
    assert receiver.received == []
    assert len(resolver.lookups) == 2


def test_a_stored_url_that_breaks_the_rules_is_an_invalid_url_attempt(
    receiver: Receiver,
) -> None:
    # An endpoint stored before the rules refused ambiguous hosts: httpx itself refuses this one.
    for url in (_named(receiver, "0127.0.0.1"), _named(receiver, "127.1")):
        result = transport.post(url, BODY, HEADERS, timeout=5, allow_private=True)
        assert (result.status_code, result.category) == (None, "invalid_url")
        assert (result.error or "").startswith("invalid URL: ")
    assert receiver.received == []


def test_an_unexpected_error_while_sending_is_a_categorised_attempt(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(host: str, port: int) -> list[urls.Address]:
        raise RuntimeError("the resolver broke")

    monkeypatch.setattr(urls, "resolve", broken)
    result = transport.post("http://hooks.test/x", BODY, HEADERS, timeout=5, allow_private=True)
    assert (result.status_code, result.category) == (None, "unexpected")
    assert result.error == "RuntimeError: the resolver broke"


def test_the_next_checked_address_is_tried_when_connecting_fails(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 127.0.0.2 is loopback but the receiver listens on 127.0.0.1 only: connecting is refused.
    resolver = Resolver(["127.0.0.2", "127.0.0.1"])
    monkeypatch.setattr(urls, "resolve", resolver)
    url = _named(receiver, "two.test")
    result = transport.post(url, BODY, HEADERS, timeout=5, allow_private=True)
    assert result.status_code == 200
    assert len(receiver.received) == 1 and len(resolver.lookups) == 1


@pytest.fixture
def tls_receiver(tmp_path: Path) -> Iterator[tuple[Receiver, Path, list[str | None]]]:
    """An HTTPS receiver on 127.0.0.1 whose certificate names only `hooks.tls.test` (no IP),
    signed by a CA of its own; the file of that CA; the server names the clients sent."""
    ca_key, leaf_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook test CA")])
    ca = _certificate(ca_name, ca_name, ca_key, ca_key, ca=True)
    leaf_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hooks.tls.test")])
    leaf = _certificate(leaf_name, ca_name, leaf_key, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    (tmp_path / "ca.pem").write_bytes(ca.public_bytes(pem))
    (tmp_path / "leaf.pem").write_bytes(leaf.public_bytes(pem))
    (tmp_path / "leaf.key").write_bytes(
        leaf_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server_names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "leaf.pem", tmp_path / "leaf.key")

    def record_server_name(sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        server_names.append(name)

    context.sni_callback = record_server_name
    state = Receiver()
    with serving(
        _handler(state), wrap=lambda sock: context.wrap_socket(sock, server_side=True)
    ) as server:
        state.url = f"https://hooks.tls.test:{server.server_address[1]}/hooks"
        yield state, tmp_path / "ca.pem", server_names


def _certificate(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    signer: ec.EllipticCurvePrivateKey,
    *,
    ca: bool,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        names = [x509.DNSName("hooks.tls.test")]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(signer, hashes.SHA256())


def test_tls_is_verified_against_the_urls_name_while_connecting_to_the_checked_address(
    tls_receiver: tuple[Receiver, Path, list[str | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    receiver, ca_file, server_names = tls_receiver
    monkeypatch.setattr(certifi, "where", lambda: str(ca_file))  # trust the test CA
    monkeypatch.setattr(urls, "resolve", Resolver(["127.0.0.1"]))
    result = transport.post(receiver.url, BODY, HEADERS, timeout=5, allow_private=True)
    assert (result.status_code, result.error) == (200, None)
    assert server_names == ["hooks.tls.test"]
    assert receiver.received[0].headers["host"] == receiver.url.split("/")[2]

    # The same certificate does not name another host: verification fails, nothing is sent.
    other = receiver.url.replace("hooks.tls.test", "other.tls.test")
    refused = transport.post(other, BODY, HEADERS, timeout=5, allow_private=True)
    assert (refused.status_code, refused.category) == (None, "connection")
    assert "CERTIFICATE_VERIFY_FAILED" in (refused.error or "")
    assert len(receiver.received) == 1
