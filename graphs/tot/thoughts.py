"""Asking for the next thoughts of a branch, and the prompts that show a line of reasoning.

Every request has the system text of the search (``prompts.TOT_SYSTEM``) and starts its
prompt with the problem, so a server's prompt cache reuses what a level's proposals read
when the level is scored.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import Any, NamedTuple

from langchain_core.messages import BaseMessage

from loopgraphs import prompts
from loopgraphs.graphs.tot.state import ToTState, ToTStep
from loopgraphs.models import needs_guided_steps
from loopgraphs.nodes import (
    ModelSpend,
    content_text,
    cut_short,
    earlier_turns,
    generate,
    prompt_message,
    request_of,
    samples,
)
from loopgraphs.nodes.parsing.thoughts import MAX_THOUGHT_CHARS, parse_thoughts

# Reply cap per proposed thought on the embedded small model, which otherwise writes on
# to its token cap after the last step asked for (512 tokens for three short steps).
THOUGHT_TOKENS = 32
# A reply ends where its thoughts do: at a blank line (SmolLM2 wrote on after its list
# with "Step 3: ..." and "The next step is ..." until the cap).
THOUGHT_END = "\n\n"


def render_path(thoughts: Sequence[str], indent: str = "") -> str:
    """Number the steps of a line of reasoning, one per line."""
    if not thoughts:
        return f"{indent}{prompts.NOTHING_YET}"
    return "\n".join(f"{indent}Step {i}: {thought}" for i, thought in enumerate(thoughts, 1))


def level_prompt(problem: str, paths: Sequence[Sequence[str]]) -> str:
    """The prompt scoring every candidate of a level in one call."""
    listing = "\n".join(
        f"Candidate {i}:\n{render_path(path, indent='  ')}" for i, path in enumerate(paths, 1)
    )
    return prompts.TOT_SCORE_ALL.format(problem=problem, candidates=listing, count=len(paths))


def step_prompt(problem: str, path: Sequence[str]) -> str:
    """The prompt scoring one candidate: its last thought after the steps before it."""
    return prompts.TOT_SCORE_ONE.format(
        problem=problem, path=render_path(path[:-1]), thought=path[-1]
    )


def proposal_settings(count: int) -> dict[str, object]:
    """Request settings of a proposal of ``count`` thoughts on the embedded small model:
    ``THOUGHT_TOKENS`` per thought, and the reply ends where the list does (a blank line,
    or the item after the last one asked for)."""
    return {"max_tokens": count * THOUGHT_TOKENS, "stop": [THOUGHT_END, f"\n{count + 1}."]}


class Thoughts(NamedTuple):
    """The next thoughts proposed for a branch: their ``texts``, whether the reply was
    ``cut`` short (none of them is then taken as an answer), and the calls' ``spent``."""

    texts: list[str]
    cut: bool
    spent: ModelSpend


def next_thoughts(
    state: ToTState, step: ToTStep, path: Sequence[str]
) -> Generator[Any, Any, Thoughts]:
    """Ask for ``n_branches`` next thoughts after ``path``: one call listing them all
    ("propose") or one call each, concurrently ("sample"). On a small model that needs
    guided steps the replies are capped (see ``proposal_settings``)."""
    count = step.options["n_branches"]
    small = needs_guided_steps(step.run.chat_model)
    shown = render_path(path)
    if step.options["generation"] == "propose":
        text = prompts.TOT_PROPOSE.format(problem=request_of(state), path=shown, n=count)
        turn = yield from generate(
            step,
            state,
            asked(state, step, text),
            instructions=prompts.TOT_SYSTEM,
            purpose="proposal",
            again=False,
            model_settings=proposal_settings(count) if small else None,
        )
        return Thoughts(
            parse_thoughts(content_text(turn.reply.content), count), turn.cut, turn.spent
        )
    return (yield from sample_thoughts(state, step, shown, count, small))


def sample_thoughts(
    state: ToTState, step: ToTStep, shown: str, count: int, small: bool
) -> Generator[Any, Any, Thoughts]:
    """The "sample" generation: ``count`` concurrent calls, one thought each ("attempt k
    of n"). A reply cut short or empty is left out, a failed call counts its requests;
    when every call failed, the first failure is raised."""
    problem, history = request_of(state), earlier_turns(state, step.run)

    def attempt(k: int) -> list[BaseMessage]:
        text = prompts.TOT_SAMPLE.format(problem=problem, path=shown, k=k, n=count)
        return [*history, prompt_message(state, text)]

    capped: Mapping[str, object] = {"max_tokens": THOUGHT_TOKENS, "stop": [THOUGHT_END]}
    replies, spent = yield from samples(
        step,
        state,
        attempt,
        count,
        instructions=prompts.TOT_SYSTEM,
        purpose="proposal",
        model_settings=capped if small else None,
    )
    said = (content_text(reply.content).strip() for reply in replies if not cut_short(reply))
    return Thoughts([text[:MAX_THOUGHT_CHARS] for text in said if text], False, spent)


def asked(state: ToTState, step: ToTStep, text: str) -> list[BaseMessage]:
    """A request of the search: the conversation's earlier turns, then the prompt."""
    return [*earlier_turns(state, step.run), prompt_message(state, text)]


__all__ = [
    "THOUGHT_END",
    "THOUGHT_TOKENS",
    "Thoughts",
    "asked",
    "level_prompt",
    "next_thoughts",
    "proposal_settings",
    "render_path",
    "sample_thoughts",
    "step_prompt",
]
