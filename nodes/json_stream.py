"""The answer of a json-mode turn, streamed to a chat as it is written.

A json-mode turn's reply is JSON (``{"thought": ..., "action": "final_answer",
"action_input": "<the answer>"}``), which a chat must never show: the turn is sent as an
internal call (``nostream``). While it is written, ``AnswerRelay`` reads the answer's text
out of the partial JSON and streams it as a chat turn of the calling node, under the
reply's own message id: the node then stores the reply as the chat shows it (its answer),
under the same id, so a chat keeps what it streamed. A turn whose action calls a tool
streams nothing (the reply, shown as its thought, arrives whole when stored).

``AnswerField`` says where the answer is: the string value of ``field`` once ``when`` (a
key and the value it must have, read first) holds.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import (
    AsyncCallbackHandler,
    AsyncCallbackManager,
    AsyncCallbackManagerForLLMRun,
    BaseCallbackHandler,
    CallbackManager,
    CallbackManagerForLLMRun,
)
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, GenerationChunk, LLMResult
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import (
    get_async_callback_manager_for_config,
    get_callback_manager_for_config,
    merge_configs,
)
from langgraph.constants import TAG_HIDDEN

from loopgraphs.nodes.parsing.react import FINAL_ACTIONS
from loopgraphs.nodes.parsing.text import content_text

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


@dataclass(frozen=True)
class AnswerField:
    """Where a json-mode reply holds its answer.

    Attributes:
        field: The key whose string value is the answer.
        when: A key and the values it may hold when the reply is an answer, any case and
            spacing around them (None: always). ReAct's are the final-answer actions its
            parser accepts (``final_answer``, ``Final Answer``, ``finish``...).
    """

    field: str = "action_input"
    when: tuple[str, frozenset[str]] | None = ("action", FINAL_ACTIONS)

    def read(self, text: str) -> str | None:
        """The answer's text written so far in ``text`` (a JSON object, maybe cut
        anywhere), or None while the reply is not (yet) known to be an answer."""
        if self.when is not None:
            key, values = self.when
            found = re.search(rf'"{re.escape(key)}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
            if found is None or _decoded(found.group(1))[0].strip().lower() not in values:
                return None
        start = re.search(rf'"{re.escape(self.field)}"\s*:\s*"', text)
        if start is None:
            return None
        return _decoded(text[start.end() :])[0]


REACT_ANSWER = AnswerField()
"""The answer of a ReAct json action."""


def _decoded(body: str) -> tuple[str, bool]:
    """The text of a JSON string whose opening quote came before ``body``, as far as
    ``body`` goes (an escape cut at its end is left out), and whether it was closed."""
    out: list[str] = []
    index = 0
    while index < len(body):
        char = body[index]
        if char == '"':
            return "".join(out), True
        if char != "\\":
            out.append(char)
            index += 1
            continue
        if index + 1 >= len(body):
            break
        code = body[index + 1]
        if code == "u":
            digits = body[index + 2 : index + 6]
            if len(digits) < 4:
                break
            try:
                out.append(json.loads(f'"\\u{digits}"'))
            except ValueError:
                out.append(digits)
            index += 6
            continue
        out.append(_ESCAPES.get(code, code))
        index += 2
    return "".join(out), False


def _hidden(config: RunnableConfig) -> RunnableConfig:
    return merge_configs(config, {"tags": [TAG_HIDDEN]})


class _Reading:
    """What one relayed turn has read and streamed so far."""

    def __init__(self, serialized: dict[str, Any], messages: list[list[BaseMessage]]) -> None:
        self.serialized = serialized
        self.messages = messages
        self.text = ""
        self.sent = ""
        self.id: str | None = None

    def delta(self, field: AnswerField, token: object, chunk: object) -> str:
        message = getattr(chunk, "message", None)
        if self.id is None:
            self.id = getattr(message, "id", None)
        piece = content_text(getattr(message, "content", None))
        self.text += piece or (token if isinstance(token, str) else "")
        answer = field.read(self.text)
        if answer is None or len(answer) <= len(self.sent):
            return ""
        new = answer[len(self.sent) :]
        self.sent = answer
        return new

    def chunk(self, text: str) -> ChatGenerationChunk:
        return ChatGenerationChunk(message=AIMessageChunk(content=text, id=self.id))

    def result(self) -> LLMResult:
        return LLMResult(generations=[[ChatGeneration(message=AIMessage(self.sent, id=self.id))]])


class AnswerRelay(BaseCallbackHandler):
    """Streams the answer of a json-mode turn as a chat turn of the node whose ``config``
    it is given (sync path)."""

    run_inline = True

    def __init__(
        self,
        config: RunnableConfig,
        field: AnswerField = REACT_ANSWER,
        manager: CallbackManager | None = None,
    ) -> None:
        self.manager = manager or get_callback_manager_for_config(_hidden(config))
        self.field = field
        self.readings: dict[UUID, _Reading] = {}
        self.runs: dict[UUID, CallbackManagerForLLMRun] = {}

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.readings[run_id] = _Reading(serialized, messages)

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        reading = self.readings.get(run_id)
        if reading is None:
            return
        text = reading.delta(self.field, token, chunk)
        if not text:
            return
        if run_id not in self.runs:
            started = self.manager.on_chat_model_start(reading.serialized, reading.messages)
            self.runs[run_id] = started[0]
        self.runs[run_id].on_llm_new_token(text, chunk=reading.chunk(text))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        reading = self.readings.pop(run_id, None)
        if (run := self.runs.pop(run_id, None)) and reading is not None:
            run.on_llm_end(reading.result())

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.readings.pop(run_id, None)
        if run := self.runs.pop(run_id, None):
            run.on_llm_error(error)


class AsyncAnswerRelay(AsyncCallbackHandler):
    """``AnswerRelay`` for the async path."""

    run_inline = True

    def __init__(
        self,
        config: RunnableConfig,
        field: AnswerField = REACT_ANSWER,
        manager: AsyncCallbackManager | None = None,
    ) -> None:
        self.manager = manager or get_async_callback_manager_for_config(_hidden(config))
        self.field = field
        self.readings: dict[UUID, _Reading] = {}
        self.runs: dict[UUID, AsyncCallbackManagerForLLMRun] = {}

    async def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        self.readings[run_id] = _Reading(serialized, messages)

    async def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        reading = self.readings.get(run_id)
        if reading is None:
            return
        text = reading.delta(self.field, token, chunk)
        if not text:
            return
        if run_id not in self.runs:
            started = await self.manager.on_chat_model_start(reading.serialized, reading.messages)
            self.runs[run_id] = started[0]
        await self.runs[run_id].on_llm_new_token(text, chunk=reading.chunk(text))

    async def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        reading = self.readings.pop(run_id, None)
        if (run := self.runs.pop(run_id, None)) and reading is not None:
            await run.on_llm_end(reading.result())

    async def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.readings.pop(run_id, None)
        if run := self.runs.pop(run_id, None):
            await run.on_llm_error(error)


__all__ = ["REACT_ANSWER", "AnswerField", "AnswerRelay", "AsyncAnswerRelay"]
