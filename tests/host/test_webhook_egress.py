"""Webhook egress: every refused destination is a 400 ``webhook_url_rejected`` before any connection is tried,
at registration and again at delivery; ``--webhook-allow-loopback`` admits loopback literals and nothing else.

No address here is one the bridge could reach but loopback: private, link-local, metadata and special
addresses are refused by their spelling, before anything is resolved or contacted, and a loopback
receiver proves that nothing reached it.
"""

from __future__ import annotations

import ipaddress

import httpx
import pytest

from openwop_bridge import Engine
from openwop_bridge.notify.webhook.channel import WebhookSettings
from openwop_bridge.notify.webhook.egress import Egress, Target, WebhookUrlRejectedError, refused_address
from openwop_bridge.notify.webhook.transport import Transport
from tests.host.test_webhooks import SECRET, fast_config, register
from tests.host.v2_scenario import suspended
from tests.host.webhook_receiver import bridge, receiver

#: Refused by every host, loopback admitted or not ({port}: the loopback receiver's).
ALWAYS = [
    "http://hooks.example.com/x",  # not https
    "ftp://hooks.example.com/x",
    "https://10.1.2.3/x",
    "https://172.16.0.1/x",
    "https://192.168.1.10/x",
    "https://169.254.169.254/latest/meta-data",
    "https://100.64.0.1/x",  # shared address space
    "https://0.0.0.0/x",
    "https://[fd00::1]/x",
    "https://[fe80::1]/x",
    "https://[::]/x",
    "https://[ff02::1]/x",
    "https://[::ffff:10.0.0.1]/x",
    "https://[::ffff:a9fe:a9fe]/x",  # IPv4-mapped 169.254.169.254, hex spelling
    "https://[64:ff9b::a00:1]/x",  # NAT64 of 10.0.0.1
    "https://[2002:c0a8:101::1]/x",  # 6to4 of 192.168.1.1
    "https://localhost:{port}/x",
    "http://localhost:{port}/x",
    "https://app.localhost/x",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://user:pass@hooks.example.com/x",
    "https://012.0.0.1/x",  # octal spelling of 10.0.0.1
    "https://0xa000001/x",  # hex spelling of 10.0.0.1
    "https://167772161/x",  # decimal spelling of 10.0.0.1
    "https://[::ffff:127.0.0.1]:{port}/x",
    "http://[::ffff:7f00:1]:{port}/x",
]
#: Loopback, refused unless loopback is admitted.
LOOPBACK = [
    "https://127.0.0.1:{port}/x",
    "http://127.0.0.1:{port}/x",
    "https://[::1]:{port}/x",
    "https://127.1:{port}/x",
    "https://2130706433:{port}/x",
    "https://0x7f.0.0.1:{port}/x",
]


@pytest.mark.parametrize("allow", [False, True])
async def test_refused_destinations_are_400_and_nothing_is_contacted(make_engine, allow: bool) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    refused = ALWAYS + ([u for u in LOOPBACK if "127.0.0.1" not in u and "[::1]" not in u] if allow else LOOPBACK)
    async with receiver() as rec, bridge(engine, WebhookSettings(allow_loopback=allow)) as http:
        port = rec.url.rsplit(":", 1)[1]
        for url in refused:
            resp = await register(http, url.format(port=port), ["run.started"], secret=SECRET)
            assert resp.status_code == 400, (url, resp.text)
            assert resp.json()["error"] == "webhook_url_rejected", url
        assert rec.got == []
        assert engine.notify.channels["webhook"].connections == 0  # type: ignore[attr-defined]


async def test_loopback_is_admitted_only_when_asked_for(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, WebhookSettings(allow_loopback=True)) as http:
        port = rec.url.rsplit(":", 1)[1]
        assert (await register(http, f"http://127.0.0.1:{port}/a", ["run.started"], secret=SECRET)).status_code == 201
        assert (await register(http, f"http://[::1]:{port}/b", ["run.started"], secret=SECRET)).status_code == 201
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/a")) == 1)
        assert rec.at("/a")[0].headers["host"] == f"127.0.0.1:{port}"


def test_addresses_are_judged_by_what_they_embed() -> None:
    assert refused_address(ipaddress.ip_address("::ffff:8.8.8.8")) is None
    assert refused_address(ipaddress.ip_address("64:ff9b::808:808")) is None  # NAT64 of a public address: admitted
    assert refused_address(ipaddress.ip_address("2002:808:808::1")) is None
    assert refused_address(ipaddress.ip_address("::ffff:127.0.0.1")) == "loopback address"
    assert refused_address(ipaddress.ip_address("8.8.8.8")) is None
    # Checked by spelling alone: nothing is resolved for a literal.
    scheme, host, port, target, literal = Egress().check_url("https://8.8.8.8/hook?x=1")
    assert (scheme, host, port, target, str(literal)) == ("https", "8.8.8.8", 443, "/hook?x=1", "8.8.8.8")
    with pytest.raises(WebhookUrlRejectedError):
        Egress(allow_loopback=True).check_url("http://8.8.8.8/hook")


async def test_a_delivery_checks_the_url_again(make_engine, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """A subscription whose URL the rule no longer admits (loopback admitted at registration, not at delivery)
    is dead-lettered ``url_rejected`` without a connection."""
    engine: Engine = make_engine(fast_config())
    async with receiver() as rec, bridge(engine, WebhookSettings(allow_loopback=True)) as http:
        port = rec.url.rsplit(":", 1)[1]
        assert (await register(http, f"http://127.0.0.1:{port}/a", ["run.started"], secret=SECRET)).status_code == 201
        hooks = engine.notify.channels["webhook"]
        monkeypatch.setattr(hooks, "egress", Egress(allow_loopback=False))
        await suspended(http)
        await rec.wait(lambda: engine.notify.counts[("webhook", "dead")] == 1)
        assert rec.got == [] and hooks.connections == 0  # type: ignore[attr-defined]


def test_a_target_connects_to_the_checked_address_under_its_name() -> None:
    named = Target("https", "hooks.example.com", 443, "93.184.216.34", "/in?x=1")
    assert (named.url, named.host_header) == ("https://93.184.216.34:443/in?x=1", "hooks.example.com")
    v6 = Target("https", "hooks.example.com", 8443, "2606:2800:220:1::1", "/")
    assert (v6.url, v6.host_header) == ("https://[2606:2800:220:1::1]:8443/", "hooks.example.com:8443")


async def test_a_post_goes_to_the_address_with_the_name_in_host_and_sni_and_follows_nothing() -> None:
    """The one place a transport stands in for the network: a public address is out of reach here."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(302, headers={"Location": "https://elsewhere.example/"})

    transport = Transport(network=httpx.MockTransport(answer))
    try:
        target = Target("https", "hooks.example.com", 443, "93.184.216.34", "/in")
        status, _, _ = await transport.post("default", target, b"{}", {"Content-Type": "application/json"}, 5)
    finally:
        await transport.aclose()
    assert status == 302 and len(seen) == 1  # the redirect is an answer, not followed
    [request] = seen
    assert str(request.url) == "https://93.184.216.34/in"  # httpx drops the default port
    assert request.headers["host"] == "hooks.example.com"
    assert request.extensions["sni_hostname"] == "hooks.example.com"


#: Special-purpose ranges (the IANA registries) that ``ipaddress`` counts as global or misses, each refused.
SPECIAL = [
    "fec0::1",  # deprecated site-local
    "3fff::1",  # documentation (RFC 9637)
    "2001:db8::1",  # documentation
    "2001:2::1",  # benchmarking
    "2001::1",  # IETF protocol assignments (Teredo)
    "64:ff9b:1::1",  # local-use IPv4/IPv6 translation
    "100::1",  # discard-only
    "5f00::1",  # SRv6 SIDs
    "100.64.0.1",  # shared address space
    "192.0.0.9",  # IETF protocol assignments
    "192.0.2.1",  # documentation
    "192.88.99.1",  # deprecated 6to4 relay anycast
    "198.18.0.1",  # benchmarking
    "198.51.100.1",
    "203.0.113.1",
    "240.0.0.1",  # reserved
    "255.255.255.255",
]


@pytest.mark.parametrize("address", SPECIAL)
def test_every_special_purpose_range_is_refused(address: str) -> None:
    assert refused_address(ipaddress.ip_address(address)) is not None, address
    literal = f"[{address}]" if ":" in address else address
    with pytest.raises(WebhookUrlRejectedError):
        Egress().check_url(f"https://{literal}/x")


def test_public_addresses_next_to_special_ranges_are_admitted() -> None:
    for address in ("2001:4860:4860::8888", "2606:4700::1111", "1.1.1.1", "100.128.0.1", "198.20.0.1"):
        assert refused_address(ipaddress.ip_address(address)) is None, address
