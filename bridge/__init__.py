"""openwop-bridge: an OpenWOP v1.1 interrupt host.

The engine (:class:`Engine`) runs workflows whose nodes call
``ctx.interrupt(payload)`` to wait for people; the HTTP host
(:func:`openwop_bridge.host.http.create_app`) serves the OpenWOP REST surface over it.
"""

from __future__ import annotations

from openwop_bridge.core import assurance, kinds
from openwop_bridge.core.auth import KeyRing, Principal, Subject
from openwop_bridge.core.errors import (
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
from openwop_bridge.core.kinds import TOOL_CALL_ARTIFACT, approval, clarification, custom, external_event
from openwop_bridge.core.records import InterruptRecord, RunRecord
from openwop_bridge.core.statuses import InterruptStatus, RunStatus
from openwop_bridge.core.workflow import WorkflowDefinition, load_workflow, load_workflow_dir, load_workflow_file
from openwop_bridge.runtime.activation import InterruptHandle
from openwop_bridge.runtime.adapter_state import AdapterState
from openwop_bridge.runtime.builder import Workflow
from openwop_bridge.runtime.config import EngineConfig
from openwop_bridge.runtime.context import NodeContext
from openwop_bridge.runtime.conversation import Conversation
from openwop_bridge.runtime.engine import Engine
from openwop_bridge.runtime.nodes import NodeRegistry, NodeResult, NodeType, default_registry
from openwop_bridge.runtime.tools import is_tool_call_approval
from openwop_bridge.store import SqliteStore, open_store

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
    "InterruptStatus",
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
    "RunStatus",
    "SqliteStore",
    "Subject",
    "ValidationError",
    "Workflow",
    "WorkflowDefinition",
    "WorkflowNotFoundError",
    "approval",
    "assurance",
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
