"""Tree-of-Thoughts' prompts: proposing, sampling and scoring thoughts, and the answer."""

TOT_SYSTEM = (
    "You solve problems by exploring several lines of reasoning. Each step is one short, "
    "concrete thought that moves toward the solution. As soon as a step reaches the final "
    "solution, write it as ANSWER: <the final answer>."
)

_TOT_PROBLEM = """Problem: {problem}

Steps so far:
{path}

"""

TOT_PROPOSE = (
    _TOT_PROBLEM
    + """Propose {n} different possible next steps. Reply with a numbered list, one step per item:
1. <step>
2. <step>
If a step solves the problem, write that item as ANSWER: <the final answer>."""
)

TOT_SAMPLE = (
    _TOT_PROBLEM
    + """Write the single next step (attempt {k} of {n}; try something different from the obvious \
step). If it solves the problem, write it as ANSWER: <the final answer>."""
)

TOT_FORCE_ANSWER = _TOT_PROBLEM + (
    "The exploration is over. Using these steps, give the final answer now, starting with ANSWER:"
)

TOT_SCORE_ONE = (
    _TOT_PROBLEM
    + """Proposed next step: {thought}

How promising is this step for reaching a correct solution? Give an integer score from \
0 (wrong or useless) to 10 (certainly leads to the solution) and a one-sentence reason.
Reply as JSON: {{"score": <0-10>, "reason": "<why>"}}"""
)

TOT_SCORE_ALL = """Problem: {problem}

Candidate lines of reasoning:
{candidates}

Score each candidate from 0 (wrong or useless) to 10 (certainly leads to the solution).
Reply with one line per candidate, in order, in the form "<candidate number>: <score>", \
or as JSON {{"scores": [...]}} holding exactly {count} integers in candidate order."""
