"""Shared pieces of the benchmarks: spreads of repeated measurements, timed tools, and a
resettable script for the scripted model."""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from loopgraphs.nodes.parsing.text import content_text
from tests.support.fakes import ScriptedChatModel

NATIVE_PROFILE = {"tool_calling": True, "structured_output": True}


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Median with its spread (min and max) over repeats."""
    items = [float(v) for v in values]
    return {
        "median": statistics.median(items),
        "min": min(items),
        "max": max(items),
        "n": len(items),
    }


def ratio_spread(numerators: Sequence[float], denominators: Sequence[float]) -> dict[str, Any]:
    """Spread of per-repeat ratios: each ratio pairs two figures measured side by side."""
    return spread([a / b for a, b in zip(numerators, denominators, strict=True)])


def prompt_text(messages: Sequence[BaseMessage]) -> str:
    return "\n".join(content_text(m.content) for m in messages)


class Script:
    """Replies in order, restartable between runs, so one model (and one compiled graph)
    serves every repeat. An item may be a callable ``(messages) -> reply``."""

    def __init__(self, replies: Sequence[Any]) -> None:
        self.replies = list(replies)
        self.index = 0
        self._lock = threading.Lock()

    def reset(self) -> None:
        self.index = 0

    def __call__(self, messages: list[BaseMessage]) -> Any:
        with self._lock:
            if self.index >= len(self.replies):
                raise AssertionError(f"scenario script exhausted after {len(self.replies)}")
            reply = self.replies[self.index]
            self.index += 1
        return reply(messages) if callable(reply) else reply


def scripted(reply: Callable[[list[BaseMessage]], Any], **kwargs: Any) -> ScriptedChatModel:
    """A scripted model answering every call through ``reply``."""
    kwargs.setdefault("profile", NATIVE_PROFILE)
    return ScriptedChatModel(replies=[reply], repeat_last=True, **kwargs)


class KeyInput(BaseModel):
    key: str = Field(description="What to look up.")


class TimedTools:
    """Tools that sleep ``delay`` seconds (``time.sleep`` or ``asyncio.sleep``) and record
    when each call started and ended, to measure how much tool calls overlap."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.spans: list[tuple[float, float]] = []
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self.spans.clear()

    def _record(self, start: float) -> None:
        with self._lock:
            self.spans.append((start, time.perf_counter()))

    def make(self, name: str) -> BaseTool:
        def run(key: str) -> str:
            start = time.perf_counter()
            time.sleep(self.delay)
            self._record(start)
            return f"{name}: value of {key}"

        async def arun(key: str) -> str:
            start = time.perf_counter()
            await asyncio.sleep(self.delay)
            self._record(start)
            return f"{name}: value of {key}"

        return StructuredTool.from_function(
            func=run,
            coroutine=arun,
            name=name,
            description=f"Look a key up in source {name}.",
            args_schema=KeyInput,
        )

    def phase(self) -> tuple[float, float]:
        """(wall span from the first start to the last end, longest single call)."""
        starts = [s for s, _ in self.spans]
        ends = [e for _, e in self.spans]
        return max(ends) - min(starts), max(e - s for s, e in self.spans)


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def lookup_tool() -> BaseTool:
    """The zero-latency tool shared by every overhead contender."""
    return StructuredTool.from_function(func=lookup, name="lookup", args_schema=KeyInput)
