"""Webhook URLs: http(s) only, one canonical form per host (numeric forms resolvers read
differently are refused), and no private, loopback, link-local or reserved address unless the
setting allows it, judging an IPv6 transition address by the IPv4 address it carries."""

from __future__ import annotations

import ipaddress

import pytest

from docflow.errors import InvalidInput
from docflow.webhooks import urls
from docflow.webhooks.urls import check_url

PUBLIC = [
    "93.184.215.14",
    "[2001:4860:4860::8888]",
    "[::ffff:93.184.215.14]",  # IPv4-mapped
    "[::93.184.215.14]",  # IPv4-compatible
    "[2002:5db8:d70e::1]",  # 6to4 of 93.184.215.14
    "[2001:0:4136:e378:8000:63bf:a247:28f1]",  # Teredo: server 65.54.227.120, client 93.184.215.14
    "[64:ff9b::5db8:d70e]",  # NAT64 of 93.184.215.14
]

PRIVATE = [
    "127.0.0.1",
    "localhost",  # resolved: /etc/hosts
    "10.1.2.3",
    "172.16.5.4",
    "192.168.0.10",
    "169.254.169.254",  # link-local: cloud metadata
    "100.64.0.1",  # carrier-grade NAT
    "0.0.0.0",
    "224.0.0.1",  # multicast
    "240.0.0.1",  # reserved
    "255.255.255.255",
    "192.0.2.10",  # documentation
    "198.18.0.1",  # benchmarking
    "[::1]",
    "[::]",
    "[fe80::1]",  # link-local
    "[fec0::1]",  # site-local
    "[fc00::1]",  # unique local
    "[fd12:3456::1]",
    "[ff02::1]",  # multicast
    "[2001:db8::1]",  # documentation
    "[::ffff:127.0.0.1]",  # IPv4-mapped
    "[::ffff:169.254.169.254]",
    "[::127.0.0.1]",  # IPv4-compatible
    "[::10.0.0.1]",
    "[2002:7f00:1::1]",  # 6to4 of 127.0.0.1
    "[2002:a9fe:a9fe::1]",  # 6to4 of 169.254.169.254
    "[2002:a00:1::1]",  # 6to4 of 10.0.0.1
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]",  # Teredo, client 127.0.0.1 (obfuscated)
    "[2001:0:7f00:1:8000:63bf:a247:28f1]",  # Teredo, server 127.0.0.1
    "[64:ff9b::7f00:1]",  # NAT64 of 127.0.0.1
    "[64:ff9b::a9fe:a9fe]",  # NAT64 of 169.254.169.254
    "[64:ff9b:1::5db8:d70e]",  # local-use NAT64: not unwrapped, reserved
]

AMBIGUOUS_OR_MALFORMED = [
    "http://0127.0.0.1/x",  # leading zero: octal for some resolvers
    "http://127.000.000.001/x",
    "http://127.1/x",  # short forms
    "http://127.0.1/x",
    "http://0x7f.1/x",  # hex
    "http://0x7f000001/x",
    "http://2130706433/x",  # one 32-bit number
    "http://017700000001/x",
    "http://0/x",
    "http://127.0.0.1./x",  # trailing dot
    "http://example.com./x",
    "http://a..example.com/x",
    "http://127.0.0.%31/x",  # percent-encoded host
    "http://ex ample.com/x",
    "http://[fe80::1%25eth0]/x",  # zone id
    "http://93.184.215.14:0/x",
    "http://93.184.215.14:99999/x",
    "ftp://93.184.215.14/x",
    "93.184.215.14/x",
    "https:///x",
    "https://u:p@93.184.215.14/",
    "http://evil.example\\@127.0.0.1/",
    "http://１２７.0.0.1/x",  # full-width digits
    "https://93.184.215.14/" + "x" * 2000,
]


@pytest.mark.parametrize("host", PUBLIC)
def test_public_addresses_are_accepted(host: str) -> None:
    url = f"https://{host}/hooks"
    assert check_url(f" {url} ", allow_private=False) == url


@pytest.mark.parametrize("host", PRIVATE)
def test_private_addresses_are_refused_unless_allowed(host: str) -> None:
    url = f"http://{host}:8080/hook"
    with pytest.raises(InvalidInput, match="private, loopback") as caught:
        check_url(url, allow_private=False)
    assert caught.value.field == "url"
    assert check_url(url, allow_private=True) == url


@pytest.mark.parametrize("url", AMBIGUOUS_OR_MALFORMED)
def test_ambiguous_and_malformed_urls_are_refused_even_when_private_is_allowed(url: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_url(url, allow_private=True)
    assert caught.value.field == "url"


def test_a_numeric_host_is_refused_with_a_clear_reason() -> None:
    with pytest.raises(InvalidInput, match="four decimal numbers without leading zeros"):
        check_url("http://0x7f.1/x", allow_private=True)


def test_a_host_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(InvalidInput, match="does not resolve"):
        check_url("https://no-such-host.invalid/hook", allow_private=False)


def test_every_address_of_a_name_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {
        "hooks.example.com": ["93.184.215.14", "2001:4860:4860::8888"],
        "mixed.example.com": ["93.184.215.14", "10.0.0.1"],
        "mapped.example.com": ["::ffff:169.254.169.254"],
    }
    monkeypatch.setattr(
        urls, "resolve", lambda host, port: [ipaddress.ip_address(a) for a in answers[host]]
    )
    assert check_url("https://hooks.example.com/x", allow_private=False)
    for host in ("mixed.example.com", "mapped.example.com"):
        with pytest.raises(InvalidInput, match="private, loopback"):
            check_url(f"https://{host}/x", allow_private=False)
    resolved = urls.destination(urls.parse("https://Hooks.Example.com/x"), allow_private=False)
    assert resolved.host == "hooks.example.com"
    assert [str(a) for a in resolved.addresses] == answers["hooks.example.com"]
