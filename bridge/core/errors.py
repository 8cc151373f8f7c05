"""The one exception tree of the bridge.

Every error knows its OpenWOP ``error`` code, the HTTP status it maps to and
whether retrying the same request can help. Surfaces translate errors in one
place each: the HTTP host turns them into the OpenWOP error envelope, the AG-UI
adapter into ``RUN_ERROR`` once a stream has started.

Two roots, as in h11: :class:`BridgeError` is the caller's problem or a protocol
state (bad input, unknown run, already resolved); :class:`InternalError` is
ours. Node code sees :class:`InterruptCancelledError` and
:class:`InterruptTimeoutError` raised from ``ctx.interrupt``.
"""

from __future__ import annotations

from typing import Any, ClassVar


class BridgeError(Exception):
    """Base of every error the bridge reports on the wire."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or None

    def envelope(self) -> dict[str, Any]:
        """The OpenWOP error envelope ``{error, message, details?}``."""
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details:
            body["details"] = self.details
        return body


class ValidationError(BridgeError):
    """The request or resume value does not satisfy its schema or contract."""

    code = "validation_error"
    status = 400


class UnauthenticatedError(BridgeError):
    """No credentials, or credentials the host does not recognise."""

    code = "unauthenticated"
    status = 401


class ForbiddenError(BridgeError):
    """Authenticated, but not allowed to do this."""

    code = "forbidden"
    status = 403


class NotFoundError(BridgeError):
    """Generic unknown resource."""

    code = "not_found"
    status = 404


class RunNotFoundError(NotFoundError):
    """No run with this id is visible to the caller's tenant."""

    code = "run_not_found"


class WorkflowNotFoundError(NotFoundError):
    """No workflow with this id is loaded."""

    code = "workflow_not_found"


class InterruptNotFoundError(NotFoundError):
    """No open interrupt answers to this address or token."""

    code = "interrupt_not_found"


class InterruptAlreadyResolvedError(BridgeError):
    """Somebody else resolved it first, or the token was invalidated."""

    code = "interrupt_already_resolved"
    status = 409


class ConflictError(BridgeError):
    """The resource is in a state that does not allow this request."""

    code = "conflict"
    status = 409


class IdempotencyKeyMismatchError(BridgeError):
    """An ``Idempotency-Key`` already used for a different request (another body, another target)."""

    code = "idempotency_key_mismatch"
    status = 409


class IdempotencyInFlightError(BridgeError):
    """The first request holding this ``Idempotency-Key`` is still being handled."""

    code = "idempotency_in_flight"
    status = 409
    retryable = True


class InterruptExpiredError(BridgeError):
    """The signed token is past its expiry."""

    code = "interrupt_expired"
    status = 410


class InterruptGoneError(BridgeError):
    """The interrupt was invalidated by a parent-cancel cascade."""

    code = "interrupt_gone"
    status = 410


class InterruptCancelledStateError(BridgeError):
    """The run was cancelled while the interrupt was pending (run-scoped surface)."""

    code = "interrupt_cancelled"
    status = 422


class InterruptCancelledConflictError(InterruptCancelledStateError):
    """The same, on the legacy approvals route, whose callers expect 409 when a cancel won the race."""

    status = 409


class CorrelationMismatchError(BridgeError):
    """An external event does not match the interrupt's correlation."""

    code = "correlation_mismatch"
    status = 422


class PayloadTooLargeError(BridgeError):
    """The request body is larger than the host accepts."""

    code = "payload_too_large"
    status = 413


class UnsupportedMediaTypeError(BridgeError):
    """The request body is not JSON."""

    code = "unsupported_media_type"
    status = 415


class CapabilityRefusedError(ValidationError):
    """The workflow needs a capability this host does not offer."""

    def __init__(self, capability: str, message: str) -> None:
        super().__init__(message, details={"requiredCapability": capability})


class InternalError(BridgeError):
    """A defect or an unexpected condition on our side."""

    code = "internal_error"
    status = 500
    retryable = True


class StaleOwnerError(InternalError):
    """A write was fenced off: another executor owns the run now."""

    code = "stale_owner"
    status = 409


class ReplayDivergedError(InternalError):
    """Re-executing a node produced different commands than its history."""

    code = "replay_diverged"
    status = 500
    retryable = False


# --- errors raised into node code -----------------------------------------------


class NodeError(Exception):
    """Base for errors a node may raise to fail with a specific OpenWOP code."""

    code: str = "node_failed"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details or None


class InterruptCancelledError(NodeError):
    """Raised from ``ctx.interrupt`` when the interrupt or its run was cancelled."""

    code = "interrupt_cancelled"

    def __init__(self, message: str = "the interrupt was cancelled", *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class InterruptTimeoutError(NodeError):
    """Raised from ``ctx.interrupt`` when the interrupt's ``timeoutMs`` elapsed."""

    code = "interrupt_timeout"


class ApprovalRejectedError(NodeError):
    """An approval gate was rejected (by a person, a quorum or a timeout)."""

    code = "approval_rejected"


class ConversationClosedError(NodeError):
    """An exchange was attempted on a conversation that is already closed."""

    code = "validation_error"
