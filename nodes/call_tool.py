"""Execute tool calls: concurrently, with timeouts, and never raising.

Every failure (unknown tool, invalid arguments, exception, timeout) becomes an observation
the model reads on its next turn. Tool output is truncated and fenced between per-run
random markers so that the model can tell data from instructions, and a call identical to
an earlier one is answered from history with a loop-break note instead of running again.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool
from pydantic import ValidationError

from loopgraphs.nodes.runner import Job, JobBatch
from loopgraphs.toolkits.registry import ToolRegistry

DEFAULT_MAX_OUTPUT_CHARS = 4000
DEFAULT_TOOL_TIMEOUT = 30.0


@dataclass(frozen=True)
class ToolRequest:
    """A tool call asked for by the model: native, JSON or text form alike."""

    name: str
    args: dict[str, Any] | str
    id: str = ""

    def key(self) -> str:
        """Identity used to detect repeated calls."""
        return f"{self.name}:{json.dumps(self.args, sort_keys=True, default=str)}"


@dataclass(frozen=True)
class Observation:
    """What a tool call produced, ready to show to the model."""

    request: ToolRequest
    content: str
    ok: bool
    ran: bool


def new_fence() -> str:
    """A random marker for one run's tool output fences."""
    return secrets.token_hex(6)


def fence_output(text: str, fence: str, limit: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """Truncate tool output and wrap it between markers the output cannot forge.

    Args:
        text: Raw tool output.
        fence: The run's random marker (see ``new_fence``).
        limit: Maximum characters of output kept.

    Returns:
        The fenced text, with a note saying how much was cut.
    """
    text = text.replace(fence, "[marker removed]")
    note = ""
    if len(text) > limit:
        note = f"\n[... truncated {len(text) - limit} of {len(text)} characters]"
        text = text[:limit]
    return f"<<tool_output {fence}>>\n{text}{note}\n<<end_tool_output {fence}>>"


def coerce_args(tool: BaseTool, args: dict[str, Any] | str) -> dict[str, Any]:
    """Turn a bare string input into keyword arguments when the tool has one parameter."""
    if isinstance(args, dict):
        return args
    fields = list(tool.args)
    if len(fields) == 1:
        return {fields[0]: args}
    if not fields:
        return {}
    try:
        decoded = json.loads(args)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        return decoded
    required = [name for name, spec in tool.args.items() if "default" not in spec]
    if len(required) == 1:
        return {required[0]: args}
    raise ValueError(
        f"expected a JSON object with the arguments {', '.join(fields)}, got the text {args!r}"
    )


def _describe_error(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'input'}: {error['msg']}"
            for error in exc.errors()
        )
        return f"invalid arguments ({problems})"
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    return f"{type(exc).__name__}: {exc}"


def _result_text(value: Any) -> str:
    content = getattr(value, "content", value)
    if isinstance(content, str):
        return content
    try:
        return json.dumps(content, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(content)


def _job(tool: BaseTool, args: dict[str, Any], timeout: float | None) -> Job:
    return Job(
        sync=lambda: tool.invoke(args),
        run_async=lambda: tool.ainvoke(args),
        timeout=timeout,
    )


def run_tools(
    requests: Sequence[ToolRequest],
    registry: ToolRegistry,
    *,
    history: dict[str, str],
    fence: str,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    timeout: float | None = DEFAULT_TOOL_TIMEOUT,
) -> Generator[JobBatch, list[Any], list[Observation]]:
    """Run tool requests concurrently and turn every outcome into an observation.

    Args:
        requests: The calls, in the model's order.
        registry: The tools this run may use.
        history: Earlier calls of this run, keyed by ``ToolRequest.key``.
        fence: The run's marker for fencing tool output.
        max_output_chars: Truncation limit of each output.
        timeout: Seconds each tool may run.

    Yields:
        One batch of jobs (all runnable calls together).

    Returns:
        One observation per request, in order.
    """
    observations: list[Observation | None] = [None] * len(requests)
    jobs: list[Job] = []
    job_slots: list[int] = []
    seen: dict[str, str] = dict(history)
    for index, request in enumerate(requests):
        key = request.key()
        if key in seen:
            observations[index] = Observation(
                request,
                f"You already called {request.name} with these arguments. "
                f"The result was:\n{seen[key]}\n"
                "Do not repeat the call: use a different approach or give the final answer.",
                ok=False,
                ran=False,
            )
            continue
        seen[key] = "(result pending in this same step)"
        tool = registry.get(request.name)
        if tool is None:
            available = ", ".join(registry.names) or "none"
            observations[index] = Observation(
                request,
                f"Error: unknown tool '{request.name}'. Available tools: {available}.",
                ok=False,
                ran=False,
            )
            continue
        try:
            args = registry.validate(request.name, coerce_args(tool, request.args))
        except (ValidationError, ValueError) as exc:
            observations[index] = Observation(
                request, f"Error: {request.name}: {_describe_error(exc)}", ok=False, ran=False
            )
            continue
        jobs.append(_job(tool, args, timeout))
        job_slots.append(index)
    results = (yield JobBatch(jobs)) if jobs else []
    for index, result in zip(job_slots, results, strict=True):
        request = requests[index]
        if isinstance(result, BaseException):
            text = f"Error: {request.name} failed: {_describe_error(result)}"
            observations[index] = Observation(
                request, fence_output(text, fence, max_output_chars), ok=False, ran=True
            )
        else:
            observations[index] = Observation(
                request,
                fence_output(_result_text(result), fence, max_output_chars),
                ok=True,
                ran=True,
            )
    return [obs for obs in observations if obs is not None]


def history_update(observations: Sequence[Observation]) -> dict[str, str]:
    """New ``tool_history`` entries for the calls that actually ran."""
    return {obs.request.key(): obs.content for obs in observations if obs.ran}
