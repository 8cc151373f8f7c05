"""JSON Schema checks shared by every kind: compiled once, problems listed by path."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from bridge.core.errors import ValidationError


def schema_errors(validator: Draft202012Validator, value: Any, prefix: str) -> list[str]:
    """Every problem ``validator`` finds in ``value``, as ``prefix/path: message`` lines."""
    out = []
    for e in validator.iter_errors(value):
        where = "/".join(str(p) for p in e.absolute_path)
        out.append(f"{prefix}{'/' + where if where else ''}: {e.message}")
    return out


@functools.lru_cache(maxsize=512)
def _compiled(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


def compile_schema(schema: Mapping[str, Any], what: str = "resumeSchema") -> Draft202012Validator:
    """A cached validator for a JSON Schema supplied by a workflow or node.

    Raises :class:`ValidationError` when the schema itself is not valid JSON Schema.
    """
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValidationError(f"{what} is not a valid JSON Schema: {exc.message}") from exc
    return _compiled(text)


def validate_against(schema: Mapping[str, Any] | None, value: Any, what: str) -> None:
    """Validate a value against a JSON Schema; :class:`ValidationError` lists the problems."""
    if not schema:
        return
    problems = schema_errors(compile_schema(schema), value, what)
    if problems:
        raise ValidationError(f"{what} does not match its schema", details={"problems": problems[:20]})
