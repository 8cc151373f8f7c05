"""The official OpenWOP v2 JSON Schemas, vendored verbatim beside the v1 ones.

``SOURCES.md`` names each file's repository, path and commit; ``../MANIFEST.sha256``
holds their digests (checked by a test, like the v1 files). Documents the host
serves over v2 are validated against these: events (envelope and per-type
payload), the discovery document, error envelopes, run snapshots and run-list pages
(``run-snapshot`` and ``run-list-response``, taken from openwop/openwop-sdks), webhook dead-letter
pages and the endpoint verification request.
"""

from __future__ import annotations

import functools
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from referencing import Registry

from openwop_bridge.spec import json_names, read_json, schema_registry

BASE_URI = "https://openwop.dev/spec/v2/"

_PACKAGE = "openwop_bridge.spec.v2"


def schema_names() -> list[str]:
    """File names of the vendored v2 schemas."""
    return json_names(_PACKAGE, "schemas")


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """A vendored v2 schema by file name, e.g. ``run-event.schema.json``."""
    data: dict[str, Any] = read_json(_PACKAGE, "schemas", name)
    return data


@functools.cache
def registry() -> Registry:
    """A ``referencing`` registry holding every v2 schema under its ``$id`` (its file URI)."""
    return schema_registry(BASE_URI, schema_names(), schema)


@functools.cache
def validator(name: str, pointer: str = "") -> Draft202012Validator:
    """A compiled validator for a schema, or for a JSON pointer inside it (``/$defs/runId``)."""
    return Draft202012Validator({"$ref": f"{BASE_URI}{name}#{pointer}"}, registry=registry())


def problems(name: str, doc: Any, pointer: str = "") -> list[str]:
    """Every way ``doc`` fails ``name`` (at ``pointer``), each with where it failed; empty when valid."""
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}" for e in validator(name, pointer).iter_errors(doc)
    ]


def event_payload_def(event_type: str) -> str | None:
    """The ``$defs`` key that describes an event type's v2 payload, if the spec defines one."""
    index = schema("run-event-payloads.schema.json")["$defs"]["_typeIndex"]["properties"]
    entry = index.get(event_type)
    if entry is None:
        return None
    ref: str = entry["$ref"]
    return ref.rsplit("/", 1)[-1]


def _both_type_branches(error: ValidationError) -> bool:
    """The envelope's ``type`` is a ``oneOf`` of the registered enum and the vendor pattern; every
    registered type matches the pattern too, so it is "valid under each of" them. The schema's own
    text says a registered type or a vendor type is meant (an ``anyOf``): that one error is not a problem."""
    return error.validator == "oneOf" and list(error.absolute_path) == ["type"] and not error.context


def validate_event(doc: dict[str, Any]) -> list[str]:
    """Every problem with an event served over v2: the envelope and the per-type payload."""
    envelope = validator("run-event.schema.json").iter_errors(doc)
    found = [
        f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}" for e in envelope if not _both_type_branches(e)
    ]
    definition = event_payload_def(str(doc.get("type", "")))
    if definition is not None:
        pointer = f"/$defs/{definition}"
        found += [f"payload {p}" for p in problems("run-event-payloads.schema.json", doc.get("payload"), pointer)]
    return found
