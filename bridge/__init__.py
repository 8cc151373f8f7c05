"""openwop-bridge: an OpenWOP v1.1 interrupt host.

The engine (:class:`Engine`) runs workflows whose nodes call
``ctx.interrupt(payload)`` to wait for people; the HTTP host
(:func:`bridge.host.http.create_app`) serves the OpenWOP REST surface over it.
"""

from __future__ import annotations

from bridge.core import kinds
from bridge.core.auth import KeyRing, Principal
from bridge.core.errors import (
    ApprovalRejectedError,
    BridgeError,
    ConflictError,
    InterruptAlreadyResolvedError,
    InterruptCancelledError,
    InterruptTimeoutError,
    NodeError,
    NotFoundError,
    ValidationError,
    WorkflowNotFoundError,
)
from bridge.core.kinds import TOOL_CALL_ARTIFACT, approval, clarification, custom, external_event
from bridge.core.records import InterruptRecord, RunRecord
from bridge.core.workflow import WorkflowDefinition, load_workflow, load_workflow_dir, load_workflow_file
from bridge.runtime.activation import InterruptHandle
from bridge.runtime.adapter_state import AdapterState
from bridge.runtime.builder import Workflow
from bridge.runtime.config import EngineConfig
from bridge.runtime.context import NodeContext
from bridge.runtime.conversation import Conversation
from bridge.runtime.engine import Engine
from bridge.runtime.nodes import NodeRegistry, NodeResult, NodeType, default_registry
from bridge.runtime.tools import is_tool_call_approval
from bridge.store import SqliteStore, open_store

__all__ = [
    "TOOL_CALL_ARTIFACT",
    "AdapterState",
    "ApprovalRejectedError",
    "BridgeError",
    "ConflictError",
    "Conversation",
    "Engine",
    "EngineConfig",
    "InterruptAlreadyResolvedError",
    "InterruptCancelledError",
    "InterruptHandle",
    "InterruptRecord",
    "InterruptTimeoutError",
    "KeyRing",
    "NodeContext",
    "NodeError",
    "NodeRegistry",
    "NodeResult",
    "NodeType",
    "NotFoundError",
    "Principal",
    "RunRecord",
    "SqliteStore",
    "ValidationError",
    "Workflow",
    "WorkflowDefinition",
    "WorkflowNotFoundError",
    "approval",
    "clarification",
    "custom",
    "default_registry",
    "external_event",
    "is_tool_call_approval",
    "kinds",
    "load_workflow",
    "load_workflow_dir",
    "load_workflow_file",
    "open_store",
]
