"""Classify provider failures: transient ones are retried, permanent ones end the run."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.exceptions import ContextOverflowError, ModelRefusalError
from langchain_core.messages import AIMessage
from langgraph.errors import GraphBubbleUp
from langgraph.types import RetryPolicy

from loopgraphs.models import is_local_model, is_loopback_url
from loopgraphs.nodes.parsing.text import content_text, refusal_of

TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


def status_code(exc: BaseException) -> int | None:
    """The HTTP status carried by a provider exception, if any."""
    for source in (exc, getattr(exc, "response", None)):
        code = getattr(source, "status_code", None)
        if isinstance(code, int):
            return code
    return None


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: rate limits, 5xx, timeouts, dropped connections.

    A rejected request (400 Bad Request, 401, 404, 422: an unsupported parameter, an
    over-long context, a bad key) is permanent and is never retried.
    """
    if isinstance(exc, GraphBubbleUp):
        return False
    code = status_code(exc)
    if code is not None:
        return code in TRANSIENT_STATUS or code >= 500
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(
        names
        & {
            "APITimeoutError",
            "APIConnectionError",
            "RateLimitError",
            "InternalServerError",
            "TransportError",
            "TimeoutException",
            "RemoteProtocolError",
            "IncompleteRead",
        }
    )


# By name, so that no client library has to be imported; "TimeoutError" also covers
# asyncio's and concurrent.futures' own classes on Python 3.10.
TIMEOUT_ERRORS = frozenset({"TimeoutError", "APITimeoutError", "TimeoutException"})


def is_timeout(exc: BaseException) -> bool:
    """Whether the client gave up waiting for the server (not an HTTP status it sent).

    Args:
        exc: The failure of a model call.

    Returns:
        True for the OpenAI SDK's and httpx's timeouts and for `TimeoutError`.
    """
    return any(cls.__name__ in TIMEOUT_ERRORS for cls in type(exc).__mro__)


def _request_url(exc: BaseException) -> str | None:
    """The URL of the request an OpenAI SDK or httpx exception belongs to, if it says."""
    try:
        request = getattr(exc, "request", None)
    except RuntimeError:  # httpx raises when the exception carries no request
        return None
    url = getattr(request, "url", None)
    return str(url) if url is not None else None


def is_transient_on_local_server(exc: BaseException) -> bool:
    """Like `is_transient`, except that a timeout is final.

    A server on this machine does not lose packets: when a call to it times out, the model
    was still generating (a runaway reply), and sending the same request again would run
    away the same way.

    Args:
        exc: The failure of a call to a local model.

    Returns:
        True for rate limits, 5xx and dropped connections; False for timeouts and
        rejected requests.
    """
    return is_transient(exc) and not is_timeout(exc)


def is_transient_unless_local_timeout(exc: BaseException) -> bool:
    """Like `is_transient`, except for a timeout of a request sent to a loopback address.

    Used when the model is only known at run time: the failed request itself says where
    it went. A timeout that does not say is retried.

    Args:
        exc: The failure of a model call.

    Returns:
        Whether the call is worth another attempt.
    """
    if not is_transient(exc):
        return False
    if not is_timeout(exc):
        return True
    url = _request_url(exc)
    return url is None or not is_loopback_url(url)


REJECTION_STATUS = frozenset({400, 404, 405, 415, 422, 501})
# What a provider's refusal of the request's form names: tools or function calling, a
# tool choice, a response format or JSON schema (the words of OpenAI, OpenAI-compatible
# servers such as vLLM and llama.cpp, Ollama and Anthropic).
FORM_WORDS = re.compile(
    r"tool|function|response[_ ]?format|json[_ ]?schema|structured[_ ]output|grammar|"
    r"output[_ ]format|\bformat\b|\bstrict\b",
    re.IGNORECASE,
)
# A request too long for the model is refused whatever its form.
CONTEXT_OVERFLOW = re.compile(
    r"context[_ ]length|context window|maximum context|too many tokens|prompt is too long|"
    r"input is too long|reduce the length",
    re.IGNORECASE,
)


def error_text(exc: BaseException) -> str:
    """What a provider error says: its message, with the error body's ``code`` and
    ``type`` when the client kept them."""
    parts = [str(exc)]
    for name in ("code", "type"):
        value = getattr(exc, name, None)
        if isinstance(value, str):
            parts.append(value)
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        parts.append(str(body))
    return " ".join(parts)


def is_context_overflow(exc: BaseException) -> bool:
    """Whether the provider refused the request as too long for the model's context
    window (langchain-core's ``ContextOverflowError``, or a 400 that says so)."""
    if isinstance(exc, ContextOverflowError):
        return True
    return status_code(exc) == 400 and bool(CONTEXT_OVERFLOW.search(error_text(exc)))


def is_form_rejection(exc: BaseException) -> bool:
    """True when the provider refused the request's form, so that another form may work:
    the model class does not implement it (``NotImplementedError``, e.g. no
    ``bind_tools``), or a client error (HTTP 400, 404, 405, 415, 422, 501) that names
    tools, function calling, a tool choice, a response format or a JSON schema ("does
    not support tools", "'response_format' of type 'json_schema' is not supported").

    Any other client error is not about the form and ends the run at once with the
    provider's message: a context too long for the model (whatever words it uses), a
    model that does not exist, a bad parameter of the caller's, authentication and
    permission errors.
    """
    if isinstance(exc, NotImplementedError):
        return True
    if status_code(exc) not in REJECTION_STATUS or is_context_overflow(exc):
        return False
    return bool(FORM_WORDS.search(error_text(exc)))


def default_retry_policy(model: object = None, *, max_attempts: int = 3) -> RetryPolicy:
    """LangGraph retry policy for model calls: transient failures only, with backoff.

    What counts as transient depends on where the model is served. For a remote provider
    it is `is_transient` (rate limits, 5xx, timeouts, dropped connections). For a model on
    this machine (`loopgraphs.models.is_local_model`: the embedded server, a `gguf:` file, a
    loopback URL) a timeout is not retried (`is_transient_on_local_server`). With no model
    (graphs whose model comes from the run's context) a timeout is retried unless the
    request went to a loopback address (`is_transient_unless_local_timeout`).

    Args:
        model: The loop's chat model or model spec; `None` when it is chosen per run.
        max_attempts: Attempts per node, the first one included.

    Returns:
        A policy with 0.5 s initial backoff, doubling, with jitter.
    """
    retry_on: Callable[[BaseException], bool]
    if model is None:
        retry_on = is_transient_unless_local_timeout
    elif is_local_model(model):
        retry_on = is_transient_on_local_server
    else:
        retry_on = is_transient
    return RetryPolicy(max_attempts=max_attempts, initial_interval=0.5, retry_on=retry_on)


def describe_error(exc: BaseException) -> str:
    """One line naming the failure, for ``state["error"]``."""
    code = status_code(exc)
    prefix = f"{type(exc).__name__}" + (f" (HTTP {code})" if code else "")
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    line = f"{prefix}: {text[:500]}" if text else prefix
    if isinstance(exc, NotImplementedError):
        line += (
            " (the chat model lacks a feature the request needs, such as bind_tools for "
            "tool_mode='native'; tool_mode='auto', 'json' or 'text' run without it)"
        )
    return line


def should_reraise(exc: BaseException, attempt: int, policy: RetryPolicy | None) -> bool:
    """Whether a node lets an exception escape so LangGraph can retry it (or interrupt)."""
    if isinstance(exc, GraphBubbleUp):
        return True
    if policy is None or attempt >= policy.max_attempts:
        return False
    retry_on: Any = policy.retry_on
    if callable(retry_on) and not isinstance(retry_on, type):
        return bool(retry_on(exc))
    classes = retry_on if isinstance(retry_on, (list, tuple)) else (retry_on,)
    return isinstance(exc, tuple(classes))


FAILED_CALLS = "loopgraphs_failed_calls"


def mark_sent(exc: BaseException, requests: int = 1) -> None:
    """Record on a model call's exception that ``requests`` were sent (and failed)."""
    with contextlib.suppress(AttributeError):
        setattr(exc, FAILED_CALLS, requests)


def failed_calls(exc: BaseException) -> int:
    """How many failed model requests an exception stands for."""
    return int(getattr(exc, FAILED_CALLS, 0))


def all_failed(outcomes: Sequence[object]) -> BaseException:
    """The exception to raise when every one of concurrent calls failed (the outcomes of
    ``in_parallel``, say), carrying how many requests were sent in all: the node's guard
    counts them in ``llm_calls``.

    Args:
        outcomes: Per call, its result or the exception it raised (at least one).
    """
    errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    mark_sent(errors[0], sum(failed_calls(error) for error in errors))
    return errors[0]


def failed_requests(outcomes: Sequence[object]) -> int:
    """How many model requests failed among the outcomes of concurrent calls (those of
    ``in_parallel``, say): a step that keeps the calls that succeeded adds these to its
    ``llm_calls``, so that every request sent is counted.

    Args:
        outcomes: Per call, its result or the exception it raised.
    """
    return sum(failed_calls(o) for o in outcomes if isinstance(o, BaseException))


REFUSED = "the model refused"
"""How ``error`` starts when the model refused to answer."""


def refused(exc: ModelRefusalError) -> dict[str, object]:
    """The end of a run whose model refused: ``status="error"``, ``error`` with the
    model's words (``"the model refused: ..."``), no answer, and the refusing reply in the
    transcript, its words as its text (a refusal may come with none), so that a chat shows
    them.

    Args:
        exc: The refusal, raised by the model call (or by the client, as OpenAI's
            structured output does) with the reply as ``raw_message``.

    Returns:
        The state update.
    """
    reply = exc.raw_message
    words = refusal_of(reply) if isinstance(reply, AIMessage) else None
    words = words or str(exc).strip() or "no reason given"
    update: dict[str, object] = {"status": "error", "error": f"{REFUSED}: {words}", "answer": ""}
    if isinstance(reply, AIMessage):
        shown = (
            reply
            if content_text(reply.content).strip()
            else reply.model_copy(update={"content": words})
        )
        update["messages"] = [shown]
    return update
