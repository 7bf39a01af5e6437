"""A scripted tool-calling chat model for the compatibility suite.

``FakeToolModel(turns=[...])`` answers each call with the next turn of its script:

* a list of tool calls (``call(...)``): an ``AIMessage`` making those calls; an empty
  list is a final answer whose text is ``final_text``;
* a string: a plain text reply (a final answer, or a JSON/ReAct-text action);
* an ``AIMessage``: returned as is;
* an exception instance: raised;
* a callable ``(messages) -> turn``: called with the prompt.

It binds tools for real (``bind_tools`` converts every tool to its OpenAI schema and
records the names per call) and records every prompt. ``structured`` holds the object a
structured-output request should produce; whichever way that request reaches the model
(``with_structured_output``, a forced schema tool, a schema tool offered next to the
real tools, a provider ``response_format`` or a plain request for JSON) it receives the
same data, so tests state *what* comes back, not *how* it was asked for.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Sequence
from typing import Any, get_type_hints

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, PrivateAttr

_ids = itertools.count(1)


def call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> ToolCall:
    """One scripted tool call; ids default to ``call_<n>``, unique per process."""
    return ToolCall(
        name=name, args=dict(args or {}), id=id or f"call_{next(_ids)}", type="tool_call"
    )


def message_text(message: BaseMessage) -> str:
    """The text of a message, joining the text blocks of list content."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def schema_fields(schema: Any) -> set[str] | None:
    """Property names of a pydantic model, TypedDict, dataclass or JSON schema."""
    if isinstance(schema, dict):
        inner = schema.get("schema") if isinstance(schema.get("schema"), dict) else None
        inner = inner or schema.get("parameters") or schema.get("json_schema") or schema
        if isinstance(inner, dict) and isinstance(inner.get("schema"), dict):
            inner = inner["schema"]
        properties = inner.get("properties") if isinstance(inner, dict) else None
        return set(properties) if isinstance(properties, dict) else None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return set(schema.model_fields)
    if isinstance(schema, type):
        try:
            return set(get_type_hints(schema))
        except Exception:
            return None
    return None


def _tool_schema(tool: Any) -> dict[str, Any]:
    if isinstance(tool, dict) and tool.get("type") == "function":
        return tool
    return convert_to_openai_tool(tool)


class FakeToolModel(BaseChatModel):
    """A deterministic tool-calling chat model driven by a script of turns."""

    turns: list[Any]
    structured: Any = None
    final_text: str = "done"

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _index: int = PrivateAttr(default=0)
    _prompts: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tool_sets: list[list[str]] = PrivateAttr(default_factory=list)
    _structured_requests: int = PrivateAttr(default=0)

    def __init__(self, **data: Any) -> None:
        data.setdefault("profile", {"tool_calling": True, "structured_output": True})
        super().__init__(**data)

    @property
    def _llm_type(self) -> str:
        return "fake-tool-model"

    @property
    def prompts(self) -> list[list[BaseMessage]]:
        """Every prompt the model received, in call order."""
        return self._prompts

    @property
    def call_count(self) -> int:
        return len(self._prompts)

    @property
    def tool_sets(self) -> list[list[str]]:
        """Names of the tools bound for each call that had tools."""
        return self._tool_sets

    @property
    def structured_requests(self) -> int:
        """How many calls were answered with the structured object."""
        return self._structured_requests

    # -- scripting ---------------------------------------------------------------

    def _take(self) -> Any:
        if self._index >= len(self.turns):
            raise AssertionError(f"script exhausted after {len(self.turns)} turns")
        turn = self.turns[self._index]
        self._index += 1
        return turn

    def _peek_is_final(self) -> bool:
        if self._index >= len(self.turns):
            return True
        turn = self.turns[self._index]
        return (isinstance(turn, list) and not turn) or isinstance(turn, str)

    def _as_message(self, turn: Any, messages: list[BaseMessage]) -> AIMessage:
        if callable(turn) and not isinstance(turn, BaseException):
            turn = turn(messages)
        if isinstance(turn, BaseException):
            raise turn
        if isinstance(turn, AIMessage):
            return turn
        if isinstance(turn, list):
            return AIMessage(content="" if turn else self.final_text, tool_calls=list(turn))
        return AIMessage(content=str(turn))

    def _usage(self, messages: list[BaseMessage], reply: AIMessage) -> AIMessage:
        prompt = sum(len(message_text(m)) for m in messages) // 4 + 1
        output = len(message_text(reply)) // 4 + 1
        return reply.model_copy(
            update={
                "usage_metadata": {
                    "input_tokens": prompt,
                    "output_tokens": output,
                    "total_tokens": prompt + output,
                }
            }
        )

    def _matches_structured(self, schema: Any) -> bool:
        if self.structured is None:
            return False
        data = self.structured
        if isinstance(data, BaseModel):
            data = data.model_dump()
        fields = schema_fields(schema)
        return bool(fields) and isinstance(data, dict) and set(data) <= fields

    def _structured_dict(self) -> dict[str, Any]:
        data = self.structured
        return data.model_dump() if isinstance(data, BaseModel) else dict(data)

    def _reply(
        self,
        messages: list[BaseMessage],
        tools: list[dict[str, Any]] | None,
        tool_choice: Any,
        response_format: Any,
    ) -> AIMessage:
        with self._lock:
            self._prompts.append(list(messages))
            if tools is not None:
                self._tool_sets.append([t["function"]["name"] for t in tools])
            schema_tool = next(
                (t for t in tools or [] if self._matches_structured(t["function"])), None
            )
            forced = _forced_name(tool_choice)
            if schema_tool is not None and (
                forced == schema_tool["function"]["name"] or self._peek_is_final()
            ):
                if self._index < len(self.turns) and forced is None:
                    self._index += 1
                self._structured_requests += 1
                reply = AIMessage(
                    content="",
                    tool_calls=[call(schema_tool["function"]["name"], self._structured_dict())],
                )
                return self._usage(messages, reply)
            if response_format is not None and self._matches_structured(response_format):
                self._structured_requests += 1
                if self._index < len(self.turns) and self._peek_is_final():
                    self._index += 1
                reply = AIMessage(content=json.dumps(self._structured_dict()))
                return self._usage(messages, reply)
            if self.structured is not None and not tools and self._index >= len(self.turns):
                self._structured_requests += 1
                reply = AIMessage(content=json.dumps(self._structured_dict()))
                return self._usage(messages, reply)
            turn = self._take()
        return self._usage(messages, self._as_message(turn, messages))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._reply(
            messages,
            kwargs.get("tools"),
            kwargs.get("tool_choice"),
            kwargs.get("response_format"),
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    # -- binding -------------------------------------------------------------------

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        schemas = [_tool_schema(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=schemas, **kwargs)

    def with_structured_output(
        self, schema: Any, *, include_raw: bool = False, method: str = "json_schema", **kwargs: Any
    ) -> Runnable[Any, Any]:
        def answer(prompt: Any) -> Any:
            messages = _messages(prompt)
            if self._matches_structured(schema):
                with self._lock:
                    self._prompts.append(messages)
                    self._structured_requests += 1
                    if self._index < len(self.turns) and self._peek_is_final():
                        self._index += 1
                data: Any = self._structured_dict()
                raw = self._usage(messages, AIMessage(content=json.dumps(data)))
            else:
                raw = self._reply(messages, None, None, None)
                try:
                    data = json.loads(message_text(raw))
                except ValueError:
                    data = None
            parsed = data
            if isinstance(schema, type) and issubclass(schema, BaseModel) and data is not None:
                parsed = schema.model_validate(data)
            if include_raw:
                return {"raw": raw, "parsed": parsed, "parsing_error": None}
            return parsed

        return RunnableLambda(answer)


def _forced_name(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, str) and tool_choice not in ("auto", "any", "none", "required"):
        return tool_choice
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        if isinstance(function, dict):
            return function.get("name")
        return tool_choice.get("name")
    return None


def _messages(prompt: Any) -> list[BaseMessage]:
    if hasattr(prompt, "to_messages"):
        return list(prompt.to_messages())
    if isinstance(prompt, list):
        return list(prompt)
    return [prompt]
