"""ReAct on the embedded llama.cpp server: prompt-cache reuse and time outside the model.

A callback handler records when every model call starts and ends and the usage the
server reports (``input_token_details.cache_read``). The cached share counts the calls
after the first one of each run (the first call's prompt is new but for the shared system
prompt); the outside share is 1 − (time inside model calls) / (wall time of the run).
"""

from __future__ import annotations

import threading
import time
from itertools import pairwise
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from loopgraphs import create_react_graph
from loopgraphs.toolkits import calculator, make_search_tool
from tests.benchmarks.common import spread

SYSTEM = (
    "Work in small steps: look up every fact with the search tool and do every "
    "calculation with the calculator before you give the final answer."
)
QUESTIONS = (
    "Search for the population of Varnholt and the population of Quessaby, then add the "
    "two numbers with the calculator.",
    "Who founded Quillmark Instruments? Find where that person was born, then find the "
    "population of that place.",
    "Find the founding years of Saffrane Mills and of Orrinvale Press, then compute how "
    "many years apart they were founded.",
    "Find the birth years of Odalys Fenwrick and of her spouse, then compute the sum of "
    "the two years.",
    "Where is Greywillow Shipping headquartered, which river is that city on, and what is "
    "that city's population times 2?",
    "Find the population of Oskerby and of Tillabrune and multiply their difference by 3.",
)


class CallTimer(BaseCallbackHandler):
    """Records (start, end, usage) of every chat model call."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, float, dict[str, Any]]] = []
        self._open: dict[UUID, float] = {}
        self._lock = threading.Lock()

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **_: Any
    ) -> None:
        with self._lock:
            self._open[run_id] = time.perf_counter()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **_: Any) -> None:
        end = time.perf_counter()
        message = getattr(response.generations[0][0], "message", None)
        usage = dict(getattr(message, "usage_metadata", None) or {})
        with self._lock:
            self.calls.append((self._open.pop(run_id, end), end, usage))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **_: Any) -> None:
        end = time.perf_counter()
        with self._lock:
            self.calls.append((self._open.pop(run_id, end), end, {}))

    def inside(self) -> float:
        """Seconds covered by at least one model call."""
        total, reach = 0.0, float("-inf")
        for start, end, _ in sorted(self.calls):
            if end > reach:
                total += end - max(start, reach)
                reach = end
        return total


def _cache_read(usage: dict[str, Any]) -> int:
    return int((usage.get("input_token_details") or {}).get("cache_read", 0) or 0)


def reused(usages: list[dict[str, Any]]) -> tuple[int, int]:
    """(tokens read from the cache, tokens the cache could have served) over the calls
    that follow a call with known usage: the earlier call's prompt and reply are what the
    server's cache holds when the next call of the conversation starts."""
    held = read = 0
    for before, after in pairwise(usages):
        left = int(before.get("input_tokens") or 0) + int(before.get("output_tokens") or 0)
        prompt = int(after.get("input_tokens") or 0)
        if left and prompt:
            held += min(left, prompt)
            read += _cache_read(after)
    return read, held


def measured(timer: CallTimer, wall: float, kind: str, questions: list[str], out: Any) -> dict:
    """The figures of one measured unit (a run, or a conversation of runs)."""
    later = timer.calls[1:]
    prompt = sum(int(u.get("input_tokens", 0) or 0) for _, _, u in later)
    cached = sum(_cache_read(u) for _, _, u in later)
    read, held = reused([u for _, _, u in timer.calls])
    return {
        "kind": kind,
        "questions": questions,
        "status": out.get("status"),
        "error": out.get("error", ""),
        "answer": str(out.get("answer", ""))[:200],
        "model_calls": len(timer.calls),
        "failed_calls": sum(not u for _, _, u in timer.calls),
        "wall_s": wall,
        "model_s": timer.inside(),
        "outside_share": 1 - timer.inside() / wall,
        "prompt_tokens_after_first": prompt,
        "cached_tokens_after_first": cached,
        "cached_share": cached / prompt if prompt else None,
        "reused_share": read / held if held else None,
        "calls": [
            {
                "seconds": round(end - begin, 3),
                "input_tokens": u.get("input_tokens"),
                "cache_read": (u.get("input_token_details") or {}).get("cache_read"),
                "output_tokens": u.get("output_tokens"),
            }
            for begin, end, u in timer.calls
        ],
    }


def one_run(graph: Any, question: str) -> dict[str, Any]:
    """One ReAct run."""
    timer = CallTimer()
    start = time.perf_counter()
    out = graph.invoke({"messages": [("user", question)]}, config={"callbacks": [timer]})
    return measured(timer, time.perf_counter() - start, "run", [question], out)


def conversation(graph: Any, questions: list[str], min_calls: int, thread: str) -> dict:
    """ReAct runs on one thread (a checkpointer keeps the history, which only grows) until
    the model calls add up to ``min_calls``."""
    timer = CallTimer()
    config: dict[str, Any] = {"callbacks": [timer], "configurable": {"thread_id": thread}}
    asked: list[str] = []
    out: Any = {}
    start = time.perf_counter()
    for question in questions:
        asked.append(question)
        out = graph.invoke({"messages": [("user", question)]}, config=config)
        if len(timer.calls) >= min_calls:
            break
    return measured(timer, time.perf_counter() - start, "conversation", asked, out)


def local_model(
    *,
    runs: int,
    max_tokens: int,
    max_iterations: int,
    min_calls: int = 5,
    attempts: int = 4,
    threads: int | None = None,
) -> dict[str, Any]:
    """ReAct (json mode, calculator + search) on the local model.

    Single runs come first; a run with fewer than ``min_calls`` model calls is recorded but
    left out of the figures. When fewer than ``runs`` single runs qualify (a small model
    often answers at once without a tool), conversations of several runs on one thread
    are measured instead, each until it reaches ``min_calls`` model calls.
    """
    from langgraph.checkpoint.memory import InMemorySaver

    from loopgraphs.models import (
        LocalServer,
        describe_model,
        find_default_gguf,
        load_model,
        local_chat_model,
    )

    started = time.perf_counter()
    if threads:
        server = LocalServer(find_default_gguf(), n_threads=threads).start()
        model = local_chat_model(server, max_tokens=max_tokens)
    else:
        model = load_model("local", max_tokens=max_tokens)
    startup = time.perf_counter() - started
    options: dict[str, Any] = {
        "tool_mode": "json",
        "max_iterations": max_iterations,
        "system_prompt": SYSTEM,
    }
    tools = [calculator, make_search_tool()]
    graph = create_react_graph(model, tools, **options)
    done = [one_run(graph, QUESTIONS[i % len(QUESTIONS)]) for i in range(attempts)]

    def usable(item: dict[str, Any]) -> bool:
        return item["model_calls"] >= min_calls and item["cached_share"] is not None

    if sum(map(usable, done)) < runs:
        threaded = create_react_graph(model, tools, checkpointer=InMemorySaver(), **options)
        for index in range(runs):
            order = [*QUESTIONS[index:], *QUESTIONS[:index]]
            done.append(conversation(threaded, order, min_calls, thread=f"bench-{index}"))
    kept = [item for item in done if usable(item)]
    result: dict[str, Any] = {
        "model": describe_model(model),
        "server_startup_s": startup,
        "settings": {
            "tool_mode": "json",
            "tools": ["calculator", "search"],
            "max_iterations": max_iterations,
            "max_tokens": max_tokens,
            "min_calls": min_calls,
            "llama_threads": threads or "all cores",
        },
        "runs": done,
        "runs_used": len(kept),
        "kinds_used": sorted({item["kind"] for item in kept}),
    }
    if kept:
        result["cached_share"] = spread([r["cached_share"] for r in kept])
        result["outside_share"] = spread([r["outside_share"] for r in kept])
        reuse = [r["reused_share"] for r in kept if r.get("reused_share") is not None]
        if reuse:
            result["reused_share"] = spread(reuse)
        result["model_calls"] = spread([r["model_calls"] for r in kept])
        result["targets"] = {"cached_share_min": 0.90, "outside_share_max": 0.02}
        result["met"] = {
            "cached_share": result["cached_share"]["median"] >= 0.90,
            "outside_share": result["outside_share"]["median"] <= 0.02,
        }
    return result
