"""Which webhook URLs docflow may call: http(s) only, and, unless allowed by a setting, never
an address on a private, loopback, link-local, multicast or reserved network.

The host is resolved and every address it resolves to is checked, at registration and again
before every attempt (a name may be re-pointed at an internal address after registration).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from docflow.errors import InvalidInput

MAX_URL_LENGTH = 2000


def _addresses(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidInput(f"the webhook host does not resolve: {host}", field="url") from exc
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


def _is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


def check_url(url: str, *, allow_private: bool) -> str:
    """`url` if docflow may send webhooks to it; InvalidInput (field `url`) otherwise."""
    url = url.strip()
    if len(url) > MAX_URL_LENGTH:
        raise InvalidInput(f"a webhook URL has at most {MAX_URL_LENGTH} characters", field="url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("a webhook URL is an absolute http or https URL", field="url")
    if parts.username or parts.password:
        raise InvalidInput("a webhook URL carries no credentials", field="url")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise InvalidInput("the webhook URL's port is invalid", field="url") from exc
    if allow_private:
        return url
    for address in _addresses(parts.hostname, port):
        if not _is_public(address):
            raise InvalidInput(
                "webhook URLs may not point at private, loopback, link-local or reserved addresses",
                field="url",
            )
    return url
