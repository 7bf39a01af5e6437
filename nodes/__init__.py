"""The loop kit: the reusable nodes every loop is built from, and what a loop needs besides.

Every built-in loop is built from this module alone, and so can yours (see the docs'
"Writing your own loop"). Its names are stable: they change only with a note in the
changelog and a release that says so.

**A loop**: ``LoopSpec`` declares it (name, state, output, keywords, wiring);
``LoopBuild`` wires its graph (``start``, ``step``, ``tool_step``, ``route``); ``Option``
declares a keyword once; ``Step`` is what a step's logic is handed (the run's settings,
the loop's ``options``, ``may_continue`` for the run budget); ``LoopState`` and
``RunResult`` are the state and output every loop extends. A step's logic is a function
``logic(state, step)`` returning the keys it changes, or a generator that runs the
nodes below with ``yield from`` and returns them (``LogicOf[State]``).

**The six nodes**: ``generate`` (one model turn through the seam; ``act`` offers the
run's tools in its tool mode, ``samples`` sends several turns at once), ``parse`` (a
reply read into a typed value, with the one re-ask), ``call_tool`` (the tool step, added
by ``LoopBuild.tool_step``; ``tool_calls`` routes a reply's calls to it), ``evaluate``
(a ``Verdict`` or a ``Value`` on one candidate), ``reflect`` (a lesson from a failed
attempt) and ``score_branches`` (values for many candidates, in one call or one each).
``in_parallel`` drives several of them side by side; ``failed_requests`` counts the
requests of those that failed and ``all_failed`` is what to raise when every one did;
``spent_together`` adds up what several nodes spent (their ``spent``).
"""

from langgraph.graph import END

from loopgraphs.nodes.answer_check import unusable
from loopgraphs.nodes.driver import LogicOf, in_parallel
from loopgraphs.nodes.errors import all_failed, failed_requests
from loopgraphs.nodes.generate import answer_message, reasked, spent_together
from loopgraphs.nodes.history import bounded_thread, conversation, earlier_turns
from loopgraphs.nodes.inner import InnerLoop, closing_message, ended_by_hook
from loopgraphs.nodes.judging import (
    Reflection,
    Scored,
    Value,
    Verdict,
    evaluate,
    reflect,
    score_branches,
)
from loopgraphs.nodes.loop import REVIEW, TOOL_STEP, LoopBuild, LoopSpec, tool_calls
from loopgraphs.nodes.options import REQUIRED, Option
from loopgraphs.nodes.parsing.answers import answer_key
from loopgraphs.nodes.parsing.text import (
    best_effort_answer,
    content_text,
    cut_short,
    final_answer_of,
)
from loopgraphs.nodes.reading import Parsed, parse
from loopgraphs.nodes.settings import LoopOptions, LoopSettings, ToolLoopOptions, ToolsArg
from loopgraphs.nodes.step import Step
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
    LoopInput,
    LoopState,
    ResponseT,
    RunResult,
    Status,
    TotalsState,
    request_of,
    scratch_of,
)

__all__ = [
    "END",
    "REQUIRED",
    "REVIEW",
    "TOOL_STEP",
    "InnerLoop",
    "LogicOf",
    "LoopBuild",
    "LoopInput",
    "LoopOptions",
    "LoopSettings",
    "LoopSpec",
    "LoopState",
    "Option",
    "Parsed",
    "Reading",
    "Reflection",
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
    "best_effort_answer",
    "bounded_thread",
    "call_tool",
    "closing_message",
    "content_text",
    "conversation",
    "cut_short",
    "earlier_turns",
    "ended_by_hook",
    "evaluate",
    "failed_requests",
    "final_answer_of",
    "generate",
    "in_parallel",
    "interpret",
    "must_call",
    "parse",
    "prompt_message",
    "read_action",
    "reasked",
    "reflect",
    "repaired_answer",
    "request_of",
    "samples",
    "score_branches",
    "scratch_of",
    "spent_together",
    "tool_calls",
    "unusable",
    "without_tool_calls",
]
