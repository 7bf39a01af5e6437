"""The one path every model request of every loop takes.

A loop asks for a reply by yielding a ``ModelCall``: a LangChain ``ModelRequest`` (model,
messages, the caller's system message, tools, tool choice, response format, state,
runtime) and the ``RequestForm`` of the loop's call (its own instructions, and how the request's
tools reach the model; see ``loopgraphs.nodes.model_send``). The request goes through the
run's ``wrap_model_call`` chain (LangChain middleware, the first one outermost; empty
without middleware), and the innermost handler sends it.

A call is a chat turn (its reply is kept in the thread under its own message id, so
LangGraph's ``stream_mode="messages"`` streams it as the chat's reply) or, when it names a
``purpose``, internal: a plan, a verdict, a score, a structured-output level, a json-mode
turn whose raw reply is JSON. The handler sends an internal call with LangGraph's
``nostream`` tag (``messages`` mode skips it), the tag ``loopgraphs:internal`` and its
purpose in the run's metadata (``{"loopgraphs_call": purpose}``), so that
``astream_events`` and tracing find it. Inside an inner run whose chat turns are relayed
(Reflexion's episodes, see ``loopgraphs.nodes.chat_relay``) a chat turn is sent with
``nostream`` and the relay.

The handler counts each request it sends and its tokens; a middleware that answers
without calling it sends none, one that retries sends several. ``ModelCall`` returns an
``Outcome`` with the response, the requests sent and their usage, and the ``Command``s
that middleware returned; an exception escaping the chain carries the number of requests
it stands for (``loopgraphs.nodes.errors.failed_calls``).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Any, TypeVar

from langchain.agents.middleware.types import ModelRequest, ModelResponse
from langchain.agents.structured_output import ResponseFormat
from langchain_core.exceptions import ModelRefusalError
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM
from langgraph.types import Command

from loopgraphs.internals import is_cut_reply_error
from loopgraphs.nodes.chat_relay import current_relay
from loopgraphs.nodes.errors import failed_calls, is_form_rejection, mark_sent
from loopgraphs.nodes.json_stream import AnswerField, AnswerRelay, AsyncAnswerRelay
from loopgraphs.nodes.model_send import (
    PLAIN,
    LoopRequest,
    MessageView,
    Reader,
    RequestForm,
    prepare,
    unbound,
)
from loopgraphs.nodes.parsing.text import content_text, refusal_of
from loopgraphs.state import LoopRuntime, ModelSpend, Usage, add_usage, empty_usage, usage_of

PASS_ASYNC_CONFIG = sys.version_info < (3, 11)
INTERNAL_TAG = "loopgraphs:internal"
"""Tag of every internal model call (with LangGraph's ``nostream``)."""
CALL_METADATA = "loopgraphs_call"
"""Key in an internal call's run metadata naming its purpose."""
JSON_TURN = "json_turn"
"""Purpose of a turn whose reply is schema-constrained JSON: the node stores it as the chat
shows it (its thought, its answer), and ``messages`` mode emits that message whole."""


@dataclass
class Spent:
    """Requests sent by one ``ModelCall`` and the tokens they used. As a context it marks
    an exception escaping it with the requests sent (``mark_sent``)."""

    calls: int = 0
    usage: Usage = field(default_factory=empty_usage)

    def add(self, reply: AIMessage) -> None:
        self.calls += 1
        used = usage_of(reply)
        self.usage = add_usage(self.usage, used) if self.calls > 1 else used

    def response(
        self, read: Reader, output: object, error: Exception | None, name: str | None
    ) -> ModelResponse:
        """The response read from one request's ``output`` (or its ``error``: see
        ``_truncated_reply``), the request counted."""
        if error is not None:
            output = _truncated_reply(error, self)
        else:
            _count(self, output)
        return named(read(output), name)

    def outcome(self, response: ModelResponse, commands: Sequence[Command[object]] = ()) -> Outcome:
        """The ``Outcome`` of the call: its response, what was spent, and the commands.

        Raises:
            ModelRefusalError: the model refused (see ``refusal_of``); the error carries
                the reply, its words as the refusal's text.
        """
        outcome = Outcome(response, self.calls, self.usage, tuple(commands))
        words = refusal_of(outcome.reply)
        if words is not None:
            raise ModelRefusalError(words, raw_message=outcome.reply)
        return outcome

    def __enter__(self) -> Spent:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if isinstance(error, Exception):
            mark_sent(error, self.calls)


ArgT = TypeVar("ArgT")


def attempt(func: Callable[[ArgT], object], arg: ArgT) -> tuple[object, Exception | None]:
    """``func(arg)`` and None, or None and the exception it raised."""
    try:
        return func(arg), None
    except Exception as exc:
        return None, exc


async def attempt_async(pending: Awaitable[object]) -> tuple[object, Exception | None]:
    """What ``pending`` gives and None, or None and the exception it raised."""
    try:
        return await pending, None
    except Exception as exc:
        return None, exc


@dataclass(frozen=True)
class Outcome:
    """What one ``ModelCall`` produced: the response, the requests it sent and their
    tokens, and the ``Command``s middleware returned with it (state updates to apply)."""

    response: ModelResponse
    calls: int = 1
    usage: Usage = field(default_factory=empty_usage)
    commands: tuple[Command[object], ...] = ()

    @property
    def reply(self) -> AIMessage:
        """The model's reply (the response's first assistant message)."""
        for message in self.response.result:
            if isinstance(message, AIMessage):
                return message
        text = content_text(self.response.result[0].content) if self.response.result else ""
        return AIMessage(content=text)

    @property
    def update(self) -> ModelSpend:
        """The ``llm_calls``/``usage`` update that accounts for this call."""
        return {"llm_calls": self.calls, "usage": self.usage}


def spent_on(outcomes: Sequence[Outcome]) -> ModelSpend:
    """The ``llm_calls``/``usage`` update that accounts for several calls."""
    usage = empty_usage()
    for outcome in outcomes:
        usage = add_usage(usage, outcome.usage)
    return {"llm_calls": sum(outcome.calls for outcome in outcomes), "usage": usage}


def as_outcome(result: object) -> Outcome:
    """An ``Outcome`` from what a model call returned (an ``AIMessage`` fed by hand, as in
    tests, counts as one request)."""
    if isinstance(result, Outcome):
        return result
    reply = result if isinstance(result, AIMessage) else AIMessage(content_text(result))
    return Outcome(ModelResponse(result=[reply]), 1, usage_of(reply))


ModelHandler = Callable[[LoopRequest], ModelResponse]
AsyncModelHandler = Callable[[LoopRequest], Awaitable[ModelResponse]]


@dataclass(frozen=True)
class ModelChain:
    """The run's ``wrap_model_call`` middleware composed into one sync and one async
    wrapper (see ``loopgraphs.nodes.middleware``); each returns the response and the
    commands the layers added."""

    sync: Callable[[LoopRequest, ModelHandler], tuple[ModelResponse, list[Command[object]]]]
    run_async: Callable[
        [LoopRequest, AsyncModelHandler], Awaitable[tuple[ModelResponse, list[Command[object]]]]
    ]


@dataclass(frozen=True)
class ModelCall:
    """One model request of a loop, sent through the run's middleware chain."""

    request: LoopRequest
    form: RequestForm = PLAIN
    chain: ModelChain | None = None
    known_tools: frozenset[str] | None = None
    name: str | None = None
    purpose: str | None = None
    answer: AnswerField | None = None
    view: MessageView | None = None

    def sent_with(
        self, config: RunnableConfig, *, asynchronous: bool = False
    ) -> RunnableConfig | None:
        """The config the request is sent with, merged with the node's ``config``: an
        internal call's tags and metadata (with the relay that streams a json turn's
        answer, see ``loopgraphs.nodes.json_stream``), or a relayed chat turn's; None for
        any other chat turn, which runs in the node's config as it is."""
        relay = current_relay()
        if self.purpose is not None:
            marks: RunnableConfig = {
                "tags": [TAG_NOSTREAM, INTERNAL_TAG],
                "metadata": {CALL_METADATA: self.purpose},
            }
            if self.answer is not None:
                manager = relay.manager if relay is not None else None
                streams = (
                    AsyncAnswerRelay(config, self.answer, manager)  # type: ignore[arg-type]
                    if asynchronous
                    else AnswerRelay(config, self.answer, manager)  # type: ignore[arg-type]
                )
                marks["callbacks"] = [streams]
            return merge_configs(config, marks)
        if relay is None:
            return None
        return merge_configs(config, {"tags": [TAG_NOSTREAM], "callbacks": [relay]})

    def invoke(self, config: RunnableConfig) -> Outcome:
        spent = Spent()
        sent = self.sent_with(config)

        def handler(request: LoopRequest) -> ModelResponse:
            runnable, prompt, read = prepare(request, self.form, self.known_tools, self.view)
            target, options = unbound(runnable)
            try:
                output, error = target.invoke(prompt, sent, **options), None
            except Exception as exc:
                output, error = None, exc
            return spent.response(read, output, error, self.name)

        with spent:
            if self.chain is None:
                return spent.outcome(handler(self.request))
            return spent.outcome(*self.chain.sync(self.request, handler))

    async def ainvoke(self, config: RunnableConfig) -> Outcome:
        spent = Spent()
        passed = self.sent_with(config, asynchronous=True) or (
            config if PASS_ASYNC_CONFIG else None
        )

        async def handler(request: LoopRequest) -> ModelResponse:
            runnable, prompt, read = prepare(request, self.form, self.known_tools, self.view)
            target, options = unbound(runnable)
            try:
                output, error = await target.ainvoke(prompt, passed, **options), None
            except Exception as exc:
                output, error = None, exc
            return spent.response(read, output, error, self.name)

        with spent:
            if self.chain is None:
                return spent.outcome(await handler(self.request))
            return spent.outcome(*await self.chain.run_async(self.request, handler))


def named(response: ModelResponse, name: str | None) -> ModelResponse:
    """The response with the agent's ``name`` on its assistant messages, as create_agent
    names its model's replies (multi-agent clients find an agent's replies by it)."""
    if not name:
        return response
    for message in response.result:
        if isinstance(message, AIMessage) and not message.name:
            message.name = name
    return response


def _count(spent: Spent, output: object) -> None:
    raw = output.get("raw") if isinstance(output, dict) else output
    spent.add(raw if isinstance(raw, AIMessage) else AIMessage(content=""))


def _truncated_reply(exc: Exception, spent: Spent) -> AIMessage:
    """The reply inside a "length limit reached" error of a structured-output call.

    OpenAI's SDK raises instead of returning a reply cut at ``max_tokens`` when a response
    format is set; the partial text is still worth reading (and its tokens were spent),
    so it is returned as an ordinary reply. Any other exception is re-raised, counted as
    a request sent unless the request was refused before it left (``NotImplementedError``:
    the model class lacks the form).
    """
    completion = getattr(exc, "completion", None)
    if not is_cut_reply_error(exc) or completion is None:
        if not isinstance(exc, NotImplementedError):
            spent.calls += 1
        raise exc
    usage = getattr(completion, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    output = int(getattr(usage, "completion_tokens", 0) or 0)
    reply = AIMessage(
        content=completion.choices[0].message.content or "",
        response_metadata={"finish_reason": "length"},
        usage_metadata={
            "input_tokens": prompt,
            "output_tokens": output,
            "total_tokens": prompt + output,
            "input_token_details": {"cache_read": int(getattr(details, "cached_tokens", 0) or 0)},
        },
    )
    spent.add(reply)
    return reply


@dataclass(frozen=True)
class ModelCaller:
    """Makes one node's model calls: the run's model, the caller's system message, the
    state and runtime the requests carry, and the run's middleware chain.

    A bare chat model works too (``ModelCaller(model)``): no system message, no middleware.
    """

    model: BaseChatModel
    system: SystemMessage | None = None
    state: Mapping[str, object] = field(default_factory=dict)
    runtime: LoopRuntime | None = None
    chain: ModelChain | None = None
    known_tools: frozenset[str] | None = None
    name: str | None = None
    view: MessageView | None = None

    def call(
        self,
        messages: Sequence[BaseMessage],
        form: RequestForm = PLAIN,
        *,
        tools: Sequence[BaseTool | dict[str, Any]] = (),
        tool_choice: str | None = None,
        response_format: ResponseFormat[Any] | None = None,
        with_system: bool = True,
        model_settings: Mapping[str, object] | None = None,
        purpose: str | None = None,
        answer: AnswerField | None = None,
    ) -> ModelCall:
        """A call of the model with ``messages``, sent the way ``form`` says.

        Args:
            messages: The conversation (no system message: the caller's goes first, the
                loop's own instructions are the form's).
            form: The loop's instructions and how the tools reach the model.
            tools: The tools offered (bound, in the action schema or in the prompt).
            tool_choice: ``"required"``, ``"none"``, a tool name or None.
            response_format: ``ToolStrategy`` or ``ProviderStrategy`` for a
                structured-output level.
            with_system: Whether the caller's system message goes first.
            model_settings: Keyword arguments bound to the model for this call (for
                example ``max_tokens``).
            purpose: What an internal call is for (``"plan"``, ``"evaluation"``,
                ``JSON_TURN``, ...): its reply is not the chat's, so it does not stream
                as a message (see the module's docstring). None: a chat turn.
            answer: Where an internal call's JSON reply holds its answer, which is then
                streamed to a chat as the node's own turn while it is written (see
                ``loopgraphs.nodes.json_stream``).
        """
        request: LoopRequest = ModelRequest(
            model=self.model,
            messages=list(messages),  # type: ignore[arg-type]
            system_message=self.system if with_system else None,
            tool_choice=tool_choice,
            tools=list(tools),
            response_format=response_format,
            model_settings=dict(model_settings or {}),
            state=self.state,  # type: ignore[arg-type]
            runtime=self.runtime,
        )
        known = self.known_tools if tools else None
        return ModelCall(request, form, self.chain, known, self.name, purpose, answer, self.view)


def caller_for(model: ModelCaller | BaseChatModel) -> ModelCaller:
    """An ``ModelCaller`` for a bare chat model (no system message, no middleware)."""
    return model if isinstance(model, ModelCaller) else ModelCaller(model)


def call_model(call: ModelCall) -> Generator[ModelCall, object, tuple[AIMessage, ModelSpend]]:
    """Send one model call; return its reply and the ``llm_calls``/``usage`` update."""
    outcome = as_outcome((yield call))
    return outcome.reply, outcome.update


def first_accepted(
    forms: Sequence[Callable[[], ModelCall]],
) -> Generator[ModelCall, object, tuple[int, Outcome]]:
    """Send one request in each of ``forms`` in turn (most capable first) until the
    provider accepts one: the ladder every request of every loop goes down.

    Only a refusal of the request's form (``is_form_rejection``: tools, a tool choice, a
    response format) moves on to the next form; any other error, or a refusal of the
    last form, ends the request. The requests refused on the way count as calls.

    Args:
        forms: Makers of the request in each form, in the order to try them.

    Returns:
        The index of the form the provider accepted, and its outcome with the refused
        requests added to its ``calls``.

    Raises:
        Exception: The last error, carrying (``failed_calls``) every request it cost.
    """
    refused = 0
    for index, make in enumerate(forms):
        try:
            outcome = as_outcome((yield make()))
        except Exception as exc:
            if index == len(forms) - 1 or not is_form_rejection(exc):
                mark_sent(exc, failed_calls(exc) + refused)
                raise
            refused += failed_calls(exc)
            continue
        return index, replace(outcome, calls=outcome.calls + refused) if refused else outcome
    raise ValueError("first_accepted needs at least one form")


__all__ = [
    "CALL_METADATA",
    "INTERNAL_TAG",
    "JSON_TURN",
    "ModelCall",
    "ModelCaller",
    "ModelChain",
    "Outcome",
    "as_outcome",
    "call_model",
    "caller_for",
    "named",
    "spent_on",
]
