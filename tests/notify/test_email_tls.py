"""The e-mail channel over TLS: STARTTLS and implicit TLS against a real SMTP server with a test CA."""

from __future__ import annotations

import ssl
from pathlib import Path

import trustme

from openwop_bridge.notify.content import NoticeContent
from openwop_bridge.notify.email import EmailChannel, EmailChannelSender, build_message
from openwop_bridge.notify.links import NoticeLinks
from tests.notify.receivers import mail_parts, smtp_server


def _content() -> NoticeContent:
    return NoticeContent(
        interrupt_id="int_1",
        run_id="run_1",
        workflow_id="expense",
        kind="approval",
        kind_label="Approval",
        title="Approve expense report EXP-1042",
        asked="Team offsite.",
        deadline="no deadline",
        link="http://127.0.0.1:8000/v1/interrupts/t.k",
        link_answers=True,
    )


def _tls(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    return server, bundle


async def _send(config: EmailChannel) -> str:
    sender = EmailChannelSender(config, NoticeLinks(None, ""))  # type: ignore[arg-type]  # send() needs no links
    outcome = await sender.send(build_message(config, "alice@example.com", _content(), "alice"))
    return outcome.kind if outcome.kind == "delivered" else f"{outcome.kind}:{outcome.reason}"


async def test_starttls_with_a_trusted_certificate(tmp_path: Path) -> None:
    context, bundle = _tls(tmp_path)
    with smtp_server(starttls=context) as (recorder, port):
        base = {"smtp": f"smtp://127.0.0.1:{port}", "from": "a@example.com"}
        plain = EmailChannel.model_validate(base)
        assert (await _send(plain)).startswith("dead:smtp_530"), "the server requires STARTTLS first"
        trusted = EmailChannel.model_validate({**base, "starttls": True, "tlsCaFile": str(bundle)})
        assert await _send(trusted) == "delivered"
        untrusted = EmailChannel.model_validate({**base, "starttls": True})
        assert (await _send(untrusted)).startswith("retry:"), "an unknown certificate is refused"
        ((rcpts, message),) = recorder.mails
        assert rcpts == ["alice@example.com"] and "Approve expense report" in mail_parts(message)[0]


async def test_implicit_tls(tmp_path: Path) -> None:
    context, bundle = _tls(tmp_path)
    with smtp_server(implicit_tls=context) as (recorder, port):
        config = EmailChannel.model_validate(
            {"smtp": f"smtps://127.0.0.1:{port}", "from": "a@example.com", "tlsCaFile": str(bundle)}
        )
        assert await _send(config) == "delivered"
        assert len(recorder.mails) == 1
