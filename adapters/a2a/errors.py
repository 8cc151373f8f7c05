"""The bridge's refusals as A2A JSON-RPC errors (the interop map's ``errors`` rows)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from a2a.utils.errors import (
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from openwop_bridge import BridgeError, InterruptAlreadyResolvedError, NotFoundError

#: One message for every task the caller cannot read, so that existence does not leak.
NOT_FOUND = "task not found"


@contextlib.contextmanager
def as_a2a_errors() -> Iterator[None]:
    """Translate :class:`BridgeError`: not found → ``-32001``, refused input → ``-32602``, no right → ``-32600``.

    An interrupt already answered (``409 interrupt_already_resolved``) is ``-32004``: the task's state no
    longer admits the message, as for a message to a finished task. Refusals carry the OpenWOP envelope
    as ``data.openwop``.
    """
    try:
        yield
    except NotFoundError as exc:
        raise TaskNotFoundError(NOT_FOUND) from exc
    except InterruptAlreadyResolvedError as exc:
        raise UnsupportedOperationError(f"{exc.code}: {exc.message}", data={"openwop": exc.envelope()}) from exc
    except BridgeError as exc:
        if exc.status in (400, 409, 410, 413, 422):
            raise InvalidParamsError(f"{exc.code}: {exc.message}", data={"openwop": exc.envelope()}) from exc
        if exc.status in (401, 403):
            raise InvalidRequestError(f"{exc.code}: {exc.message}", data={"openwop": exc.envelope()}) from exc
        raise InternalError(exc.code) from exc
