"""A scripted chat model shared by all tests.

``ScriptedChatModel(replies=[...])`` answers each call with the next scripted reply:
a string, an ``AIMessage`` (with ``tool_calls`` for native tool calling), an exception
instance (raised), or a callable ``(messages) -> reply``. It records every prompt, has a
working ``bind_tools`` and ``with_structured_output(method="json_schema")``, streams
word by word (tool calls included), reports token usage, and can inject latency.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr, ValidationError

from loopgraphs.nodes.parsing.json_text import extract_json
from loopgraphs.nodes.parsing.text import content_text

Reply = str | AIMessage | BaseException | Callable[[list[BaseMessage]], Any]


class ProviderError(Exception):
    """An exception shaped like an HTTP error from a provider SDK."""

    def __init__(self, status_code: int, message: str = "provider error") -> None:
        super().__init__(message)
        self.status_code = status_code


def tool_call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> ToolCall:
    """A native tool call for a scripted ``AIMessage``."""
    return ToolCall(
        name=name,
        args=args or {},
        id=id or f"call_{name}_{abs(hash(json.dumps(args, sort_keys=True))) % 10**6}",
    )


def calls(*items: ToolCall, content: str = "") -> AIMessage:
    """An assistant message making native tool calls."""
    return AIMessage(content=content, tool_calls=list(items))


class ScriptedChatModel(BaseChatModel):
    """A deterministic chat model that plays back scripted replies.

    Args:
        replies: Replies in call order.
        repeat_last: Keep answering with the last reply when the script runs out
            (a model that never stops); otherwise running out raises ``AssertionError``.
        delay: Seconds of latency per call (``time.sleep`` / ``asyncio.sleep``).
        rejects_tools: Raise a 400 error whenever tools are bound, like a provider
            without function calling.
        profile: Capability data, e.g. ``{"tool_calling": True}``.
        structured_output: Whether ``with_structured_output`` works, whatever the profile
            declares: None (the default) follows ``profile["structured_output"]``; True
            works with no profile (a model whose capabilities are unknown) or one saying
            False; False refuses like a provider without JSON schemas.
        cache_read: Prompt tokens each call reports as read from the provider's cache
            (``usage_metadata["input_token_details"]["cache_read"]``); 0 reports none.
    """

    replies: list[Any]
    repeat_last: bool = False
    delay: float = 0.0
    rejects_tools: bool = False
    structured_output: bool | None = None
    cache_read: int = 0
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _index: int = PrivateAttr(default=0)
    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tool_sets: list[list[str]] = PrivateAttr(default_factory=list)
    _tool_choices: list[Any] = PrivateAttr(default_factory=list)
    _schemas: list[Any] = PrivateAttr(default_factory=list)
    _active: int = PrivateAttr(default=0)
    _max_active: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """Every prompt the model received, in call order."""
        return self._prompts

    @property
    def call_count(self) -> int:
        """How many calls reached the model."""
        return len(self._prompts)

    @property
    def tool_sets(self) -> list[list[str]]:
        """Tool names bound for each call that had tools."""
        return self._tool_sets

    @property
    def tool_choices(self) -> list[Any]:
        """The ``tool_choice`` bound for each call that had tools (None when not set)."""
        return self._tool_choices

    @property
    def schemas(self) -> list[Any]:
        """The schemas asked for through ``with_structured_output``, in order."""
        return self._schemas

    @property
    def max_concurrency(self) -> int:
        """The largest number of calls that were in flight at the same time."""
        return self._max_active

    def _next(
        self, messages: list[BaseMessage], tools: list[str] | None, choice: Any = None
    ) -> AIMessage:
        with self._lock:
            self._prompts.append(list(messages))
            if tools is not None:
                self._tool_sets.append(tools)
                self._tool_choices.append(choice)
            if tools is not None and self.rejects_tools:
                # Refused before any reply is written: the script's next reply stays.
                raise ProviderError(400, "tools are not supported by this model")
            if self._index < len(self.replies):
                reply = self.replies[self._index]
                self._index += 1
            elif self.repeat_last and self.replies:
                reply = self.replies[-1]
            else:
                raise AssertionError(f"script exhausted after {len(self.replies)} replies")
        if callable(reply) and not isinstance(reply, BaseException):
            reply = reply(messages)
        if isinstance(reply, BaseException):
            raise reply
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply))
        prompt_tokens = sum(len(content_text(m.content)) for m in messages) // 4 + 1
        output_tokens = len(content_text(message.content)) // 4 + 1
        usage: dict[str, Any] = {
            "input_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "total_tokens": prompt_tokens + output_tokens,
        }
        if self.cache_read:
            usage["input_token_details"] = {"cache_read": self.cache_read}
        return message.model_copy(update={"usage_metadata": usage})

    def _enter(self) -> None:
        with self._lock:
            self._active += 1
            self._max_active = max(self._max_active, self._active)

    def _leave(self) -> None:
        with self._lock:
            self._active -= 1

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._enter()
        try:
            if self.delay:
                time.sleep(self.delay)
            message = self._next(messages, _tool_names(kwargs), kwargs.get("tool_choice"))
        finally:
            self._leave()
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._enter()
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            message = self._next(messages, _tool_names(kwargs), kwargs.get("tool_choice"))
        finally:
            self._leave()
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        message = self._generate(messages, stop, **kwargs).generations[0].message
        for chunk in _chunks(message):
            if run_manager:
                run_manager.on_llm_new_token(content_text(chunk.message.content), chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        result = await self._agenerate(messages, stop, **kwargs)
        for chunk in _chunks(result.generations[0].message):
            if run_manager:
                await run_manager.on_llm_new_token(content_text(chunk.message.content), chunk=chunk)
            yield chunk

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        # Bound as a provider would send them (OpenAI's format), which clients such as
        # langgraph-supervisor read back from the binding.
        schemas = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=schemas, tool_choice=kwargs.pop("tool_choice", None), **kwargs)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, method: str = "json_schema", **kwargs: Any
    ) -> Runnable[Any, Any]:
        supported = self.structured_output
        if supported is None:
            supported = bool((self.profile or {}).get("structured_output"))
        if not supported:
            raise NotImplementedError("this scripted model has no structured output")
        self._schemas.append(schema)

        def parse(message: AIMessage) -> Any:
            data = extract_json(content_text(message.content))
            error: Exception | None = None
            if isinstance(schema, type) and data is not None:
                try:
                    data = schema.model_validate(data)
                except ValidationError as exc:
                    if not include_raw:
                        raise
                    data, error = None, exc
            return {"raw": message, "parsed": data, "parsing_error": error} if include_raw else data

        return self | RunnableLambda(parse)


def _tool_names(kwargs: dict[str, Any]) -> list[str] | None:
    tools = kwargs.get("tools")
    if tools is None:
        return None
    # A provider's own tool (``{"type": "web_search", ...}``) is bound as given.
    return [t["function"]["name"] if "function" in t else str(t) for t in tools]


def _chunks(message: AIMessage) -> Iterator[ChatGenerationChunk]:
    text = content_text(message.content)
    words = text.split(" ")
    for index, word in enumerate(words):
        piece = word if index == len(words) - 1 else word + " "
        if piece:
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
    last: dict[str, Any] = {"content": "", "usage_metadata": message.usage_metadata}
    if message.tool_calls:
        last["tool_call_chunks"] = [
            {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
            for i, c in enumerate(message.tool_calls)
        ]
    yield ChatGenerationChunk(message=AIMessageChunk(**last))
