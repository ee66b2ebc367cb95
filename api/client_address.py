"""The client's address as the lab sees it: the socket's peer, or, when that peer is a trusted
proxy (FEDGEN_TRUSTED_PROXIES, e.g. the dashboard's container), the nearest address in
`X-Forwarded-For` that is not itself a trusted proxy. An untrusted peer's header is ignored, so
a stranger cannot pick the address their failures are counted against."""

from __future__ import annotations

import ipaddress

from starlette.requests import HTTPConnection

from lab.config import Network, parse_proxies


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(addr: str, proxies: tuple[Network, ...]) -> bool:
    ip = _ip(addr)
    return ip is not None and any(ip in net for net in proxies)


def client_address(conn: HTTPConnection, trusted_proxies: str) -> str:
    """The address requests of `conn` are attributed to (rate limits, the audit log)."""
    peer = conn.client.host if conn.client else "?"
    proxies = parse_proxies(trusted_proxies)
    if not proxies or not _trusted(peer, proxies):
        return peer
    hops = [h.strip() for h in ",".join(conn.headers.getlist("x-forwarded-for")).split(",")]
    # Right to left: the rightmost hop was added by the proxy we trust; stop at the first
    # address that no trusted proxy could have added.
    for hop in reversed([h for h in hops if h]):
        if _ip(hop) is None:
            return peer  # a malformed header: keep the peer rather than believe it
        if not _trusted(hop, proxies):
            return hop
    return peer
