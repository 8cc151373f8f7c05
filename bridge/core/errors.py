"""The one exception tree of the bridge.

Every error knows its OpenWOP ``error`` code, the HTTP status it maps to and
whether retrying the same request can help; a subclass names them in its class
line (``class ConflictError(BridgeError, code="conflict", status=409)``), and
inherits what it does not name. Surfaces translate errors in one
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

    def __init_subclass__(
        cls, *, code: str | None = None, status: int | None = None, retryable: bool | None = None, **kw: Any
    ) -> None:
        """A subclass names what differs from its base: ``class X(BridgeError, code="x", status=409)``."""
        super().__init_subclass__(**kw)
        if code is not None:
            cls.code = code
        if status is not None:
            cls.status = status
        if retryable is not None:
            cls.retryable = retryable

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


class ValidationError(BridgeError, code="validation_error", status=400):
    """The request or resume value does not satisfy its schema or contract."""


class UnauthenticatedError(BridgeError, code="unauthenticated", status=401):
    """No credentials, or credentials the host does not recognise."""


class SenderConstraintMissingError(UnauthenticatedError, code="sender_constraint_missing"):
    """The answer is below the gate's assurance: a key-bound gate needs a passkey assertion over the decision."""


class ForbiddenError(BridgeError, code="forbidden", status=403):
    """Authenticated, but not allowed to do this."""


class NotFoundError(BridgeError, code="not_found", status=404):
    """Generic unknown resource."""


class RunNotFoundError(NotFoundError, code="run_not_found"):
    """No run with this id is visible to the caller's tenant."""


class WorkflowNotFoundError(NotFoundError, code="workflow_not_found"):
    """No workflow with this id is loaded."""


class InterruptNotFoundError(NotFoundError, code="interrupt_not_found"):
    """No open interrupt answers to this address or token."""


class InterruptAlreadyResolvedError(BridgeError, code="interrupt_already_resolved", status=409):
    """Somebody else resolved it first, or the token was invalidated."""


class ConflictError(BridgeError, code="conflict", status=409):
    """The resource is in a state that does not allow this request."""


class KeyTakenError(ConflictError):
    """A value to be stored only under a free key found the key taken; nothing of its transaction was written."""


class IdempotencyKeyMismatchError(BridgeError, code="idempotency_key_mismatch", status=409):
    """An ``Idempotency-Key`` already used for a different request (another body, another target)."""


class IdempotencyInFlightError(BridgeError, code="idempotency_in_flight", status=409, retryable=True):
    """The first request holding this ``Idempotency-Key`` is still being handled."""


class InterruptExpiredError(BridgeError, code="interrupt_expired", status=410):
    """The signed token is past its expiry."""


class InterruptGoneError(BridgeError, code="interrupt_gone", status=410):
    """The interrupt was invalidated by a parent-cancel cascade."""


class AnswerAfterCancelError(BridgeError, code="interrupt_cancelled", status=422):
    """An answer to an interrupt whose run was cancelled while it was pending (run-scoped surface)."""


class LegacyAnswerAfterCancelError(AnswerAfterCancelError, status=409):
    """The same answer after a cancel, on the legacy approvals route, whose callers expect 409 there."""


class CorrelationMismatchError(BridgeError, code="correlation_mismatch", status=422):
    """An external event does not match the interrupt's correlation."""


class PayloadTooLargeError(BridgeError, code="payload_too_large", status=413):
    """The request body is larger than the host accepts."""


class UnsupportedMediaTypeError(BridgeError, code="unsupported_media_type", status=415):
    """The request body is not JSON."""


class RateLimitedError(BridgeError, code="rate_limited", status=429, retryable=True):
    """The caller holds or asks more than a limit of the host allows; retry after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: int, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details={**(details or {}), "retryAfter": retry_after_s})
        #: Seconds to wait before retrying, sent as ``Retry-After``.
        self.retry_after_s = retry_after_s


class CapabilityRefusedError(ValidationError):
    """The workflow needs a capability this host does not offer."""

    def __init__(self, capability: str, message: str) -> None:
        super().__init__(message, details={"requiredCapability": capability})


class InternalError(BridgeError, code="internal_error", status=500, retryable=True):
    """A defect or an unexpected condition on our side."""


class StaleOwnerError(InternalError, code="stale_owner", status=409):
    """A write was fenced off: another executor owns the run now."""


class ReplayDivergedError(InternalError, code="replay_diverged", status=500, retryable=False):
    """Re-executing a node produced different commands than its history."""


class StatusTransitionError(InternalError, retryable=False):
    """A write would change a run's or an interrupt's status in a way ``core/statuses.py`` forbids."""


# --- errors raised into node code -----------------------------------------------


class NodeError(Exception):
    """Base for errors a node may raise to fail with a specific OpenWOP code."""

    code: str = "node_failed"

    def __init_subclass__(cls, *, code: str | None = None, **kw: Any) -> None:
        """A subclass names its code: ``class X(NodeError, code="x")``."""
        super().__init_subclass__(**kw)
        if code is not None:
            cls.code = code

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details or None


class InterruptCancelledError(NodeError, code="interrupt_cancelled"):
    """Raised from ``ctx.interrupt`` when the interrupt or its run was cancelled."""

    def __init__(self, message: str = "the interrupt was cancelled", *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class InterruptTimeoutError(NodeError, code="interrupt_timeout"):
    """Raised from ``ctx.interrupt`` when the interrupt's ``timeoutMs`` elapsed."""


class ApprovalRejectedError(NodeError, code="approval_rejected"):
    """An approval gate was rejected (by a person, a quorum or a timeout)."""


class ConversationClosedError(NodeError, code="validation_error"):
    """An exchange was attempted on a conversation that is already closed."""
