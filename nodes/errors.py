"""Classify provider failures: transient ones are retried, permanent ones end the run."""

from __future__ import annotations

from typing import Any

from langgraph.errors import GraphBubbleUp
from langgraph.types import RetryPolicy

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


REJECTION_STATUS = frozenset({400, 404, 405, 415, 422, 501})


def is_form_rejection(exc: BaseException) -> bool:
    """True when the request's form was refused, so another form may work: the model class
    does not implement it (``NotImplementedError``, e.g. no ``bind_tools``) or the provider
    rejected a parameter such as ``tools`` or ``response_format`` (HTTP 400, 404, 405, 415,
    422, 501). Authentication and permission errors are not rejections of the form: they
    end the run."""
    return isinstance(exc, NotImplementedError) or status_code(exc) in REJECTION_STATUS


def default_retry_policy(max_attempts: int = 3) -> RetryPolicy:
    """LangGraph retry policy for model calls: transient failures only, with backoff."""
    return RetryPolicy(max_attempts=max_attempts, initial_interval=0.5, retry_on=is_transient)


def describe_error(exc: BaseException) -> str:
    """One line naming the failure, for ``state["error"]``."""
    code = status_code(exc)
    prefix = f"{type(exc).__name__}" + (f" (HTTP {code})" if code else "")
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{prefix}: {text[:500]}" if text else prefix


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
