"""The host: the HTTP surface, the web pages, the command line, discovery and plugins.

Adapters take what they need of the host from here: how to join ``serve``
(:class:`ServerBuild`), the helpers that make their routes speak like the rest, and
the threads a protocol binds to runs (:class:`Threads`).
"""

from __future__ import annotations

from openwop_bridge.host.cli import build_parser, build_server
from openwop_bridge.host.http.body import MAX_BODY, MAX_JSON_DEPTH, read_bytes, read_json, replaying, too_deep
from openwop_bridge.host.http.deps import base_url, principal
from openwop_bridge.host.http.openapi import error_responses
from openwop_bridge.host.http.paged import array_stream
from openwop_bridge.host.http.responses import JSONResponse, error_headers
from openwop_bridge.host.http.streams import guarded, guarded_app, guarded_stream
from openwop_bridge.host.plugins import ServerBuild
from openwop_bridge.host.web.pages import page_headers
from openwop_bridge.runtime.adapter_threads import ThreadRecord, Threads
from openwop_bridge.runtime.telemetry import configure_logging

__all__ = [
    "MAX_BODY",
    "MAX_JSON_DEPTH",
    "JSONResponse",
    "ServerBuild",
    "ThreadRecord",
    "Threads",
    "array_stream",
    "base_url",
    "build_parser",
    "build_server",
    "configure_logging",
    "error_headers",
    "error_responses",
    "guarded",
    "guarded_app",
    "guarded_stream",
    "page_headers",
    "principal",
    "read_bytes",
    "read_json",
    "replaying",
    "too_deep",
]
