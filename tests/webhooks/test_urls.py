"""Webhook URLs: http(s) only, and no private, loopback, link-local or reserved address unless
the setting allows it (the host is resolved)."""

from __future__ import annotations

import pytest

from docflow.errors import InvalidInput
from docflow.webhooks.urls import check_url

REFUSED = [
    "http://127.0.0.1:8080/hook",
    "http://localhost/hook",
    "http://10.1.2.3/hook",
    "http://192.168.0.10/hook",
    "http://172.16.5.4/hook",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]/hook",
    "http://[fe80::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://0.0.0.0/hook",
    "http://240.0.0.1/hook",
    "http://100.64.0.1/hook",
]


@pytest.mark.parametrize("url", REFUSED)
def test_private_addresses_are_refused_unless_allowed(url: str) -> None:
    with pytest.raises(InvalidInput, match="private, loopback") as caught:
        check_url(url, allow_private=False)
    assert caught.value.field == "url"
    assert check_url(url, allow_private=True) == url


def test_a_public_address_is_accepted() -> None:
    assert check_url(" https://93.184.215.14/hooks ", allow_private=False) == (
        "https://93.184.215.14/hooks"
    )


@pytest.mark.parametrize(
    "url",
    ["ftp://93.184.215.14/x", "93.184.215.14/x", "https:///x", "https://u:p@93.184.215.14/"],
)
def test_malformed_urls_are_refused_even_when_private_is_allowed(url: str) -> None:
    with pytest.raises(InvalidInput):
        check_url(url, allow_private=True)


def test_a_host_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(InvalidInput, match="does not resolve"):
        check_url("https://no-such-host.invalid/hook", allow_private=False)
