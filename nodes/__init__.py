"""The loop kit: the reusable nodes every loop is built from, and what a loop needs besides.

Every built-in loop is built from this module alone, and so can yours (see the docs'
"Writing your own loop"). Its names are stable: they change only with a note in the
changelog and a release that says so.

**A loop**: ``LoopSpec`` declares it (name, state, output, keywords, wiring);
``LoopBuild`` wires its graph (``start``, ``step``, ``tool_step``, ``route``); ``Option``
declares a keyword once; ``Step`` is what a step's logic is handed (the run's settings,
the loop's ``options``, ``may_continue`` for the run budget); ``LoopState`` and
``RunResult`` are the state and output every loop extends (with ``FanOutState`` when a
step runs as concurrent tasks, ``LoopBuild.step(..., fan_out=...)``). A step's logic is
a function ``logic(state, step)`` returning the keys it changes, or a generator that runs
the nodes below with ``yield from`` and returns them (``LogicOf[State]``).

**The six nodes**: ``generate`` (one model turn through the seam; ``act`` offers the
run's tools in its tool mode, ``samples`` sends several turns at once), ``parse`` (a
reply read into a typed value, with the one re-ask), ``call_tool`` (the tool step, added
by ``LoopBuild.tool_step``; ``tool_calls`` routes a reply's calls to it), ``evaluate``
(a ``Verdict`` or a ``Value`` on one candidate), ``reflect`` (a lesson from a failed
attempt) and ``score_branches`` (values for many candidates, in one call or one each).

**A grammar of the loop's own**: ``RequestForm`` says how a turn's instructions and tools
reach the model (bound, a JSON schema, described in the prompt, with the transcript
rendered as the loop's grammar; ``generate``'s ``fallback`` steps down when a provider
refuses one), ``JSON_TURN`` marks a turn whose reply is JSON; ``shown_as``, ``RAW_REPLY``
and ``as_written`` keep a reply as the chat shows it and as the model wrote it;
``coerce_args`` makes a tool's arguments from a text, ``fence_output`` and ``unfence``
fence a tool's result (``EXAMPLE_FENCE`` a worked example's), ``observed`` and
``with_media`` show tool results with their images and files to a model that reads them
in the loop's grammar. For a small model, ``guides`` says whether its
replies are decoded under grounded schemas: ``grounded_string`` (of ``words_of`` the
evidence, ``new_words``, ``QUESTION_WORDS``, ``WORD_RE``), ``closed_object``,
``takes_one_input`` and ``tool_for``.

**Several nodes at once**: ``in_parallel`` drives several of them side by side;
``failed_requests`` counts the requests of those that failed and ``all_failed`` is what
to raise when every one did; ``spent_together`` adds up what several nodes spent (their
``spent``).
"""

from langgraph.graph import END

from loopgraphs.nodes.answer_check import unusable
from loopgraphs.nodes.driver import LogicOf, in_parallel
from loopgraphs.nodes.errors import all_failed, failed_requests
from loopgraphs.nodes.fan_out import FanOutState
from loopgraphs.nodes.generate import (
    answer_message,
    reask_for,
    reasked,
    shown_as,
    spent_together,
    without_answer,
)
from loopgraphs.nodes.grounding import (
    QUESTION_WORDS,
    WORD_RE,
    closed_object,
    grounded_string,
    guides,
    new_words,
    takes_one_input,
    tool_for,
    words_of,
)
from loopgraphs.nodes.history import bounded_thread, conversation, earlier_turns
from loopgraphs.nodes.inner import (
    InnerLoop,
    closing_message,
    ended_by_hook,
    most_calls,
    tool_work,
)
from loopgraphs.nodes.judging import (
    EVALUATION_FAILED,
    Reflection,
    Scored,
    Value,
    Verdict,
    evaluate,
    reflect,
    score_branches,
)
from loopgraphs.nodes.loop import REVIEW, TOOL_STEP, LoopBuild, LoopSpec, tool_calls
from loopgraphs.nodes.model_call import JSON_TURN
from loopgraphs.nodes.model_send import RAW_REPLY, RequestForm, as_written
from loopgraphs.nodes.model_turn import coerce_args
from loopgraphs.nodes.options import REQUIRED, Option
from loopgraphs.nodes.parsing.answers import answer_key
from loopgraphs.nodes.parsing.react import final_action_answer, final_answer_of
from loopgraphs.nodes.parsing.text import best_effort_answer, content_text, cut_short
from loopgraphs.nodes.reading import Parsed, parse
from loopgraphs.nodes.settings import LoopOptions, LoopSettings, ToolLoopOptions, ToolsArg
from loopgraphs.nodes.step import Step
from loopgraphs.nodes.structured import Level, with_bounds
from loopgraphs.nodes.tool_guard import call_key, fence_output, unfence
from loopgraphs.nodes.tool_modes import EXAMPLE_FENCE, observed
from loopgraphs.nodes.tool_step import call_tool
from loopgraphs.nodes.tool_turns import (
    Reading,
    interpret,
    must_call,
    read_action,
    repaired_answer,
    without_tool_calls,
)
from loopgraphs.nodes.turns import Turn, act, generate, prompt_message, samples
from loopgraphs.state import (
    InnerOutput,
    LoopInput,
    LoopState,
    ModelSpend,
    ResponseT,
    RunResult,
    Status,
    TotalsState,
    conversation_of,
    request_of,
    scratch_of,
    transcript_of,
)
from loopgraphs.text import with_media

__all__ = [
    "END",
    "EVALUATION_FAILED",
    "EXAMPLE_FENCE",
    "JSON_TURN",
    "QUESTION_WORDS",
    "RAW_REPLY",
    "REQUIRED",
    "REVIEW",
    "TOOL_STEP",
    "WORD_RE",
    "FanOutState",
    "InnerLoop",
    "InnerOutput",
    "Level",
    "LogicOf",
    "LoopBuild",
    "LoopInput",
    "LoopOptions",
    "LoopSettings",
    "LoopSpec",
    "LoopState",
    "ModelSpend",
    "Option",
    "Parsed",
    "Reading",
    "Reflection",
    "RequestForm",
    "ResponseT",
    "RunResult",
    "Scored",
    "Status",
    "Step",
    "ToolLoopOptions",
    "ToolsArg",
    "TotalsState",
    "Turn",
    "Value",
    "Verdict",
    "act",
    "all_failed",
    "answer_key",
    "answer_message",
    "as_written",
    "best_effort_answer",
    "bounded_thread",
    "call_key",
    "call_tool",
    "closed_object",
    "closing_message",
    "coerce_args",
    "content_text",
    "conversation",
    "conversation_of",
    "cut_short",
    "earlier_turns",
    "ended_by_hook",
    "evaluate",
    "failed_requests",
    "fence_output",
    "final_action_answer",
    "final_answer_of",
    "generate",
    "grounded_string",
    "guides",
    "in_parallel",
    "interpret",
    "most_calls",
    "must_call",
    "new_words",
    "observed",
    "parse",
    "prompt_message",
    "read_action",
    "reask_for",
    "reasked",
    "reflect",
    "repaired_answer",
    "request_of",
    "samples",
    "score_branches",
    "scratch_of",
    "shown_as",
    "spent_together",
    "takes_one_input",
    "tool_calls",
    "tool_for",
    "tool_work",
    "transcript_of",
    "unfence",
    "unusable",
    "with_bounds",
    "with_media",
    "without_answer",
    "without_tool_calls",
    "words_of",
]
