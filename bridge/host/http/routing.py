"""Routes as data: one :class:`Operation` per method and path drives everything said about it.

An operation declares its method and path, the handler, the scope a caller must hold, whether it
honours ``Idempotency-Key`` (and under which major's rules), its request body and what it answers.
From a table of them, :func:`routes` builds the Starlette routes (the scope checked, then the key,
then the handler) and :func:`paths` and :func:`body_schemas` the OpenAPI document's paths and
request-body components. Each major (:mod:`openwop_bridge.host.v1`, :mod:`openwop_bridge.host.v2`)
keeps its table; the app (:mod:`openwop_bridge.host.app`) serves them side by side.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from openwop_bridge.host.http.deps import principal
from openwop_bridge.host.http.idempotency import Rules, idempotent
from openwop_bridge.host.http.openapi_ops import schema_ref

Handler = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Operation:
    """One operation: how it is served and how it is documented.

    ``path`` is the documented path (``/v1/runs/{runId}``); the served one spells each
    parameter in snake case (``{run_id}``) unless ``route`` says otherwise (a convertor).
    ``scope``: what the caller must hold (any one of several), checked before anything
    else; ``None`` when the handler needs no scope of its own. ``auth=False``: open to
    anyone (a signed link is its own authorization; documented with no security).
    ``handler=None`` documents an operation another table serves (one resource with a
    representation per major).
    """

    method: str
    path: str
    handler: Handler | None
    summary: str
    responses: Mapping[str, Any]
    scope: str | tuple[str, ...] | None = None
    idempotency: Rules | None = None
    auth: bool = True
    body: type[BaseModel] | Mapping[str, Any] | None = None
    body_required: bool = True
    params: Sequence[Mapping[str, Any]] = ()
    tags: Sequence[str] = ()
    operation_id: str | None = None
    route: str | None = None

    @property
    def scopes(self) -> tuple[str, ...]:
        """The scopes any one of which lets a caller in (none: no check)."""
        if self.scope is None:
            return ()
        return (self.scope,) if isinstance(self.scope, str) else tuple(self.scope)

    @property
    def route_path(self) -> str:
        """The path as Starlette serves it."""
        return self.route or re.sub(r"\{(\w+)\}", lambda m: "{" + _snake(m.group(1)) + "}", self.path)

    @property
    def endpoint(self) -> str:
        """``METHOD /path``: what idempotency records are scoped to."""
        return f"{self.method} {self.path}"

    def document(self, parameters: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The OpenAPI operation object (``parameters`` follow the operation's own)."""
        doc: dict[str, Any] = {}
        if self.operation_id:
            doc["operationId"] = self.operation_id
        doc["summary"] = self.summary
        if self.tags:
            doc["tags"] = list(self.tags)
        if self.params or parameters:
            doc["parameters"] = [dict(p) for p in (*self.params, *parameters)]
        doc["responses"] = dict(self.responses)
        if self.body is not None:
            schema = schema_ref(self.body.__name__) if isinstance(self.body, type) else dict(self.body)
            doc["requestBody"] = {"required": self.body_required, "content": {"application/json": {"schema": schema}}}
        if not self.auth:
            doc["security"] = []
        return copy.deepcopy(doc)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def scoped(scopes: tuple[str, ...]) -> Callable[[Handler], Handler]:
    """Check that the caller (401 without credentials) holds one of ``scopes`` (else 403) before the handler."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def guarded(request: Request) -> Response:
            who = principal(request)
            if not any(who.has_scope(s) for s in scopes):
                who.require(scopes[-1])
            return await handler(request)

        return guarded

    return wrap


def serve(op: Operation, errors: Callable[[Handler], Handler] | None = None) -> Handler:
    """The handler of ``op`` as served: its scope checked, then its ``Idempotency-Key``, errors in the major's words."""
    if op.handler is None:
        raise ValueError(f"{op.endpoint} is documented here and served elsewhere")
    handler = op.handler
    if op.idempotency is not None:
        handler = idempotent(op.endpoint, anonymous=not op.auth, rules=op.idempotency)(handler)
    if op.scopes:
        handler = scoped(op.scopes)(handler)
    return errors(handler) if errors is not None else handler


def routes(table: Iterable[Operation], errors: Callable[[Handler], Handler] | None = None) -> list[Route]:
    """The Starlette routes of the served operations of ``table`` (``errors``: the major's error wrapper)."""
    return [Route(op.route_path, serve(op, errors), methods=[op.method]) for op in table if op.handler is not None]


def paths(table: Iterable[Operation], parameters: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The OpenAPI ``paths`` of ``table`` (``parameters``: added to every operation, such as a version header)."""
    out: dict[str, Any] = {}
    for op in table:
        documented = out.setdefault(op.path, {})
        if op.method.lower() in documented:
            raise ValueError(f"{op.endpoint} is declared twice")
        documented[op.method.lower()] = op.document(parameters)
    return out


def body_schemas(table: Iterable[Operation]) -> dict[str, Any]:
    """The component schemas of the request bodies of ``table`` (each model and the models it uses)."""
    schemas: dict[str, Any] = {}
    for op in table:
        if isinstance(op.body, type):
            schema = op.body.model_json_schema(ref_template="#/components/schemas/{model}")
            schemas.update(schema.pop("$defs", {}))
            schemas[op.body.__name__] = schema
    return schemas


def one_route_per_path(routes: Sequence[BaseRoute]) -> list[BaseRoute]:
    """Merge the plain function routes that share a path into one route dispatching on the method.

    Starlette answers a wrong method with the first route whose path matches, so
    separate ``GET`` and ``POST`` routes for one path would send ``405`` with an
    ``Allow`` header naming only one of them.
    """
    groups: dict[str, list[Route]] = {}
    for route in routes:
        if type(route) is Route and inspect.iscoroutinefunction(route.endpoint) and route.methods:
            groups.setdefault(route.path, []).append(route)
    merged: list[BaseRoute] = []
    for route in routes:
        group = groups.get(route.path, []) if isinstance(route, Route) else []
        if len(group) < 2 or not any(r is route for r in group):
            merged.append(route)
        elif route is group[0]:
            merged.append(_dispatching_route(group))
    return merged


def _dispatching_route(group: Sequence[Route]) -> Route:
    """One route for ``group`` (same path), calling the endpoint of the request's method."""
    handlers: dict[str, Callable[[Request], Awaitable[Response]]] = {
        method: r.endpoint for r in group for method in r.methods or ()
    }

    async def dispatch(request: Request) -> Response:
        return await handlers[request.method](request)

    return Route(group[0].path, dispatch, methods=sorted(handlers), name=group[0].name)
