"""A chat model that answers from a script: for examples and tests that must not call a real model.

``ScriptedChatModel(replies=[...])`` returns the next reply each time it is called
(an ``AIMessage``, a string, or a function of the conversation so far). It
accepts ``bind_tools`` so ``create_agent`` can use it; replies decide which tools
are "called".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr

Reply = AIMessage | str | Callable[[Sequence[BaseMessage]], AIMessage | str]


class ScriptedChatModel(BaseChatModel):
    """Replies in order; after the last one it repeats the ``fallback``."""

    replies: list[Any]
    fallback: str = "(the script has no more replies)"
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _calls: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return self._calls

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """Tools are accepted and ignored: the script decides which ones are called."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            reply: Any = self.replies[self._calls] if self._calls < len(self.replies) else self.fallback
            self._calls += 1
        if callable(reply) and not isinstance(reply, AIMessage):
            reply = reply(messages)
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply))
        return ChatResult(generations=[ChatGeneration(message=message.model_copy())])
