"""The page a signed link shows in a browser (``GET /v1/interrupts/{token}``).

The host calls :func:`link_page` when the request accepts ``text/html``. A
usable link gets a page about its one interrupt: read-only for an ``inspect``
link, with the answer form for a ``resolve`` link (the form posts back to the
same URL, so it needs no API key). A link that can no longer be used gets a
page that says why, with the status the JSON answer would have had.

Titles and data come from workflows and people: everything interpolated here
goes through :func:`html.escape`, and the interrupt handed to the page's script
is embedded as inert JSON with ``<``, ``>`` and ``&`` escaped.
"""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from openwop_bridge.core import approvals
from openwop_bridge.core.decisions.common import AUTH_REQUIRED_PROFILE
from openwop_bridge.core.errors import BridgeError
from openwop_bridge.core.kinds import REGISTRY
from openwop_bridge.host.http.deps import base_url, engine
from openwop_bridge.host.web.pages import page_headers

#: The page lives at /v1/interrupts/{token}; assets are found relative to it so
#: the host also works behind a proxy that mounts it under a path prefix.
_ASSETS = "../../ui/static"

#: Why a link cannot be used, by error code: a heading and what to do about it.
UNUSABLE = {
    "interrupt_expired": (
        "This link has expired",
        "Signed links are valid for a limited time. Ask whoever sent it for a new one.",
    ),
    "interrupt_already_resolved": (
        "This link was already used",
        "The request it points to has been answered or withdrawn, so there is nothing left to do here.",
    ),
    "interrupt_gone": (
        "This request is gone",
        "The workflow that asked it was cancelled, so it no longer needs an answer.",
    ),
}
_NOT_VALID = ("This link is not valid", "Check that you opened the whole link, exactly as it was sent.")


def _label(kind: str) -> str:
    """The kind's human label ("Approval"), or its name when it is not a known kind."""
    found = REGISTRY.get(kind)
    return found.label if found is not None else kind


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def script_json(value: Any) -> str:
    """JSON safe to place inside ``<script type="application/json">``."""
    text = orjson.dumps(value).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def human_time(iso: str | None) -> str:
    """``2026-11-21T10:03:00.000Z`` as ``21 Nov 2026, 10:03 UTC`` (the input itself if it does not parse)."""
    if not iso:
        return ""
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    return moment.strftime("%d %b %Y, %H:%M UTC")


def _document(title: str, body: str, *, status: int = 200, script: str | None = None) -> Response:
    scripts = f'\n<script type="module" src="{_ASSETS}/{script}"></script>' if script else ""
    page = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{_e(title)} · OpenWOP</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{_ASSETS}/style.css">{scripts}
</head>
<body class="link-page">
<main id="main">
{body}
</main>
</body>
</html>
"""
    return Response(page, status_code=status, media_type="text/html; charset=utf-8", headers=page_headers())


def unusable_page(code: str, message: str, status: int) -> Response:
    """The page for a link that cannot be used (expired, used, gone or not valid)."""
    heading, advice = UNUSABLE.get(code, _NOT_VALID)
    body = f"""<section class="card unusable" aria-labelledby="page-title">
<p class="eyebrow">Signed link</p>
<h1 id="page-title">{_e(heading)}</h1>
<p class="lead">{_e(advice)}</p>
<p class="server-message">The server said: <q>{_e(message)}</q> <span class="code">({_e(code)})</span></p>
</section>"""
    return _document(heading, body, status=status)


def _meta_rows(view: dict[str, Any]) -> str:
    rows = [
        ("Kind", _label(view["kind"])),
        ("Workflow", view.get("workflowId", "")),
        ("Step", view.get("nodeId", "")),
        ("Requested", human_time(view.get("requestedAt"))),
    ]
    if view.get("expiresAt"):
        rows.append(("Answer by", human_time(view["expiresAt"])))
    if view.get("tokenExpiresAt"):
        rows.append(("Link valid until", human_time(view["tokenExpiresAt"])))
    if view.get("subject"):
        rows.append(("Answers as", view["subject"]))
    if view.get("onBehalfOf"):  # a delegate's link: their answer counts in the delegator's place
        rows.append(("On behalf of", view["onBehalfOf"]))
    return "\n".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in rows)


def interrupt_page(view: dict[str, Any]) -> Response:
    """The page for a usable link: the interrupt, and its form when the link may answer it."""
    resolve = view.get("intent") == "resolve"
    data = view.get("payload", {}).get("data", {})
    if not resolve:
        intent = "This link lets you view the request. It cannot be used to answer it."
    elif data.get("profile") == AUTH_REQUIRED_PROFILE:
        intent = "You can answer this request on this page, with your API key."
    elif view.get("kind") == "approval" and not view.get("subject") and approvals.counts_people(data):
        intent = (
            f"This request needs {approvals.required_approvals(data)} approvals from different people, and this"
            " link names no one: answer with your API key, or ask for a link made out to you."
        )
    else:
        intent = "You can answer this request on this page; no sign-in is needed."
    needs = "to show the request and answer it" if resolve else "to show the request"
    shown = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=True)
    body = f"""<article class="card" aria-labelledby="page-title">
<p class="eyebrow">{_e(_label(view["kind"]))} request</p>
<h1 id="page-title">{_e(view.get("title", ""))}</h1>
<dl class="meta">
{_meta_rows(view)}
</dl>
<p class="intent" id="intent">{_e(intent)}</p>
<div id="interrupt" class="interrupt"></div>
<noscript><p class="notice">This page needs JavaScript {needs}.</p></noscript>
<details class="raw">
<summary>Request data (JSON)</summary>
<pre>{_e(shown)}</pre>
</details>
</article>
<script type="application/json" id="interrupt-view">{script_json(view)}</script>"""
    return _document(str(view.get("title", "Request")), body, script="link.js")


async def link_page(request: Request) -> Response:
    """``GET /v1/interrupts/{token}`` for a browser (pass as ``create_app(link_page=…)``)."""
    try:
        view = await engine(request).inspect_token(request.path_params["token"], base_url=base_url(request))
    except BridgeError as exc:
        if exc.status >= 500:
            raise
        return unusable_page(exc.code, exc.message, exc.status)
    if view.get("status") != "pending":
        # A conversation turn stays inspectable after it is answered; its link is still spent.
        return unusable_page("interrupt_already_resolved", "this turn of the conversation was already answered", 409)
    return interrupt_page(view)
