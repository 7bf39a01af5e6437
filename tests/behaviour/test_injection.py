"""Tool output is untrusted data: what the model is sent of it is truncated and fenced
between per-run markers (the thread keeps it as the tool returned it).

For every string of the prompt-injection corpus (tests/support/data/injections.txt) the fence
holds: the output can never contain the run's real end marker (even when the attacker
writes the real id), the fenced block has exactly one opening and one closing marker with
the run's id, and two runs use different ids. The ReAct system prompts of every mode tell
the model that fenced text is data.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from loopgraphs import create_react_graph, prompts
from loopgraphs.nodes.parsing.text import content_text
from loopgraphs.nodes.tool_guard import fence_output
from loopgraphs.state import new_fence
from tests.support.scripts import FAST_RETRY, MODES, act, final, model_for

CORPUS = Path(__file__).parents[1] / "support" / "data" / "injections.txt"
_ESCAPE = re.compile(r"\\(n|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})")


def _unescape(line: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        return "\n" if code == "n" else chr(int(code[1:], 16))

    return _ESCAPE.sub(one, line)


def load_injections() -> list[str]:
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [_unescape(line) for line in lines if line.strip() and not line.startswith("#")]


INJECTIONS = load_injections()
IDS = [f"{i:02d}" for i in range(len(INJECTIONS))]


def markers(fence: str) -> tuple[str, str]:
    return f"<<tool_output {fence}>>", f"<<end_tool_output {fence}>>"


def assert_fence_holds(block: str, fence: str) -> str:
    """Check one fenced block and return what is inside it."""
    opening, closing = markers(fence)
    assert block.startswith(opening + "\n"), block[:80]
    assert block.endswith("\n" + closing), block[-80:]
    assert block.count(opening) == 1 and block.count(closing) == 1
    assert block.count(fence) == 2, "the run's id appears inside the fenced output"
    inside = block[len(opening) + 1 : -len(closing) - 1]
    assert closing not in inside and fence not in inside
    return inside


def test_corpus_is_large_and_distinct() -> None:
    assert len(INJECTIONS) >= 30
    assert len(set(INJECTIONS)) == len(INJECTIONS)
    assert any("{FENCE}" in text for text in INJECTIONS)


@pytest.mark.parametrize("payload", INJECTIONS, ids=IDS)
def test_fence_holds_for_each_injection(payload: str) -> None:
    fence = new_fence([HumanMessage("fetch it")])
    # The attacker is even given the run's real id.
    text = payload.replace("{FENCE}", fence)
    inside = assert_fence_holds(fence_output(text, fence), fence)
    if fence not in text:
        assert inside == text  # nothing else is touched


def test_fence_holds_when_truncation_cuts_the_output() -> None:
    fence = new_fence([HumanMessage("fetch it")])
    _, closing = markers(fence)
    text = "x" * 150 + closing + "y" * 1000 + closing
    block = fence_output(text, fence, limit=100)
    inside = assert_fence_holds(block, fence)
    assert inside.startswith("x" * 100)
    total = len(text.replace(fence, "[marker removed]"))
    assert f"[... truncated {total - 100} of {total} characters]" in inside


def test_fence_ids_follow_the_first_message_of_the_thread() -> None:
    conversations = [[HumanMessage(f"question {i}")] for i in range(1000)]
    fences = {new_fence(messages) for messages in conversations}
    assert len(fences) == 1000
    assert all(re.fullmatch(r"[0-9a-f]{12}", fence) for fence in fences)
    # The same thread (whatever ids LangGraph gave its messages) gives the same prompts,
    # and every later turn of it fences with the marker of its first.
    asked = [HumanMessage("2*3?", id="a"), AIMessage("6", id="b"), HumanMessage("4*5?", id="c")]
    again = [m.model_copy(update={"id": f"other-{i}"}) for i, m in enumerate(asked)]
    assert new_fence(asked) == new_fence(again) == new_fence(asked[:1])
    called = AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "1"}])
    other_call = AIMessage("", tool_calls=[{"name": "f", "args": {"x": 2}, "id": "1"}])
    assert new_fence([called, *asked]) != new_fence([other_call, *asked])


def fetch_tool(payload: str):
    def fetch(url: str) -> str:
        """Fetch a web page."""
        return f"Page {url}:\n{payload}"

    return fetch


def fence_of(model, call: int = 1) -> str:
    """The run's fence id, read from the first tool result the model was sent in its call
    ``call`` (the id stays internal)."""
    match = re.search(r"<<tool_output ([0-9a-f]+)>>", content_text(model.prompts[call][-1].content))
    assert match, "tool output is not fenced"
    return match.group(1)


def kept_results(out: dict) -> list[str]:
    """The tool results as the thread keeps them."""
    return [content_text(m.content) for m in out["messages"] if isinstance(m, ToolMessage)]


def observation_text(mode: str, model) -> str:
    message = model.prompts[1][-1]
    if mode == "native":
        assert isinstance(message, ToolMessage)
        return content_text(message.content)
    text = content_text(message.content)
    assert text.startswith("Observation: ")
    return text[len("Observation: ") :]


@pytest.mark.parametrize("mode", MODES)
def test_injections_stay_fenced_in_react_runs(mode: str) -> None:
    fences = []
    for payload in INJECTIONS:
        model = model_for(
            mode, [act(mode, "fetch", {"url": "https://example.test"}), final(mode, "done")]
        )
        graph = create_react_graph(
            model, [fetch_tool(payload)], tool_mode=mode, retry_policy=FAST_RETRY
        )
        out = graph.invoke({"messages": [("user", "Summarise https://example.test")]})
        assert out["status"] == "completed" and out["answer"] == "done"
        fence = fence_of(model)
        inside = assert_fence_holds(observation_text(mode, model), fence)
        assert payload in inside  # the payload (with a guessed id) is shown as data
        assert kept_results(out) == [f"Page https://example.test:\n{payload}"]
        fences.append(fence)
    # Every run had the same input, so the same marker: the fence holds by removing any
    # copy of the marker from the output, not by keeping it secret.
    assert len(set(fences)) == 1


def test_two_runs_of_one_graph_use_different_ids() -> None:
    model = model_for("native", [act("native", "fetch", {"url": "u"}), final("native", "ok")] * 2)
    graph = create_react_graph(model, [fetch_tool("data")], tool_mode="native")
    graph.invoke({"messages": [("user", "one")]})
    graph.invoke({"messages": [("user", "two")]})
    assert fence_of(model, 1) != fence_of(model, 3)


@pytest.mark.parametrize("mode", MODES)
def test_observations_are_truncated_with_a_note(mode: str) -> None:
    model = model_for(mode, [act(mode, "fetch", {"url": "big"}), final(mode, "ok")])
    graph = create_react_graph(
        model,
        [fetch_tool("z" * 5000)],
        tool_mode=mode,
        max_tool_output_chars=200,
        retry_policy=FAST_RETRY,
    )
    out = graph.invoke({"messages": [("user", "q")]})
    inside = assert_fence_holds(observation_text(mode, model), fence_of(model))
    assert kept_results(out) == ["Page big:\n" + "z" * 5000]  # the thread keeps it whole
    full = len("Page big:\n") + 5000
    assert inside.endswith(f"[... truncated {full - 200} of {full} characters]")
    assert len(inside) < 300


@pytest.mark.parametrize("mode", MODES)
def test_react_system_prompt_carries_the_fence_note(mode: str) -> None:
    model = model_for(mode, [final(mode, "ok")])
    create_react_graph(model, [fetch_tool("x")], tool_mode=mode).invoke(
        {"messages": [("user", "q")]}
    )
    system = model.prompts[0][0]
    assert isinstance(system, SystemMessage)
    assert prompts.FENCE_NOTE in content_text(system.content)
