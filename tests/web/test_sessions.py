"""Console session cookies and CSRF tokens: what a signature protects, and when a session
ends."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

from docflow.web.sessions import OidcFlows, Sessions

SECRET = "s" * 40


def test_a_session_reads_back_until_it_expires() -> None:
    sessions = Sessions(SECRET, lifetime_seconds=60)
    made = sessions.new("usr_1", now=1000).in_tenant("ten_1")
    cookie = sessions.encode(made)
    assert sessions.decode(cookie, now=1059) == made
    assert sessions.decode(cookie, now=1060) is None


def test_an_altered_or_foreign_cookie_is_refused() -> None:
    sessions = Sessions(SECRET, lifetime_seconds=60)
    cookie = sessions.encode(sessions.new("usr_1", now=1000).in_tenant("ten_1"))
    body, _, signature = cookie.partition(".")
    other = Sessions("t" * 40, lifetime_seconds=60)
    forged = other.encode(other.new("usr_1", now=1000).in_tenant("ten_2"))
    for bad in (
        f"{forged.partition('.')[0]}.{signature}",  # another tenant under this signature
        forged,  # signed with another secret
        f"{body}.{signature[:-2]}",
        body,
        "",
        None,
        "x" * 5000,
        f"{body}.{signature}\x00",
    ):
        assert sessions.decode(bad, now=1001) is None, bad


def test_the_csrf_token_belongs_to_one_session() -> None:
    sessions = Sessions(SECRET, lifetime_seconds=60)
    one, two = sessions.new("usr_1"), sessions.new("usr_1")
    token = sessions.csrf_token(one)
    assert sessions.csrf_ok(one, token)
    assert sessions.csrf_ok(one.in_tenant("ten_9"), token)  # choosing a tenant keeps it
    assert not sessions.csrf_ok(two, token)
    assert not sessions.csrf_ok(one, None)
    assert not sessions.csrf_ok(one, "")


def test_an_oidc_flow_cookie_reads_back_only_unaltered_and_in_time() -> None:
    flows = OidcFlows(SECRET, lifetime_seconds=600)
    flow = flows.new("/console/review", now=1000)
    cookie = flows.encode(flow)
    assert flows.decode(cookie, now=1599) == flow
    assert flows.decode(cookie, now=1600) is None
    body, _, signature = cookie.partition(".")
    as_session = Sessions(SECRET, lifetime_seconds=600).encode(
        Sessions(SECRET, lifetime_seconds=600).new("u")
    )
    for bad in (f"{body}.{signature[:-2]}", body, "", None, as_session, "x" * 5000):
        assert flows.decode(bad, now=1001) is None, bad
    assert len({flow.state, flow.nonce, flow.verifier}) == 3


def test_a_session_carries_its_users_epoch_and_an_earlier_cookie_without_one_is_refused() -> None:
    sessions = Sessions(SECRET, lifetime_seconds=60)
    made = sessions.new("usr_1", epoch=3, now=1000).in_tenant("ten_1")
    assert sessions.decode(sessions.encode(made), now=1001) == made
    assert made.epoch == 3
    body = base64.urlsafe_b64encode(json.dumps(["usr_1", "ten_1", "sid", 1060]).encode())
    earlier = body.rstrip(b"=").decode()
    signature = hmac.new(
        hmac.new(SECRET.encode(), b"docflow.console.session", hashlib.sha256).digest(),
        earlier.encode(),
        hashlib.sha256,
    ).digest()
    cookie = f"{earlier}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"
    assert sessions.decode(cookie, now=1001) is None
