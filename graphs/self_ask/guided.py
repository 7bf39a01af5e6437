"""Self-Ask guided for a model that cannot be trusted to write the grammar.

Json and text modes on the embedded small model (see ``guided``): each turn reads one
worked example and a short scratchpad (the question, the follow-ups and their
intermediate answers); each tool result is read, for its intermediate answer, in a call
of its own. In json mode every reply is decoded under a schema whose strings are
grounded (see ``loopgraphs.nodes.grounding``): a follow-up is written from the words of
the question and of the answers read so far, an intermediate answer from the words of
the tool result, and the final answer from the words of the intermediate answers; such a
reply is an internal call (its JSON never streams) and is kept as a chat shows it, in the
grammar's words (``as_shown``). In every mode the follow-up after the first answer asks
the fact the question still needs of that answer (``next_follow_up``), and a read names a
fact of the result's closest sentences (``fact_of``), so that a question phrased as users
ask it ("What is the profession of Ada Quinlan's mentor?") does not end on "Who is Bram
Oster?" and "Born". The turns that use them are in
``loopgraphs.graphs.self_ask.guided_turns``, the graph's steps in
``loopgraphs.graphs.self_ask.steps``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal, NamedTuple

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from pydantic.json_schema import JsonDict, JsonValue

from loopgraphs import prompts
from loopgraphs.graphs.self_ask.state import FollowUp
from loopgraphs.nodes import (
    EXAMPLE_FENCE,
    QUESTION_WORDS,
    RAW_REPLY,
    WORD_RE,
    LoopSettings,
    RequestForm,
    closed_object,
    coerce_args,
    content_text,
    cut_short,
    fence_output,
    grounded_string,
    guides,
    new_words,
    shown_as,
    takes_one_input,
    words_of,
)
from loopgraphs.nodes.parsing.json_text import extract_json
from loopgraphs.nodes.parsing.self_ask import (
    builds_on,
    facts_read,
    needed_words,
    open_json_field,
    parse_self_ask,
    read_answer,
    relevant_sentences,
)
from loopgraphs.toolkits.registry import ToolRegistry

READ_SENTENCES = 3  # sentences of a tool result a guided model reads its answer from
GUIDED_MAX_CHARS = 200  # longest follow-up or final answer a guided reply keeps
FOLLOW_UP_WORDS = 16  # most words of a grounded follow-up
BEFORE_HELD = 8  # most words of a follow-up before the answer it builds on ("In which year was")
AFTER_HELD = 2  # most words after it ("born")
ANSWER_WORDS = 10  # most words of a grounded intermediate or final answer


def guided(run: LoopSettings, mode: str) -> bool:
    """Whether a run's Self-Ask turns are guided: in json and text modes on a guided run
    (see ``loopgraphs.nodes.grounding.guides``). Such a model does not write the free
    grammar: measured on SmolLM2-135M, it answered from memory at once, with no
    ``Follow up:`` line, in every run of the multihop suite."""
    return mode in ("json", "text") and guides(run)


def guided_choice(run: LoopSettings) -> str:
    """The tool choice a guided run's first follow-up honours: the run's ``tool_choice``
    (``"required"`` or a tool name), else ``"required"``."""
    choice = run.tool_choice
    return choice if isinstance(choice, str) and choice not in ("auto", "none") else "required"


def follow_up_schema(
    tools: ToolRegistry,
    require: str | None,
    words: Sequence[str],
    holding: str = "",
    answer: Sequence[str] = (),
) -> JsonDict:
    """JSON schema of a guided json reply asking one follow-up: one alternative per tool
    (only the one ``require`` names, when it names one), the question first (grounded in
    ``words`` and ``holding``, see ``grounding``), then
    the tool and, for a tool with several parameters, its arguments; given ``answer``
    words, also the final answer written from them."""
    if holding:
        question = grounded_string(
            words, most=BEFORE_HELD, end="?", holding=holding, after=AFTER_HELD
        )
    else:
        question = grounded_string(words, most=FOLLOW_UP_WORDS, end="?")
    alternatives: list[JsonValue] = []
    for item in tools.schemas():
        if require in tools.names and item["name"] != require:
            continue
        properties: JsonDict = {"follow_up": question, "tool": {"const": item["name"]}}
        if not takes_one_input(tools, item["name"]):
            properties["tool_input"] = item["parameters"]
        alternatives.append(closed_object(properties))
    if answer:
        alternatives.append(answer_schema("", "final_answer", answer)["schema"])
    return {
        "name": "self_ask_follow_up",
        "description": "One follow-up question for a tool.",
        "schema": {"anyOf": alternatives},
    }


def answer_schema(name: str, key: str, words: Sequence[str]) -> JsonDict:
    """JSON schema of a guided json reply that is one answer under ``key``, grounded in
    ``words``."""
    return {
        "name": name,
        "description": "The answer.",
        "schema": closed_object({key: grounded_string(words, most=ANSWER_WORDS, end=".")}),
    }


HOLD_WORDS = 6  # longest intermediate answer a follow-up must build on
CHAIN = 2  # follow-ups answered before a guided reply may give the final answer


class Grounding(NamedTuple):
    """What a guided json reply may be written from (see ``grounding``)."""

    words: tuple[str, ...]
    """The words of a follow-up question, or of the final answer in a final turn."""
    held: str
    """The text a follow-up must hold ("" for none)."""
    answer: tuple[str, ...]
    """The words a final answer given instead of a follow-up may use (none: it may not)."""


def known_texts(follow_ups: Sequence[FollowUp]) -> list[str]:
    """The follow-ups asked so far and their answers: what a question no longer needs."""
    return [str(f.get(key) or "") for f in follow_ups for key in ("question", "answer")]


def still_needed(question: str, follow_ups: Sequence[FollowUp]) -> tuple[str, ...]:
    """What a guided run's next follow-up must ask about the answer it holds: the words of
    the question that no follow-up or answer so far used, while the chain has one answer
    (none later: the run may end)."""
    if not follow_ups or len(follow_ups) >= CHAIN:
        return ()
    return tuple(needed_words(question, known_texts(follow_ups)))


def next_follow_up(question: str, asked: str, follow_ups: Sequence[FollowUp]) -> str:
    """The follow-up a guided run sends for the one its model ``asked``: that one when it
    asks the fact the question needs of the answer found (see ``builds_on``), else that
    fact asked of the answer in the words of the question ("What is the profession of
    Ada Quinlan?"), so the chain does not ask "Who is Ada Quinlan?" and read a word of
    her page."""
    needed = still_needed(question, follow_ups)
    held = grounding(question, follow_ups, final=False).held
    if not needed or not held or builds_on(asked, held, needed):
        return asked
    return prompts.SELF_ASK_GUIDED_NEEDED.format(needed=" ".join(needed), answer=held)


def grounding(question: str, follow_ups: Sequence[FollowUp], *, final: bool) -> Grounding:
    """What a guided json reply may be written from.

    A final answer uses the words of the last intermediate answer (the end of the chain)
    that the question does not use (all of them when that leaves none). A follow-up uses
    the question's words, the answers read so far and the question words (who, what,
    which, is, of ...); once a follow-up is answered, a new one holds the last
    intermediate answer when it is short (a chain builds on what it found), and after
    ``CHAIN`` answered follow-ups the reply may give the final answer instead."""
    answers = [str(f.get("answer") or "") for f in follow_ups]
    said = words_of(answers[-1]) if answers else []
    answer = tuple(new_words(said, question) or said)
    if final:
        return Grounding(answer, "", ())
    if len(answers) < CHAIN:
        answer = ()
    words = words_of(question, *answers, " ".join(sorted(QUESTION_WORDS)))
    last = answers[-1].strip().rstrip(".") if answers else ""
    held = last if 0 < len(WORD_RE.findall(last)) <= HOLD_WORDS else ""
    return Grounding(tuple(words), held, answer)


def guided_text(tools: ToolRegistry, mode: str, tool: str) -> str:
    """The system text of a guided turn (asking or answering)."""
    text = prompts.SELF_ASK_GUIDED_SYSTEM.format(tools=tools.catalog())
    if mode == "text":
        text = f"{text}\n{prompts.SELF_ASK_GUIDED_TEXT_NOTE.format(tool=tool)}"
    return text


def guided_form(mode: str, tool: str, *, final: bool, grounded: Grounding | None) -> RequestForm:
    """How a guided turn is sent: in json mode, given what it is ``grounded`` in (see
    ``grounding``), constrained to a follow-up (or, ``final``, to the final answer); the
    tools described in the text otherwise."""
    words, held, answer = grounded or ((), "", ())

    def schema(tools: ToolRegistry, require: str | None) -> JsonDict:
        if final:
            return answer_schema("self_ask_final_answer", "final_answer", words)
        return follow_up_schema(tools, require, words, held, answer)

    kind: Literal["schema", "prompt"] = (
        "schema" if mode == "json" and grounded is not None else "prompt"
    )
    return RequestForm(lambda tools: guided_text(tools, mode, tool), tools=kind, schema=schema)


def scratchpad(question: str, steps: Sequence[tuple[str, str]]) -> str:
    """The question and its follow-ups with their intermediate answers, as Self-Ask
    writes them."""
    lines = [prompts.SELF_ASK_QUESTION_LINE.format(question=question)]
    lines += [prompts.SELF_ASK_STEP_LINES.format(question=q, answer=a) for q, a in steps]
    return "\n".join(lines)


def follow_up_reply(mode: str, tools: ToolRegistry, tool: str, question: str) -> str:
    """A reply asking ``question`` of ``tool``, as a guided reply in ``mode`` is written."""
    if mode != "json":
        return prompts.SELF_ASK_FOLLOW_UP_LINE.format(question=question)
    data: dict[str, object] = {"follow_up": question, "tool": tool}
    if not takes_one_input(tools, tool):
        data["tool_input"] = coerce_args(tools, tool, question)
    return json.dumps(data, ensure_ascii=False)


def final_reply(mode: str, answer: str) -> str:
    """A reply giving the final answer, as a guided reply in ``mode`` is written."""
    if mode != "json":
        return prompts.SELF_ASK_FINAL_LINE.format(answer=answer)
    return json.dumps({"final_answer": answer}, ensure_ascii=False)


def worked_example(mode: str, tools: ToolRegistry, tool: str) -> list[AnyMessage]:
    """The one worked example of a guided run, turn by turn: each scratchpad of the
    example's question and the reply to it (a follow-up for ``tool``, then the final
    answer). The same in every turn of a run, so a server's prompt cache keeps it."""
    steps = [(question, answer) for question, _, answer in prompts.SELF_ASK_EXAMPLE_STEPS]
    turns: list[AnyMessage] = []
    for index, (question, _) in enumerate(steps):
        turns += [
            HumanMessage(scratchpad(prompts.SELF_ASK_EXAMPLE_QUESTION, steps[:index])),
            AIMessage(follow_up_reply(mode, tools, tool, question)),
        ]
    turns += [
        HumanMessage(scratchpad(prompts.SELF_ASK_EXAMPLE_QUESTION, steps)),
        AIMessage(final_reply(mode, prompts.SELF_ASK_EXAMPLE_ANSWER)),
    ]
    return turns


class Read(NamedTuple):
    """The request to read a follow-up's intermediate answer from its tool result."""

    messages: list[AnyMessage]
    form: RequestForm
    facts: list[list[str]]
    """The facts the sentences shown give (see ``facts_read``): what the answer must name."""


def read_request(
    mode: str,
    question: str,
    result: str,
    fence: str,
    request: str = "",
    before: Sequence[FollowUp] = (),
) -> Read:
    """The request to read a follow-up's intermediate answer from its tool result (the
    sentences that share the most words with the follow-up, then with what the user's
    ``request`` still needs after the follow-ups ``before`` it, fenced), after the worked
    example's first follow-up read the same way, and how it is sent: in json mode
    constrained to the facts of the closest sentences (see ``facts_read``: a name, a place,
    a year, not a word of the sentence's frame such as "born"), else to the words shown."""
    asked, said, answer = prompts.SELF_ASK_EXAMPLE_STEPS[0]
    needed = " ".join(needed_words(request, [*known_texts(before), question]))
    shown = relevant_sentences(result, question, READ_SENTENCES, needed=needed)
    facts = facts_read(shown, question, needed, request, result)
    example = json.dumps({"answer": answer}) if mode == "json" else answer
    messages: list[AnyMessage] = [
        HumanMessage(
            prompts.SELF_ASK_READ.format(result=fence_output(said, EXAMPLE_FENCE), question=asked)
        ),
        AIMessage(example),
        HumanMessage(
            prompts.SELF_ASK_READ.format(result=fence_output(shown, fence), question=question)
        ),
    ]
    system = prompts.SELF_ASK_READ_SYSTEM.format(fence_note=prompts.FENCE_NOTE)
    if mode != "json":
        return Read(messages, RequestForm(system), facts)
    found = words_of(" ".join(w for fact in facts for w in fact)) or words_of(shown)
    words = tuple(new_words(found, question) or found)
    form = RequestForm(
        system,
        tools="schema",
        schema=lambda tools, require: answer_schema("self_ask_read", "answer", words),
    )
    return Read(messages, form, facts)


def as_shown(mode: str, message: AnyMessage) -> AnyMessage:
    """A guided json reply as a chat shows it: in the grammar's words (``Follow up:``,
    ``So the final answer is:``, or the intermediate answer of a read), the JSON the model
    wrote kept under ``RAW_REPLY`` (see ``shown_as``); any other message as it is."""
    if mode != "json" or not isinstance(message, AIMessage):
        return message
    if RAW_REPLY in message.additional_kwargs:
        return message
    data = extract_json(content_text(message.content))
    if not isinstance(data, dict):
        return message
    if data.get("final_answer"):
        return shown_as(message, final_reply("text", str(data["final_answer"])))
    if data.get("follow_up"):
        text = prompts.SELF_ASK_FOLLOW_UP_LINE.format(question=data["follow_up"])
        return shown_as(message, text)
    if data.get("answer"):
        return shown_as(message, str(data["answer"]))
    return message


def read_of(reply: AIMessage) -> str:
    """The intermediate answer in a reply to a read: its ``answer`` field, else its first
    line without a marker ("" when the reply was cut)."""
    if cut_short(reply):
        return ""
    text = content_text(reply.content)
    return open_json_field(text, "answer") or read_answer(text)


def fact_of(said: str, facts: Sequence[Sequence[str]]) -> str:
    """The intermediate answer kept from a read: what the model ``said`` when it names one
    of the ``facts`` the result gives (or when there are none), else the first fact
    ("Tessford" for a model that read "Born")."""
    if not facts:
        return said
    named = {w.lower() for fact in facts for w in fact}
    if said and named & {w.lower() for w in WORD_RE.findall(said)}:
        return said
    return " ".join(facts[0])


def guided_steps(follow_ups: Sequence[FollowUp], unread: bool, fence: str) -> list[tuple[str, str]]:
    """A guided run's follow-ups with their intermediate answers; a tool result not read
    yet shows its sentences that share the most words with the question, fenced."""
    steps = [(str(f["question"]), str(f["answer"])) for f in follow_ups]
    if unread and steps:
        question, result = steps[-1]
        shown = relevant_sentences(result, question, READ_SENTENCES)
        steps[-1] = (question, fence_output(shown, fence))
    return steps


def guided_fallback(follow_ups: Sequence[FollowUp], unread: bool) -> str:
    """The answer a guided run ends with when the model gives none: the last intermediate
    answer (the last tool result's closest sentences when it was not read)."""
    if not follow_ups:
        return ""
    last = follow_ups[-1]
    if unread:
        return relevant_sentences(str(last["answer"]), str(last["question"]), READ_SENTENCES)
    return str(last["answer"])


def final_of(reply: AIMessage) -> str:
    """The final answer in a guided final reply ("" when there is none or it was cut): the
    ``So the final answer is:`` line, the ``final_answer`` field, an intermediate answer,
    or a reply with no marker at all."""
    if cut_short(reply):
        return ""
    turn = parse_self_ask(content_text(reply.content))
    if turn.kind in ("final", "none"):
        return turn.answer
    return (turn.intermediate or "") if turn.kind == "intermediate" else ""


def copies_example(text: str, evidence: str) -> bool:
    """Whether a guided reply copies an answer of the worked example that the run's own
    evidence does not hold (a small model copies what it saw last)."""
    said, held = text.lower(), evidence.lower()
    examples = [answer for _, _, answer in prompts.SELF_ASK_EXAMPLE_STEPS]
    examples.append(prompts.SELF_ASK_EXAMPLE_ANSWER)
    return any(e.lower() in said and e.lower() not in held for e in examples)


def asked_before(question: str, follow_ups: Sequence[FollowUp]) -> bool:
    asked = " ".join(question.lower().split())
    return any(" ".join(str(f["question"]).lower().split()) == asked for f in follow_ups)
