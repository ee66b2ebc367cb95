"""Where a webhook may POST: FEDGEN_WEBHOOK_ALLOW applied to a URL's host *name* and to every
*address* that name resolves to, and the checked address the sender then connects to.

FEDGEN_WEBHOOK_ALLOW is a comma-separated list of two kinds of entry:

- host patterns (`hooks.slack.com`, `*.lab.example`, `*`): they let a *name* through, nothing
  more. An IP-literal URL (`http://10.1.2.3/`) passes a pattern that matches its text (`*`).
- addresses and networks (`127.0.0.1`, `10.0.0.0/8`, `::1`): they let those addresses through,
  and an IP-literal URL inside them.

A target passes when its name passes and then *every* address it resolves to is public or
inside an allowed network: one non-public address refuses the whole name (simpler and safer
than sending to the passing ones only, since a later send might pick another). Non-public:
loopback, private, link-local (cloud metadata 169.254.169.254), multicast, reserved,
unspecified, CGNAT's shared space 100.64.0.0/10 and anything else Python does not call global;
an IPv4 address inside IPv6 (::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged as
that IPv4 address.

The name is resolved at registration (api/routes/webhooks.py) and again before each send
(worker/webhook_sender.py), which connects to the `Target.address` checked here, never to a
second lookup's answer (so DNS rebinding cannot swap in an internal address). `resolve` is a
module function so tests can stand in for DNS.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from urllib.parse import urlsplit

IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")
EXAMPLE_ALLOW = "hooks.slack.com,*.lab.example,10.0.0.0/8"


@dataclass(frozen=True)
class AllowList:
    """FEDGEN_WEBHOOK_ALLOW parsed: lowercase host patterns and address networks."""

    patterns: tuple[str, ...]
    networks: tuple[Network, ...]

    @property
    def empty(self) -> bool:
        return not self.patterns and not self.networks


@dataclass(frozen=True)
class Target:
    """A checked webhook target: the URL's host name and the address to connect to."""

    host: str
    address: IP


# What a member is told, one message per kind of refusal: never what a name resolves to, nor
# whether it resolves at all (that would map the lab's internal names), nor the allow list.
NOT_PUBLIC = "webhook URL is not allowed: it must resolve to a public address"
NOT_LISTED = (
    "webhook URL is not allowed: its host is not on the lab's allow list (FEDGEN_WEBHOOK_ALLOW; "
    "an admin can add it)"
)
NONE_LISTED = (
    "webhook URL is not allowed: this lab allows no webhook targets (FEDGEN_WEBHOOK_ALLOW is "
    "empty; an admin sets it)"
)


class TargetRefused(Exception):
    """Why a URL is not a webhook target. The message is the detailed reason (the address a name
    resolves to, the allow list): for admins and logs; `member_message` is what a member is
    told. `final`: False when it may pass later (the name did not resolve), True when it is
    refused."""

    def __init__(self, message: str, *, final: bool = True, member_message: str = NOT_PUBLIC):
        super().__init__(message)
        self.final = final
        self.member_message = member_message

    def told(self, detailed: bool) -> str:
        """The reason as `detailed` (an admin) or a member is told it."""
        return str(self) if detailed else self.member_message


def _network(entry: str) -> Network | None:
    try:
        return ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return None


@lru_cache(maxsize=32)
def parse_allow(allow: str) -> AllowList:
    """Split FEDGEN_WEBHOOK_ALLOW into patterns and networks (empty entries dropped). An entry
    that is not an address or a CIDR is a host pattern; a malformed CIDR such as `10.0.0.0/33`
    thus matches no name and allows nothing (it fails closed)."""
    patterns: list[str] = []
    networks: list[Network] = []
    for entry in (p.strip().lower() for p in allow.split(",")):
        if not entry:
            continue
        net = _network(entry)
        if net is None:
            patterns.append(entry)
        else:
            networks.append(net)
    return AllowList(tuple(patterns), tuple(networks))


def url_host(url: str) -> str:
    """The URL's host, lowercase, without brackets or a trailing dot ('' when there is none)."""
    return (urlsplit(url).hostname or "").lower().rstrip(".")


def _literal(host: str) -> IP | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def name_allowed(host: str, allow: AllowList) -> bool:
    """The name check: a host pattern matches the host, or the host is an address literal inside
    an allowed network."""
    if not host:
        return False
    if any(fnmatchcase(host, p) for p in allow.patterns):
        return True
    literal = _literal(host)
    return literal is not None and any(literal in net for net in allow.networks)


def embedded_v4(ip: IP) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4), else None."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def non_public_kind(ip: IP) -> str | None:
    """What kind of non-public address `ip` is ('loopback', 'private', ...), None if public."""
    judged: IP = embedded_v4(ip) or ip
    checks = (
        ("unspecified", judged.is_unspecified),
        ("loopback", judged.is_loopback),
        ("link-local", judged.is_link_local),
        ("multicast", judged.is_multicast),
        ("shared (CGNAT)", judged in CGNAT),
        ("reserved", judged.is_reserved),  # before private: Python counts 240/4 as both
        ("private", judged.is_private),
        ("non-global", not judged.is_global),
    )
    return next((kind for kind, hit in checks if hit), None)


def address_allowed(ip: IP, allow: AllowList) -> bool:
    """True when `ip` (or the IPv4 address it carries) is inside an allowed network."""
    forms = [ip] + [v4 for v4 in [embedded_v4(ip)] if v4 is not None]
    return any(form in net for form in forms for net in allow.networks)


def resolve(host: str, port: int) -> list[IP]:
    """The addresses `host` resolves to (system resolver), in its order; OSError when none."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: dict[IP, None] = {}
    for *_, sockaddr in infos:
        seen[ipaddress.ip_address(str(sockaddr[0]).split("%")[0])] = None
    return list(seen)


def name_refusal(host: str, allow: AllowList, raw: str) -> str:
    """The message for a host name FEDGEN_WEBHOOK_ALLOW does not allow."""
    if allow.empty:
        return (
            f"host {host} is not allowed: FEDGEN_WEBHOOK_ALLOW is empty, so no webhook target is "
            f"(an admin sets it to host patterns and addresses, e.g. {EXAMPLE_ALLOW})"
        )
    return f"host {host} is not allowed by FEDGEN_WEBHOOK_ALLOW ({raw})"


def shown(ip: IP) -> str:
    """The address as written: an IPv4-mapped one as ::ffff:a.b.c.d (Python 3.11 prints hex)."""
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return f"::ffff:{mapped}" if mapped is not None else str(ip)


def _address_refusal(host: str, ip: IP, kind: str) -> str:
    where = f"{shown(ip)} is" if _literal(host) is not None else f"{host} resolves to {shown(ip)},"
    article = "an" if kind[0] in "aeiou" else "a"
    return (
        f"{where} {article} {kind} address; FEDGEN_WEBHOOK_ALLOW must name it (e.g. {shown(ip)}) to "
        "allow it"
    )


def check_target(url: str, allow_text: str) -> Target:
    """Check `url` against FEDGEN_WEBHOOK_ALLOW, resolving its host now; the Target to connect
    to, or TargetRefused saying why (not final when the name does not resolve)."""
    allow = parse_allow(allow_text)
    host = url_host(url)
    if not name_allowed(host, allow):
        raise TargetRefused(
            name_refusal(host or "?", allow, allow_text),
            member_message=NONE_LISTED if allow.empty else NOT_LISTED,
        )
    split = urlsplit(url)
    port = split.port or (443 if split.scheme == "https" else 80)
    literal = _literal(host)
    if literal is not None:
        addresses = [literal]
    else:
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            reason = getattr(exc, "strerror", None) or type(exc).__name__
            raise TargetRefused(
                f"host {host} does not resolve to an address ({reason})", final=False
            ) from None
        if not addresses:
            raise TargetRefused(f"host {host} does not resolve to an address", final=False)
    for ip in addresses:
        kind = non_public_kind(ip)
        if kind is not None and not address_allowed(ip, allow):
            raise TargetRefused(_address_refusal(host, ip, kind))
    first = addresses[0]
    # Connect to a mapped address as IPv4: the same host, reachable without an IPv6 stack.
    mapped = first.ipv4_mapped if isinstance(first, ipaddress.IPv6Address) else None
    return Target(host, mapped or first)
