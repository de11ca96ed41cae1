"""Which webhook URLs docflow may call, and at which address.

One parser reads a URL for every purpose: `parse` is httpx's own parser (the one that sends the
request) plus stricter rules, so the check and the request never read a host two ways. The host
is either a DNS name or an IP literal in its one canonical form; numeric forms that resolvers
read differently (`0127.0.0.1`, `127.1`, `0x7f.1`, `2130706433`, `127.0.0.1.`) are refused.

`destination` resolves a name once (`resolve`, the only lookup) and checks every address it
gets; the attempt then connects to those checked addresses, never to the name, so a name that
is re-pointed between the check and the connection (DNS rebinding) reaches nothing unchecked.
Unless a setting allows private targets, every address must be globally routable: an IPv6
address carrying an IPv4 one (IPv4-mapped, IPv4-compatible, 6to4, Teredo, NAT64) is judged by
the IPv4 address it carries.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass

import httpx

from docflow.errors import InvalidInput

MAX_URL_LENGTH = 2000
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

_LABEL = re.compile(r"^[a-z0-9_-]{1,63}$")
# A last label a resolver reads as a number (decimal, octal or hex): the host is an IPv4 form.
_NUMERIC = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)$")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the IPv4 address is the last 32 bits
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated ::a.b.c.d (:: and ::1 excepted)
_REFUSED = "webhook URLs may not point at private, loopback, link-local or reserved addresses"


@dataclass(frozen=True, slots=True)
class Destination:
    """Where an attempt goes: the URL as parsed, and the checked addresses of its host, in the
    resolver's order (one address for an IP literal)."""

    url: httpx.URL
    addresses: tuple[Address, ...]

    @property
    def host(self) -> str:
        """The host as written in the URL (ASCII, IDNA-encoded): the TLS server name and the
        name the certificate is verified against (the `Host` header carries it too)."""
        return self.url.raw_host.decode("ascii")


def parse(url: str) -> httpx.URL:
    """`url` as httpx sends it; InvalidInput (field `url`) unless it is an absolute http(s) URL
    without credentials, with a valid port, whose host is a DNS name or a canonical IP literal."""
    if len(url) > MAX_URL_LENGTH:
        raise InvalidInput(f"a webhook URL has at most {MAX_URL_LENGTH} characters", field="url")
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise InvalidInput(f"the webhook URL is invalid: {exc}", field="url") from exc
    if parsed.scheme not in ("http", "https") or not parsed.raw_host:
        raise InvalidInput("a webhook URL is an absolute http or https URL", field="url")
    if parsed.userinfo:
        raise InvalidInput("a webhook URL carries no credentials", field="url")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise InvalidInput("the webhook URL's port is invalid", field="url")
    _check_host(parsed.raw_host.decode("ascii"))
    return parsed


def _check_host(host: str) -> None:
    if ":" in host:  # an IPv6 literal, which httpx has validated
        if "%" in host:
            raise InvalidInput("a webhook URL's IPv6 address has no zone id", field="url")
        return
    labels = host.split(".")
    if not all(_LABEL.match(label) for label in labels):
        raise InvalidInput(
            "a webhook URL's host is a DNS name (letters, digits, '-', no empty label or "
            "trailing dot) or an IP address",
            field="url",
        )
    if _NUMERIC.match(labels[-1]) and not _canonical_ipv4(host):
        raise InvalidInput(
            "a numeric webhook host must be an IPv4 address written as four decimal numbers "
            "without leading zeros (like 192.0.2.10); other numeric forms are ambiguous",
            field="url",
        )


def _canonical_ipv4(host: str) -> bool:
    try:
        return str(ipaddress.IPv4Address(host)) == host
    except ValueError:
        return False


def _literal(url: httpx.URL) -> Address | None:
    try:
        return ipaddress.ip_address(url.raw_host.decode("ascii"))
    except ValueError:
        return None


def resolve(host: str, port: int) -> list[Address]:
    """The distinct addresses `host` resolves to, in the resolver's order: the one lookup of an
    attempt, whose answer is both checked and connected to. InvalidInput (field `url`) when
    the host does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidInput(f"the webhook host does not resolve: {host}", field="url") from exc
    addresses: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise InvalidInput(f"the webhook host does not resolve: {host}", field="url")
    return addresses


def destination(url: httpx.URL, *, allow_private: bool) -> Destination:
    """The addresses of a parsed URL's host (resolved once), each checked; InvalidInput (field
    `url`) when the host does not resolve or, unless `allow_private`, when any of its addresses
    is not public."""
    literal = _literal(url)
    if literal is not None:
        addresses = [literal]
    else:
        port = url.port or (443 if url.scheme == "https" else 80)
        addresses = resolve(url.raw_host.decode("ascii"), port)
    if not allow_private and not all(is_public(address) for address in addresses):
        raise InvalidInput(_REFUSED, field="url")
    return Destination(url, tuple(addresses))


def check_url(url: str, *, allow_private: bool) -> str:
    """`url` (stripped) if docflow may send webhooks to it; InvalidInput (field `url`)
    otherwise. With `allow_private` the host is not resolved here: internal names may resolve
    only where the workers run (each attempt resolves it)."""
    url = url.strip()
    parsed = parse(url)
    if not allow_private:
        destination(parsed, allow_private=False)
    return url


def is_public(address: Address) -> bool:
    """Whether `address` is globally routable; an IPv6 address that carries IPv4 addresses is
    judged by them (all of them: a Teredo address carries its server's and its client's)."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = _carried_ipv4(address)
        if carried:
            return all(_routable(ipv4) for ipv4 in carried)
    return _routable(address)


def _carried_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 transition address carries (none for a plain one). The
    local-use NAT64 prefix 64:ff9b:1::/48 is not unwrapped: where its IPv4 address sits is each
    network's choice, and it is reserved, so it stays refused."""
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address.teredo is not None:
        return list(address.teredo)
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return [ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)]
    return []


def _routable(address: Address) -> bool:
    site_local = isinstance(address, ipaddress.IPv6Address) and address.is_site_local
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or site_local
        or not address.is_global
    )
