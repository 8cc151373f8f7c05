"""openwop-bridge: an OpenWOP v1.1 interrupt host.

The engine (:class:`Engine`) runs workflows whose nodes call
``ctx.interrupt(payload)`` to wait for people; the HTTP host
(:func:`bridge.http.create_app`) serves the OpenWOP REST surface over it.
"""

from __future__ import annotations

from bridge.activation import InterruptHandle
from bridge.auth import Principal
from bridge.builder import Workflow
from bridge.context import NodeContext
from bridge.conversation import Conversation
from bridge.engine import Engine, EngineConfig
from bridge.errors import (
    ApprovalRejectedError,
    BridgeError,
    InterruptCancelledError,
    InterruptTimeoutError,
    NodeError,
)
from bridge.kinds import approval, clarification, custom, external_event
from bridge.nodes import NodeRegistry, NodeResult, NodeType, default_registry
from bridge.store import SqliteStore, open_store
from bridge.workflow import WorkflowDefinition, load_workflow, load_workflow_dir, load_workflow_file

__all__ = [
    "ApprovalRejectedError",
    "BridgeError",
    "Conversation",
    "Engine",
    "EngineConfig",
    "InterruptCancelledError",
    "InterruptHandle",
    "InterruptTimeoutError",
    "NodeContext",
    "NodeError",
    "NodeRegistry",
    "NodeResult",
    "NodeType",
    "Principal",
    "SqliteStore",
    "Workflow",
    "WorkflowDefinition",
    "approval",
    "clarification",
    "custom",
    "default_registry",
    "external_event",
    "load_workflow",
    "load_workflow_dir",
    "load_workflow_file",
    "open_store",
]
