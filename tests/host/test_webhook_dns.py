"""Webhook deliveries to named hosts: a failed lookup is retried like a refused connection (only an address the
egress rule refuses is final), and a pooled TLS connection is reused only for the name it was verified for.

Names resolve through a resolver the test gives the egress rule (no real DNS), to loopback, which the rule here
admits for names too (:class:`LoopbackNames`); the receiver is uvicorn with TLS from a ``trustme`` CA.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import trustme

from openwop_bridge import Engine
from openwop_bridge.notify.webhook.channel import Webhooks
from openwop_bridge.notify.webhook.egress import Address, Egress, LookupFailedError
from openwop_bridge.notify.webhook.resolver import AsyncResolver
from tests.conftest import auth
from tests.host.test_webhooks import LOOPBACK, SECRET, fast_config, register
from tests.host.test_webhooks_standard import OLD as WHSEC
from tests.host.v2_scenario import V2, suspended
from tests.host.webhook_receiver import Receiver, bridge, receiver


class LoopbackNames(Egress):
    """This host's egress rule, but a name that resolves to loopback is admitted (the receivers here)."""

    def refused(self, ip: Address) -> str | None:
        return None if ip.is_loopback else super().refused(ip)


class Names:
    """A resolver: each name to its addresses; a name in ``failing`` fails that many lookups first."""

    def __init__(self, table: dict[str, Sequence[str]]) -> None:
        self.table = table
        self.failing: dict[str, int] = {}
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.lookups.append(host)
        if self.failing.get(host, 0) > 0:
            self.failing[host] -= 1
            raise OSError("SERVFAIL")
        if host not in self.table:
            raise OSError("NXDOMAIN")
        return self.table[host]


@contextlib.asynccontextmanager
async def tls_receiver(tmp: Path, *names: str) -> AsyncIterator[tuple[Receiver, ssl.SSLContext, int]]:
    """A receiver on 127.0.0.1 whose certificate names ``names`` only; the context that trusts its CA; its port."""
    ca = trustme.CA()
    cert = ca.issue_cert(*names)
    cert.cert_chain_pems[0].write_to_path(str(tmp / "cert.pem"))
    cert.private_key_pem.write_to_path(str(tmp / "key.pem"))
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    async with receiver(ssl_certfile=str(tmp / "cert.pem"), ssl_keyfile=str(tmp / "key.pem")) as rec:
        yield rec, trust, int(rec.url.rsplit(":", 1)[1])


def named(hooks: Webhooks, names: Names, trust: ssl.SSLContext) -> None:
    """Resolve through ``names`` and trust the test CA from now on."""
    hooks.egress = LoopbackNames(allow_loopback=True, resolver=names)
    hooks.transport.tls = trust


async def test_a_failed_lookup_is_retried_and_the_delivery_arrives(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config(attempts=4))
    names = Names({"hook.test": ["127.0.0.1"]})
    async with tls_receiver(tmp_path, "hook.test") as (rec, trust, port), bridge(engine, LOOPBACK) as http:
        hooks = engine.notify.channels["webhook"]
        assert isinstance(hooks, Webhooks)
        named(hooks, names, trust)
        resp = await register(http, f"https://hook.test:{port}/a", ["run.started"], secret=SECRET)
        assert resp.status_code == 201, resp.text
        names.failing["hook.test"] = 2  # a short outage: the first two attempts find no address
        await suspended(http)
        await rec.wait(lambda: len(rec.at("/a")) == 1)
        assert names.lookups.count("hook.test") == 4  # registration, two failed attempts, the one delivered
        assert rec.at("/a")[0].headers["openwop-delivery-attempt"] == "3"
        assert engine.notify.counts[("webhook", "dead")] == 0


async def test_an_unresolvable_host_at_registration_is_still_refused(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine: Engine = make_engine(fast_config())
    async with bridge(engine, LOOPBACK) as http:
        hooks = engine.notify.channels["webhook"]
        assert isinstance(hooks, Webhooks)
        hooks.egress = LoopbackNames(allow_loopback=True, resolver=Names({}))
        resp = await register(http, "https://nowhere.test/a", ["run.started"], secret=SECRET)
        assert resp.status_code == 400 and resp.json()["error"] == "webhook_url_rejected", resp.text


async def test_a_tls_connection_is_reused_only_for_the_name_it_was_verified_for(make_engine, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The receiver's certificate names ``attacker.example`` only; ``victim.example`` maps to the same address.
    Another tenant's endpoint challenge to ``attacker.example`` (its answer read whole) leaves a pooled connection:
    a delivery to ``victim.example`` must not ride on it."""
    engine: Engine = make_engine(fast_config(attempts=2))
    names = Names({"attacker.example": ["127.0.0.1"], "victim.example": ["127.0.0.1"]})
    async with tls_receiver(tmp_path, "attacker.example") as (rec, trust, port), bridge(engine, LOOPBACK) as http:
        hooks = engine.notify.channels["webhook"]
        assert isinstance(hooks, Webhooks)
        named(hooks, names, trust)
        b = await http.post(
            "/webhooks",
            json={
                "url": f"https://attacker.example:{port}/echo-b",
                "events": ["run.started"],
                "secret": WHSEC,
                "signatureAlgorithms": ["v1", "standard-webhooks-1"],
            },
            headers={**auth("other"), **V2},
        )
        assert b.status_code == 201, b.text
        resp = await register(http, f"https://victim.example:{port}/a", ["run.started"], secret=SECRET)
        assert resp.status_code == 201, resp.text
        await suspended(http)
        await rec.wait(lambda: engine.notify.counts[("webhook", "dead")] == 1 or rec.at("/a"))
        assert rec.at("/a") == []  # refused by TLS every attempt: the certificate is not victim.example's


class StubDns(asyncio.DatagramProtocol):
    """A DNS server on 127.0.0.1 (UDP): ``A`` of a name in ``table`` answered; a name under ``stalled`` never is."""

    def __init__(self, table: dict[str, str], stalled: str) -> None:
        self.table, self.stalled = table, stalled
        self.transport: Any = None
        self.unanswered = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        labels, i = [], 12
        while data[i]:
            labels.append(data[i + 1 : i + 1 + data[i]].decode())
            i += 1 + data[i]
        question = data[12 : i + 5]
        qtype = struct.unpack("!H", data[i + 1 : i + 3])[0]
        name = ".".join(labels).lower()
        if name.endswith(self.stalled):
            self.unanswered += 1
            return
        answers = b""
        if qtype == 1 and name in self.table:
            answers = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(self.table[name])
        rcode = 0 if name in self.table else 3
        head = data[:2] + struct.pack("!HHHHH", 0x8180 | rcode, 1, 1 if answers else 0, 0, 0)
        self.transport.sendto(head + question + answers, addr)


async def test_a_stalled_lookup_holds_no_thread_and_nothing_queues_behind_it() -> None:
    """tenant-b's names stop answering: 40 lookups of them hang until their deadline, and meanwhile tenant-a's name
    resolves and the event loop's executor stays free; each stalled lookup then fails (retried at delivery)."""
    loop = asyncio.get_running_loop()
    stub = StubDns({"a.test": "127.0.0.1"}, stalled=".b.test")
    transport, _ = await loop.create_datagram_endpoint(lambda: stub, local_addr=("127.0.0.1", 0))
    try:
        port = transport.get_extra_info("sockname")[1]
        resolver = AsyncResolver([f"127.0.0.1:{port}"])
        egress = LoopbackNames(allow_loopback=True, resolver=resolver, lookup_timeout_s=3.0)
        stalled = [asyncio.create_task(egress.resolve(f"https://h{i}.b.test/x")) for i in range(40)]
        await asyncio.sleep(0.2)
        async with asyncio.timeout(2.5):  # before any stalled lookup's deadline
            target = await egress.resolve("https://a.test/hook")
            assert await loop.run_in_executor(None, lambda: "free") == "free"
        assert (target.host, target.address) == ("a.test", "127.0.0.1")
        assert stub.unanswered >= 40 and not any(t.done() for t in stalled)
        async with asyncio.timeout(10):
            failed = await asyncio.gather(*stalled, return_exceptions=True)
        assert all(isinstance(e, LookupFailedError) for e in failed)
        with pytest.raises(LookupFailedError):  # a name that does not exist: no address, transient too
            await egress.resolve("https://missing.test/x")
        await resolver.aclose()  # c-ares still waits on the stalled names: cancelled while the loop runs
    finally:
        transport.close()
