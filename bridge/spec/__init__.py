"""The official OpenWOP v1 JSON Schemas and conformance fixtures, vendored verbatim.

``MANIFEST.sha256`` records the digest of every vendored file; a test checks the
files against it (and against the upstream copy when one is at hand), so a
local edit to the protocol's own documents cannot slip in.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

BASE_URI = "https://openwop.dev/spec/v1/"

_PACKAGE = "openwop_bridge.spec"


def read_json(package: str, folder: str, name: str) -> Any:
    """A vendored JSON file: ``name`` in ``folder`` of ``package``."""
    return json.loads(resources.files(package).joinpath(folder, name).read_text("utf-8"))


def json_names(package: str, folder: str) -> list[str]:
    """File names of the vendored JSON files in ``folder`` of ``package``."""
    return sorted(p.name for p in resources.files(package).joinpath(folder).iterdir() if p.name.endswith(".json"))


def schema_registry(base_uri: str, names: Iterable[str], schema: Callable[[str], dict[str, Any]]) -> Registry:
    """A ``referencing`` registry holding each named schema under its file URI (``base_uri`` + name)
    and, where that differs, under its ``$id``."""
    reg: Registry = Registry()
    for name in names:
        doc = schema(name)
        resource = Resource.from_contents(doc, default_specification=DRAFT202012)
        reg = reg.with_resource(base_uri + name, resource)
        if "$id" in doc and doc["$id"] != base_uri + name:
            reg = reg.with_resource(doc["$id"], resource)
    return reg.crawl()


def _read(folder: str, name: str) -> Any:
    return read_json(_PACKAGE, folder, name)


def schema_names() -> list[str]:
    """File names of the vendored schemas."""
    return json_names(_PACKAGE, "schemas")


def fixture_names() -> list[str]:
    """File names of the vendored conformance fixture workflows."""
    return json_names(_PACKAGE, "fixtures")


def load_fixture(name: str) -> dict[str, Any]:
    """One conformance fixture workflow, as the upstream JSON."""
    data: dict[str, Any] = _read("fixtures", name if name.endswith(".json") else f"{name}.json")
    return data


def iter_fixtures() -> Iterator[dict[str, Any]]:
    """Every vendored conformance fixture workflow."""
    for name in fixture_names():
        yield load_fixture(name)


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """A vendored schema by file name, e.g. ``run-event.schema.json``."""
    data: dict[str, Any] = _read("schemas", name)
    return data


@functools.cache
def registry() -> Registry:
    """A ``referencing`` registry holding every schema under its ``$id`` and file URI."""
    return schema_registry(BASE_URI, schema_names(), schema)


@functools.cache
def validator(name: str, pointer: str = "") -> Draft202012Validator:
    """A compiled validator for a schema, or for ``$defs/<name>`` inside it.

    ``pointer`` is a ``$defs`` key, e.g. ``validator("run-event-payloads.schema.json",
    "nodeSuspended")``.
    """
    if pointer:
        target: dict[str, Any] = {"$ref": f"{BASE_URI}{name}#/$defs/{pointer}"}
    else:
        target = schema(name)
    return Draft202012Validator(target, registry=registry())


_EVENT_DEF_OVERRIDES: dict[str, str] = {}


def event_payload_def(event_type: str) -> str | None:
    """The ``$defs`` key that describes an event type's payload, if the spec defines one."""
    index = schema("run-event-payloads.schema.json")["$defs"]["_typeIndex"]["properties"]
    entry = index.get(event_type)
    if entry is None:
        return None
    ref: str = entry["$ref"]
    return ref.rsplit("/", 1)[-1]


def validate_event(doc: dict[str, Any]) -> list[str]:
    """Every problem with an emitted event document: envelope, payload and, for
    conversation events, the conversation-event schema. Empty when valid."""
    problems = [e.message for e in validator("run-event.schema.json").iter_errors(doc)]
    definition = event_payload_def(doc.get("type", ""))
    if definition is not None:
        problems += [
            f"payload: {e.message}"
            for e in validator("run-event-payloads.schema.json", definition).iter_errors(doc.get("payload"))
        ]
    if str(doc.get("type", "")).startswith("conversation."):
        problems += [
            f"conversation payload: {e.message}"
            for e in validator("conversation-event.schema.json").iter_errors(doc.get("payload"))
        ]
    return problems
