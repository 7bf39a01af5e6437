"""Many runs of ONE compiled graph at once must not share anything but the graph.

50 ``ainvoke`` runs at once (12 for the costlier loops) and sync ``invoke`` from 8
threads, on one compiled graph with an ``InMemorySaver``, each on its own thread id with
its own token in the question.
The scripted model answers by echoing the token it finds in the prompt (and sees a
mix-up if a prompt ever holds two tokens), so every run must end with its own token,
its own checkpoint, and exact call accounting. Every registered loop is covered.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from loopgraphs import LOOPS, build_loop, prompts
from loopgraphs.nodes.parsing.text import content_text
from tests.behaviour.test_adversarial import case_of, loop_names, takes
from tests.support.fakes import ScriptedChatModel, calls, tool_call

TOKEN_RE = re.compile(r"tok-[0-9a-f]{8}")
RUNS = 50
# 50 concurrent runs for ReAct and CoT; fewer for the costlier loops keeps the suite fast.
RUNS_BY_LOOP = {"react": RUNS, "cot": RUNS}
OTHER_RUNS = 12
THREADS = 8
REACT_NATIVE_HEAD = prompts.REACT_NATIVE_SYSTEM.splitlines()[0]


def echo(text: str) -> str:
    """Repeat a text back."""
    return f"echo: {text}"


def echo_reply(messages: list[Any]) -> AIMessage:
    """Answer with the one token of this prompt, in a form every loop accepts as final."""
    found = set(TOKEN_RE.findall("\n".join(content_text(m.content) for m in messages)))
    if len(found) != 1:
        return AIMessage(content=f"MIXED UP: {sorted(found)}")
    token = found.pop()
    system = content_text(messages[0].content) if isinstance(messages[0], SystemMessage) else ""
    if "UNSATISFACTORY" in system:  # an evaluator
        return AIMessage(content="SATISFACTORY")
    if system.startswith(REACT_NATIVE_HEAD) and not any(
        isinstance(m, ToolMessage) for m in messages
    ):
        return calls(tool_call("echo", {"text": token}, id=f"call_{token}"))
    return AIMessage(content=f"So the final answer is: {token}")


def make_graph(name: str, *, delay: float = 0.0) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(
        replies=[echo_reply],
        repeat_last=True,
        delay=delay,
        profile={"tool_calling": True, "structured_output": True},
    )
    options: dict[str, Any] = {**case_of(name).options, "checkpointer": InMemorySaver()}
    if takes(name, "tool_mode"):
        options["tool_mode"] = "native"
    graph = build_loop(name, model, [echo] if name != "cot" else (), **options)
    return graph, model


def question(token: str) -> dict[str, Any]:
    return {"messages": [("user", f"Repeat this token exactly: {token}")]}


def check_runs(name: str, graph: Any, model: ScriptedChatModel, runs: list[tuple]) -> None:
    assert "MIXED UP" not in str([p[-1].content for p in model.prompts])
    total = 0
    for token, config, out in runs:
        assert out["status"] in ("completed", "max_iterations"), out.get("error")
        answer = out["answer"]
        assert token in answer, (name, token, answer)
        assert set(TOKEN_RE.findall(answer)) == {token}
        saved = graph.get_state(config).values
        assert saved["answer"] == answer
        assert set(TOKEN_RE.findall(str(saved["messages"]))) == {token}
        total += out["llm_calls"]
    # Every reply of every concurrent run is counted once, by the run that received it.
    assert total == model.call_count
    assert len({config["configurable"]["thread_id"] for _, config, _ in runs}) == len(runs)


def new_run() -> tuple[str, dict[str, Any]]:
    token = f"tok-{uuid.uuid4().hex[:8]}"
    return token, {"configurable": {"thread_id": f"thread-{token}"}}


@pytest.mark.parametrize("name", loop_names())
async def test_concurrent_ainvoke_runs_of_one_graph(name: str) -> None:
    graph, model = make_graph(name, delay=0.005)
    pairs = [new_run() for _ in range(RUNS_BY_LOOP.get(name, OTHER_RUNS))]
    outs = await asyncio.gather(
        *(graph.ainvoke(question(token), config) for token, config in pairs)
    )
    check_runs(name, graph, model, [(t, c, o) for (t, c), o in zip(pairs, outs, strict=True)])
    assert model.max_concurrency > 1, "the runs did not overlap"


@pytest.mark.parametrize("name", loop_names())
def test_sync_invoke_from_eight_threads(name: str) -> None:
    graph, model = make_graph(name, delay=0.002)
    pairs = [new_run() for _ in range(THREADS * 2)]
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        outs = list(pool.map(lambda pair: graph.invoke(question(pair[0]), pair[1]), pairs))
    check_runs(name, graph, model, [(t, c, o) for (t, c), o in zip(pairs, outs, strict=True)])
    assert model.max_concurrency > 1


def test_react_runs_use_their_own_tool_results() -> None:
    graph, _ = make_graph("react")
    pairs = [new_run() for _ in range(10)]
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        outs = list(pool.map(lambda pair: graph.invoke(question(pair[0]), pair[1]), pairs))
    for (token, _), out in zip(pairs, outs, strict=True):
        results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        assert len(results) == 1 and f"echo: {token}" in content_text(results[0].content)
        assert out["llm_calls"] == 2
    assert "react" in LOOPS
