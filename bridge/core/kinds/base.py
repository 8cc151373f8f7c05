"""The kind object: everything the bridge knows about one interrupt kind.

A :class:`Kind` owns its data definition (the ``suspend-request`` schema def),
the payload builder, the run status and suspend reason while it waits, its
label and title, whether it is answered and listed, how its resume value is
checked and normalised, the JSON Schema it advertises for that answer, and
whether a cancel or a timeout fails it closed, and the short answers surfaces may
give for it (:meth:`Kind.coerce_short_answer`). Other modules ask the registry
(:func:`openwop_bridge.core.kinds.kind_of`) instead of branching on kind names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from openwop_bridge.core.statuses import RunStatus


def present(**fields: Any) -> dict[str, Any]:
    """The ``fields`` that are not None, in their order: the optional members of a payload or its data."""
    return {name: value for name, value in fields.items() if value is not None}


class Kind:
    """One interrupt kind. Subclasses set the class attributes and override what differs."""

    name: ClassVar[str]
    #: The definition of ``data`` in ``suspend-request.schema.json``.
    data_def: ClassVar[str]
    #: Run status while an interrupt of this kind is the one the run waits on.
    waiting_status: ClassVar[RunStatus] = "waiting-input"
    #: ``reason`` of the ``node.suspended`` event.
    suspend_reason: ClassVar[str]
    #: A short human name of the kind ("Approval").
    label: ClassVar[str]
    #: A resume value is accepted (False: the interrupt only marks a point, e.g. a conversation start).
    answerable: ClassVar[bool] = True
    #: Shown among a run's open interrupts and in its snapshot.
    listed: ClassVar[bool] = True
    #: Carries votes, quorum and governance (role, scope, approvers, override, ask).
    votes: ClassVar[bool] = False
    #: A cancel or a timeout rejects it instead of leaving it unanswered.
    fails_closed: ClassVar[bool] = False
    #: A conversation turn: answered by the exchange decision, its link outlives one answer.
    turn: ClassVar[bool] = False
    #: Opens a conversation, whose turns fold into a messages channel.
    opens_conversation: ClassVar[bool] = False
    #: Part of a conversation (RFC 0005): raised only on a host that offers the conversation capability.
    in_conversation: ClassVar[bool] = False
    #: Answered once per event: the resolution records the event's id, and the same id again is idempotent.
    event_keyed: ClassVar[bool] = False
    #: The logged resume value hides values under secret-looking keys.
    redacts_log: ClassVar[bool] = False

    def payload(
        self,
        data: dict[str, Any],
        *,
        key: str | None = None,
        timeout_ms: int | None = None,
        resume_schema: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An ``InterruptPayload`` of this kind around ``data``."""
        schema = None if resume_schema is None else dict(resume_schema)
        return {"kind": self.name, "data": data, **present(key=key, timeoutMs=timeout_ms, resumeSchema=schema)}

    def data_problems(self, data: Mapping[str, Any]) -> list[str]:
        """What the schema cannot say is wrong with a schema-valid ``data`` (``data.<field>: why`` lines)."""
        return []

    def title(self, data: Mapping[str, Any]) -> str:
        """A one-line human description of what an interrupt of this kind asks."""
        return self.name

    def prompt(self, data: Mapping[str, Any]) -> str:
        """A readable prompt for whoever answers (longer than the title where it helps)."""
        return self.title(data)

    def answer_schema(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON Schema advertised for an answer when the payload declares no ``resumeSchema``.

        Every value it accepts, :meth:`normalize_resume` accepts too."""
        return {}

    def response_schema(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """The schema advertised for this payload's answer: its ``resumeSchema``, else :meth:`answer_schema`."""
        declared = payload.get("resumeSchema")
        if isinstance(declared, Mapping):
            return dict(declared)
        return self.answer_schema(payload.get("data") or {})

    def normalize_resume(self, data: Mapping[str, Any], value: Any) -> Any:
        """Check a resume value beyond its ``resumeSchema`` and return it normalised.

        Raises :class:`~openwop_bridge.core.errors.ValidationError` (or a subclass) when it is refused."""
        return value

    def coerce_short_answer(self, data: Mapping[str, Any], value: Any) -> Any:
        """The answer a surface's short form ``value`` stands for, on an interrupt of this kind whose ``data`` is
        given; ``value`` itself when it is no short form. Every surface (AG-UI, the LangGraph API, A2A) takes its
        short answers through this one method, before the conventions of its own protocol."""
        return value

    def event_id(self, value: Any) -> str | None:
        """The answer's own id, when answering twice with it is idempotent (None: it is not)."""
        return None

    def refusal(self, data: Mapping[str, Any]) -> str:
        """Why an answer is refused when the kind is not :attr:`answerable`."""
        return f"a {self.name} interrupt is not answerable"

    def __repr__(self) -> str:
        return f"<kind {self.name}>"
