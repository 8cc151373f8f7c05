"""``openwop-bridge``: the command line.

``serve`` starts the host (SQLite file, demo workflows and a printed dev key by
default). Every flag has an ``OPENWOP_BRIDGE_*`` environment variable
(:mod:`openwop_bridge.host.options`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from openwop_bridge.core.auth import ApiKey, KeyRing, generate_dev_key, load_keys_file, make_key, parse_key_spec
from openwop_bridge.core.errors import BridgeError
from openwop_bridge.core.events import ENGINE_VERSION
from openwop_bridge.core.notices import RetryPolicy
from openwop_bridge.core.quota import RunRate
from openwop_bridge.core.tokens import parse_secret_spec
from openwop_bridge.core.workflow import WorkflowDefinition, load_workflow_dir
from openwop_bridge.host import admin, plugins
from openwop_bridge.host.arguments import OptionParser, parse
from openwop_bridge.host.http.limits import HeaderLimits, http_protocol
from openwop_bridge.host.http.streams import StreamLimits
from openwop_bridge.host.options import add_serve_arguments, conversation_limits
from openwop_bridge.host.plugins import ServerBuild
from openwop_bridge.notify.webhook.channel import WebhookSettings
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.runtime.telemetry import configure_logging
from openwop_bridge.store import open_store
from openwop_bridge.store.base import Store

if TYPE_CHECKING:
    import uvicorn

    from openwop_bridge.host.web.signin import SignIn
    from openwop_bridge.identity.layer import Identity

log = logging.getLogger("openwop_bridge.host.cli")

DEV_KEY_NAMESPACE = "bridge.dev-key"


def demo_workflows() -> list[WorkflowDefinition]:
    """The demo workflows bundled with the package."""
    folder = resources.files("openwop_bridge").joinpath("demo")
    with resources.as_file(folder) as path:
        return load_workflow_dir(Path(path))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the docs and tests)."""
    parser = OptionParser(
        prog="openwop-bridge", description="OpenWOP interrupt host with AG-UI and LangGraph adapters."
    )
    parser.add_argument("--version", action="version", version=ENGINE_VERSION)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start the HTTP host")
    add_serve_arguments(serve)
    admin.add_keys_parser(sub)
    admin.add_audit_parser(sub)

    from openwop_bridge.bench.options import add_arguments as add_bench_arguments

    add_bench_arguments(sub.add_parser("bench", help="benchmarks side by side with peers, printed as a table"))
    return parser


def _load_keys(args: argparse.Namespace) -> list[ApiKey]:
    keys = [parse_key_spec(spec) for spec in args.api_key]
    if args.keys_file:
        keys += load_keys_file(args.keys_file)
    return keys


def allowed_hosts(args: argparse.Namespace) -> list[str] | None:
    """The host names ``serve`` answers to (links are built from them), or None for any."""
    names = [h.strip() for h in args.allowed_host if h.strip()]
    if "*" in names:
        return None
    names += ["localhost", "127.0.0.1", "::1"]
    if args.host not in ("", "0.0.0.0", "::"):
        names.append(args.host)
    if args.public_url and urlsplit(args.public_url).hostname:
        names.append(str(urlsplit(args.public_url).hostname))
    return names


def run_rate(per_minute: int) -> RunRate:
    """``--max-runs-per-minute``: that many a minute per key, in bursts of a quarter of it (at least one)."""
    return RunRate(per_minute=per_minute, burst=max(1, per_minute // 4))


def build_server(args: argparse.Namespace) -> tuple[Any, Engine, KeyRing, Callable[[], None]]:
    """The ASGI app, engine and key ring for ``serve`` (without starting them)."""
    # The notify file is checked before anything opens: a bad one stops ``serve`` in one line.
    notify = None
    if getattr(args, "notify_config", None):
        from openwop_bridge.notify.config import load_notify_config  # pydantic's models of it load only when used

        notify = load_notify_config(args.notify_config)
    if notify is not None:
        notify.link_base(args.public_url)
    # So is the identity file (its issuers' keys are fetched when a token first needs them).
    identity_config = None
    if getattr(args, "identity_config", None):
        from openwop_bridge.identity.config import load_identity_config  # pydantic's models of it load only when used

        identity_config = load_identity_config(args.identity_config)
    people: dict[tuple[str, str], str] = {}
    if notify is not None:  # a person naming their identity must name an issuer of the identity file
        from openwop_bridge.host.people import person_subjects

        people = person_subjects(notify, identity_config, path=args.notify_config)
    store = open_store(admin.database(args.db))
    secrets = [parse_secret_spec(s) for s in args.token_secret]
    engine = Engine(
        store,
        config=EngineConfig(
            conversation_enabled=not args.no_conversation,
            separation_of_duties=args.separation_of_duties,
            default_threshold=args.escalation_threshold,
            lease_ms=args.lease_ms,
            idempotency_ttl_ms=args.idempotency_hours * 3600 * 1000,
            conversation_limits=conversation_limits(args),
            snapshot_messages=int(args.snapshot_messages),
            run_rate=run_rate(int(args.max_runs_per_minute)),
            notify_retry=RetryPolicy(base_ms=args.notify_retry_base_ms, max_attempts=args.notify_max_attempts),
            webhook_retry=RetryPolicy(
                base_ms=args.webhook_retry_base_ms,
                max_attempts=args.webhook_max_attempts,
                timeout_ms=args.webhook_timeout_ms,
            ),
        ),
        token_secrets=secrets,
    )
    issuers = () if identity_config is None else tuple(i.issuer for i in identity_config.issuers)
    build = _install(engine, args, issuers)
    keys = _load_keys(args)
    ring = KeyRing(keys)
    dev: dict[str, str] = {}
    # An identity file, like a key, replaces the dev key: its people sign in with the provider's tokens.
    ensure_dev_key = _dev_key_starter(engine, ring, not keys and identity_config is None, dev)
    routes = list(build.routes)
    fragments = list(build.openapi)
    identity = None
    if identity_config is not None:
        from openwop_bridge.identity.layer import Identity, metadata_routes
        from openwop_bridge.identity.verifier import TokenVerifier

        identity = Identity(identity_config, TokenVerifier(identity_config, people=people), args.public_url)
        ring.use_tokens(identity.resolve)
        routes += metadata_routes(identity)
    sign_in = None
    if identity is not None and identity.config.inbox is not None and not args.no_ui:
        from openwop_bridge.host.web.signin import install_sign_in

        sign_in = install_sign_in(engine, identity, ring, routes, fragments)
    if notify is not None:
        from openwop_bridge.host.notifying import install_notify  # its channels' libraries load only when used

        notifying = install_notify(engine, notify, args.public_url)
        routes += notifying.routes
        fragments += notifying.openapi
    banner = _banner(args, store, engine, ring, dev, routes)

    from openwop_bridge.host import web
    from openwop_bridge.host.app import create_app
    from openwop_bridge.host.http.openapi import web_fragment

    if not args.no_ui:
        routes += web.web_routes()
        fragments.append(web_fragment())
    routes += web.front_routes(pages=not args.no_ui)
    app = create_app(
        engine,
        ring,
        extra_routes=routes,
        public_url=args.public_url,
        link_page=None if args.no_ui else web.link_page,
        on_startup=[ensure_dev_key, *build.startup, lambda: _async(banner)],
        on_shutdown=[
            *build.shutdown,
            *([identity.verifier.aclose] if identity is not None else []),
            *([sign_in.flow.aclose] if sign_in is not None else []),
        ],
        openapi=fragments,
        facets=build.discovery,
        allowed_hosts=allowed_hosts(args),
        stream_limits=StreamLimits(
            per_key=int(args.max_streams_per_key),
            per_run=int(args.max_streams_per_run),
            buffer_bytes=int(args.stream_buffer_bytes),
        ),
        pending_response_bytes=int(args.max_pending_response_bytes),
        webhooks=WebhookSettings(
            # The development server (no key configured: a dev key is printed) admits local receivers.
            allow_loopback=args.webhook_allow_loopback or (not keys and identity is None),
            rotation_overlap_s=args.webhook_rotation_overlap_seconds,
        ),
        layers=_identity_layers(identity, sign_in),
        auth_lanes=[] if identity is None else _auth_lanes(identity, sessions=sign_in is not None),
    )
    return app, engine, ring, banner


def _identity_layers(identity: Identity | None, sign_in: SignIn | None) -> list[Any]:
    """The ASGI layers verifying the identity providers' tokens and the inbox's session cookie."""
    if identity is None:
        return []
    from starlette.middleware import Middleware

    from openwop_bridge.identity.layer import BearerTokens

    layers = [Middleware(BearerTokens, identity=identity)]
    if sign_in is not None:
        from openwop_bridge.host.web.signin import SessionCookies

        layers.append(Middleware(SessionCookies, sign_in=sign_in))
    return layers


def _auth_lanes(identity: Identity, *, sessions: bool) -> list[dict[str, Any]]:
    """The ``auth.lanes[]`` of the identity file's providers (v2 discovery), and the inbox's sessions."""
    from openwop_bridge.identity.layer import auth_lanes

    return auth_lanes(identity.config, sessions=sessions)


def _install(engine: Engine, args: argparse.Namespace, issuers: tuple[str, ...] = ()) -> ServerBuild:
    """Install the plugins (told the identity file's ``issuers``), then give the engine the demo, folder and
    plugin workflows."""
    options = {"graph": list(args.graph), "no_agui": args.no_agui}
    build = ServerBuild(engine=engine, db=args.db, options=options, identity_issuers=issuers)
    for name, install in plugins.installed():
        log.debug("installing plugin %s", name)
        install(build)
    if args.graph and "graph" not in build.claimed:
        raise BridgeError("--graph needs the LangGraph adapter: pip install 'openwop-bridge[langgraph]'")
    workflows: list[WorkflowDefinition] = [] if args.no_demo else demo_workflows()
    for folder in args.workflows:
        workflows += load_workflow_dir(folder)
    for wf in [*workflows, *build.workflows]:
        engine.add_workflow(wf)
    return build


def _dev_key_starter(engine: Engine, ring: KeyRing, wanted: bool, dev: dict[str, str]) -> Callable[[], Awaitable[None]]:
    """A startup step that, when ``wanted`` (no key nor identity file configured), adds the database's dev key
    (written once) to ``ring``."""

    async def ensure_dev_key() -> None:
        if not wanted:
            return
        state = engine.adapter_state(DEV_KEY_NAMESPACE)
        stored = await state.get("key")
        if stored is None:
            candidate, _ = generate_dev_key()
            # Instances starting together on a new database agree on the first key written.
            if await state.put("key", candidate, only_if_absent=True):
                stored = candidate
            else:
                stored = await state.get("key")
        ring.add(make_key(str(stored), principal="dev", scopes=["*"], roles=["admin"]))
        dev["key"] = str(stored)

    return ensure_dev_key


#: The surfaces the banner names when a plugin mounted them: (label, a route it mounts, what to print).
SURFACES: tuple[tuple[str, str, str], ...] = (
    ("AG-UI", "/agui/{workflow_id}", "/agui/<workflowId>"),
    ("LangGraph", "/langgraph/info", "/langgraph (LangGraph API for langgraph_sdk and useStream)"),
    ("MCP", "/mcp", "/mcp (streamable HTTP)"),
    ("A2A", "/a2a", "/a2a (JSON-RPC), agent card at /.well-known/agent-card.json"),
)


def _banner(
    args: argparse.Namespace, store: Store, engine: Engine, ring: KeyRing, dev: dict[str, str], routes: list[Any]
) -> Callable[[], None]:
    """What ``serve`` prints once it is up (``routes``: the served extra routes, read when it prints)."""

    def banner() -> None:
        url = args.public_url or f"http://{args.host}:{args.port}"
        lines = [
            f"openwop-bridge {ENGINE_VERSION.split('/')[1]} serving on {url}",
            f"  OpenWOP  : v1 at {url.rstrip('/')}/v1, v2 at {url.rstrip('/')}/ (OpenWOP-Version: 2)",
            f"  database : {getattr(store, 'display_url', args.db)}",
            f"  workflows: {', '.join(wf.id for wf in engine.workflows()) or '(none)'}",
        ]
        if dev.get("key"):
            lines += [
                f"  dev API key (every scope, tenant 'default'): {dev['key']}",
                f"  try: curl -s -H 'Authorization: Bearer {dev['key']}' {url}/v1/workflows",
            ]
        else:
            lines.append(f"  API keys : {len(ring)} configured")
        if ring.takes_tokens:
            lines.append("  identity : bearer tokens of the identity file's providers (--identity-config)")
        paths = {getattr(r, "path", "") for r in routes}
        lines += [f"  {label:<9}: {url}{where}" for label, path, where in SURFACES if path in paths]
        if args.webhook_allow_loopback:
            lines.append("  webhooks : loopback URLs admitted (--webhook-allow-loopback)")
        elif dev.get("key"):
            lines.append("  webhooks : loopback URLs admitted (no API key configured: a development server)")
        if not args.no_ui:
            lines.append(f"  inbox    : {url}/ui/")
            lines.append(f"  API docs : {url}/docs/")
        lines.append("  stop     : Ctrl+C or SIGTERM (waiting runs stay in the database and resume at the next start)")
        print("\n".join(lines), flush=True)

    return banner


async def _async(fn: Callable[[], None]) -> None:
    fn()


def serve(args: argparse.Namespace) -> int:
    """Run the host under uvicorn until interrupted."""
    import uvicorn

    configure_logging(args.log_level, args.log_format)
    app, engine, _, _ = build_server(args)
    # A database another server holds is refused in one line before anything starts.
    engine.store.reserve()
    # Bound here, before the application starts, so the banner it prints names a port
    # that is really ours, and a busy port fails in one line instead of after it.
    sock = _listen(args.host, args.port)
    args.port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level.lower(),
        access_log=False,
        lifespan="on",
        log_config=None,
        ws="none",  # no route speaks WebSocket: an upgrade is answered as plain HTTP, and no WebSocket library loads
        # Open event streams end at shutdown instead of holding it up.
        timeout_graceful_shutdown=5,
        http=http_protocol(HeaderLimits(args.header_timeout, int(args.max_header_bytes), int(args.max_header_fields))),
    )
    server = uvicorn.Server(config)
    with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
        runner.run(_serving(engine, server, sock))
    return 0


async def _serving(engine: Engine, server: uvicorn.Server, sock: socket.socket) -> None:
    """Start the engine, then serve until stopped; the app's lifespan stops the engine at shutdown.

    The engine starts before the server, so a database it cannot open is one line (:func:`main`'s),
    not a traceback from the application's startup; the lifespan finds it started.
    """
    try:
        await engine.start()
    except BaseException:
        with contextlib.suppress(Exception):
            await engine.stop()  # what opened before the failure is closed
        raise
    try:
        await server.serve(sockets=[sock])
    finally:
        if engine.started:  # the server's own startup failed: its lifespan never stopped the engine
            await engine.stop()


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``, or a one-line error saying why not."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = (
            "the address is already in use (another server is running there; choose another --port)"
            if exc.errno == errno.EADDRINUSE
            else exc.strerror or str(exc)
        )
        raise RuntimeError(f"cannot listen on {host}:{port}: {reason}") from None
    return sock


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``openwop-bridge`` console script."""
    args = parse(build_parser(), argv)
    try:
        if args.command == "serve":
            return serve(args)
        if args.command == "keys":
            return asyncio.run(admin.keys(args))
        if args.command == "audit":
            return admin.audit(args)
        if args.command == "bench":
            from openwop_bridge.bench import run as run_bench

            return run_bench(args)
    except BridgeError as exc:
        print(f"openwop-bridge: {exc.message}", file=sys.stderr)
        if exc.details:
            for problem in exc.details.get("problems", []):
                print(f"  - {problem}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"openwop-bridge: {exc}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
