"""Where a webhook may be sent (webhooks.md §Egress), checked at registration and again at every delivery.

A destination is refused (``400 webhook_url_rejected``) unless it is ``https://`` and every address
its host stands for is globally reachable: RFC 1918, loopback, link-local, IPv6 ULA, shared,
reserved, multicast and unspecified ranges are refused, and so is every other range of IANA's
special-purpose registries (:data:`SPECIAL_PURPOSE`: documentation, benchmarking, site-local,
translation, …), as are ``localhost`` (and ``*.localhost``) and cloud metadata names. An
address spelled otherwise is judged by the address it is: an IPv4 literal in any spelling ``inet_aton``
reads (``2130706433``, ``0x7f.1``, ``127.1``), an IPv4-mapped
IPv6 address (``::ffff:127.0.0.1``, ``::ffff:7f00:1``) and the IPv4 embedded in the IPv4-compatible,
NAT64 and 6to4 forms. A URL with credentials in it is refused. Names are resolved (without threads,
:mod:`.resolver`, within :data:`LOOKUP_TIMEOUT_S`), every address checked, and the connection made to the
checked address (:class:`Target`): nothing is resolved twice. A name that finds no address is
:class:`LookupFailedError`: at delivery a transient failure, retried.

``allow_loopback`` (``--webhook-allow-loopback``, for local development and tests) admits
``http://`` or ``https://`` to an IPv4 loopback literal (``127.x.y.z`` written as four decimals) or
``[::1]``, and nothing else it would otherwise refuse.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from openwop_bridge.core.errors import BridgeError
from openwop_bridge.notify.webhook.resolver import AsyncResolver

#: Names of cloud metadata services (their addresses are link-local or private, refused as such too).
METADATA_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_COMPATIBLE = ipaddress.IPv6Network("::/96")
#: Special-purpose ranges (IANA's IPv4 and IPv6 special-purpose address registries) refused by name, whatever
#: ``ipaddress`` thinks of them: it counts some as global (site-local, ``3fff::/20``, ``192.88.99.0/24``, parts
#: of ``192.0.0.0/24``), and a range added to the registries later must be named here to be refused.
SPECIAL_PURPOSE = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/128",
        "::1/128",
        "64:ff9b:1::/48",
        "100::/64",
        "100:0:0:1::/64",
        "2001::/23",
        "2001:db8::/32",
        "3fff::/20",
        "5f00::/16",
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
#: The longest URL a subscription may name.
URL_MAX = 2048

#: How long a name's lookup may take before it counts as failed.
LOOKUP_TIMEOUT_S = 5.0

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
#: Resolves ``(host, port)`` to its addresses (text), raising :class:`OSError` when the lookup fails.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]


class WebhookUrlRejectedError(BridgeError, code="webhook_url_rejected", status=400):
    """400: the webhook URL names a destination this host does not send to."""


class LookupFailedError(WebhookUrlRejectedError):
    """400 at registration; at delivery a transient failure, retried: the host's name found no address (an error
    or no answer in time), which a DNS outage explains as well as a typo."""


@dataclass(frozen=True, slots=True)
class Target:
    """A checked destination: connect to ``address`` (never re-resolved), naming ``host`` in ``Host`` and SNI."""

    scheme: str
    host: str
    port: int
    address: str
    target: str  # path and query

    @property
    def url(self) -> str:
        """The URL to connect to: the checked address in place of the name."""
        literal = f"[{self.address}]" if ":" in self.address else self.address
        return f"{self.scheme}://{literal}:{self.port}{self.target}"

    @property
    def host_header(self) -> str:
        """The ``Host`` header: the name (or literal) the URL gave, with a port that is not the default."""
        name = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return name if self.port == default else f"{name}:{self.port}"


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 address carries, if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (ip in _COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _loopback_literal(host: str) -> bool:
    """``127.x.y.z`` as four decimals, or ``::1``: what ``allow_loopback`` admits."""
    if host == "::1":
        return True
    parts = host.split(".")
    return len(parts) == 4 and parts[0] == "127" and all(p.isdigit() and int(p) < 256 for p in parts)


def refused_address(ip: Address) -> str | None:
    """Why an address is refused (a short reason), or None when it is globally reachable."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None:
            return refused_address(inner)
        if ip.scope_id:
            return "scoped address"
    if ip.is_loopback:
        return "loopback address"
    if ip.is_link_local:
        return "link-local address"
    if ip.is_multicast or ip.is_unspecified or ip.is_reserved:
        return "reserved address"
    if isinstance(ip, ipaddress.IPv6Address) and ip in ipaddress.IPv6Network("fc00::/7"):
        return "unique local address"
    if not ip.is_global or any(ip in net for net in SPECIAL_PURPOSE if net.version == ip.version):
        return "private or special-purpose address"
    return None


def _literal(host: str) -> Address | None:
    """The address a host literal spells (any IPv4 spelling ``inet_aton`` reads), or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if host and all(c in "0123456789abcdefx." for c in host) and host[0].isdigit():
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


@dataclass(frozen=True, slots=True)
class Egress:
    """The egress rule of this host (see the module)."""

    allow_loopback: bool = False
    #: Where names are resolved: c-ares, without threads (:class:`.resolver.AsyncResolver`).
    resolver: Resolver = field(default_factory=AsyncResolver)
    lookup_timeout_s: float = LOOKUP_TIMEOUT_S

    def refused(self, ip: Address) -> str | None:
        """Why a resolved address is refused (a short reason), or None: :func:`refused_address`."""
        return refused_address(ip)

    def check_url(self, url: str) -> tuple[str, str, int, str, Address | None]:
        """``(scheme, host, port, target, literal address or None)`` of an admissible URL, else
        :class:`WebhookUrlRejectedError` (nothing is resolved or contacted)."""
        if not isinstance(url, str) or len(url) > URL_MAX:
            raise WebhookUrlRejectedError("the webhook URL is missing or too long")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise WebhookUrlRejectedError("the webhook URL is not a valid URL") from exc
        scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".").lower()
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise WebhookUrlRejectedError("the webhook URL must not carry credentials")
        if not host or any(c.isspace() for c in url):
            raise WebhookUrlRejectedError("the webhook URL names no host")
        literal = _literal(host)
        loopback_ok = self.allow_loopback and _loopback_literal(host) and scheme in ("http", "https")
        if scheme != "https" and not loopback_ok:
            raise WebhookUrlRejectedError("a webhook URL must be https://")
        if host == "localhost" or host.endswith(".localhost") or host in METADATA_HOSTS:
            raise WebhookUrlRejectedError(f"webhooks are not sent to {host}")
        if literal is not None and not loopback_ok:
            reason = refused_address(literal)
            if reason:
                raise WebhookUrlRejectedError(f"webhooks are not sent to a {reason}")
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return scheme, host, port or (443 if scheme == "https" else 80), target, literal

    async def resolve(self, url: str) -> Target:
        """Check ``url``, resolve its name, check every address, and pin the first (see the module)."""
        scheme, host, port, target, literal = self.check_url(url)
        if literal is not None:
            return Target(scheme, host, port, str(literal), target)
        try:
            async with asyncio.timeout(self.lookup_timeout_s):
                found = await self.resolver(host, port)
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
        except (OSError, ValueError) as exc:  # TimeoutError is an OSError
            raise LookupFailedError("the webhook URL's host does not resolve") from exc
        if not addresses:
            raise LookupFailedError("the webhook URL's host does not resolve")
        for ip in addresses:
            reason = self.refused(ip)
            if reason:
                raise WebhookUrlRejectedError(f"the webhook URL's host resolves to a {reason}")
        return Target(scheme, host, port, str(addresses[0]), target)
