"""Runs one ``openwop-client`` 2.x call and prints its typed result as JSON.

The v1 lane imports ``openwop-client`` 1.x from the venv; 2.x is the same
package name, installed apart (``.venv/openwop-client-v2``), so the v2 lane runs
each call in a process whose ``sys.path`` starts there. Usage:
``python tests/sdk_v2_driver.py <sdk-dir> <base-url> <api-key> '<json call>'``
with ``{"op": <OpenwopClient method>, "args": [...], "kwargs": {...}, "body": <request class>?}``.
The answer is ``{"type": <result class>, "version": <sdk version>, "value": …}`` or
``{"wopError": {"status", "error", "message", "details"}}``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def main() -> None:
    """Make the call named on the command line."""
    sdk_dir, url, key, raw = sys.argv[1:5]
    sys.path.insert(0, sdk_dir)
    import openwop_client as sdk

    call = json.loads(raw)
    client = sdk.OpenwopClient(base_url=url, api_key=key, timeout=15)
    args = list(call.get("args", []))
    if call.get("body"):
        cls = getattr(sdk, call["body"])
        args.append(cls(**call.get("bodyArgs", {})))
    try:
        result = getattr(client, call["op"])(*args, **call.get("kwargs", {}))
        if call.get("iterate"):
            result = list(result)
        out = {
            "type": type(result).__name__ if not isinstance(result, list) else [type(r).__name__ for r in result],
            "value": _jsonable(result),
        }
    except sdk.WopError as err:
        env = err.envelope
        out = {
            "wopError": {
                "status": err.status,
                "error": env.error if env else None,
                "message": env.message if env else None,
                "details": env.details if env else None,
                "raw": err.raw_text[:2000],
            }
        }
    out["version"] = sdk.__version__
    out["sdkFile"] = sdk.__file__
    print(json.dumps(out))


if __name__ == "__main__":
    main()
